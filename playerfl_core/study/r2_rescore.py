"""R2's families at low evaluation noise (``study.preregistration`` §16): every regret of the
pre-registered split-rule test, its test terms scored on 2,000 images per client where the
federation has images to spare.

R1's rescore rescored the runs of the paper's rule's split and of the validation oracle's on every
seed of every Fashion-MNIST federation. R2's families also read the splits of the other rules
(the tuned paper's rule, its two poolings, both averaging-cost rules, update disagreement, the
probe): this module rescores the runs of those splits that R1's rescore did not, with its
procedure (:func:`~playerfl_core.study.r1_rescore.rescore_run`: trained again from the manifest
entry, compared row by row with the committed run, each client's best-validation model scored on
its own 2,000 test images). :func:`r2_regrets` reads both stores.

Computed by ``playerfl study run r2_rescore`` (resumable: each finished run waits in
``results/r2_rescore/``) and committed to ``stores/ladder/r2_rescore.parquet`` with its record.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pandas as pd

from playerfl_core.study import r1_rescore as R1
from playerfl_core.study.r1_rescore import gather, record_extra, run_one, task_name

__all__ = ["gather", "record_extra", "run_one", "task_name"]

WORK = "r2_rescore"
TESTED = ("evaluation", "follow-up", "second follow-up", "confirmation")
"""The sets whose families decide claim R2 (the development set only tunes thresholds)."""


def store_path() -> Path:
    from playerfl_core.study.archive import stores_dir

    return stores_dir() / "ladder" / "r2_rescore.parquet"


def load() -> tuple[pd.DataFrame, dict] | None:
    """The committed rescore and its record; None when not computed."""
    from playerfl_core.study.split_rules_table import load_rules_table

    return load_rules_table(store_path()) if store_path().exists() else None


def tasks(regrets: pd.DataFrame, done: Sequence = ()) -> list[tuple[str, float, int, int]]:
    """Every run R2's rescore needs and R1's rescore's store (``done``) lacks: (dataset, lr,
    seed, p) of each entry's split and the oracle's on each seed of R2's tested sets (``regrets``:
    ``preregistration.entry_regrets``) whose federation has held-out images."""
    tested = regrets[regrets["role"].isin(TESTED)]
    return sorted(set(R1.tasks(tested)) - set(done))


def committed_regrets() -> pd.DataFrame:
    """Every entry's regret on every seed of the committed sweeps and rules table that the
    pre-registration declares (chapter 04b's ``RuleStudy.regrets``)."""
    from playerfl_core.study import preregistration as P
    from playerfl_core.study.archive import archive_dir, stores_dir
    from playerfl_core.study.split_rules_table import load_rules_table
    from playerfl_core.study.split_scores import sweep_scores
    from playerfl_core.study.split_sweeps import load_sweeps

    datasets = (*P.DEVELOPMENT, *P.EVALUATION, *P.FOLLOW_UP, *P.FOLLOW_UP_2)
    sweep = load_sweeps(archive_dir(R1.PROFILE))
    sweep = sweep[sweep["dataset"].isin(datasets)]
    sweep = sweep[sweep["lr"] == sweep["dataset"].map(lambda d: P.LEARNING_RATES[P.base_of(d)])]
    rules = load_rules_table(stores_dir() / "rules" / f"{R1.PROFILE}.parquet")[0]
    scores = sweep_scores(sweep)
    declared = [s in P.seeds_of(d) or P.role_of(d, s) == P.CONFIRMING
                for d, s in zip(scores["dataset"], scores["seed"], strict=True)]  # fmt: skip
    return P.entry_regrets(rules[rules["dataset"].isin(datasets)], scores[declared])


def runs_in(rescored: tuple | None) -> set[tuple[str, float, int, int]]:
    """The runs a rescore's (table, record) holds, as :func:`tasks` names them."""
    from playerfl_core.fl.algorithms.prefix import parse_prefix_name

    if rescored is None:
        return set()
    keys = rescored[0][["dataset", "algorithm", "lr", "seed"]].drop_duplicates()
    return {(d, float(lr), int(s), parse_prefix_name(a))
            for d, a, lr, s in keys.itertuples(index=False)}  # fmt: skip


def r2_regrets(regrets: pd.DataFrame, rescored: Sequence | None = None) -> pd.DataFrame:
    """R2's regrets (R2's rescore): every row of ``regrets`` whose two runs R1's or R2's rescore's
    store holds gets both test terms on the large test sets (``r1_rescore.rescored_regrets``);
    ``rescored``: the two (table, record) pairs, else the committed ones."""
    pairs = rescored if rescored is not None else (R1.load(), load())
    tables = [pair[0] for pair in pairs if pair is not None]
    table = pd.concat(tables, ignore_index=True) if tables else None
    return R1.rescored_regrets(regrets, table, "r2_rescore")


def family_comparison(book: pd.DataFrame, rescored: pd.DataFrame) -> pd.DataFrame:
    """Per declared family (``preregistration.FAMILIES``), entry and kind: the mean regret and
    verdict with the book's test sets (``book``) and with the large ones (``rescored``, from
    :func:`r2_regrets`), and the seeds rescored. Columns: family, entry, kind, n, rescored,
    mean_book, verdict_book, p_holm_book, mean_large, lo_large, hi_large, verdict_large,
    p_holm_large, changed."""
    from playerfl_core.study import preregistration as P

    keys = ["entry", "kind"]
    parts = []
    for name, role, added in P.FAMILIES:
        mine = rescored[(rescored["role"] == role) & P.in_family(rescored["entry"], role, added)]
        if mine.empty:
            continue
        old = P.evaluate(book, role, added=added)[[*keys, "n", "mean", "verdict", "p_holm"]]
        new = P.evaluate(rescored, role, added=added)
        new = new[[*keys, "mean", "lo", "hi", "verdict", "p_holm"]]
        both = old.merge(new, on=keys, suffixes=("_book", "_large"))
        counts = mine.groupby(keys, sort=False)["rescored"].sum().rename("rescored")
        both = both.merge(counts.reset_index(), on=keys)
        parts.append(both.assign(family=name))
    if not parts:
        raise ValueError("No regrets of any declared family to compare.")
    out = pd.concat(parts, ignore_index=True).rename(columns={"lo": "lo_large", "hi": "hi_large"})
    out["changed"] = out["verdict_book"] != out["verdict_large"]
    return out[["family", *keys, "n", "rescored", "mean_book", "verdict_book", "p_holm_book",
                "mean_large", "lo_large", "hi_large", "verdict_large", "p_holm_large",
                "changed"]]  # fmt: skip


def study_tasks(study) -> list[tuple[str, float, int, int]]:
    """The runs R2's families need that R1's committed rescore lacks."""
    if R1.load() is None:
        raise ValueError(
            "R1's rescore is not committed: run `playerfl study run r1_rescore` first (this "
            "rescore reads its runs)."
        )
    return tasks(committed_regrets(), runs_in(R1.load()))
