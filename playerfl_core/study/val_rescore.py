"""R1's and R2's families with large validation sets too (the pre-registration record, point 17):
every split of every seed trained again, each client's round and
the oracle's split chosen on 2,000 validation images, every test term on 2,000 test images.

R1's and R2's rescores scored the test terms only: the oracle's split and every client's round are
still chosen on the book's 64 validation images per client, whose noise (about δ per run) can
make the oracle miss the best split and so understate or overstate a regret. Here every split
p = 0 … L of every seed of R1's and R2's Fashion-MNIST families is trained again from its
manifest entry (compared row by row with the committed run) and scored with
``r1_rescore.rescore_run(..., large_val=True)``. The seeds the evaluation rung already
trained this way (the same runs, the same draw of images, its scores equal bit for bit) are
read from its store, not trained again. :func:`large_sweep` is the sweep both give: chapter
code reads it as any sweep (``split_scores.sweep_scores``, ``split_rules_table.probe_rows``).
:func:`r1_regrets` and :func:`r2_regrets` are the declared reading, written before any of the
rescore's runs could be read (checked on the evaluation rung's 20 seeds, which give its
regrets): they put the validation rescore's regrets in place of the committed ones seed by seed,
for R1's family and for ``r2_rescore.family_comparison``.

Computed by ``playerfl study run val_rescore`` and committed to
``stores/ladder/val_rescore.parquet`` with its record. Its 1,020 runs took 36,618 CPU-s (about
10 CPU-hours), more than one working session on 2 cores: each finished run waited in
``stores/pending/val_rescore/`` (:func:`~playerfl_core.study.archive.pending_dir`), committed as
it was, so that the command resumed on any machine; each run's record names the machine that
computed it. No chapter reads that folder; the store was written once every run existed, and
the folder then left the tree (git history keeps it).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pandas as pd

from playerfl_core.study import r1_rescore as R1
from playerfl_core.study import r2_rescore as R2
from playerfl_core.study.r1_rescore import gather, record_extra, run_one, task_name

__all__ = ["gather", "record_extra", "run_one", "task_name"]

WORK = "val_rescore"


def store_path() -> Path:
    from playerfl_core.study.archive import stores_dir

    return stores_dir() / "ladder" / "val_rescore.parquet"


def load() -> tuple[pd.DataFrame, dict] | None:
    """The committed rescore and its record; None when not computed."""
    from playerfl_core.study.split_rules_table import load_rules_table

    return load_rules_table(store_path()) if store_path().exists() else None


def seeds(r1: pd.DataFrame, r2: pd.DataFrame) -> list[tuple[str, float, int]]:
    """Every (dataset, lr, seed) of R1's family (``r1``: its regrets) and of R2's tested sets
    (``r2``: ``preregistration.entry_regrets``) whose federation has held-out images."""
    tested = r2[r2["role"].isin(R2.TESTED)]
    both = pd.concat([r1[["dataset", "lr", "seed"]], tested[["dataset", "lr", "seed"]]])
    both = both[both["dataset"].map(R1.has_held_out)]
    return sorted({(d, float(lr), int(s)) for d, lr, s in both.itertuples(index=False)})


def rung_seeds(rung: pd.DataFrame | None) -> set[tuple[str, float, int]]:
    """The (dataset, lr, seed) the evaluation rung holds (its table, or None)."""
    if rung is None:
        return set()
    keys = rung[["dataset", "lr", "seed"]].drop_duplicates()
    return {(d, float(lr), int(s)) for d, lr, s in keys.itertuples(index=False)}


def tasks(
    wanted: Sequence, splits: pd.DataFrame, done: set = frozenset()
) -> list[tuple[str, float, int, int]]:
    """(dataset, lr, seed, p) of every committed split (``splits``: columns dataset, lr, seed,
    p, as ``split_scores.sweep_scores``) of each seed of ``wanted`` not in ``done``."""
    keys = {k for k in wanted if k not in done}
    rows = splits[["dataset", "lr", "seed", "p"]].itertuples(index=False)
    out = sorted(t for t in {(d, float(lr), int(s), int(p)) for d, lr, s, p in rows}
                 if t[:3] in keys)  # fmt: skip
    missing = keys - {t[:3] for t in out}
    if missing:
        raise ValueError(
            f"{len(missing)} seeds have no committed split sweep (e.g. {sorted(missing)[0]}); "
            "the validation rescore retrains committed runs only."
        )
    return out


def large_sweep(rescored: tuple | None = None, rung: tuple | None = None) -> pd.DataFrame | None:
    """The sweep with 2,000 validation and test images per client: the committed rescore's
    runs and the evaluation rung's (each seed from one of them); None when either is missing.
    ``rescored``, ``rung``: (table, record) pairs in place of the committed ones."""
    from playerfl_core.study import eval_rung

    rescored = rescored if rescored is not None else load()
    rung = rung if rung is not None else eval_rung.load()
    if rescored is None or rung is None:
        return None
    mine = rescored[0]
    overlap = rung_seeds(mine) & rung_seeds(rung[0])
    if overlap:
        raise ValueError(
            f"{len(overlap)} seeds are in both the rescore and the evaluation rung (e.g. "
            f"{sorted(overlap)[0]}); each seed is read from one store."
        )
    return pd.concat([mine, rung[0]], ignore_index=True)


def r1_regrets(regrets: pd.DataFrame, sweep: pd.DataFrame, rules: pd.DataFrame) -> pd.DataFrame:
    """R1's regrets with the validation rescore's in place: every row of ``regrets`` (the paper's
    rule's, as ``split_scores.regrets`` gives them) whose seed the large ``sweep`` holds is
    recomputed from it (the oracle's split chosen on the large validation sets, the rule's split as
    committed in ``rules``, both test terms on the large test sets), with ``rescored`` True; the
    other rows stay as given (``rescored`` False)."""
    from playerfl_core.study.split_scores import regrets as split_regrets
    from playerfl_core.study.split_scores import sweep_scores

    large = split_regrets(sweep_scores(sweep), rules, "paper")
    return _replace(regrets, large, ["dataset", "lr", "seed"])


def r1_family(
    regrets: pd.DataFrame, rescored: tuple | None = None, rung: tuple | None = None
) -> pd.DataFrame:
    """R1's regrets as every page reads them: ``regrets`` (the paper's rule's, on the book's
    evaluation sets) with R1's rescore's test terms on 2,000 images (``r1_rescore.r1_regrets``), and
    the validation rescore's regret in their place on each seed the large sweep holds
    (:func:`r1_regrets`, the rule's split as ``regrets`` gives it). ``rescored`` marks the rows
    scored on large test sets, ``large_val`` those whose oracle and rounds were chosen on large
    validation sets too. ``rescored``, ``rung``: as :func:`large_sweep`."""
    test_only = R1.r1_regrets(regrets)
    sweep = large_sweep(rescored, rung)
    if sweep is None or test_only.empty:
        return test_only.assign(large_val=False)
    rules = regrets[["dataset", "lr", "seed", "variant", "p_rule", "margin"]]
    out = r1_regrets(test_only, sweep, rules)
    before = test_only["rescored"].to_numpy()  # _replace keeps the rows' order
    return out.assign(large_val=out["rescored"], rescored=out["rescored"].to_numpy() | before)


def large_sets_text(regrets: pd.DataFrame) -> str:
    """What the large evaluation sets of ``regrets`` (:func:`r1_family`) are, for a sentence."""
    n = f"{R1.TEST_PER_CLIENT:,}"
    if "large_val" in regrets and regrets["large_val"].any():
        return f"{n} validation and test images per client"
    return f"{n} test images per client"


def r2_regrets(
    regrets: pd.DataFrame, sweep: pd.DataFrame, rules_table: pd.DataFrame
) -> pd.DataFrame:
    """R2's regrets with the validation rescore's in place: every row of ``regrets``
    (``preregistration.entry_regrets``) whose seed the large ``sweep`` holds is recomputed from
    it: each first-epoch entry keeps its committed split (``rules_table``), the validation
    probe picks again on the large validation sets after its rounds, the oracle's split is
    chosen on them, and both test terms are on the large test sets; ``rescored`` marks them."""
    from playerfl_core.study import preregistration as P
    from playerfl_core.study.split_rules_table import PROBE, RUN, probe_rows
    from playerfl_core.study.split_scores import sweep_scores

    scores = sweep_scores(sweep)
    mine = rules_table.merge(scores[RUN].drop_duplicates(), on=RUN)
    mine = pd.concat([mine[mine["rule"] != PROBE], probe_rows(sweep, P.PROBE_ROUNDS)])
    large = P.entry_regrets(mine, scores)
    return _replace(regrets, large, ["dataset", "lr", "seed", "entry"])


def _replace(old: pd.DataFrame, new: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    """``old`` with each row of a seed that ``new`` holds replaced by ``new``'s row of the same
    ``keys``, in ``old``'s order; raises when ``new`` lacks one of them (a seed is read from one
    procedure, never half from each)."""
    seeds = ["dataset", "lr", "seed"]
    held = set(new[seeds].itertuples(index=False, name=None))
    out = old.drop(columns="rescored", errors="ignore").reset_index(drop=True)
    covered = pd.Series([k in held for k in out[seeds].itertuples(index=False, name=None)])
    new = new.set_index(keys)
    rows = pd.MultiIndex.from_frame(out.loc[covered, keys])
    lost = rows.difference(new.index)
    if len(lost):
        raise ValueError(
            f"The large sweep holds the seed of {len(lost)} regrets it does not recompute (e.g. "
            f"{lost[0]}): each seed is read from one procedure."
        )
    for column in [c for c in out.columns if c in new.columns]:
        out.loc[covered, column] = new.loc[rows, column].to_numpy()
    return out.assign(rescored=covered.to_numpy())


def oracle_moves(book: pd.DataFrame, large: pd.DataFrame) -> tuple[int, int]:
    """(seeds whose validation oracle's split moved with the large validation sets, seeds
    rescored): ``book`` and ``large`` are R1's regrets before and after :func:`r1_regrets`."""
    keys = ["dataset", "lr", "seed"]
    both = book.merge(large[large["rescored"]], on=keys, suffixes=("_book", "_large"))
    return int((both["p_oracle_book"] != both["p_oracle_large"]).sum()), len(both)


def study_tasks(study) -> list[tuple[str, float, int, int]]:
    """Every split of every seed R1's and R2's families read, but the evaluation rung's seeds."""
    from playerfl_core.study import eval_rung
    from playerfl_core.study import split_oracle as O

    scores, _ = O.committed_scores(R1.PROFILE)
    rung = eval_rung.load()
    wanted = seeds(R1.committed_regrets(), R2.committed_regrets())
    return tasks(wanted, scores, rung_seeds(None if rung is None else rung[0]))
