"""Experiment grids (dataset × algorithm × learning rate × seed) with a resumable on-disk store.

The protocol (chapter 05 states it in prose):

1. **Tune** each algorithm's learning rate per dataset on the *tuning seeds*: run every LR of
   the grid and keep the one with the lowest mean (over tuning seeds) of
   :func:`playerfl_core.metrics.best_val_loss` — each client's lowest validation loss over
   rounds, averaged with training-share weights. Only validation data decide; an LR with any
   failed tuning run is ineligible.
2. **Evaluate** the chosen LR on the evaluation seeds. Within a seed all algorithms share the
   data split and initial weights (the engine guarantees it). A tuning run at the chosen LR on
   a seed that is also an evaluation seed is reused, not recomputed; in the quick profile the
   tuning seed is evaluation seed 0 for time, which can favour seed 0 slightly (its LR was
   picked on its own validation split), the same way for every algorithm. The paper profile
   tunes on separate seeds.

The store is a directory (default ``<repo>/results/<profile>``, found from the package location
so notebooks run from ``chapters/`` see the same files). Each finished run writes
``runs/<run_id>.csv`` (its rows of the long results table) and then ``runs/<run_id>.json`` (its
manifest entry: status, error, seconds, code fingerprint), each to a temporary file that is then
renamed. A run counts as finished only once its JSON exists, so a grid killed at any moment and
started again recomputes nothing that finished, loses nothing and duplicates nothing (one file
per run id). Runs that diverge (a non-finite value or a loss above
:data:`playerfl_core.divergence.LOSS_BOUND`, or non-finite PLayer-FL sensitivities) are recorded
with status ``diverged`` and no rows; they are never retried nor averaged in, and
:meth:`GridResult.note` lists them. Runs that crashed for
another reason (``error``) are retried on the next start.

Runs execute with one CPU thread each (``threads=1``): results then do not depend on how many
worker processes share the machine (CNN kernels give last-bit differences across thread counts).
On a CPU, two runs go at a time in spawned worker processes; from a script, call
:func:`run_grid` under ``if __name__ == "__main__":`` (workers re-import the script) or pass
``workers=1``.
"""

from __future__ import annotations

import concurrent.futures as cf
import hashlib
import io
import json
import math
import multiprocessing
import os
import time
import traceback
from collections.abc import Iterable
from dataclasses import MISSING, asdict, dataclass, field, fields
from datetime import UTC, datetime
from functools import cached_property
from pathlib import Path

import numpy as np
import pandas as pd
import torch
from tqdm import tqdm

from data_prep.registry import federation, is_registered
from playerfl_core.algorithms import ALGORITHMS, get_algorithm, is_algorithm
from playerfl_core.divergence import check_table
from playerfl_core.engine import DivergenceError, RunConfig, run_federated
from playerfl_core.metrics import best_val_loss, choose_lr
from playerfl_core.profiles import PROFILE_NAMES, SIZE_OF, make_config
from playerfl_core.results import COLUMNS, atomic_write
from playerfl_core.workers import init_worker, interrupts_as_keyboard, stop_workers

PACKAGE_DIR = Path(__file__).resolve().parent
REPO_ROOT = PACKAGE_DIR.parent
RESULTS_DIR = REPO_ROOT / "results"

OK, DIVERGED, ERROR = "ok", "diverged", "error"


def default_grid(dataset: str, profile: str) -> dict:
    """LR grid, tuning seeds, evaluation seeds and ``widen`` of ``dataset`` under ``profile``.

    Read from the dataset's declaration (``data_prep.federation.Federation.grid``): ``widen`` is
    how many values tuning may add beyond an edge of the grid (one at a time, whenever the chosen
    rate sits at an edge; the grid's notes say so). ``standard``: quick-size runs, ≥ 4 learning
    rates for the committed datasets, tuning seeds apart from the 10 evaluation seeds; computed
    once and committed (:mod:`playerfl_core.archive`). ``paper``: the authors' run counts
    (appendix §1.1), meant for a GPU through ``playerfl grid``.
    """
    return federation(dataset).grid(profile)


def default_store(profile: str = "quick") -> Path:
    """``<repo>/results/<profile>``, independent of the working directory.

    ``PLAYERFL_RESULTS`` replaces ``<repo>/results`` (as ``PLAYERFL_DATA`` does for the data).
    """
    env = os.environ.get("PLAYERFL_RESULTS")
    return (Path(env).expanduser().resolve() if env else RESULTS_DIR) / profile


def _algorithms(algorithms) -> list[str]:
    names = (
        list(ALGORITHMS)
        if algorithms in ("all", None)
        else (
            [a.strip() for a in algorithms.split(",") if a.strip()]
            if isinstance(algorithms, str)
            else list(algorithms)
        )
    )
    for name in names:
        if not is_algorithm(name):
            raise ValueError(
                f"Unknown algorithm {name!r}. Available: {', '.join(ALGORITHMS)}, or "
                "prefix_p<k> for the split sweep."
            )
    return names


def code_fingerprint() -> str:
    """Hash of the sources a run depends on (engine, models, algorithms, data preparation).

    Recorded with every run; a stored run whose fingerprint differs from the current code is
    flagged ``stale_code`` in the status table (and counted in the note); ``fresh=True``
    recomputes. Analysis and plotting modules are not part of it: they never change a run.
    """
    h = hashlib.sha256()
    core = [PACKAGE_DIR / f"{m}.py" for m in RUN_MODULES]
    files = (
        core
        + sorted((PACKAGE_DIR / "algorithms").glob("*.py"))
        + sorted((REPO_ROOT / "data_prep").glob("*.py"))
    )
    for f in files:
        if f.exists():
            h.update(f.relative_to(REPO_ROOT).as_posix().encode())
            h.update(f.read_bytes())
    return h.hexdigest()[:12]


RUN_MODULES = (
    "engine",
    "seeding",
    "errors",
    "schema",
    "models",
    "units",
    "sensitivity",
    "profiles",
    "results",
    "scoring",
    "losses",
)
"""Modules of ``playerfl_core`` whose code decides a run's numbers (besides ``algorithms/``)."""


# -- one run ----------------------------------------------------------------------------------
def options_tag(loss: str, augment: bool) -> str:
    """``""`` for the default training options, else ``_focal`` and/or ``_augment``."""
    return ("_focal" if loss == "focal" else "") + ("_augment" if augment else "")


@dataclass(frozen=True)
class RunSpec:
    """Everything that names one run; :attr:`run_id` is its file name in the store."""

    dataset: str
    algorithm: str
    lr: float
    seed: int
    profile: str = "quick"
    eval_timing: str = "after_aggregation"
    rounds: int | None = None
    loss: str = "cross_entropy"
    augment: bool = False

    def config(self, device: str | None = None) -> RunConfig:
        return make_config(
            self.dataset,
            self.profile,
            seed=self.seed,
            lr=self.lr,
            rounds=self.rounds,
            device=device,
            eval_timing=self.eval_timing,
            loss=self.loss,
            augment=self.augment,
            progress=False,
        )

    def fingerprint(self) -> dict:
        """What the user chose for this run: dataset, algorithm, data profile, and the settings
        and hyper-parameters that differ from their defaults.

        Defaults stay out, so adding an option whose default keeps the old behaviour keeps every
        stored run's name; what the code does by default is tracked by :func:`code_fingerprint`
        (stored runs of other code are flagged ``stale_code``) and checked by re-computation
        (:func:`playerfl_core.archive.recompute_sample`).
        """
        config = asdict(self.config("cpu"))
        defaults = {f.name: f.default for f in fields(RunConfig) if f.default is not MISSING}
        chosen = {
            k: v
            for k, v in config.items()
            if k not in ("device", "progress") and (k not in defaults or v != defaults[k])
        }
        algorithm = get_algorithm(self.algorithm)
        hyper = {
            k: v for k, v in algorithm.hyperparameters().items() if v != algorithm.defaults()[k]
        }
        size = SIZE_OF[self.profile]
        data = federation(self.dataset).loader_sizes(size) if is_registered(self.dataset) else {}
        return {
            "dataset": self.dataset,
            "algorithm": self.algorithm,
            "config": chosen,
            "hyperparameters": hyper,
            "data": {"profile": self.profile, **data},
        }

    @cached_property
    def run_id(self) -> str:
        digest = hashlib.sha256(
            json.dumps(self.fingerprint(), sort_keys=True, default=str).encode()
        ).hexdigest()
        rounds = f"_r{self.rounds}" if self.rounds is not None else ""
        timing = "" if self.eval_timing == "after_aggregation" else f"_{self.eval_timing}"
        return (
            f"{self.dataset}_{self.algorithm}_lr{self.lr:g}_s{self.seed}{timing}{rounds}"
            f"{options_tag(self.loss, self.augment)}_{digest[:8]}"
        )


class DamagedRunError(RuntimeError):
    """A stored run's files are missing, truncated or do not match its recorded checksum."""


STATUSES = (OK, DIVERGED, ERROR)
CSV_HEADER = (",".join(COLUMNS) + "\n").encode()


class Store:
    """One directory of finished runs: ``runs/<run_id>.csv`` + ``runs/<run_id>.json``.

    The JSON records the CSV's row count (``rows``) and the SHA-256 of its bytes
    (``csv_sha256``); every read checks both, so a file cut short, emptied, edited or deleted
    is *damaged*: reported by name (:attr:`damaged`), treated as never finished (a grid
    recomputes it, ``playerfl status`` lists it), never summed in. Runs stored before checksums
    existed (*legacy*: no ``csv_sha256``) are checked for what can be checked without one: a
    readable JSON naming its status, and a CSV with the results header, a complete last line
    and, when recorded, the right row count.
    """

    def __init__(self, root: str | Path):
        self.root = Path(root).expanduser().resolve()
        self.runs = self.root / "runs"
        self.damaged: dict[str, str] = {}
        """run_id -> what is wrong, for every damaged run this object has read."""

    def __repr__(self):
        return f"Store({str(self.root)!r})"

    def record(self, spec: RunSpec) -> dict | None:
        """The manifest entry of a finished, intact run; None if it never finished or is
        damaged (then :attr:`damaged` says why)."""
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
        """Rows first, manifest last, each by temp file + rename: the JSON marks completion.

        The manifest records the rows' count and SHA-256, which every later read checks.
        """
        self.runs.mkdir(parents=True, exist_ok=True)
        record = dict(record)
        if table is not None:
            data = table[COLUMNS].to_csv(index=False).encode()
            record.update(rows=len(table), csv_sha256=hashlib.sha256(data).hexdigest())
            atomic_write(self.runs / f"{spec.run_id}.csv", lambda p: p.write_bytes(data))
        text = json.dumps(record, indent=1, sort_keys=True, default=str)
        atomic_write(self.runs / f"{spec.run_id}.json", lambda p: p.write_text(text))
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


def load_data_cached(dataset: str, profile: str, seed: int):
    """``data_prep.load`` with a small per-process cache: a worker reuses a seed's federation
    across the algorithms and splits it runs on it."""
    from data_prep import load

    key = (dataset, profile, seed)
    if key not in _DATA_CACHE:
        if len(_DATA_CACHE) >= 4:
            _DATA_CACHE.pop(next(iter(_DATA_CACHE)))
        _DATA_CACHE[key] = load(dataset, profile=profile, seed=seed)
    return _DATA_CACHE[key]


def execute(
    spec: RunSpec,
    store_root: str,
    device: str | None = None,
    threads: int | None = 1,
    code: str = "",
) -> dict:
    """Run one spec and write it to the store; return its manifest entry (never raises).

    Divergence (:class:`DivergenceError`, or a table that :mod:`playerfl_core.divergence`
    calls diverged: a non-finite value or a loss above its bound) gives status ``diverged``
    and no rows; any other exception gives ``error`` with the traceback's tail.
    """
    store = Store(store_root)
    previous = torch.get_num_threads()
    if threads:
        torch.set_num_threads(threads)
    start, cpu_start = time.perf_counter(), time.process_time()
    table, status, error, info = None, OK, "", {}
    try:
        run = run_federated(
            load_data_cached(spec.dataset, spec.profile, spec.seed),
            get_algorithm(spec.algorithm),
            spec.config(device),
        )
        table, info = check_table(run.table()), run.info
    except DivergenceError as err:
        table, status, error = None, DIVERGED, str(err)
    except Exception:  # noqa: BLE001 - recorded, shown, retried; never silently averaged in
        table, status, error = None, ERROR, traceback.format_exc(limit=-4)
    finally:
        torch.set_num_threads(previous)
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
        "info": {
            k: v
            for k, v in info.items()
            if k in ("split_p", "federated_units", "hyperparameters", "deploys")
        },
    }
    return store.write(spec, table, record)


# -- the grid ---------------------------------------------------------------------------------


class GridInterrupted(KeyboardInterrupt):
    """Ctrl-C or SIGTERM stopped a grid; its message says how to resume."""


class MissingResultsError(FileNotFoundError):
    """Stored results were requested (``compute=False``) but some runs are not in the store."""


@dataclass
class GridResult:
    """What a grid produced. ``table`` holds the evaluation runs (chosen LR, evaluation seeds)."""

    table: pd.DataFrame
    tuning_table: pd.DataFrame
    tuning: pd.DataFrame
    chosen: pd.DataFrame
    status: pd.DataFrame
    store: Store
    computed: int = 0
    notes: list[str] = field(default_factory=list)

    @property
    def failures(self) -> pd.DataFrame:
        return self.status[self.status["status"] != OK].reset_index(drop=True)

    def lr_at_edges(self) -> pd.DataFrame:
        """Per dataset: how many algorithms chose the largest or smallest LR they tried, and how
        many values tuning added beyond an edge (``widened``).

        A choice still at an edge after widening means the best rate may lie outside the grid.
        """
        rows = []
        for ds, g in self.tuning.groupby("dataset", sort=False):
            pairs = g.groupby("algorithm")
            lo, hi = pairs["lr"].transform("min"), pairs["lr"].transform("max")
            chosen = g["chosen"]
            rows.append(
                {
                    "dataset": ds,
                    "algorithms": g["algorithm"].nunique(),
                    "smallest": g["lr"].min(),
                    "at smallest": int((chosen & (g["lr"] == lo)).sum()),
                    "largest": g["lr"].max(),
                    "at largest": int((chosen & (g["lr"] == hi)).sum()),
                    "widened": int(g.get("added", pd.Series(False, index=g.index)).sum()),
                }
            )
        return pd.DataFrame(rows).set_index("dataset") if rows else pd.DataFrame()

    def note(self) -> str:
        """A readable account of what is missing from the summaries and why."""
        lines = list(self.notes)
        for _, r in self.failures.iterrows():
            first = str(r["error"]).strip().splitlines()[-1] if r["error"] else ""
            lines.append(
                f"EXCLUDED ({r['status']}, {r['stage']}): {r['dataset']}/"
                f"{r['algorithm']} lr={r['lr']:g} seed={r['seed']}: {first}"
            )
        stale = int(self.status.get("stale_code", pd.Series(dtype=bool)).sum())
        if stale:
            lines.append(
                f"{stale} stored runs were computed by another version of the code (its "
                "fingerprint differs: stale_code). `make test` re-computes a sample of the "
                "committed runs and fails on any difference; `--recompute-stale` redoes them all."
            )
        return "\n".join(lines) if lines else "All runs finished; nothing excluded."


def grid_settings(dataset: str, profile: str, seeds=None, lrs=None, tune_seeds=None) -> dict:
    """The LR grid, tuning seeds and evaluation seeds of one dataset (explicit values win over
    :func:`default_grid`)."""
    base = default_grid(dataset, profile)
    lrs = tuple(float(x) for x in (lrs if lrs is not None else base["lrs"]))
    seeds = tuple(int(s) for s in (seeds if seeds is not None else base["seeds"]))
    tune = tuple(
        int(s)
        for s in (tune_seeds if tune_seeds is not None else base.get("tune_seeds", seeds[:1]))
    )
    if not lrs or not seeds:
        raise ValueError("A grid needs at least one learning rate and one seed.")
    if len(set(seeds)) != len(seeds):
        raise ValueError(f"Evaluation seeds must be distinct, got {list(seeds)}.")
    if len(lrs) == 1:
        tune = ()  # nothing to choose
    widen = int(base.get("widen", 0)) if len(lrs) > 1 else 0
    return {"lrs": lrs, "seeds": seeds, "tune_seeds": tune, "widen": widen}


def widened_lr(chosen: float, lrs: Iterable[float]) -> float | None:
    """The next learning rate beyond the edge ``chosen`` sits on, or None if it is inside.

    The step repeats the grid's ratio at that edge (3e-2, 1e-2 -> 1e-1 above; -> 3.33e-3 below),
    so a grid of roughly geometric spacing stays so.
    """
    lrs = sorted(set(lrs))
    if len(lrs) < 2 or chosen is None or not np.isfinite(chosen):
        return None
    if chosen == lrs[-1]:
        return float(f"{lrs[-1] * lrs[-1] / lrs[-2]:.3g}")
    if chosen == lrs[0]:
        return float(f"{lrs[0] * lrs[0] / lrs[1]:.3g}")
    return None


SPLIT_PREFIX = "prefix_p"
"""``prefix_p<k>``: federate units 1..k at the LR tuned for PLayer-FL (the split sweep)."""


def split_algorithms(dataset: str, profile: str) -> list[str]:
    """``prefix_p0`` … ``prefix_pL`` for the model of ``dataset`` (L its number of units)."""
    from playerfl_core.models import model_for
    from playerfl_core.units import unit_names

    data = load_data_cached(dataset, profile, 0)
    model = model_for(data, 1.0, 0)
    return [f"{SPLIT_PREFIX}{k}" for k in range(len(unit_names(model)) + 1)]


def run_grid(
    datasets: Iterable[str] | str,
    algorithms="all",
    profile: str = "quick",
    *,
    seeds=None,
    lrs=None,
    tune_seeds=None,
    fixed_lr: dict | None = None,
    store: str | Path | None = None,
    eval_timing: str = "after_aggregation",
    rounds: int | None = None,
    loss: str = "cross_entropy",
    augment: bool = False,
    device: str | None = None,
    workers: int | None = None,
    threads: int = 1,
    compute: bool = True,
    retry_errors: bool = True,
    fresh: bool = False,
    recompute_stale: bool = False,
    progress: bool = True,
    name: str | None = None,
    splits: bool = False,
) -> GridResult:
    """Run (or load) the grid; return its tables. Safe to kill and call again at any time.

    ``seeds``/``lrs``/``tune_seeds`` override :func:`default_grid` for every dataset. ``fixed_lr``
    maps ``(dataset, algorithm)`` to a learning rate and skips tuning for those pairs (e.g. to
    rerun chosen LRs under ``eval_timing="before_aggregation"``). ``compute=False`` only loads
    and raises :class:`MissingResultsError` naming the command that computes what is missing.
    ``recompute_stale`` recomputes stored runs made by different code (see
    :func:`code_fingerprint`); ``fresh`` recomputes everything. ``workers``
    processes run in parallel on the CPU (default: 2 when the CPU has ≥ 2 cores and device is
    CPU, else 1). The combined tables are also written to ``<store>/<name>.csv`` and
    ``<name>-status.csv`` (``name`` defaults to ``grid-<eval_timing>``, plus ``-focal`` and
    ``-augment`` for those training options; ``loss``/``augment`` as in ``RunConfig``).

    ``splits`` adds the split sweep: ``prefix_p0`` … ``prefix_pL`` per dataset, each run at the
    learning rate tuned for PLayer-FL (which is then added to the algorithms), so the split is
    the only thing that changes between them. Where a profile allows it (``widen`` in
    :func:`default_grid`), a learning rate chosen at an edge of the grid makes tuning try the
    next value beyond that edge, up to ``widen`` times per (dataset, algorithm); the notes list
    each one.
    """
    datasets = (
        [d.strip() for d in datasets.split(",")] if isinstance(datasets, str) else list(datasets)
    )
    algorithms = _algorithms(algorithms)
    if profile not in PROFILE_NAMES:
        raise ValueError(f"Unknown profile {profile!r}; use one of {PROFILE_NAMES}.")
    store = Store(store if store is not None else default_store(profile))
    _start_from_archive(store, profile)
    device = device or ("cuda" if torch.cuda.is_available() else "cpu")
    if workers is None:
        workers = min(2, os.cpu_count() or 1) if device == "cpu" else 1
    code = code_fingerprint()
    fixed_lr = dict(fixed_lr or {})
    if splits and "playerfl" not in algorithms:
        algorithms.append("playerfl")

    # The plan: tuning specs per (dataset, algorithm), then evaluation seeds once an LR is known.
    plan, spec_stage = {}, {}
    for ds in datasets:
        s = grid_settings(ds, profile, seeds, lrs, tune_seeds)
        for alg in split_algorithms(ds, profile) if splits else []:
            plan[(ds, alg)] = {
                "tune": [],
                "seeds": s["seeds"],
                "lr": fixed_lr.get((ds, alg)),
                "lrs": (),
                "follow": (ds, "playerfl"),
            }
        for alg in algorithms:
            if (ds, alg) in fixed_lr:
                tune_specs, lr_known = [], float(fixed_lr[(ds, alg)])
            else:
                tune_specs = [
                    RunSpec(ds, alg, lr, t, profile, eval_timing, rounds, loss, augment)
                    for lr in s["lrs"]
                    for t in s["tune_seeds"]
                ]
                lr_known = s["lrs"][0] if not s["tune_seeds"] else None
            plan[(ds, alg)] = {
                "tune": tune_specs,
                "seeds": s["seeds"],
                "lr": lr_known,
                "lrs": s["lrs"] if (ds, alg) not in fixed_lr else (lr_known,),
                "tune_seeds": s["tune_seeds"],
                "widen": s["widen"] if (ds, alg) not in fixed_lr else 0,
                "widened": [],
            }
            for sp in tune_specs:
                spec_stage[sp] = "tune"

    def eval_specs(key, lr):
        ds, alg = key
        return [
            RunSpec(ds, alg, lr, seed, profile, eval_timing, rounds, loss, augment)
            for seed in plan[key]["seeds"]
        ]

    records: dict[RunSpec, dict] = {}

    def done(spec) -> bool:
        """Finished (in this call, or stored unless ``fresh``); failed errors are retried."""
        if spec in records:
            return True
        rec = None if fresh else store.record(spec)
        if rec is None or (rec["status"] == ERROR and retry_errors):
            return False
        if recompute_stale and rec.get("code") != code:
            return False
        records[spec] = rec
        return True

    def resolve() -> None:
        """Choose the LR of every pair whose tuning runs have all finished; widen at an edge.

        A pair widens again at once when its added runs are already stored (a resumed grid).
        """
        for (ds, alg), p in plan.items():
            while p["lr"] is None and p["tune"] and all(done(sp) for sp in p["tune"]):
                lr = _chosen_lr(p["tune"], records, store)
                extra = widened_lr(lr, p["lrs"]) if len(p["widened"]) < p["widen"] else None
                if extra is None:
                    p["lr"] = lr
                    break
                p["widened"].append(extra)
                p["lrs"] = tuple(sorted({*p["lrs"], extra}, reverse=True))
                new = [
                    RunSpec(ds, alg, extra, t, profile, eval_timing, rounds, loss, augment)
                    for t in p["tune_seeds"]
                ]
                p["tune"] = [*p["tune"], *new]
                spec_stage.update(dict.fromkeys(new, "tune"))
        for p in plan.values():
            if p["lr"] is None and "follow" in p:
                p["lr"] = plan[p["follow"]]["lr"]

    def todo() -> tuple[list[RunSpec], int]:
        """Runs that can start now, and the number still to run in total."""
        ready, n_left = [], 0
        for key, p in plan.items():
            tune_left = [sp for sp in p["tune"] if not done(sp)]
            ready += tune_left
            n_left += len(tune_left)
            if p["lr"] is None:
                tuned = {sp.seed for sp in p["tune"]}
                n_left += len([s for s in p["seeds"] if s not in tuned])
            elif not math.isnan(p["lr"]):
                ev = [sp for sp in eval_specs(key, p["lr"]) if not done(sp)]
                ready += ev
                n_left += len(ev)
        return list(dict.fromkeys(ready)), n_left

    resolve()
    ready, n_left = todo()
    if not compute and n_left:
        unresolved = [sp for p in plan.values() if p["lr"] is None for sp in p["tune"]]
        raise MissingResultsError(
            _missing_message(
                list(dict.fromkeys(ready + unresolved)), store, profile, datasets, algorithms
            )
        )

    timer = _Timer(store)
    computed = 0
    bar = tqdm(
        total=n_left,
        desc=f"grid {profile}",
        unit="run",
        disable=not progress or not n_left,
        bar_format="{l_bar}{bar}| {n_fmt}/{total_fmt} runs [{elapsed}{postfix}]",
    )
    pool = _make_pool(workers if n_left > 1 else 1, threads)
    previous_threads = torch.get_num_threads()
    interrupted = False
    try:
        with interrupts_as_keyboard():
            pending: dict[cf.Future, RunSpec] = {}
            while True:
                # Longest expected run first, at most `workers` in flight: the slow runs (large
                # datasets, pFedMe) do not end up alone at the tail while other workers idle.
                queue = sorted(
                    (sp for sp in ready if sp not in pending.values()),
                    key=lambda sp: -timer.estimate([sp]),
                )
                for sp in queue[: max(workers, 1) - len(pending)]:
                    pending[pool.submit(execute, sp, str(store.root), device, threads, code)] = sp
                if not pending:
                    break
                finished, _ = cf.wait(list(pending), return_when=cf.FIRST_COMPLETED)
                for fut in finished:
                    sp = pending.pop(fut)
                    try:
                        records[sp] = fut.result()
                    except cf.process.BrokenProcessPool as err:
                        raise RuntimeError(
                            "A grid worker process died. From a script, call run_grid under "
                            "`if __name__ == '__main__':` (spawned workers re-import the script), "
                            "or pass workers=1. Finished runs are stored; calling again resumes."
                        ) from err
                    computed += 1
                    timer.add(records[sp])
                resolve()
                ready, n_left = todo()
                left = dict.fromkeys([*pending.values(), *ready, *_unscheduled(plan, eval_specs)])
                eta = timer.estimate(left) / max(workers, 1)
                bar.total = max(bar.total, bar.n + len(finished) + n_left)  # widening adds runs
                bar.set_postfix_str(f"~{_fmt(eta)} left", refresh=False)
                bar.update(len(finished))
    except KeyboardInterrupt as err:
        interrupted = True
        stop_workers(pool)
        raise GridInterrupted(
            f"grid stopped ({err or 'Ctrl-C'}). The runs finished so far are stored in "
            f"{store.root}; run the same command again to resume (nothing finished is "
            "recomputed)."
        ) from None
    finally:
        bar.close()
        pool.shutdown(wait=not interrupted, cancel_futures=True)
        torch.set_num_threads(previous_threads)

    result = _collect(plan, records, store, spec_stage, eval_specs, code, computed)
    result.notes += [
        f"DAMAGED, recomputed: {problem}"
        for run_id, problem in store.damaged.items()
        if any(sp.run_id == run_id for sp in records)
    ]
    name = name or f"grid-{eval_timing}{options_tag(loss, augment).replace('_', '-')}"
    if computed or not (store.root / f"{name}.csv").exists():
        from playerfl_core.results import save_table

        save_table(result.table, store.root / f"{name}.csv")
        atomic_write(
            store.root / f"{name}-status.csv", lambda p: result.status.to_csv(p, index=False)
        )
    return result


def _start_from_archive(store: Store, profile: str) -> None:
    """An empty store starts from the committed archive of its profile (verified), if any."""
    from playerfl_core.archive import archive_dir, unpack

    if store.runs.exists() and any(store.runs.glob("*.json")):
        return
    if (archive_dir(profile) / "manifest.json").exists():
        unpack(archive_dir(profile), store)


def load_grid(*args, **kwargs) -> GridResult:
    """:func:`run_grid` with ``compute=False``: stored results only."""
    return run_grid(*args, compute=False, **kwargs)


# -- helpers ----------------------------------------------------------------------------------


class _InlineExecutor:
    """Runs a submitted call at once, in this process (workers=1, e.g. GPU or tests)."""

    def submit(self, fn, *args):
        fut = cf.Future()
        fut.set_result(fn(*args))
        return fut

    def shutdown(self, wait=True, cancel_futures=False):
        pass


def _make_pool(workers: int, threads: int):
    if workers <= 1:
        return _InlineExecutor()
    return cf.ProcessPoolExecutor(
        max_workers=workers,
        initializer=init_worker,
        initargs=(threads, os.getpid()),
        mp_context=multiprocessing.get_context("spawn"),
    )


def _unscheduled(plan, eval_specs) -> list[RunSpec]:
    """Evaluation runs whose LR is not chosen yet, with a stand-in LR for the time estimate."""
    out = []
    for key, p in plan.items():
        lrs = p["lrs"] or plan[p["follow"]]["lrs"]
        if p["lr"] is None and lrs:
            tuned = {sp.seed for sp in p["tune"]}
            out += [sp for sp in eval_specs(key, lrs[0]) if sp.seed not in tuned]
    return out


def _chosen_lr(tune_specs, records, store) -> float:
    tables = [store.table(sp) for sp in tune_specs if records[sp]["status"] == OK]
    scores = _tuning_scores(tune_specs, records, tables)
    chosen = choose_lr(scores)
    return float(chosen["lr"].iloc[0]) if len(chosen) else float("nan")


def _tuning_scores(tune_specs, records, tables) -> pd.DataFrame:
    """Mean tuning score per LR; inf when any tuning run of that LR failed."""
    per_run = best_val_loss(pd.concat(tables, ignore_index=True)) if tables else None
    rows = []
    by_lr: dict[float, list[RunSpec]] = {}
    for sp in tune_specs:
        by_lr.setdefault(sp.lr, []).append(sp)
    for lr, specs in by_lr.items():
        sp0 = specs[0]
        if any(records[sp]["status"] != OK for sp in specs) or per_run is None:
            score = float("inf")
        else:
            sel = per_run[
                (per_run["lr"] == lr)
                & per_run["seed"].isin([s.seed for s in specs])
                & (per_run["algorithm"] == sp0.algorithm)
            ]
            score = float(sel["value"].mean())
        rows.append(
            {
                "dataset": sp0.dataset,
                "algorithm": sp0.algorithm,
                "lr": lr,
                "n_runs": len(specs),
                "n_ok": sum(records[sp]["status"] == OK for sp in specs),
                "score": score,
            }
        )
    return pd.DataFrame(rows)


def _collect(plan, records, store, spec_stage, eval_specs, code, computed) -> GridResult:
    eval_tables, tune_tables, status_rows, tuning_rows, chosen_rows, notes = [], [], [], [], [], []
    seen = set()
    for key, p in plan.items():
        ds, alg = key
        tune_ok = [store.table(sp) for sp in p["tune"] if records[sp]["status"] == OK]
        tune_tables += tune_ok
        widened = p.get("widened", [])
        if p["tune"]:
            scores = _tuning_scores(p["tune"], records, tune_ok)
            scores["chosen"] = scores["lr"] == p["lr"]
            scores["added"] = scores["lr"].isin(widened)
            tuning_rows.append(scores)
        chosen_rows.append(
            {
                "dataset": ds,
                "algorithm": alg,
                "lr": p["lr"],
                "tuned": bool(p["tune"]),
                "lr_from": p["follow"][1] if "follow" in p else alg,
                "widened": len(widened),
            }
        )
        for extra in widened:
            notes.append(
                f"WIDENED: {ds}/{alg}: the chosen rate sat at an edge of the grid, so tuning "
                f"also tried lr={extra:g}."
            )
        if p["lr"] is None or math.isnan(p["lr"]):
            why = (
                f"its learning rate comes from {p['follow'][1]}, whose tuning failed"
                if "follow" in p
                else "every learning rate failed during tuning"
            )
            notes.append(f"EXCLUDED: {ds}/{alg}: {why}; no evaluation runs.")
            specs = []
        else:
            specs = eval_specs(key, p["lr"])
        for sp in specs:
            if records[sp]["status"] == OK:
                eval_tables.append(store.table(sp))
        for sp in [*p["tune"], *specs]:
            if sp in seen:
                continue
            seen.add(sp)
            rec = records[sp]
            stage = (
                "tune+eval"
                if sp in spec_stage and sp in specs
                else ("tune" if sp in spec_stage else "eval")
            )
            status_rows.append(
                {
                    "run_id": rec["run_id"],
                    "dataset": sp.dataset,
                    "algorithm": sp.algorithm,
                    "lr": sp.lr,
                    "seed": sp.seed,
                    "stage": stage,
                    "status": rec["status"],
                    "error": rec.get("error", ""),
                    "seconds": rec.get("seconds"),
                    "stale_code": rec.get("code", code) != code,
                }
            )
    empty = pd.DataFrame(columns=COLUMNS)
    table = pd.concat(eval_tables, ignore_index=True) if eval_tables else empty
    tuning_table = pd.concat(tune_tables, ignore_index=True) if tune_tables else empty
    tuning = (
        pd.concat(tuning_rows, ignore_index=True)
        if tuning_rows
        else pd.DataFrame(
            columns=["dataset", "algorithm", "lr", "n_runs", "n_ok", "score", "chosen", "added"]
        )
    )
    return GridResult(
        table,
        tuning_table,
        tuning,
        pd.DataFrame(chosen_rows),
        pd.DataFrame(status_rows),
        store,
        computed,
        notes,
    )


def _missing_message(missing, store, profile, datasets, algorithms) -> str:
    shown = ", ".join(sp.run_id for sp in missing[:3])
    more = f" and {len(missing) - 3} more" if len(missing) > 3 else ""
    algs = "all" if algorithms == list(ALGORITHMS) else ",".join(algorithms)
    damaged = [store.damaged[sp.run_id] for sp in missing if sp.run_id in store.damaged]
    damaged_text = (
        f"{len(damaged)} of them are damaged:\n  " + "\n  ".join(damaged[:5]) + "\n"
        if damaged
        else ""
    )
    return (
        f"{len(missing)} runs are not in {store.root} ({shown}{more}). {damaged_text}"
        "Compute them with:\n"
        f"  playerfl grid --datasets {','.join(datasets)} --algorithms {algs} "
        f"--profile {profile} --store {store.root}\n"
        "(the paper profile is meant for a GPU)."
    )


class _Timer:
    """Estimates seconds per run from finished runs: same (dataset, algorithm), else dataset."""

    def __init__(self, store: Store):
        self.by_pair: dict[tuple, list[float]] = {}
        self.by_dataset: dict[str, list[float]] = {}
        if store.runs.exists():  # earlier sessions' timings, from the manifests
            for f in list(store.runs.glob("*.json"))[:2000]:
                try:
                    self.add(json.loads(f.read_text()))
                except (OSError, ValueError):
                    continue

    def add(self, rec: dict) -> None:
        """Count a finished run's time; anything unreadable (a damaged record) is skipped."""
        if not isinstance(rec, dict) or rec.get("status") != OK:
            return
        seconds, dataset = rec.get("seconds"), rec.get("dataset")
        if not isinstance(seconds, int | float) or not math.isfinite(seconds) or not dataset:
            return
        self.by_pair.setdefault((dataset, rec.get("algorithm")), []).append(seconds)
        self.by_dataset.setdefault(dataset, []).append(seconds)

    def estimate(self, specs) -> float:
        total = 0.0
        for sp in specs:
            pair = self.by_pair.get((sp.dataset, sp.algorithm))
            if pair:
                total += float(np.mean(pair))
                continue
            ds = self.by_dataset.get(sp.dataset)
            base = float(np.mean(ds)) if ds else federation(sp.dataset).seconds_per_run
            total += base * _PRIOR_FACTOR.get(sp.algorithm, 1.0)
        return total


_PRIOR_FACTOR = {"pfedme": 4.0, "ditto": 2.0}
"""How much slower than the dataset's ``seconds_per_run`` (its declaration's rough seconds per
quick run on one CPU thread) an algorithm is: used only to order runs and estimate the time left
until the store holds measured timings."""


def _fmt(seconds: float) -> str:
    seconds = int(round(seconds))
    return f"{seconds // 60}m{seconds % 60:02d}s" if seconds >= 60 else f"{seconds}s"
