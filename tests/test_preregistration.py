"""The pre-registered split-rule test: its declaration, its tuning on the development set only,
its verdicts, and the committed rules table it reads (recomputed here from a replayed epoch)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from playerfl_core.fl.split_rules import RULES
from playerfl_core.study import machine
from playerfl_core.study import preregistration as P
from playerfl_core.study import split_rules_table as R
from playerfl_core.study.run_store import REPO_ROOT
from playerfl_core.study.runner import load_store, write_store

RULES_FILE = REPO_ROOT / "stores" / "rules" / "standard.parquet"


# -- the declaration -------------------------------------------------------------------------------
def test_the_two_sets_are_disjoint_and_every_federation_has_a_declared_kind():
    assert not set(P.DEVELOPMENT) & set(P.EVALUATION)
    for ds in (*P.DEVELOPMENT, *P.EVALUATION):
        assert P.kind_of(ds) in P.KIND_ORDER, ds
    # the evaluation set holds a kind the development set does not
    assert {P.kind_of(d) for d in P.EVALUATION} - {P.kind_of(d) for d in P.DEVELOPMENT}
    with pytest.raises(ValueError, match="no set of the pre-registration"):
        P.role_of("cancer")


def test_the_follow_up_holds_a_new_kind_with_its_own_seeds():
    assert not set(P.FOLLOW_UP) & {*P.DEVELOPMENT, *P.EVALUATION}
    kinds = {P.kind_of(d) for d in P.FOLLOW_UP}
    assert kinds == {"quantity skew"} and kinds <= set(P.KIND_ORDER)
    assert not kinds & {P.kind_of(d) for d in (*P.DEVELOPMENT, *P.EVALUATION)}
    assert all(P.role_of(d) == "follow-up" and len(P.seeds_of(d)) == 20 for d in P.FOLLOW_UP)


def test_the_second_follow_up_holds_concept_shift_and_the_added_seeds_keep_tuning_fixed():
    earlier = {*P.DEVELOPMENT, *P.EVALUATION, *P.FOLLOW_UP}
    assert not set(P.FOLLOW_UP_2) & earlier
    assert {P.kind_of(d) for d in P.FOLLOW_UP_2} == {"concept shift"}
    assert "concept shift" not in {P.kind_of(d) for d in earlier}
    assert all(P.role_of(d) == P.SECOND_FOLLOW_UP and len(P.seeds_of(d)) == 20
               for d in P.FOLLOW_UP_2)  # fmt: skip
    # item 8: Digits development federations described with 20 seeds, tuned on the first 10
    for ds in P.DEVELOPMENT:
        if ds.startswith("digits_"):
            assert len(P.seeds_of(ds)) == 20 and P.TUNING_SEEDS[ds] == tuple(range(10)), ds
    assert P.TUNING_SEEDS["heart"] == tuple(range(50)) and P.seeds_of("fmnist_rotate") == tuple(
        range(10)
    )


def test_the_confirmation_uses_fresh_seeds_of_evaluation_federations_as_its_own_set():
    assert set(P.CONFIRMATION) <= set(P.EVALUATION)
    assert len(P.CONFIRMATION_SEEDS) == 20
    for ds in P.CONFIRMATION:
        assert not set(P.CONFIRMATION_SEEDS) & set(P.seeds_of(ds)), ds  # never pooled
        assert P.role_of(ds) == P.role_of(ds, 0) == "evaluation"
        assert P.role_of(ds, P.CONFIRMATION_SEEDS[0]) == P.CONFIRMING
    assert P.role_of("fmnist_invert", P.CONFIRMATION_SEEDS[0]) == "evaluation"
    reg = pd.DataFrame(
        [(ds, s, e.label, 0.05) for ds in P.CONFIRMATION for s in P.CONFIRMATION_SEEDS
         for e in P.ALL_ENTRIES], columns=["dataset", "seed", "entry", "regret"],
    )  # fmt: skip
    reg["role"], reg["kind"] = P.CONFIRMING, reg["dataset"].map(P.kind_of)
    verdicts = P.evaluate(reg, P.CONFIRMING)
    assert len(verdicts) == 2 * len(P.ALL_ENTRIES)  # every entry on both kinds, one family
    assert set(verdicts["verdict"]) == {P.BEYOND}  # 20 seeds decide under Holm over 16


def test_worst_kinds_picks_each_entrys_largest_mean_evaluation_regret():
    rows = []
    for ds, paper, cost in (("fmnist_rotate", 0.2, 0.1), ("fmnist_invert", 0.1, 0.3),
                            ("fmnist_alpha0.05", 0.0, 0.0)):  # fmt: skip
        for s in range(10):
            rows += [(ds, s, "paper (t = 1)", paper), (ds, s, "averaging cost (tuned τ)", cost)]
    rows += [("fmnist_rotate", 15, "averaging cost (tuned τ)", 9.0)]  # a confirmation seed
    reg = pd.DataFrame(rows, columns=["dataset", "seed", "entry", "regret"])
    reg["role"] = [P.role_of(d, s) for d, s in zip(reg["dataset"], reg["seed"], strict=True)]
    reg["kind"] = reg["dataset"].map(P.kind_of)
    worst = P.worst_kinds(reg)
    assert worst == {"paper (t = 1)": "feature skew (rotate)",
                     "averaging cost (tuned τ)": "feature skew (invert)"}  # fmt: skip
    assert _confirmation_federations(worst) == ("fmnist_rotate", "fmnist_invert")


def _confirmation_federations(worst: dict[str, str]) -> tuple[str, ...]:
    """The evaluation federations of the first-epoch entries' worst kinds: the confirmation's."""
    kinds = {k for e, k in worst.items() if e != P.PROBE_LABEL}
    return tuple(d for d in P.EVALUATION if P.kind_of(d) in kinds)


def test_r2_is_contradicted_when_the_confirmation_finds_every_rule_beyond_delta():
    cols = ["entry", "kind", "mean", "n", "p", "p_holm", "verdict", "strength"]
    first = pd.DataFrame(
        [(e, "k", 0.1, 10, 0.1, 1.0, "undecided", "weak") for e in P.FIRST_EPOCH[:-1]],
        columns=cols,
    )
    assert P.claim(first).verdict.verdict == "undecided"
    confirm = first.assign(verdict=P.BEYOND, strength="strong", p_holm=1e-4)
    assert P.claim(first, confirmation=confirm).verdict.verdict == "undecided"  # cost2 open
    confirm = pd.concat([confirm, confirm.tail(1).assign(entry=P.FIRST_EPOCH[-1])])
    verdict = P.claim(first, confirmation=confirm).verdict
    assert (verdict.verdict, verdict.strength) == ("contradicted", "strong")
    one_open = confirm.assign(verdict=[P.WITHIN] + [P.BEYOND] * (len(confirm) - 1))
    assert P.claim(first, confirmation=one_open).verdict.verdict == "undecided"
    added = first.tail(1).assign(entry=P.FIRST_EPOCH[0], verdict=P.BEYOND, strength="moderate")
    both = P.claim(first, confirmation=one_open, added=added).verdict
    assert (both.verdict, both.strength) == ("contradicted", "moderate")


def test_each_family_holds_the_entries_its_declaration_named():
    rows = []
    for entry in (e.label for e in P.ALL_ENTRIES):
        for ds in ("fmnist_alpha0.05", "fmnist_swap"):
            for s in range(8):
                rows.append((ds, s, entry, 0.001 * s))
    reg = pd.DataFrame(rows, columns=["dataset", "seed", "entry", "regret"])
    reg["role"], reg["kind"] = reg["dataset"].map(P.role_of), reg["dataset"].map(P.kind_of)
    first = [e.label for e in P.ENTRIES]
    added = [e.label for e in P.ADDED_ENTRIES]
    assert list(dict.fromkeys(P.evaluate(reg)["entry"])) == first  # Holm over the 7 alone
    assert list(P.evaluate(reg, added=True)["entry"]) == added
    assert list(dict.fromkeys(P.evaluate(reg, P.SECOND_FOLLOW_UP)["entry"])) == first + added
    assert len(P.evaluate(reg)) == len(first)  # one kind each


def test_tuning_ignores_the_development_seeds_added_later(monkeypatch):
    monkeypatch.setattr(P, "GRIDS", {"disagreement": (0.05, 0.3, 0.95)})
    rt, sc = _fake(P.DEVELOPMENT, seeds=range(10))
    added = [d for d in P.DEVELOPMENT if len(P.seeds_of(d)) > len(P.TUNING_SEEDS[d])]
    late_rt, late_sc = _fake(added, seeds=range(10, 20), rng=np.random.default_rng(1))
    late_rt["value"] = 0.5  # on the added seeds only τ = 0.95 federates every unit ...
    late_sc["val"] = late_sc["test"] = late_sc["p"].astype(float)  # ... and that is best there
    assert P.tune(pd.concat([rt, late_rt]), pd.concat([sc, late_sc])) == {"disagreement": 0.3}


def test_curvature_comparison_pairs_the_two_cost_rules_by_seed():
    first, second = "averaging cost (tuned τ)", "averaging cost, second order (tuned τ)"
    rows = []
    for ds in ("fmnist_rotate", "digits_quantity", "fmnist_swap"):
        for s in range(12):
            rows.append((ds, 0.1, s, first, 1, 0.05 + 0.001 * s))
            rows.append((ds, 0.1, s, second, 0 if s % 3 else 1, 0.01 + 0.0005 * s))
    reg = pd.DataFrame(rows, columns=["dataset", "lr", "seed", "entry", "p_rule", "regret"])
    reg["role"] = reg["dataset"].map(P.role_of)
    comp = P.curvature_comparison(reg)
    assert list(comp["set"]) == list(P.CURVATURE_SETS)
    assert (comp["verdict"] == "supported").all() and (comp["mean"] > 0).all()
    assert (comp["same_split"] == 4).all() and (comp["p_holm"] >= comp["p"]).all()
    swapped = reg.assign(entry=reg["entry"].map({first: second, second: first}))
    assert (P.curvature_comparison(swapped)["verdict"] == "contradicted").all()


def test_tuned_thresholds_are_the_rules_defaults():
    for rule in ("cost", "disagreement", "cost2"):
        assert RULES[rule].default_threshold == P.TUNED[rule]
    assert RULES["paper"].default_threshold == 1.0  # PLayer-FL keeps the paper's t


def _fake(datasets, seeds=range(6), units=3, rng=None):
    """A rules table and sweep scores in which the disagreement rule at τ = 0.3 finds the best
    split and other thresholds do not."""
    rng = rng or np.random.default_rng(0)
    rules, scores = [], []
    for ds in datasets:
        for s in seeds:
            best = int(rng.integers(0, units + 1))
            d = [0.1] * best + [0.9] * (units - best)  # federate while D ≤ τ: p = best at 0.3
            for k, v in enumerate(d, start=1):
                rules.append((ds, 0.1, s, "disagreement", 0.3, best, f"u{k}", k, "disagreement", v))
            for p in range(units + 1):
                val = 0.9 - 0.1 * abs(p - best)
                scores.append((ds, 0.1, s, p, val, val))
    rt = pd.DataFrame(rules, columns=R.COLUMNS)
    sc = pd.DataFrame(scores, columns=["dataset", "lr", "seed", "p", "val", "test"])
    return rt, sc


def test_tuning_reads_the_development_set_only(monkeypatch):
    monkeypatch.setattr(P, "GRIDS", {"disagreement": (0.05, 0.3, 0.95)})
    rt, sc = _fake(P.DEVELOPMENT)
    assert P.tune(rt, sc) == {"disagreement": 0.3}
    # Evaluation rows that would favour another threshold change nothing.
    ev_rt, ev_sc = _fake(P.EVALUATION, rng=np.random.default_rng(1))
    ev_rt["value"] = 0.5  # only τ = 0.95 federates every unit there ...
    ev_sc["val"] = ev_sc["test"] = ev_sc["p"].astype(float)  # ... and everything is best there
    both_rt, both_sc = pd.concat([rt, ev_rt]), pd.concat([sc, ev_sc])
    assert P.tune(both_rt, both_sc) == {"disagreement": 0.3}
    with pytest.raises(ValueError, match="lacks development federations"):
        P.tune(rt[rt["dataset"] != "heart"], sc)


def test_the_declared_test_decides_per_kind_with_holm_and_the_headline_needs_every_kind():
    rows = []
    for entry, regret in (("good", 0.0), ("bad", 0.2)):
        for ds in ("fmnist_alpha0.05", "fmnist_rotate"):
            for s in range(10):
                rows.append((ds, s, entry, regret + 0.001 * s))
    reg = pd.DataFrame(rows, columns=["dataset", "seed", "entry", "regret"])
    reg["role"], reg["kind"] = reg["dataset"].map(P.role_of), reg["dataset"].map(P.kind_of)
    verdicts = P.evaluate(reg)
    assert set(verdicts.query("entry == 'good'")["verdict"]) == {P.WITHIN}
    assert set(verdicts.query("entry == 'bad'")["verdict"]) == {P.BEYOND}
    assert (verdicts["p_holm"] >= verdicts["p"]).all()
    assert P.headline(verdicts) == ["good"]
    mixed = reg.copy()
    mixed.loc[(mixed["entry"] == "good") & (mixed["dataset"] == "fmnist_rotate"), "regret"] = 0.3
    assert P.headline(P.evaluate(mixed)) == []
    with pytest.raises(ValueError, match="No regrets of the development set"):
        P.evaluate(reg, "development")


# -- the committed rules table ---------------------------------------------------------------------
@pytest.fixture(scope="module")
def committed():
    if not RULES_FILE.exists():
        pytest.fail(f"{RULES_FILE} is missing: `make standard` (or `playerfl rules`) writes it.")
    return load_store(RULES_FILE)


def test_the_committed_rules_table_covers_every_preregistered_seed(committed):
    table, record = committed
    assert record["rows"] == len(table)
    have = table.groupby("dataset")["seed"].apply(set)
    for ds in (*P.DEVELOPMENT, *P.EVALUATION, *P.FOLLOW_UP, *P.FOLLOW_UP_2):
        assert set(P.seeds_of(ds)) <= have[ds], ds
    assert set(table["rule"]) == {*RULES, R.PROBE}
    same, total = record["replay_same"]
    assert same == total  # the replay gave every seed's recorded split when it was made


def test_the_committed_tuning_is_what_the_procedure_gives(committed):
    from playerfl_core.study.archive import load_archive
    from playerfl_core.study.split_scores import sweep_scores

    table, _ = committed
    sweep = load_archive(REPO_ROOT / "stores" / "standard")[0]
    sweep = sweep[sweep["dataset"].isin(P.DEVELOPMENT)]
    assert P.tune(table, sweep_scores(sweep)) == P.TUNED


def test_the_declared_confirmation_federations_are_what_the_selection_gives(committed):
    from playerfl_core.study.archive import load_archive
    from playerfl_core.study.split_scores import sweep_scores

    table, _ = committed
    sweep = load_archive(REPO_ROOT / "stores" / "standard")[0]
    sweep = sweep[sweep["dataset"].isin(P.EVALUATION)]
    scores = sweep_scores(sweep)
    scores = scores[[s in P.seeds_of(d) for d, s in zip(scores["dataset"], scores["seed"],
                                                          strict=True)]]  # fmt: skip
    table = table[table["dataset"].isin(P.EVALUATION)]
    worst = P.worst_kinds(P.entry_regrets(table, scores))
    assert _confirmation_federations(worst) == P.CONFIRMATION
    assert {worst[e.label] for e in P.ALL_ENTRIES if e.rule == "paper"} == {"feature skew (rotate)"}


def test_a_replayed_first_epoch_gives_the_committed_quantities(committed):
    """Two seeds replayed here: bit for bit on the machine that wrote the table; elsewhere
    (``machine``: README, "What reproduces where") one epoch of float32 drift moves the small
    per-unit quantities by up to about 1.5 % (measured with perturbed last bits), so they must
    agree within 5 % and every rule must pick the same split."""
    table, record = committed
    same_machine = record["machine"]["key"] == machine.fingerprint(threads=1)["key"]
    for ds, seed in (("heart", 7), ("digits_rotate", 3)):
        lr = P.LEARNING_RATES[P.base_of(ds)]
        again = R.rules_table(ds, [seed], "standard", lr=lr, device="cpu", progress=False)
        stored = table[(table["dataset"] == ds) & (table["seed"] == seed)]
        stored = stored[stored["rule"] != R.PROBE].reset_index(drop=True)
        if same_machine:
            pd.testing.assert_frame_equal(again, stored, check_exact=True)
        else:
            assert np.allclose(again["value"], stored["value"], rtol=5e-2, atol=1e-9)
            assert again["p"].tolist() == stored["p"].tolist()


def test_a_changed_rules_table_is_refused(committed, tmp_path):
    table, _ = committed
    path = write_store(table.head(50), tmp_path / "r.parquet", {"sweeps": "test"})
    load_store(path)
    (tmp_path / "r.parquet").write_bytes(table.head(40).to_parquet())
    with pytest.raises(ValueError, match="does not match the SHA-256"):
        load_store(path)


def test_the_follow_up_is_analysed_only_when_every_declared_seed_is_there():
    from playerfl_core.book.reports import rule_follow_ups as RFU
    from playerfl_core.book.reports.rule_study import has_every_seed

    rows = [(ds, s) for ds in P.FOLLOW_UP for s in P.seeds_of(ds)]
    full = pd.DataFrame(rows, columns=["dataset", "seed"])
    assert has_every_seed(full, full)
    short = full[full["seed"] != P.seeds_of(P.FOLLOW_UP[0])[-1]]
    assert not has_every_seed(short, full) and not has_every_seed(full, short)
    assert "not computed" in RFU.follow_up_headline(None)
    assert "make standard" in RFU.follow_up_lines(None)
    assert "digits_swap" in RFU.follow_up_lines(None, P.FOLLOW_UP_2)
    probe = next(e.label for e in P.ENTRIES if e.rule == "probe")
    short = probe.split(" (")[0]
    verdicts = pd.DataFrame(
        {
            "entry": [
                "paper (t = 1)",
                "paper, median pooling",
                "averaging cost (tuned τ)",
                "x",
                probe,
            ],
            "verdict": [P.BEYOND, P.BEYOND, P.WITHIN, "undecided", P.WITHIN],
        }
    )
    # names apart by semicolons: 'paper (t = 1), paper, median pooling' reads as three rules
    assert RFU.follow_up_headline(verdicts) == (
        f"On quantity skew, of the 4 first-epoch rules (the {short} trains every split, so it "
        "is left out), 1 is within δ = 0.02: averaging cost (tuned τ). 2 are beyond it: "
        "paper (t = 1); paper, median pooling. 1 is undecided."
    )
    nothing = verdicts.assign(verdict="undecided")
    assert RFU.follow_up_headline(nothing) == (
        f"On quantity skew, of the 4 first-epoch rules (the {short} trains every split, so it "
        "is left out), none is within δ = 0.02 and none is decided beyond it: all 4 are undecided."
    )
    decided = verdicts.assign(verdict=[P.BEYOND, P.BEYOND, P.WITHIN, P.WITHIN, P.WITHIN])
    assert RFU.follow_up_headline(decided).endswith("paper (t = 1); paper, median pooling.")
    assert " 0 " not in RFU.follow_up_headline(decided)  # never "0 are undecided"
    beyond = verdicts.assign(verdict=P.BEYOND)
    assert RFU.follow_up_headline(beyond).endswith("none is within δ = 0.02. All 4 are beyond it.")
    # the second-order rule, tested in a family of its own, is counted too (of its kinds, only
    # the follow-up's)
    second = P.ADDED_ENTRIES[0].label
    added = pd.DataFrame({"entry": [second, second], "kind": ["quantity skew", "base federation"],
                          "verdict": [P.WITHIN, P.BEYOND]})  # fmt: skip
    assert RFU.follow_up_headline(verdicts, added=added).startswith(
        f"On quantity skew, of the 5 first-epoch rules (the {short} trains every split, so it "
        f"is left out), 2 are within δ = 0.02: averaging cost (tuned τ); {second}. 2 are "
        "beyond"
    )


def test_equal_regrets_with_different_verdicts_are_put_down_to_the_family_size():
    """The second-order cost picks the first-order cost's split on every quantity-skew seed,
    yet read "within δ" beside "undecided": its own family of one test against Holm over seven.
    The pages say so, by the data (a sentence only where the regrets are equal seed by seed)."""
    from types import SimpleNamespace

    from playerfl_core.book.reports import rule_scope as RS

    costs = [e.label for e in P.ALL_ENTRIES if e.rule in ("cost", "cost2")]
    # the costs' regret: half the seeds at 0, half at 0.028, not skewed, so that both tests of
    # the mean call it within δ alone (p ≈ 0.02) and not after Holm over seven
    rows = [(ds, 0.01, seed, e.label, P.kind_of(ds), P.role_of(ds),
             0.028 * (seed % 2) if e.label in costs else 0.04 * (seed % 2))
            for ds in P.FOLLOW_UP for seed in P.seeds_of(ds) for e in P.ALL_ENTRIES]  # fmt: skip
    regrets = pd.DataFrame(
        rows, columns=["dataset", "lr", "seed", "entry", "kind", "role", "regret"]
    )

    def study(reg):
        added = {"follow-up": P.evaluate(reg, "follow-up", added=True)}
        return SimpleNamespace(regrets=reg, evaluation=None, added=added,
                               follow_up=P.evaluate(reg, "follow-up"), second_follow_up=None,
                               confirmation=None)  # fmt: skip

    s = study(regrets)
    pairs = RS.same_regret_pairs(s)
    assert len(pairs) == 1
    pair = pairs.iloc[0]
    assert (pair["entry_a"], pair["tests_a"], pair["verdict_a"]) == (costs[1], 1, P.WITHIN)
    assert (pair["entry_b"], pair["tests_b"], pair["verdict_b"]) == (costs[0], 7, "undecided")
    note = RS.family_size_note(s)
    assert note.startswith("On quantity skew (the quantity-skew follow-up)"), note
    assert "its own family of one test" in note and "a family of 7" in note
    assert "differ by the size of the families" in note
    plain = RS.family_size_note(s, plain=True)  # chapter 04b's words
    assert "the first is tested alone (Holm-adjusted p" in plain
    assert "the second among 7 tests (Holm-adjusted p" in plain and "famil" not in plain
    assert RS.family_size_note(s, sets=["evaluation"]) == ""
    one_seed = (regrets["entry"] == costs[1]) & (regrets["seed"] == 1)
    assert (
        RS.family_size_note(study(regrets.assign(regret=regrets["regret"].mask(one_seed, 0.001))))
        == ""
    )


def test_each_table_says_which_test_sets_its_regrets_were_scored_on():
    """The appendix's tables read Fashion-MNIST's regrets on 2,000 test images and Digits' on
    the book's test sets, and said so only in a later caption; its disclosure gave the paper's
    rule 0.010 beside the table's 0.029 with no word of the rescoring between them."""
    from types import SimpleNamespace

    from playerfl_core.book.reports import rule_scope as RS

    rows = [(ds, 0.01, seed, P.ENTRIES[0].label, P.role_of(ds), P.base_of(ds) == "fmnist")
            for ds in P.FOLLOW_UP for seed in P.seeds_of(ds)]  # fmt: skip
    regrets = pd.DataFrame(rows, columns=["dataset", "lr", "seed", "entry", "role", "rescored"])
    study = SimpleNamespace(regrets=regrets, test_only=None)
    assert RS.scoring_text(study, "follow-up") == (
        "Regrets scored: Fashion-MNIST on 2,000 test images per client (the tenth declaration); "
        "Digits on the book's test sets."
    )
    later = regrets.assign(rescored=regrets["rescored"] & (regrets["seed"] < 5))  # item 17's
    text = RS.scoring_text(SimpleNamespace(regrets=later, test_only=study), "follow-up")
    assert text.startswith(
        "Regrets scored: Fashion-MNIST 5 with 2,000 validation and 2,000 test images per client "
        "(the eleventh declaration), 15 on 2,000 test images per client (the tenth declaration); "
    ), text

    def verdicts(mean):
        return pd.DataFrame({"entry": [P.ENTRIES[0].label], "kind": ["base federation"],
                             "mean": [mean]})  # fmt: skip

    book = SimpleNamespace(evaluation=verdicts(0.0104))
    now = SimpleNamespace(book=book, evaluation=verdicts(0.0291), test_only=None)
    assert RS.disclosed_regret_text(now) == (
        "mean regret 0.010 on the book's test sets of about 80 images per client, the only "
        "scoring at the time; the evaluation table below reads 0.029 for the same seeds, scored "
        "on 2,000 test images per client (the tenth declaration)"
    )
    unrescored = SimpleNamespace(book=None, evaluation=verdicts(0.0104), test_only=None)
    assert RS.disclosed_regret_text(unrescored).endswith("the only scoring at the time")


def test_the_follow_ups_are_named_by_their_kind_wherever_the_book_shows_a_set():
    """The stored roles name the two follow-ups by their order of declaration; every table,
    list and sentence chapter 04b and the appendix show names them by their kind (issue 35)."""
    from types import SimpleNamespace

    from playerfl_core.book.reports import rule_family as RF
    from playerfl_core.book.reports import rule_follow_ups as RFU
    from playerfl_core.book.reports import rule_scope as RS
    from playerfl_core.book.reports.rule_follow_ups import r2_tests
    from playerfl_core.book.style import set_label

    first, second = P.FOLLOW_UP[0], P.FOLLOW_UP_2[0]
    quantity, concept = set_label(P.role_of(first)), set_label(P.role_of(second))
    assert (quantity, concept) == ("quantity-skew follow-up", "concept-shift follow-up")
    assert quantity.startswith(P.kind_of(first).replace(" ", "-"))
    assert concept.startswith(P.kind_of(second).replace(" ", "-"))
    assert set_label("follow-up, second-order rule") == f"{quantity}, second-order rule"
    for kept in ("development", "evaluation", "evaluation, second-order rule", P.CONFIRMING):
        assert set_label(kept) == kept

    rows = [(ds, 0.01, seed, e.label, P.kind_of(ds), P.role_of(ds),
             0.3 if seed < 3 and e in P.ENTRIES else 0.0, 1 + (seed < 3 and e in P.ENTRIES))
            for ds in (first, second) for seed in range(30) for e in P.ALL_ENTRIES]  # fmt: skip
    regrets = pd.DataFrame(
        rows, columns=["dataset", "lr", "seed", "entry", "kind", "role", "regret", "p_rule"]
    )
    bare = {"follow-up", P.SECOND_FOLLOW_UP, "follow-up, second-order rule"}

    def named(shown) -> set:
        assert not bare & set(shown), shown
        return set(shown)

    re = P.reanalysis(regrets)
    assert named(RS.reanalysis_table(re).index.get_level_values("family")) == {quantity, concept}
    lines = RS.reanalysis_lines(re).splitlines()
    assert [line.split(" (")[0] for line in lines] == [
        f"- {quantity}",
        f"- {quantity}, second-order rule",
        f"- {concept}",
    ]
    assert named(RS.plan_table()["set"]) >= {quantity, concept, "evaluation", P.CONFIRMING}

    added = {"follow-up": P.evaluate(regrets, "follow-up", added=True)}
    study = SimpleNamespace(regrets=regrets, added=added)
    assert RF.added_lines(study).startswith(f"- **{quantity} set**")
    curvature = RF.curvature_lines(study).splitlines()
    assert [line.split(":")[0] for line in curvature] == [f"- **{quantity}**", f"- **{concept}**"]
    assert RFU.follow_up_headline(None, "concept shift") == (
        "The follow-up on concept shift is not computed in these sweeps."
    )

    book = SimpleNamespace(regrets=regrets.assign(rescored=False))
    rescored = SimpleNamespace(book=book, test_only=None, regrets=regrets.assign(rescored=True))
    assert named(r2_tests(rescored).index.get_level_values("family")) == {
        quantity,
        f"{quantity}, second-order rule",
        concept,
    }


def test_the_confirmation_is_analysed_only_with_its_fresh_seeds_and_decides_r2():
    from playerfl_core.book.reports import rule_family as RF
    from playerfl_core.book.reports import rule_follow_ups as RFU
    from playerfl_core.book.reports.rule_study import has_every_seed

    old = pd.DataFrame(
        [(d, s) for d in P.CONFIRMATION for s in range(10)], columns=["dataset", "seed"]
    )
    new = pd.DataFrame(
        [(d, s) for d in P.CONFIRMATION for s in P.CONFIRMATION_SEEDS], columns=["dataset", "seed"]
    )
    assert has_every_seed(new, new, P.CONFIRMATION, P.CONFIRMATION_SEEDS)
    assert not has_every_seed(old, old, P.CONFIRMATION, P.CONFIRMATION_SEEDS)
    assert has_every_seed(old, old, P.CONFIRMATION)  # the first test's seeds are there
    assert "make standard" in RFU.confirmation_lines(None)

    cols = ["entry", "kind", "mean", "lo", "hi", "n", "p", "p_holm", "verdict", "strength"]
    first = pd.DataFrame(
        [(e, "k", 0.1, 0.05, 0.2, 10, 0.1, 1.0, "undecided", "weak") for e in P.FIRST_EPOCH],
        columns=cols,
    )
    confirm = pd.concat(
        [first.assign(kind=k, n=20, verdict=P.BEYOND, strength="strong", p_holm=1e-4)
         for k in ("feature skew (rotate)", "mixed (rotate + α = 0.1)")], ignore_index=True,
    )  # fmt: skip
    confirm.loc[confirm["entry"] == P.FIRST_EPOCH[0], "verdict"] = P.WITHIN
    study = RF.RuleStudy(*[None] * 3, first, *[None] * 3, confirmation=confirm)
    lines = RFU.confirmation_lines(confirm).splitlines()
    assert len(lines) == len(P.FIRST_EPOCH) and "feature skew (rotate): within δ" in lines[0]
    assert "Holm-adjusted p 1.0\u00a0×\u00a010⁻⁴" in lines[1] and "(20 seeds each)" in lines[1]
    head = RFU.confirmation_headline(study)
    assert f"{len(P.FIRST_EPOCH) - 1} of the {len(P.FIRST_EPOCH)} first-epoch entries" in head
    assert "and 1 of them is within δ on both" in head and "is undecided" in head
    confirm["verdict"] = P.BEYOND
    head = RFU.confirmation_headline(study)
    assert f"every one of the {len(P.FIRST_EPOCH)} first-epoch entries is beyond δ" in head
    assert "none is within δ on both" in head and "is contradicted (strong evidence)" in head
    # glued as plain text, it cannot link the scorecard: the page names and links it after it
    assert "scorecard" not in head and head.endswith("(strong evidence).")


def test_rule_costs_read_to_three_significant_digits():
    """04b's cost table: the paper's rule uploads a few sensitivities (kB > 0, never "0.0"),
    the probe hundreds of kB, each to three significant digits (647, not 646.992)."""
    from data_prep import load
    from playerfl_core.book.reports import rule_family as RF
    from playerfl_core.fl.models import model_for

    costs = RF.rule_costs({"digits": model_for(load("digits", profile="quick", seed=0), 1.0, 0)})
    upload = costs["upload (kB)"].iloc[:, 0]
    assert 0 < upload["paper"] < 0.1 and upload["probe"] > 100
    assert all(float(f"{v:.3g}") == v for v in upload), upload.tolist()
