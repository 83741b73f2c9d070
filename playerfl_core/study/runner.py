"""One runner for every study: computes its missing runs on a backend, keeps each as it ends,
collects the table and commits it with its record, in one store format.

A study's ``computes`` module offers ``study_tasks(study)``, ``task_name(task)``,
``run_one(study, task, device)`` (``(task, table or None, record)``, the record holding
``cpu_seconds``), ``gather(study, tasks, work, records)`` and ``record_extra(study, totals,
wall)``, optionally ``after_commit(study, say)``; a module whose runs depend on each other offers
``compute_table(study, options, say)`` and ``dry_run(study, options)`` instead.

A store is a Parquet table with its record beside it (``<table>.json``); committed grid archives
read as the same (:func:`store_record`). Each finished run is kept in the work folder, atomically,
so a later call computes only what is missing; one thread per run, so where a run computed does
not change its table.
"""

from __future__ import annotations

import hashlib
import json
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from importlib import import_module
from pathlib import Path

import pandas as pd
from tqdm import tqdm  # tqdm.auto warns on every chapter page without ipywidgets

from playerfl_core.stats.results import atomic_write, read_table_file
from playerfl_core.study import machine
from playerfl_core.study.archive import MANIFEST_FILE, load_archive
from playerfl_core.study.archive_manifest import read_manifest, seal
from playerfl_core.study.backends import backend_for, execute
from playerfl_core.study.declaration import Study
from playerfl_core.study.run_spec import code_fingerprint

TABLE_FILE = "runs.parquet"
"""The table of a store declared as a folder."""


@dataclass(frozen=True)
class RunOptions:
    """How ``playerfl study run`` computes: backend, workers, device, work folder (None: the
    study's), a chunked study's time budget and chunk limit, and progress."""

    backend: object = "local"
    workers: int | None = None
    device: str | None = None
    out: Path | None = None
    budget_s: float = 480.0
    progress: bool = True
    max_chunks: int | None = None

    def local(self) -> bool:
        return self.backend in ("local", None)


def command(study: Study | str) -> str:
    """The command that computes ``study``."""
    return f"playerfl study run {study if isinstance(study, str) else study.name}"


def named(studies, name: str, what: str = "study") -> Study:
    """The one of ``studies`` called ``name``; raises naming the valid ones."""
    known = {s.name: s for s in studies}
    if name not in known:
        raise ValueError(f"Unknown {what} {name!r}; choose one of: {', '.join(known)}.")
    return known[name]


def computes(study: Study):
    """The module that computes one of the study's runs."""
    return import_module(study.computes)


def store_file(study: Study, out: Path | None = None) -> Path:
    """The table file of the study's store (under ``out/<name>`` in place of ``stores/``)."""
    path = study.store_path()
    path = path if path.suffix == ".parquet" else path / TABLE_FILE
    return path if out is None else Path(out) / study.name / path.name


# -- the work folder --------------------------------------------------------------------------
def keep(work: Path, name: str, table: pd.DataFrame | None, record: dict) -> None:
    """Write one finished run ``name`` atomically: table first, record (marking it done) last."""
    work.mkdir(parents=True, exist_ok=True)
    if table is not None:
        tmp = work / f".{name}.parquet"
        table.to_parquet(tmp, index=False)
        record = {**record, "sha256": _sha256(tmp)}
        tmp.replace(work / f"{name}.parquet")
    tmp = work / f".{name}.json"
    tmp.write_text(json.dumps(record, sort_keys=True, default=str) + "\n")
    tmp.replace(work / f"{name}.json")


def _sha256(path: Path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def done_runs(work: Path, say=None) -> dict[str, dict]:
    """The records of the runs finished in ``work``, by name; a record unreadable or not matching
    its rows is left out (computed again) with one line to ``say``."""
    done = {}
    for path in sorted(Path(work).glob("*.json")):
        if path.name.endswith(".parquet.json"):
            continue
        try:
            record = json.loads(path.read_text())
            rows = path.with_name(f"{path.stem}.parquet")
            if "sha256" in record and not (rows.exists() and _sha256(rows) == record["sha256"]):
                raise ValueError(f"its rows {rows.name} are missing or differ from the record")
        except (OSError, ValueError) as err:
            if say is not None:
                say(f"refusing {path}: {err}; computed again.")
            continue
        done[path.stem] = record
    return done


def plan(study: Study, work: Path | None = None, tasks=None) -> list[tuple[str, bool]]:
    """Every run of ``study`` (or ``tasks``) by name, with whether it is already finished."""
    module = computes(study)
    work = work or study.work_dir()
    done = done_runs(work) if work.is_dir() else {}
    tasks = tasks if tasks is not None else module.study_tasks(study)
    return [(n, n in done) for n in map(module.task_name, tasks)]


# -- computing --------------------------------------------------------------------------------
def compute(
    study: Study,
    options: RunOptions = RunOptions(),
    work: Path | None = None,
    tasks=None,
    say=print,
) -> int:
    """Compute and keep each run of ``study`` (or ``tasks``) not in ``work``; return how many."""
    module = computes(study)
    work = work or study.work_dir()
    work.mkdir(parents=True, exist_ok=True)
    done = done_runs(work, say)
    todo = [t for t in (tasks if tasks is not None else module.study_tasks(study))
            if module.task_name(t) not in done]  # fmt: skip
    if not todo:
        return 0
    backend = backend_for(options.backend, options.workers if options.local() else None)
    device = options.device or ("cpu" if options.local() else backend.default_device())
    with tqdm(total=len(todo), desc=study.name, unit="run", disable=not options.progress) as bar:

        def kept(_, result) -> None:
            task, table, record = result()
            keep(work, module.task_name(task), table, record)
            bar.update()

        execute(module.run_one, [(study, t, device) for t in todo], backend, device, kept)
    return len(todo)


def collect(study: Study, work: Path | None = None, tasks=None) -> tuple[pd.DataFrame, dict]:
    """The study's long table from ``work`` and its totals; raises when a run is missing."""
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


def cpu_seconds(records) -> float:
    """The CPU-seconds the runs of ``records`` (their records or manifest entries) took, as kept."""
    return round(sum(r.get("cpu_seconds") or 0.0 for r in records), 1)


def commit(study: Study, table: pd.DataFrame, extra: dict, out: Path | None = None, say=print):
    """Write ``table`` with its record to ``out`` or the study's store, unless the store already
    holds these rows (an archive's manifest there gives way). Returns the path written, or None."""
    path = Path(out) if out is not None else store_file(study)
    if store_record(path) is not None and load_store(path)[0].equals(table):
        say(f"{path} already holds these {extra.get('runs', len(table))} runs: left as it is")
        return None
    written = write_store(table, path, extra)
    (path.parent / MANIFEST_FILE).unlink(missing_ok=True)
    return written


def run(study: Study, options: RunOptions = RunOptions(), say=print) -> int:
    """Compute ``study`` (resumably) and commit it. Returns the exit code."""
    module = computes(study)
    start = time.time()
    store = store_file(study, options.out) if options.out is not None else None
    if hasattr(module, "run_one"):
        work = options.out / study.name if options.out is not None else None
        compute(study, options, work, say=say)
        table, totals = collect(study, work)
        extra = module.record_extra(study, totals, time.time() - start)
    else:
        made = module.compute_table(study, options, say)
        if made is None:
            say(f"{study.name}: not every run is finished; nothing committed yet.")
            return 0
        table, extra = made
    path = commit(study, table, extra, store, say)
    if path is not None:
        say(f"{len(table)} rows of {extra.get('runs', 'its')} runs to {path}")
    if hasattr(module, "after_commit") and options.out is None:
        module.after_commit(study, say)
    return 0


def dry_run(study: Study, options: RunOptions = RunOptions(), say=print) -> int:
    """Say every run of ``study`` and whether it is finished (or its module's plan)."""
    module = computes(study)
    if not hasattr(module, "run_one"):
        say(module.dry_run(study, options))
        return 0
    work = options.out / study.name if options.out is not None else study.work_dir()
    planned = plan(study, work)
    for name, done in planned:
        say(f"{'done' if done else 'todo'}  {name}")
    left = sum(not done for _, done in planned)
    say(f"{study.name}: {len(planned)} runs, {left} to compute, in {work}")
    return 0


# -- what is committed ------------------------------------------------------------------------
def store_record(path: Path) -> dict | None:
    """The record of the store whose table is ``path`` (None: not committed): ``<path>.json``, or
    the archive manifest beside it read as one (``runs``, ``entries``, ``cpu_seconds``,
    ``seal``)."""
    path = Path(path)
    if Path(f"{path}.json").exists():
        return json.loads(Path(f"{path}.json").read_text())
    if (path.parent / MANIFEST_FILE).exists():
        manifest = read_manifest(path.parent)
        entries = manifest.pop("runs")
        cost = cpu_seconds(entries)
        return {**manifest, "runs": len(entries), "entries": entries, "cpu_seconds": cost}
    return {} if path.exists() else None


def write_store(table: pd.DataFrame, path, extra: dict | None = None) -> Path:
    """Write ``table`` to ``path`` (Parquet) with ``<path>.json`` beside it: when and on which
    machine (one thread) it was made, by which code, its SHA-256 and ``extra``'s fields."""
    path = Path(path)
    if path.suffix != ".parquet":
        raise ValueError(f"{path}: a table with its record is Parquet; end it in .parquet.")
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(path, lambda p: table.to_parquet(p, index=False))
    meta = {
        "created": datetime.now(UTC).isoformat(timespec="seconds"),
        "code": code_fingerprint(),
        "machine": machine.fingerprint(threads=1),
        "rows": len(table),
        "sha256": _sha256(path),
        **(extra or {}),
    }
    text = json.dumps(meta, indent=1, sort_keys=True) + "\n"
    atomic_write(Path(f"{path}.json"), lambda p: p.write_text(text))
    return path


def load_store(path: Path) -> tuple[pd.DataFrame, dict]:
    """A committed store's table and record (:func:`store_record`), checked against its
    SHA-256 (an archive: every run's rows against its manifest; a CSV has no record: ``{}``)."""
    path = Path(path)
    if not Path(f"{path}.json").exists() and (path.parent / MANIFEST_FILE).exists():
        return load_archive(path.parent)[0], store_record(path)
    if not path.exists():
        raise FileNotFoundError(f"No table at {path}.")
    if path.suffix != ".parquet":
        return read_table_file(path), {}
    record = store_record(path)
    if record and record.get("sha256") != _sha256(path):
        raise ValueError(
            f"{path} does not match the SHA-256 in {path}.json (the file was changed after it "
            "was written); recompute it."
        )
    return read_table_file(path), record


def committed(path: Path) -> tuple[pd.DataFrame, dict] | None:
    """:func:`load_store` of ``path``, or None where nothing is committed."""
    return load_store(path) if Path(path).exists() else None


def sha256_matches(path: Path, record: dict) -> bool | None:
    """Whether the table at ``path`` is the one its record checksummed (None: no checksum)."""
    if "sha256" in record:
        return _sha256(path) == record["sha256"]
    if "seal" in record:
        return record["seal"] == seal(Path(path).parent, record["entries"])
    return None


def store_state(study: Study) -> dict:
    """Whether the study's store is committed, whether its SHA-256 matches its record, and its cost.
    Keys: path, committed, sha256_matches, cpu_seconds, device_seconds, runs."""
    path = store_file(study)
    record = store_record(path)
    matches = None if record is None else sha256_matches(path, record)
    costs = {k: (record or {}).get(k) for k in ("cpu_seconds", "device_seconds", "runs")}
    return {"path": path, "committed": record is not None, "sha256_matches": matches, **costs}
