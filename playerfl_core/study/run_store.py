"""The run store: one directory of finished runs, each named by its :class:`RunSpec`.

A run writes ``runs/<run_id>.csv`` and then ``runs/<run_id>.json`` (its record), each atomically;
it counts as finished once its JSON exists, so a killed grid resumes without loss or duplicates.
Reads check a run against its record (:class:`DamagedRunError`). :func:`compute` runs a spec
anywhere, :meth:`Store.write_finished` stores it, :func:`execute` does both.
:mod:`playerfl_core.study.run_spec` (what names a run) is re-exported here.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import sys
import time
import traceback
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path

import pandas as pd

from data_prep import load
from playerfl_core.fl.algorithms import get_algorithm
from playerfl_core.fl.divergence import check_table
from playerfl_core.fl.engine import DivergenceError, run_federated
from playerfl_core.fl.schema import COLUMNS
from playerfl_core.stats.results import atomic_write, env_folder, folder_problem
from playerfl_core.study import machine
from playerfl_core.study.run_spec import (  # noqa: F401 (re-exported: many callers name a run here)
    REPO_ROOT,
    RUN_MODULES,
    RunSpec,
    code_fingerprint,
    options_tag,
    protocol_tag,
)

RESULTS_DIR = REPO_ROOT / "results"

OK, DIVERGED, ERROR = "ok", "diverged", "error"


def default_store(profile: str = "quick") -> Path:
    """``<repo>/results/<profile>`` (``PLAYERFL_RESULTS`` replaces ``<repo>/results``)."""
    return (env_folder("PLAYERFL_RESULTS") or RESULTS_DIR) / profile


class StoreError(ValueError):
    """A store folder that cannot hold runs: a file in its way, or no write permission."""


class DamagedRunError(RuntimeError):
    """A stored run's files are missing, truncated or do not match its recorded checksum."""


STATUSES = (OK, DIVERGED, ERROR)
LOCK_FILE = ".grid.lock"
CSV_HEADER = (",".join(COLUMNS) + "\n").encode()


def _age_s(path: Path) -> float:
    """Seconds since ``path`` was last written; infinite when it is gone."""
    try:
        return time.time() - path.stat().st_mtime
    except FileNotFoundError:
        return float("inf")


def _alive(pid: int) -> bool:
    """Whether process ``pid`` still runs (a zombie does not)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's process: alive
        return True
    try:  # Linux: the state follows the parenthesised command name
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return True


class Store:
    """One directory of finished runs: ``runs/<run_id>.csv`` + ``runs/<run_id>.json``, whose
    recorded row count and SHA-256 every read checks; a run failing them is *damaged*
    (:attr:`damaged`) and treated as never finished."""

    def __init__(self, root: str | Path):
        if not str(root).strip():
            raise StoreError(
                f"A store folder is empty ({root!r}); give a folder, or None for the default."
            )
        self.root = Path(root).expanduser().resolve()
        self.runs = self.root / "runs"
        self.damaged: dict[str, str] = {}
        """run_id -> what is wrong, for every damaged run this object has read."""

    def __repr__(self):
        return f"Store({str(self.root)!r})"

    def check_writable(self) -> None:
        """Raise :class:`StoreError` unless runs can be written into ``runs/``."""
        problem = folder_problem(self.runs)
        if problem:
            raise StoreError(f"The store {self.root} cannot hold runs: {problem}.")
        folders = sorted(
            p.name
            for p in (self.runs.iterdir() if self.runs.is_dir() else [])
            if p.suffix in (".json", ".csv") and p.is_dir()
        )
        if folders:
            raise StoreError(
                f"The store {self.root} has folders where run files belong ({', '.join(folders)} "
                f"in {self.runs}); a run cannot be written over a folder. Move or remove them "
                "(`playerfl status` lists the runs they damage) and run again."
            )

    @contextmanager
    def computing(self, poll_s: float = 1.0, say: bool = True):
        """Hold the store's grid lock while a grid computes into it: a second grid waits, then
        computes only what is missing; a lock whose process is gone is taken over."""
        lock = self.runs / LOCK_FILE
        self.runs.mkdir(parents=True, exist_ok=True)
        said = False
        while True:
            try:
                fd = os.open(lock, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
                break
            except FileExistsError:
                try:
                    holder = lock.read_text().strip()
                except FileNotFoundError:  # released meanwhile: try again
                    continue
                if holder.isdigit() and _alive(int(holder)) and int(holder) != os.getpid():
                    if say and not said:
                        print(
                            f"Waiting for another grid (process {holder}), which is computing "
                            f"into the store {self.root}; this one then computes only what is "
                            "still missing (or stop it and give it another --store).",
                            file=sys.stderr,
                        )
                        said = True
                    time.sleep(poll_s)
                    continue
                if not holder and _age_s(lock) < 5:  # created, its process id not written yet
                    time.sleep(0.1)
                    continue
                lock.unlink(missing_ok=True)  # its process is gone
        try:
            os.write(fd, str(os.getpid()).encode())
            os.close(fd)
            yield
        finally:
            lock.unlink(missing_ok=True)

    def remove_stale_temporaries(self) -> list[str]:
        """Delete the temporary files of writes whose process is gone; return their names."""
        removed = []
        for tmp in sorted(self.runs.glob(".*.tmp")) if self.runs.is_dir() else []:
            pid = tmp.name.rsplit(".", 2)[-2]
            if pid.isdigit() and not _alive(int(pid)):
                tmp.unlink(missing_ok=True)
                removed.append(tmp.name)
        return removed

    def record(self, spec: RunSpec) -> dict | None:
        """The entry of a finished, intact run; None if unfinished or damaged."""
        return self.checked_record(spec.run_id)

    def checked_record(self, run_id: str) -> dict | None:
        path = self.runs / f"{run_id}.json"
        if not path.exists():
            return None
        try:
            rec = self._read_record(path)
            if rec["status"] == OK:
                self._check_csv(rec, self._csv_bytes(run_id))
        except DamagedRunError as err:
            self.damaged[run_id] = str(err)
            return None
        self.damaged.pop(run_id, None)
        return rec

    def scan(self) -> tuple[list[dict], dict[str, str]]:
        """Every intact record in the store, and ``{run_id: problem}`` for the damaged ones."""
        records, damaged = [], {}
        for path in sorted(self.runs.glob("*.json")) if self.runs.is_dir() else []:
            rec = self.checked_record(path.stem)
            if rec is not None:
                records.append(rec)
            elif path.stem in self.damaged:
                damaged[path.stem] = self.damaged[path.stem]
        return records, damaged

    def timing_records(self, limit: int = 2000) -> list[dict]:
        """Up to ``limit`` stored records, read without checks (for time estimates only)."""
        out = []
        for f in list(self.runs.glob("*.json"))[:limit] if self.runs.is_dir() else []:
            try:
                out.append(json.loads(f.read_text()))
            except (OSError, ValueError):
                continue
        return out

    def table(self, spec: RunSpec) -> pd.DataFrame:
        """The run's rows, checked against its record (raises :class:`DamagedRunError`)."""
        return self.rows(spec.run_id)

    def rows(self, run_id: str) -> pd.DataFrame:
        """:meth:`table` by run id."""
        path = self.runs / f"{run_id}.json"
        data = self._csv_bytes(run_id)
        self._check_csv(self._read_record(path), data)
        table = pd.read_csv(io.BytesIO(data))
        if table[[c for c in COLUMNS if c != "value"]].isna().any().any():
            raise DamagedRunError(
                f"{run_id}: {path.with_suffix('.csv')} has empty fields; the file is "
                "damaged. Delete it and its .json; the grid recomputes the run."
            )
        return table

    def write(self, spec: RunSpec, table: pd.DataFrame | None, record: dict) -> dict:
        """:meth:`write_finished` for a table (None: a failed run, no rows)."""
        return self.write_finished(FinishedRun(spec, record, encode_rows(table)))

    def write_finished(self, run: FinishedRun) -> dict:
        """:meth:`write_rows` of a computed run."""
        return self.write_rows(run.spec.run_id, run.record, run.rows)

    def write_rows(self, run_id: str, record: dict, data: bytes | None) -> dict:
        """Rows (CSV bytes; None: a failed run) first, record (count, SHA-256) last, each
        atomically: the record marks the run done."""
        self.runs.mkdir(parents=True, exist_ok=True)
        record = dict(record)
        if data is not None:
            n_rows = max(data.count(b"\n") - 1, 0)
            record.update(rows=n_rows, csv_sha256=hashlib.sha256(data).hexdigest())
            atomic_write(self.runs / f"{run_id}.csv", lambda p: p.write_bytes(data))
        text = json.dumps(record, indent=1, sort_keys=True, default=str)
        atomic_write(self.runs / f"{run_id}.json", lambda p: p.write_text(text))
        return record

    # -- checks -----------------------------------------------------------------------------
    def _read_record(self, path: Path) -> dict:
        fix = "Delete it; the grid recomputes the run."
        try:
            rec = json.loads(path.read_text())
        except (OSError, UnicodeDecodeError, ValueError) as err:
            raise DamagedRunError(f"{path.stem}: {path} is unreadable ({err}). {fix}") from err
        if not isinstance(rec, dict) or rec.get("status") not in STATUSES:
            got = rec.get("status") if isinstance(rec, dict) else type(rec).__name__
            raise DamagedRunError(
                f"{path.stem}: {path} is not a run record (status {got!r}, want one of "
                f"{STATUSES}). {fix}"
            )
        if rec.get("run_id", path.stem) != path.stem:
            raise DamagedRunError(
                f"{path.stem}: {path} records run {rec['run_id']!r}, not its file name. {fix}"
            )
        if rec["status"] != OK and not str(rec.get("error") or "").strip():
            raise DamagedRunError(
                f"{path.stem}: {path} has status {rec['status']!r} without the reason the library "
                f"always records (edited or damaged). {fix}"
            )
        if rec["status"] != OK and rec.get("csv_sha256") is not None:
            raise DamagedRunError(
                f"{path.stem}: {path} has status {rec['status']!r} but records rows (a failed "
                f"run stores none): the record was edited. {fix}"
            )
        rec.setdefault("run_id", path.stem)
        return rec

    def _csv_bytes(self, run_id: str) -> bytes:
        path = self.runs / f"{run_id}.csv"
        try:
            return path.read_bytes()
        except OSError as err:
            raise DamagedRunError(
                f"{run_id}: its rows ({path}) are missing or unreadable ({err.strerror}). "
                "The grid recomputes the run."
            ) from err

    def _check_csv(self, rec: dict, data: bytes) -> None:
        name, path = rec["run_id"], self.runs / f"{rec['run_id']}.csv"
        fix = "The file was cut short, emptied or edited; the grid recomputes the run."
        expected, n = rec.get("csv_sha256"), max(data.count(b"\n") - 1, 0)
        if expected is not None and hashlib.sha256(data).hexdigest() != expected:
            raise DamagedRunError(
                f"{name}: {path} does not match its recorded SHA-256 ({n} rows, "
                f"{rec.get('rows', '?')} recorded). {fix}"
            )
        # legacy run (stored before checksums): check what can be checked without one
        if expected is None and (not data.startswith(CSV_HEADER) or not data.endswith(b"\n")):
            raise DamagedRunError(
                f"{name}: {path} is empty, truncated or not a results table (stored before "
                f"checksums, so only its header and last line can be checked). {fix}"
            )
        if rec.get("rows") is not None and n != rec["rows"]:
            raise DamagedRunError(f"{name}: {path} has {n} rows, {rec['rows']} recorded. {fix}")


_DATA_CACHE: dict = {}


def load_data_cached(dataset: str, profile: str, seed: int, protocol: str = "book"):
    """``data_prep.load`` with a small per-process cache, reused across a seed's runs."""
    key = (dataset, profile, seed, protocol)
    if key not in _DATA_CACHE:
        if len(_DATA_CACHE) >= 4:
            _DATA_CACHE.pop(next(iter(_DATA_CACHE)))
        _DATA_CACHE[key] = load(dataset, profile=profile, seed=seed, protocol=protocol)
    return _DATA_CACHE[key]


@dataclass(frozen=True)
class FinishedRun:
    """One computed run on its way to the store: its manifest entry and its rows as CSV bytes (None:
    failed); picklable, so a worker or a cluster node returns it to the store's owner."""

    spec: RunSpec
    record: dict
    rows: bytes | None


def encode_rows(table: pd.DataFrame | None) -> bytes | None:
    """A run's rows as the store's CSV bytes (the results columns in order, no index)."""
    return None if table is None else table[COLUMNS].to_csv(index=False).encode()


def compute(
    spec: RunSpec, device: str | None = None, threads: int | None = 1, code: str = ""
) -> FinishedRun:
    """Run one spec; return it with its manifest entry, writing nothing (never raises): divergence
    gives status ``diverged`` and no rows, any other exception ``error`` with the traceback's tail.
    """
    with machine.torch_threads(threads):
        start, cpu_start = time.perf_counter(), time.process_time()
        table, status, error, info = None, OK, "", {}
        facts = machine.fingerprint()  # with the thread count the run computes with
        try:
            run = run_federated(
                load_data_cached(spec.dataset, spec.profile, spec.seed, spec.protocol),
                get_algorithm(spec.algorithm),
                spec.config(device),
            )
            table, info = check_table(run.table()), run.info
        except DivergenceError as err:
            table, status, error = None, DIVERGED, str(err)
        except Exception:  # noqa: BLE001 - recorded, shown, retried; never silently averaged in
            table, status, error = None, ERROR, traceback.format_exc(limit=-4)
    record = {
        "run_id": spec.run_id,
        **asdict(spec),
        "status": status,
        "error": error,
        "seconds": round(time.perf_counter() - start, 3),
        "cpu_seconds": round(time.process_time() - cpu_start, 3),
        "threads": threads,
        "finished": datetime.now(UTC).isoformat(timespec="seconds"),
        "code": code,
        "machine": facts,
        "info": {
            k: v
            for k, v in info.items()
            if k in ("split_p", "federated_units", "hyperparameters", "deploys")
        },
    }
    return FinishedRun(spec, record, encode_rows(table))


def execute(
    spec: RunSpec,
    store_root: str,
    device: str | None = None,
    threads: int | None = 1,
    code: str = "",
) -> dict:
    """:func:`compute` one spec and write it to the store; return its manifest entry."""
    return Store(store_root).write_finished(compute(spec, device, threads, code))
