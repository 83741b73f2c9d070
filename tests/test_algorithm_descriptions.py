"""The book's table of algorithms is read from the classes: every one must describe itself."""

import re

import pytest

from playerfl_core.fl.algorithms import ALGORITHMS, Algorithm, describe_algorithms


@pytest.mark.parametrize("name", list(ALGORITHMS))
def test_every_algorithm_describes_itself(name):
    cls = ALGORITHMS[name]
    for attribute in ("shares", "deploys", "paper"):
        assert isinstance(getattr(cls, attribute), str) and getattr(cls, attribute).strip()
    if name != "fedavg":  # FedAvg's answers are the base class's; the others must declare theirs
        assert cls.paper != Algorithm.paper, f"{name} inherits FedAvg's paper"
        assert cls.shares != Algorithm.shares, f"{name} inherits FedAvg's 'shares'"
    key = cls.key_hyperparameter
    assert key is None or key in cls.defaults(), (name, key)


def test_table_rows_follow_the_registry_and_carry_the_defaults():
    rows = describe_algorithms()
    assert [r["algorithm"] for r in rows] == list(ALGORITHMS)
    by_name = {r["algorithm"]: r for r in rows}
    assert by_name["fedprox"]["key_hyperparameter"] == "mu"
    assert by_name["fedprox"]["default"] == ALGORITHMS["fedprox"].defaults()["mu"]
    # PLayer-FL's threshold default is None (the rule's own); the table says which that is
    from playerfl_core.fl.split_rules import get_rule

    assert ALGORITHMS["playerfl"]().threshold is None
    assert by_name["playerfl"]["default"].startswith(f"{get_rule('paper').default_threshold:g} ")
    assert by_name["local"]["key_hyperparameter"] is None and by_name["local"]["default"] is None
    from playerfl_core.book.reports.foundations import algorithm_table

    shown = algorithm_table()["key hyper-parameter (default)"]
    assert shown["Local"] == "none" and "nan" not in " ".join(shown)  # no "nan = nan"
    # one way to write a number: chapter 00 had "t = 1" for PLayer-FL beside "t = 1.0"
    assert shown["PLayer-FL-Random"].endswith("t = 1") and shown["pFedMe"].endswith("= 15")
    # the table defines no letters: PLayer-FL-Random's "1..L−1, never PLayer-FL's p*" did not say
    # what L and p* were
    assert not re.search(r"\bp\*|\bL\b|\bR\b", " ".join(row["shares"] + row["deploys"]
                                                        for row in by_name.values()))  # fmt: skip
    assert by_name["local"]["shares"] == "nothing"
    for name, row in by_name.items():  # the docstring's columns: shares, deploys, paper
        cls = ALGORITHMS[name]
        assert (row["shares"], row["deploys"], row["paper"]) == (cls.shares, cls.deploys, cls.paper)


def test_bad_names_and_keys_are_reported(monkeypatch):
    with pytest.raises(ValueError, match="Unknown algorithm 'fedsgd'"):
        describe_algorithms(["fedsgd"])
    monkeypatch.setattr(ALGORITHMS["fedprox"], "key_hyperparameter", "muu")
    with pytest.raises(ValueError, match="fedprox: key_hyperparameter 'muu'"):
        describe_algorithms(["fedprox"])
