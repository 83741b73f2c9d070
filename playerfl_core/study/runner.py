"""One runner for every study: computes its missing runs on a backend, keeps each as it ends,
collects the long table and commits it with its record.

A study's ``computes`` module says what one run is. It offers ``study_tasks(study)`` (every
run, as a tuple), ``task_name(task)``, ``run_one(study, task, device)`` (returns ``(task,
table or None, record)``; the record holds at least ``cpu_seconds``), ``gather(study, tasks,
work, records)`` (the long table and its totals) and ``record_extra(study, totals, wall)``
(the fields its committed record carries); ``after_commit(study, say)`` is optional. A module
that computes its study another way (a grid, the batched GPU driver) offers
``run_study(study, options)`` instead.

Resumable: each finished run is written to the study's work folder (rows, then the record that
marks it done, each atomically); a later call computes only the runs without a record. Runs
compute on the ``local`` backend (worker processes of one thread, or this process for one
worker) or ``ray`` (:mod:`~playerfl_core.study.backends`); one thread per run, so the table
does not depend on where or beside what a run computed.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from importlib import import_module
from pathlib import Path

import pandas as pd

from playerfl_core.study.declaration import Study


@dataclass(frozen=True)
class RunOptions:
    """How ``playerfl study run`` computes: where (backend, workers, device), the folder for
    finished work (None: the study's own), the seconds a chunked study stops within, whether
    to show progress, and after how many chunks a chunked study stops."""

    backend: str = "local"
    workers: int | None = None
    device: str | None = None
    out: Path | None = None
    budget_s: float = 480.0
    progress: bool = True
    max_chunks: int | None = None


def command(study: Study | str) -> str:
    """The command that computes ``study``."""
    return f"playerfl study run {study if isinstance(study, str) else study.name}"


def computes(study: Study):
    """The module that computes one of the study's runs."""
    return import_module(study.computes)


def runs_one_at_a_time(study: Study) -> bool:
    """Whether the runner computes the study run by run (else its module's ``run_study``)."""
    return hasattr(computes(study), "run_one")


# -- the work folder --------------------------------------------------------------------------
def keep(work: Path, name: str, table: pd.DataFrame | None, record: dict) -> None:
    """Write one finished run ``name`` atomically: its table first, its record last (the record
    marks the run as done)."""
    if table is not None:
        tmp = work / f".{name}.parquet"
        table.to_parquet(tmp, index=False)
        tmp.replace(work / f"{name}.parquet")
    tmp = work / f".{name}.json"
    tmp.write_text(json.dumps(record, sort_keys=True) + "\n")
    tmp.replace(work / f"{name}.json")


def done_runs(work: Path) -> dict[str, dict]:
    """The records of the runs already finished in ``work``, by run name."""
    return {p.stem: json.loads(p.read_text()) for p in sorted(Path(work).glob("*.json"))}


def plan(study: Study, work: Path | None = None, tasks=None) -> list[tuple[str, bool]]:
    """Every run of ``study`` (or ``tasks``) by name, with whether it is already finished."""
    module = computes(study)
    work = work or study.work_dir()
    done = done_runs(work) if work.is_dir() else {}
    names = [
        module.task_name(t) for t in (tasks if tasks is not None else module.study_tasks(study))
    ]
    return [(n, n in done) for n in names]


# -- computing --------------------------------------------------------------------------------
def compute(
    study: Study,
    options: RunOptions = RunOptions(),
    work: Path | None = None,
    tasks=None,
    say=print,
) -> int:
    """Every run of ``study`` (or ``tasks``) not yet in ``work``, on ``options``' backend, each
    kept as it ends; returns how many were computed. Ctrl-C or a failed run stops the workers
    at once and keeps every run that finished."""
    import concurrent.futures as cf

    from tqdm.auto import tqdm

    from playerfl_core.study.backends import backend_for
    from playerfl_core.study.run_store import code_fingerprint
    from playerfl_core.study.workers import interrupts_as_keyboard

    module = computes(study)
    work = work or study.work_dir()
    work.mkdir(parents=True, exist_ok=True)
    done = done_runs(work)
    todo = [t for t in (tasks if tasks is not None else module.study_tasks(study))
            if module.task_name(t) not in done]  # fmt: skip
    if not todo:
        return 0
    local = options.backend in ("local", None)
    backend = backend_for(options.backend, options.workers if local else None)
    device = options.device or ("cpu" if local else backend.default_device())
    executor = backend.open(1, code_fingerprint(), device, len(todo))
    bar = tqdm(total=len(todo), desc=study.name, unit="run", disable=not options.progress)
    try:
        with bar, interrupts_as_keyboard():
            futures = [executor.submit(module.run_one, study, t, device) for t in todo]
            for fut in cf.as_completed(futures):
                task, table, record = executor.result(fut)
                keep(work, module.task_name(task), table, record)
                bar.update()
    except BaseException:  # Ctrl-C, SIGTERM or a failed run: no worker outlives the study
        executor.stop()
        executor.close(wait=False)
        raise
    executor.close()
    return len(todo)


def collect(study: Study, work: Path | None = None, tasks=None) -> tuple[pd.DataFrame, dict]:
    """The study's long table from ``work`` and its totals (runs, CPU-seconds, the study's own).
    Raises when a run is missing, naming the command that computes it."""
    module = computes(study)
    work = work or study.work_dir()
    tasks = tasks if tasks is not None else module.study_tasks(study)
    records = done_runs(work) if Path(work).is_dir() else {}
    missing = [module.task_name(t) for t in tasks if module.task_name(t) not in records]
    if missing:
        raise ValueError(
            f"{len(missing)} of the {study.name} study's {len(tasks)} runs are not computed yet "
            f"({', '.join(missing[:3])}, …); run `{command(study)}`."
        )
    return module.gather(study, tasks, Path(work), records)


def cpu_seconds(records: dict, names) -> float:
    """The CPU-seconds the runs ``names`` took, as their records kept them."""
    return round(sum(records[n]["cpu_seconds"] for n in names), 1)


def commit(study: Study, table: pd.DataFrame, extra: dict, out: Path | None = None, say=print):
    """Write ``table`` with its record (``split_rules_table.save_with_record``: machine, code
    fingerprint, SHA-256 and ``extra``) to ``out`` or the study's store, unless the committed
    store already holds the same rows. Returns the path written, or None."""
    from playerfl_core.study.split_rules_table import load_rules_table, save_with_record

    path = Path(out) if out is not None else study.store_path()
    if path.exists() and load_rules_table(path)[0].equals(table):
        say(f"{path} already holds these {extra.get('runs', len(table))} runs: left as it is")
        return None
    return save_with_record(table, path, extra)


def run(study: Study, options: RunOptions = RunOptions(), say=print) -> int:
    """Compute ``study`` (resumably) and commit it; a study computed another way goes to its
    module's ``run_study``. Returns the exit code."""
    module = computes(study)
    if not hasattr(module, "run_one"):
        if not hasattr(module, "run_study"):
            raise ValueError(
                f"study run {study.name}: its runs are the committed grid's and sweeps' "
                f"({study.computes}); compute them with `playerfl grid`, `playerfl sweep` and "
                "`playerfl rules` (README, 'The committed standard-profile results')."
            )
        return module.run_study(study, options, say)
    start = time.time()
    work = options.out / study.name if options.out is not None else None
    compute(study, options, work, say=say)
    table, totals = collect(study, work)
    store = work / Path(study.store).name if work is not None else None
    path = commit(study, table, module.record_extra(study, totals, time.time() - start), store, say)
    if path is not None:
        say(f"{len(table)} rows to {path}: {totals['cpu_seconds']:.0f} CPU-s over "
            f"{totals['runs']} runs")  # fmt: skip
    if hasattr(module, "after_commit") and options.out is None:
        module.after_commit(study, say)
    return 0


# -- what is committed ------------------------------------------------------------------------
def store_state(study: Study) -> dict:
    """Whether the study's store is committed, whether its SHA-256 (an archive's seal) matches
    its record, and what it cost in CPU-seconds by its record. Keys: path, committed,
    sha256_matches (None when the record keeps no checksum), cpu_seconds, runs."""
    import hashlib

    path = study.store_path()
    state = {"path": path, "committed": False, "sha256_matches": None, "cpu_seconds": None,
             "runs": None}  # fmt: skip
    if path.suffix == ".parquet":
        if not path.exists():
            return state
        record_path = Path(f"{path}.json")
        record = json.loads(record_path.read_text()) if record_path.exists() else {}
        if "sha256" in record:
            digest = hashlib.sha256(path.read_bytes()).hexdigest()
            state["sha256_matches"] = digest == record["sha256"]
        return {**state, "committed": True, "cpu_seconds": record.get("cpu_seconds"),
                "runs": record.get("runs")}  # fmt: skip
    from playerfl_core.study.archive import MANIFEST_FILE, read_manifest, seal

    if not (path / MANIFEST_FILE).exists():
        return _chunks_state(state, path)
    manifest = read_manifest(path)
    runs = manifest["runs"]
    return {**state, "committed": True, "sha256_matches": manifest.get("seal") == seal(path, runs),
            "cpu_seconds": round(sum(e.get("cpu_seconds") or 0.0 for e in runs), 1),
            "runs": len(runs)}  # fmt: skip


def _chunks_state(state: dict, folder: Path) -> dict:
    """A folder of chunks (rows, then a record with their SHA-256): committed when it holds
    one; its cost is the chunks' seconds on their device."""
    import hashlib

    records = {p: json.loads(p.read_text()) for p in sorted(folder.glob("*.json"))}
    if not records:
        return state
    matches = all(
        rec.get("status") != "ok"
        or (p.with_suffix(".parquet").exists() and rec.get("parquet_sha256")
            == hashlib.sha256(p.with_suffix(".parquet").read_bytes()).hexdigest())
        for p, rec in records.items()
    )  # fmt: skip
    seconds = round(sum(r.get("seconds", 0.0) for r in records.values()), 1)
    runs = sum(len(r.get("runs", [])) for r in records.values())
    return {**state, "committed": True, "sha256_matches": matches, "runs": runs,
            "device_seconds": seconds}  # fmt: skip
