"""The rescores: committed runs trained again and scored on :data:`TEST_PER_CLIENT` images per
client, since at the book's sizes a regret moves by about δ with the draw of the evaluation images.

One procedure (:func:`rescore_run`), three declarations (:data:`STUDIES`) that differ in the runs
they read: R1's, R2's and the validation rescore (rounds and oracle chosen on large validation
sets too). About 550 lines in one module: each rescore's reading reads the others' stores, so
split by rescore the parts would import each other.
"""

from __future__ import annotations

import copy
import functools
import time
import warnings
from collections import Counter
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd
import torch

from data_prep import load as load_data
from data_prep.registry import federation
from playerfl_core.fl.algorithms import get_algorithm
from playerfl_core.fl.algorithms.prefix import parse_prefix_name, prefix_name
from playerfl_core.fl.engine import run_federated
from playerfl_core.fl.schema import COLUMNS
from playerfl_core.fl.scoring import score_logits, summarise
from playerfl_core.stats.metrics import run_scores as headline
from playerfl_core.stats.results import select_rounds
from playerfl_core.study import machine, rungs
from playerfl_core.study import preregistration as P
from playerfl_core.study import split_oracle as O
from playerfl_core.study.archive import archive_dir, load_archive, spec_of, stores_dir
from playerfl_core.study.declaration import EVERY_SPLIT, ONE_RATE, R2_FAMILIES, Study
from playerfl_core.study.paper_scale import task_name
from playerfl_core.study.runner import committed, cpu_seconds, load_store, named
from playerfl_core.study.split_rules_table import PROBE, RUN, probe_rows
from playerfl_core.study.split_scores import regrets as split_regrets
from playerfl_core.study.split_scores import sweep_scores
from playerfl_core.study.split_sweeps import load_sweeps
from playerfl_core.study.verification import compare_run

TEST_PER_CLIENT = 2000
PROFILE = "standard"
VAL_CHUNK = 256
"""Images per chunk the validation rescore scores: the engine's logits bit for bit, faster."""
BOOK_SCORE = "book_test"
"""The metric of a run's score on the book's test sets: a regret takes only its own runs'."""
TESTED = ("evaluation", "follow-up", "second follow-up", "confirmation")
"""The sets whose families decide claim R2 (the development set only tunes thresholds)."""
Task = tuple[str, float, int, int]
"""One rescored run: (dataset, lr, seed, p)."""

R1_RESCORE = Study(
    name="r1_rescore",
    what="R1's regrets with their test terms on 2,000 test images per client.",
    federations=("every federation of R1's family with held-out images",),
    seeds=tuple(range(30)),  # each federation's committed seeds of these: 10, 20 or 30
    arms="the committed runs of the paper's rule's split and the validation oracle's",
    rates=ONE_RATE,
    profile=PROFILE,
    scoring=(("val_per_client", "the profile's"), ("test_per_client", TEST_PER_CLIENT),
             ("round_and_oracle", "validation")),
    claim="R1",
    declared="2026-12-03",
    commit="4f240c7",
    why="A seed's regret moves by about δ from the draw of 80 test images alone "
    "(pre-registration, point 15).",
    store="ladder/r1_rescore.parquet",
    computes="playerfl_core.study.rescore",
    work="r1_rescore",
)  # fmt: skip
R2_RESCORE = replace(
    R1_RESCORE, name="r2_rescore",
    what="R2's regrets with their test terms on 2,000 test images per client.",
    federations=("every federation of R2's tested sets with held-out images",),
    arms="the committed runs of every entry's split and the oracle's that R1's rescore lacks",
    claim=R2_FAMILIES, declared="2026-12-03", commit="0ad807f",
    why="R2's families still read 80 test images per client (pre-registration, point 16).",
    store="ladder/r2_rescore.parquet", work="r2_rescore",
)  # fmt: skip
VAL_RESCORE = replace(
    R1_RESCORE, name="val_rescore",
    what="R1's and R2's regrets with 2,000 validation and 2,000 test images per client.",
    federations=("every federation of R1's family and R2's tested sets with held-out images",),
    arms=f"{EVERY_SPLIT}, the committed runs trained again (the evaluation rung's seeds read "
    "from its store)",
    scoring=(("val_per_client", TEST_PER_CLIENT), ("test_per_client", TEST_PER_CLIENT),
             ("round_and_oracle", "large validation")),
    claim=f"R1 and {R2_FAMILIES}", declared="2026-12-03", commit="07c1796",
    why="The book's 64 validation images choose the oracle's split and each client's round; "
    "their noise is about δ (pre-registration, point 17).",
    store="ladder/val_rescore.parquet", work="val_rescore", work_in_stores=True,
)  # fmt: skip
STUDIES = (R1_RESCORE, R2_RESCORE, VAL_RESCORE)


def load(name: str) -> tuple[pd.DataFrame, dict] | None:
    """The committed store of rescore ``name`` and its record (None: not computed)."""
    return committed(named(STUDIES, name, "rescore").store_path())


def large_val(study: Study) -> bool:
    """Whether ``study`` chooses rounds and the oracle on the large validation sets."""
    return dict(study.scoring).get("round_and_oracle") == "large validation"


# -- which runs ---------------------------------------------------------------------------------
def has_held_out(dataset: str) -> bool:
    """Whether ``dataset``'s declaration can draw larger evaluation sets."""
    return federation(dataset).held_out is not None


def tasks(regrets: pd.DataFrame) -> list[Task]:
    """The rule's and the oracle's run on each seed of ``regrets`` with held-out images."""
    keep = regrets[regrets["dataset"].map(has_held_out)]
    runs = {(r.dataset, float(r.lr), int(r.seed), int(p))
            for r in keep.itertuples(index=False) for p in (r.p_rule, r.p_oracle)}  # fmt: skip
    return sorted(runs)


def r2_tasks(regrets: pd.DataFrame, done: Sequence = ()) -> list[Task]:
    """:func:`tasks` of R2's tested sets (``entry_regrets``) that R1's rescore (``done``) lacks."""
    return sorted(set(tasks(regrets[regrets["role"].isin(TESTED)])) - set(done))


def seeds(r1: pd.DataFrame, r2: pd.DataFrame) -> list[tuple[str, float, int]]:
    """Every (dataset, lr, seed) of R1's regrets and R2's tested sets with held-out images."""
    tested = r2[r2["role"].isin(TESTED)]
    both = pd.concat([r1[["dataset", "lr", "seed"]], tested[["dataset", "lr", "seed"]]])
    both = both[both["dataset"].map(has_held_out)]
    return sorted({(d, float(lr), int(s)) for d, lr, s in both.itertuples(index=False)})


def split_tasks(wanted: Sequence, splits: pd.DataFrame, done: set = frozenset()) -> list[Task]:
    """Every committed split (``splits``) of each seed of ``wanted`` not in ``done``."""
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


def runs_in(stored: tuple | None) -> set[Task]:
    """The runs a store's (table, record) holds, as :func:`tasks` names them (none for None)."""
    if stored is None:
        return set()
    keys = stored[0][["dataset", "algorithm", "lr", "seed"]].drop_duplicates()
    return {(d, float(lr), int(s), parse_prefix_name(a))
            for d, a, lr, s in keys.itertuples(index=False)}  # fmt: skip


def seeds_in(stored: tuple | None) -> set[tuple[str, float, int]]:
    """The (dataset, lr, seed) of the runs a store's (table, record) holds."""
    return {run[:3] for run in runs_in(stored)}


def r1_committed_regrets() -> pd.DataFrame:
    """The paper's rule's regrets of every committed one-rate sweep: R1's family."""
    scores, rules = O.committed_scores(PROFILE)
    regrets = O.regrets(scores, rules)
    return regrets[regrets["variant"] == "paper"].reset_index(drop=True)


def r2_committed_regrets() -> pd.DataFrame:
    """Every entry's regret on every declared seed (chapter 04b's ``RuleStudy.regrets``)."""
    datasets = (*P.DEVELOPMENT, *P.EVALUATION, *P.FOLLOW_UP, *P.FOLLOW_UP_2)
    sweep = load_sweeps(archive_dir(PROFILE))
    sweep = sweep[sweep["dataset"].isin(datasets)]
    sweep = sweep[sweep["lr"] == sweep["dataset"].map(lambda d: P.LEARNING_RATES[P.base_of(d)])]
    rules = load_store(stores_dir() / "rules" / f"{PROFILE}.parquet")[0]
    scores = sweep_scores(sweep)
    declared = [s in P.seeds_of(d) or P.role_of(d, s) == P.CONFIRMING
                for d, s in zip(scores["dataset"], scores["seed"], strict=True)]  # fmt: skip
    return P.entry_regrets(rules[rules["dataset"].isin(datasets)], scores[declared])


def study_tasks(study: Study) -> list[Task]:
    """Every run ``study`` retrains (which runs is what tells the three rescores apart)."""
    if study.name == R1_RESCORE.name:
        return tasks(r1_committed_regrets())
    if study.name == R2_RESCORE.name:
        r1 = load(R1_RESCORE.name)
        if r1 is None:
            raise ValueError(
                "R1's rescore is not committed: run `playerfl study run r1_rescore` first (this "
                "rescore reads its runs)."
            )
        return r2_tasks(r2_committed_regrets(), runs_in(r1))
    scores, _ = O.committed_scores(PROFILE)
    wanted = seeds(r1_committed_regrets(), r2_committed_regrets())
    return split_tasks(wanted, scores, seeds_in(rungs.load(rungs.EVAL_RUNG)))


# -- one run --------------------------------------------------------------------------------------
class _Deployed:
    """An engine observer that keeps every client's deployed model after each round (and scores
    it on ``val``, client id → images, labels, in chunks of ``batch``); it changes nothing."""

    def __init__(self, algorithm, val: dict | None = None, batch: int = 1024):
        self.algorithm, self.models, self.val, self.batch = algorithm, {}, val, batch
        self.val_scores: dict = {}

    def after_local_updates(self, run, rnd: int) -> None:
        pass

    def on_round_end(self, run, rnd: int) -> None:
        for c in run.clients:
            model = copy.deepcopy(self.algorithm.deployed_model(run, c)).eval()
            self.models[(c.id, rnd)] = model
            if self.val is not None:
                self.val_scores[(c.id, rnd)] = _score(model, *self.val[c.id], self.batch)


def _score(model, x, y, batch: int) -> dict[str, float]:
    """Loss, accuracy and macro-F1 of ``model`` on (x, y), logits in chunks of ``batch``."""
    with torch.no_grad():
        logits = torch.cat([model(x[i : i + batch]) for i in range(0, len(x), batch)])
    return summarise(score_logits(logits, y).cpu().numpy())


def rescore_run(task: Task, archive: Path | None = None, large_val: bool = False):
    """One committed run trained again on one thread, compared row by row with the committed run,
    each client's selected model scored on its large test set: ``(task, rows, record)``.
    ``large_val``: rounds selected on large validation sets."""
    start = time.process_time()
    dataset, lr, seed, p = task
    stored, entry = _committed_run(
        archive or archive_dir(PROFILE), dataset, prefix_name(p), lr, seed
    )
    spec = spec_of(entry)
    data, large = _federations(spec)
    algorithm = get_algorithm(spec.algorithm)
    if algorithm.final_step:
        raise ValueError(f"{spec.algorithm}: a final step is not rescored (only prefix runs).")
    batch = VAL_CHUNK if large_val else None
    val = {i: (c.x_val, c.y_val) for i, c in enumerate(large.clients)} if large_val else None
    deployed = _Deployed(algorithm, val, batch or 1)
    key = (dataset, spec.algorithm, lr, seed)
    with machine.one_thread():  # as the committed runs were computed: their last bits
        fresh = run_federated(data, algorithm, spec.config("cpu"), [deployed]).table()
        scored = _val_table(key, deployed, large) if large_val else fresh
        selected = select_rounds(scored)
        test = _test_table(key, selected, deployed, large, batch)
    comparison = compare_run(fresh, stored)
    record = {"cpu_seconds": round(time.process_time() - start, 2), "run_id": entry["run_id"],
              "identical": comparison["identical"], "max_abs_diff": comparison["max_abs_diff"],
              "machine": machine.fingerprint(threads=1)}  # fmt: skip
    return task, _rescored_table(fresh, scored, selected, test, large_val), record


def _federations(spec):
    """The run's federation as committed and with large evaluation sets (same training sets)."""
    data = load_data(spec.dataset, profile=spec.profile, seed=spec.seed)
    large = load_data(spec.dataset, profile=spec.profile, seed=spec.seed,
                      eval_per_client=TEST_PER_CLIENT)  # fmt: skip
    for a, b in zip(data.clients, large.clients, strict=True):
        if not (torch.equal(a.x_train, b.x_train) and torch.equal(a.y_train, b.y_train)):
            raise ValueError(
                f"{data.name}: client {a.name}'s training set differs with larger evaluation "
                "sets; the rescore would not measure the same runs."
            )
    return data, large


def _val_table(key: tuple, deployed: _Deployed, large) -> pd.DataFrame:
    """Every client's large-validation scores at every round."""
    rows = [(*key, cid, rnd, "val", metric, value, len(large.clients[cid].y_val))
            for (cid, rnd), scores in deployed.val_scores.items()
            for metric, value in scores.items()]  # fmt: skip
    return pd.DataFrame(rows, columns=COLUMNS)


def _test_table(key: tuple, selected, deployed: _Deployed, large, batch) -> pd.DataFrame:
    """Each client's deployed model at its selected round scored on its large test set."""
    rounds = selected.drop_duplicates("client").set_index("client")["round"]
    rows = []
    for cid, rnd in rounds.items():
        client = large.clients[int(cid)]
        model = deployed.models[(int(cid), int(rnd))]
        scores = _score(model, client.x_test, client.y_test, batch or len(client.y_test))
        rows += [(*key, int(cid), int(rnd), "test", metric, value, len(client.y_test))
                 for metric, value in scores.items()]  # fmt: skip
    return pd.DataFrame(rows, columns=COLUMNS)


def _rescored_table(fresh, scored, selected, test, large_val: bool) -> pd.DataFrame:
    """The rows a store keeps of one rescored run (:func:`rescore_run`)."""
    if large_val:
        kept = fresh[~fresh["split"].isin(("val", "test"))]
        return pd.concat([kept, scored, test], ignore_index=True)
    book = selected[(selected["split"] == "test") & (selected["metric"] == "macro_f1")]
    kept = fresh[(fresh["split"] == "val") | (fresh["metric"] == "n_samples")]
    return pd.concat([kept, test, book.assign(metric=BOOK_SCORE)[COLUMNS]], ignore_index=True)


def _committed_run(archive: Path, dataset: str, algorithm: str, lr: float, seed: int):
    """The committed run's rows and manifest entry."""
    table, manifest = _archive(archive)
    wanted = (dataset, algorithm, seed)
    found = [
        e for e in manifest["runs"] if e["status"] == "ok"
        and (e["dataset"], e["algorithm"], e["seed"]) == wanted and np.isclose(e["lr"], lr)
    ]  # fmt: skip
    if len(found) != 1:
        raise ValueError(
            f"{archive}: expected one committed run of {algorithm} on {dataset} (lr {lr:g}, "
            f"seed {seed}), found {len(found)}; the rescore reads the committed sweeps only."
        )
    return table[table["run_id"] == found[0]["run_id"]], found[0]


_archive = functools.cache(load_archive)
"""The archive, read once per process."""


# -- for the runner -------------------------------------------------------------------------------
def run_one(study: Study, task: Task, device: str = "cpu"):
    """One rescored run, on the CPU, where the committed runs it is compared with ran."""
    if device != "cpu":
        raise ValueError(
            f"--device {device}: a rescore retrains committed CPU runs to compare them row by "
            "row; run it on the CPU (--device cpu)."
        )
    return rescore_run(task, None, large_val(study))


def gather(study: Study, todo: Sequence, work: Path, records: dict) -> tuple[pd.DataFrame, dict]:
    """The long table and its totals: runs, CPU-s, identical reruns, largest diff, machines."""
    names = [task_name(t) for t in todo]
    table = pd.concat([pd.read_parquet(work / f"{n}.parquet") for n in names], ignore_index=True)
    totals = {
        "runs": len(names),
        "cpu_seconds": cpu_seconds(records[n] for n in names),
        "identical_to_committed": sum(bool(records[n]["identical"]) for n in names),
        "max_abs_diff": max(float(records[n]["max_abs_diff"]) for n in names),
    }
    machines = Counter(machine.describe(records[n].get("machine")) for n in names)
    totals["machines"] = dict(sorted(machines.items()))  # a run's last bits are its machine's
    return table, totals


def record_extra(study: Study, totals: dict, wall: float) -> dict:
    """The committed record's fields: the evaluation sizes, the profile, the wall time, totals."""
    sizes = {"val_per_client": TEST_PER_CLIENT} if large_val(study) else {}
    return {"test_per_client": TEST_PER_CLIENT, **sizes, "profile": PROFILE,
            "wall_seconds_last_call": round(wall, 1), **totals}  # fmt: skip


# -- reading: test terms on large test sets (R1's and R2's rescores) ------------------------------
def run_scores(table: pd.DataFrame, metric: str = "macro_f1") -> pd.DataFrame:
    """Per rescored run: its headline score on the large test sets (``test``) and the book's."""
    large = headline(table[table["metric"] != BOOK_SCORE], metric).rename(columns={"value": "test"})
    book = table[table["metric"] != metric].replace({"metric": {BOOK_SCORE: metric}})
    book = headline(book, metric).rename(columns={"value": "book"})
    return large.merge(book, on=["dataset", "algorithm", "lr", "seed"])


def rescored_regrets(
    regrets: pd.DataFrame, table: pd.DataFrame | None, command: str = "r1_rescore"
) -> pd.DataFrame:
    """``regrets`` with both test terms on the large test sets where ``table`` holds both runs with
    the book scores the regret used (``rescored``); ``command`` recomputes ``table``."""
    out = regrets.copy()
    out["rescored"] = False
    if table is None or out.empty:
        return out
    scores = run_scores(table).set_index(["dataset", "algorithm", "lr", "seed"])
    others = 0
    for i, r in out.iterrows():
        keys = [(r.dataset, prefix_name(int(p)), float(r.lr), int(r.seed))
                for p in (r.p_rule, r.p_oracle)]  # fmt: skip
        if not all(k in scores.index for k in keys):
            continue
        rule, oracle = scores.loc[keys[0]], scores.loc[keys[1]]
        if not (np.isclose(rule.book, r.test_rule, rtol=0, atol=1e-12)
                and np.isclose(oracle.book, r.test_oracle, rtol=0, atol=1e-12)):  # fmt: skip
            others += 1
            continue
        out.loc[i, ["test_rule", "test_oracle", "regret", "rescored"]] = (
            rule.test, oracle.test, oracle.test - rule.test, True)  # fmt: skip
    if others:
        warnings.warn(
            f"{others} regrets name runs the committed rescore holds, but their scores differ "
            "from the rescored runs' (other runs of the same settings): they keep their own test "
            f"sets. Recompute the rescore with `playerfl study run {command}`.",
            stacklevel=2,
        )
    return out


def r1_regrets(regrets: pd.DataFrame, rescored: tuple | None = None) -> pd.DataFrame:
    """R1's regrets with R1's committed rescore (or ``rescored``, a (table, record) pair)."""
    rescored = rescored if rescored is not None else load(R1_RESCORE.name)
    return rescored_regrets(regrets, None if rescored is None else rescored[0])


def r2_regrets(regrets: pd.DataFrame, rescored: Sequence | None = None) -> pd.DataFrame:
    """R2's regrets with both committed test rescores (or the two pairs ``rescored``)."""
    pairs = rescored if rescored is not None else (load(R1_RESCORE.name), load(R2_RESCORE.name))
    tables = [pair[0] for pair in pairs if pair is not None]
    table = pd.concat(tables, ignore_index=True) if tables else None
    return rescored_regrets(regrets, table, R2_RESCORE.name)


def family_comparison(book: pd.DataFrame, rescored: pd.DataFrame) -> pd.DataFrame:
    """Per declared family, entry and kind: the mean regret and verdict with the book's test sets
    (``book``) and the large ones (``rescored``), the seeds rescored, and whether it changed."""
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


# -- reading: large validation sets too (the validation rescore) ----------------------------------
def large_sweep(rescored: tuple | None = None, rung: tuple | None = None) -> pd.DataFrame | None:
    """The sweep on large validation and test sets: the validation rescore's runs and the
    evaluation rung's, each seed from one (``rescored``, ``rung`` replace the committed)."""
    rescored = rescored if rescored is not None else load(VAL_RESCORE.name)
    rung = rung if rung is not None else rungs.load(rungs.EVAL_RUNG)
    if rescored is None or rung is None:
        return None
    overlap = seeds_in(rescored) & seeds_in(rung)
    if overlap:
        raise ValueError(
            f"{len(overlap)} seeds are in both the rescore and the evaluation rung (e.g. "
            f"{sorted(overlap)[0]}); each seed is read from one store."
        )
    return pd.concat([rescored[0], rung[0]], ignore_index=True)


def large_val_r1_regrets(
    regrets: pd.DataFrame, sweep: pd.DataFrame, rules: pd.DataFrame
) -> pd.DataFrame:
    """R1's ``regrets`` recomputed from the large ``sweep`` on the seeds it holds (``rescored``):
    the oracle chosen on large validation sets, the rule's split as committed in ``rules``."""
    large = split_regrets(sweep_scores(sweep), rules, "paper")
    return _replace(regrets, large, ["dataset", "lr", "seed"])


def r1_family(
    regrets: pd.DataFrame, rescored: tuple | None = None, rung: tuple | None = None
) -> pd.DataFrame:
    """R1's regrets as every page reads them: R1's rescore's test terms, and the validation
    rescore's regret on each seed the large sweep holds (``large_val``; ``rescored``: either)."""
    test_only = r1_regrets(regrets)
    sweep = large_sweep(rescored, rung)
    if sweep is None or test_only.empty:
        return test_only.assign(large_val=False)
    rules = regrets[["dataset", "lr", "seed", "variant", "p_rule", "margin"]]
    out = large_val_r1_regrets(test_only, sweep, rules)
    before = test_only["rescored"].to_numpy()  # _replace keeps the rows' order
    return out.assign(large_val=out["rescored"], rescored=out["rescored"].to_numpy() | before)


def large_sets_text(regrets: pd.DataFrame) -> str:
    """What the large sets of ``regrets`` (:func:`r1_family`) are, for a sentence."""
    n = f"{TEST_PER_CLIENT:,}"
    if "large_val" in regrets and regrets["large_val"].any():
        return f"{n} validation and test images per client"
    return f"{n} test images per client"


def large_val_r2_regrets(
    regrets: pd.DataFrame, sweep: pd.DataFrame, rules_table: pd.DataFrame
) -> pd.DataFrame:
    """R2's ``regrets`` recomputed from the large ``sweep`` on its seeds: first-epoch entries keep
    their committed split (``rules_table``), the probe and the oracle choose on large validation."""
    scores = sweep_scores(sweep)
    mine = rules_table.merge(scores[RUN].drop_duplicates(), on=RUN)
    mine = pd.concat([mine[mine["rule"] != PROBE], probe_rows(sweep, P.PROBE_ROUNDS)])
    large = P.entry_regrets(mine, scores)
    return _replace(regrets, large, ["dataset", "lr", "seed", "entry"])


def _replace(old: pd.DataFrame, new: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    """``old`` with every row of a seed ``new`` holds taken from ``new`` (by ``keys``); raises
    when ``new`` lacks one: a seed is read from one procedure, never half from each."""
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
