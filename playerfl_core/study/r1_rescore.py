"""R1's family at low evaluation noise (``study.preregistration`` §15): the regrets that
decide R1, their test terms scored on :data:`TEST_PER_CLIENT` images per client.

At the book's sizes a Fashion-MNIST client scores on 80 test images, so a seed's regret moves by
about δ from the draw of those images alone. For every seed of every federation whose
declaration has held-out images, the committed run of the paper's rule's split and of the
validation oracle's (one run when they agree) is trained again from its manifest entry, and its
rows are compared with the committed run's. Each client's deployed model at its best-validation
round is then scored on :data:`TEST_PER_CLIENT` test images drawn from its own distribution
(``data_prep.eval_sets``, the evaluation rung's draw). Validation stays the book's, so the
rule's split, the oracle's split and every client's round are the committed ones: only the
measurement of the regret changes, not the procedure it measures.

Computed by ``playerfl study run r1_rescore`` (resumable: each finished run waits in
``results/r1_rescore/``) and committed to ``stores/ladder/r1_rescore.parquet`` with its record.
:func:`run_one`, :func:`gather` and :func:`record_extra` are every rescore's (R2's and the
validation rescore's too): what one run is, for ``study.runner``.
"""

from __future__ import annotations

import copy
import time
import warnings
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd

TEST_PER_CLIENT = 2000
WORK = "r1_rescore"
PROFILE = "standard"
VAL_CHUNK = 256
"""The validation rescore scores the large sets in chunks of this many images: the CNN's logits
equal the engine's (chunks of ``eval_batch_size``) bit for bit, at about two thirds of the
time."""
BOOK_SCORE = "book_test"
"""The metric under which the store keeps each run's score on the book's test sets, so that
:func:`r1_regrets` replaces only regrets computed from these very runs."""


def store_path() -> Path:
    from playerfl_core.study.archive import stores_dir

    return stores_dir() / "ladder" / "r1_rescore.parquet"


def load() -> tuple[pd.DataFrame, dict] | None:
    """The committed rescore and its record; None when not computed."""
    from playerfl_core.study.split_rules_table import load_rules_table

    return load_rules_table(store_path()) if store_path().exists() else None


def has_held_out(dataset: str) -> bool:
    """Whether ``dataset``'s declaration can draw larger evaluation sets."""
    from data_prep.registry import federation

    return federation(dataset).held_out is not None


def tasks(regrets: pd.DataFrame) -> list[tuple[str, float, int, int]]:
    """Every run the rescore needs: (dataset, lr, seed, p) of the rule's and the oracle's split
    on each seed of ``regrets`` (the paper's rule's) whose federation has held-out images."""
    keep = regrets[regrets["dataset"].map(has_held_out)]
    runs = {
        (r.dataset, float(r.lr), int(r.seed), int(p))
        for r in keep.itertuples(index=False)
        for p in (r.p_rule, r.p_oracle)
    }
    return sorted(runs)


def run_name(task) -> str:
    dataset, lr, seed, p = task
    return f"{dataset}_lr{lr:g}_s{seed}_p{p}"


class _Deployed:
    """Keeps a copy of every client's deployed model after each round's evaluation (an
    :class:`~playerfl_core.fl.engine.Observer`: it reads the run, never changes it); with
    ``val`` (client id → images, labels) it also scores each copy on those images, in chunks of
    ``batch`` as the engine scores (the validation rescore's sets)."""

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
    """Loss, accuracy and macro-F1 of ``model`` on (x, y), its logits computed in chunks of
    ``batch`` images (:data:`VAL_CHUNK` for the validation rescore; ``len(x)``: in one pass)."""
    import torch

    from playerfl_core.fl.scoring import score_logits, summarise

    with torch.no_grad():
        logits = torch.cat([model(x[i : i + batch]) for i in range(0, len(x), batch)])
    return summarise(score_logits(logits, y).cpu().numpy())


def rescore_run(task, archive: Path | None = None, large_val: bool = False):
    """One run trained again from its manifest entry, compared with the committed run, and its
    clients' selected models scored on large test sets. Returns ``(task, rows, record)``: the
    rerun's training-size and validation rows, its test rows at each client's selected round
    (large test sets), and one :data:`BOOK_SCORE` row per client (the book's test set, same
    round); the record holds the comparison with the committed run and the CPU time.

    ``large_val`` (the validation rescore): every client's deployed model is also scored on its
    large validation set after every round, its round is selected on those scores, and the rows hold
    the large validation sets' scores at every round in place of the book's (no
    :data:`BOOK_SCORE` rows); both sets are scored in chunks of :data:`VAL_CHUNK` images, which
    give the evaluation rung's scores bit for bit (R1's and R2's rescores scored the test set in
    one pass)."""
    import torch

    from data_prep import load as load_data
    from playerfl_core.fl.algorithms import get_algorithm
    from playerfl_core.fl.algorithms.prefix import prefix_name
    from playerfl_core.fl.engine import run_federated
    from playerfl_core.fl.schema import COLUMNS
    from playerfl_core.stats.results import select_rounds
    from playerfl_core.study import machine
    from playerfl_core.study.archive import archive_dir, spec_of
    from playerfl_core.study.verification import compare_run

    dataset, lr, seed, p = task
    start, previous = time.process_time(), torch.get_num_threads()
    archive = archive or archive_dir(PROFILE)
    stored, entry = _committed_run(archive, dataset, prefix_name(p), lr, seed)
    spec = spec_of(entry)
    config = spec.config("cpu")
    data = load_data(spec.dataset, profile=spec.profile, seed=spec.seed)
    large = load_data(spec.dataset, profile=spec.profile, seed=spec.seed,
                      eval_per_client=TEST_PER_CLIENT)  # fmt: skip
    _check_same_training(data, large)
    algorithm = get_algorithm(spec.algorithm)
    if algorithm.final_step:
        raise ValueError(f"{spec.algorithm}: a final step is not rescored (only prefix runs).")
    batch = VAL_CHUNK if large_val else None
    val = {i: (c.x_val, c.y_val) for i, c in enumerate(large.clients)} if large_val else None
    deployed = _Deployed(algorithm, val, batch or 1)
    torch.set_num_threads(1)  # one thread per run: the committed runs' last bits
    try:
        fresh = run_federated(data, algorithm, config, [deployed]).table()
        if large_val:
            val_rows = [(dataset, spec.algorithm, lr, seed, cid, rnd, "val", metric, value,
                         len(large.clients[cid].y_val))
                        for (cid, rnd), scores in deployed.val_scores.items()
                        for metric, value in scores.items()]  # fmt: skip
            scored = pd.DataFrame(val_rows, columns=COLUMNS)
        else:
            scored = fresh
        selected = select_rounds(scored)
        rounds = selected.drop_duplicates("client").set_index("client")["round"]
        rows = []
        for cid, rnd in rounds.items():
            client = large.clients[int(cid)]
            model = deployed.models[(int(cid), int(rnd))]
            scores = _score(model, client.x_test, client.y_test, batch or len(client.y_test))
            for metric, value in scores.items():
                rows.append((dataset, spec.algorithm, lr, seed, int(cid), int(rnd), "test", metric,
                             value, len(client.y_test)))  # fmt: skip
    finally:
        torch.set_num_threads(previous)
    test = pd.DataFrame(rows, columns=COLUMNS)
    if large_val:
        kept = fresh[~fresh["split"].isin(("val", "test"))]
        table = pd.concat([kept, scored, test], ignore_index=True)
    else:
        book = selected[(selected["split"] == "test") & (selected["metric"] == "macro_f1")]
        kept = fresh[(fresh["split"] == "val") | (fresh["metric"] == "n_samples")]
        table = pd.concat([kept, test, book.assign(metric=BOOK_SCORE)[COLUMNS]], ignore_index=True)
    comparison = compare_run(fresh, stored)
    record = {"cpu_seconds": round(time.process_time() - start, 2), "run_id": entry["run_id"],
              "identical": comparison["identical"], "max_abs_diff": comparison["max_abs_diff"],
              "machine": machine.fingerprint(threads=1)}  # fmt: skip
    return task, table, record


def _committed_run(archive: Path, dataset: str, algorithm: str, lr: float, seed: int):
    """The committed run's rows and manifest entry (one run per dataset, algorithm, lr, seed)."""
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


_ARCHIVES: dict = {}


def _archive(path: Path):
    """The archive, read once per process (a worker rescoring many runs reads it once)."""
    from playerfl_core.study.archive import load_archive

    if path not in _ARCHIVES:
        _ARCHIVES[path] = load_archive(path)
    return _ARCHIVES[path]


def _check_same_training(data, large) -> None:
    """The large evaluation sets must leave every client's training images as they were."""
    import torch

    for a, b in zip(data.clients, large.clients, strict=True):
        if not (torch.equal(a.x_train, b.x_train) and torch.equal(a.y_train, b.y_train)):
            raise ValueError(
                f"{data.name}: client {a.name}'s training set differs with larger evaluation "
                "sets; the rescore would not measure the same runs."
            )


def study_tasks(study) -> list[tuple[str, float, int, int]]:
    return tasks(committed_regrets())


def task_name(task) -> str:
    return run_name(task)


def large_val(study) -> bool:
    """Whether ``study`` chooses rounds and the oracle on the large validation sets."""
    return dict(study.scoring).get("round_and_oracle") == "large validation"


def run_one(study, task, device: str = "cpu"):
    """One rescored run (:func:`rescore_run`), on the CPU: the committed runs it is compared
    with were computed there."""
    if device != "cpu":
        raise ValueError(
            f"--device {device}: a rescore retrains committed CPU runs to compare them row by "
            "row; run it on the CPU (--device cpu)."
        )
    return rescore_run(task, None, large_val(study))


def gather(study, todo: Sequence, work: Path, records: dict) -> tuple[pd.DataFrame, dict]:
    """The rescore's long table (runs in ``todo``'s order) and its totals: runs, CPU-seconds,
    how many reruns equal their committed runs, the largest difference, the machines."""
    from playerfl_core.study.machine import describe
    from playerfl_core.study.runner import cpu_seconds

    names = [run_name(t) for t in todo]
    table = pd.concat([pd.read_parquet(work / f"{n}.parquet") for n in names], ignore_index=True)
    totals = {
        "runs": len(names),
        "cpu_seconds": cpu_seconds(records, names),
        "identical_to_committed": sum(bool(records[n]["identical"]) for n in names),
        "max_abs_diff": max(float(records[n]["max_abs_diff"]) for n in names),
    }
    machines = Counter(describe(records[n].get("machine")) for n in names)
    totals["machines"] = dict(sorted(machines.items()))  # a run's last bits are its machine's
    return table, totals


def record_extra(study, totals: dict, wall: float) -> dict:
    """The committed record's fields: the evaluation sizes, the profile, the wall time of the
    last call and the totals."""
    sizes = {"val_per_client": TEST_PER_CLIENT} if large_val(study) else {}
    return {"test_per_client": TEST_PER_CLIENT, **sizes, "profile": PROFILE,
            "wall_seconds_last_call": round(wall, 1), **totals}  # fmt: skip


def run_scores(table: pd.DataFrame, metric: str = "macro_f1") -> pd.DataFrame:
    """Per rescored run: its score on the large test sets (``test``) and on the book's
    (``book``), clients weighted by training share as every headline score. Columns: dataset,
    algorithm, lr, seed, test, book."""
    from playerfl_core.stats.metrics import run_scores as headline

    large = headline(table[table["metric"] != BOOK_SCORE], metric).rename(columns={"value": "test"})
    book = table[table["metric"] != metric].replace({"metric": {BOOK_SCORE: metric}})
    book = headline(book, metric).rename(columns={"value": "book"})
    return large.merge(book, on=["dataset", "algorithm", "lr", "seed"])


def r1_regrets(regrets: pd.DataFrame, rescored: tuple | None = None) -> pd.DataFrame:
    """R1's regrets (R1's rescore): :func:`rescored_regrets` with the committed rescore (or
    ``rescored``, a (table, record) pair)."""
    rescored = rescored if rescored is not None else load()
    return rescored_regrets(regrets, None if rescored is None else rescored[0])


def rescored_regrets(
    regrets: pd.DataFrame, table: pd.DataFrame | None, command: str = "r1_rescore"
) -> pd.DataFrame:
    """Each row of ``regrets`` (a regret per seed, with p_rule and p_oracle) whose two runs the
    rescore ``table`` holds gets both test terms on the large test sets, with ``rescored``
    True; the others stay as given (``rescored`` False). A row is replaced only when its test
    terms equal the rescored runs' scores on the book's test sets, so a regret is never paired
    with another run's rescore; ``command`` names the module that recomputes the table."""
    from playerfl_core.fl.algorithms.prefix import prefix_name

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


def committed_regrets() -> pd.DataFrame:
    """The paper's rule's regrets of every committed one-rate sweep of :data:`PROFILE` (base
    and heterogeneity federations alike): what R1's family reads."""
    from playerfl_core.study import split_oracle as O

    scores, rules = O.committed_scores(PROFILE)
    regrets = O.regrets(scores, rules)
    return regrets[regrets["variant"] == "paper"].reset_index(drop=True)
