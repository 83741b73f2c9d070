"""The paper's sizes, declared before any run is computed: the split sweep of Fashion-MNIST and
its rotated federation at 2,000 images per client, the CNN at width 1.0, batch 128, 100 rounds,
every split, ten seeds, scored on 2,000 validation and test images per client.

Computed on a GPU in resumable chunks by the batched driver (:mod:`playerfl_core.fl.batched`):
``playerfl study run paper_scale --out $OUT --budget-s 480 --device cuda``. Each chunk is its rows
and then its record, each written atomically; a chunk whose rows do not match its record is
computed again. ``--tiny`` runs a two-run stand-in on the CPU.
"""

from __future__ import annotations

import hashlib
import time
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

import pandas as pd
import torch

from data_prep import preregistered
from playerfl_core.fl import batched
from playerfl_core.fl.config import RunConfig, default_device
from playerfl_core.fl.errors import DivergenceError
from playerfl_core.study import machine, runner
from playerfl_core.study.declaration import Study, federation
from playerfl_core.study.run_store import code_fingerprint
from playerfl_core.study.split_sweeps import model_units


def study_tasks(study: Study) -> list[tuple[str, float, int, int]]:
    """Every run ``(federation, lr, seed, p)``, seed-major within a federation and rate."""
    out = []
    for dataset in study.federations:
        width = study.config(dataset, "cpu", lr=study.learning_rates[0]).width
        n_units = len(model_units(federation(study, dataset, study.seeds[0]), width))
        splits = study.splits if study.splits is not None else range(n_units + 1)
        out += [
            (dataset, lr, s, p) for lr in study.learning_rates for s in study.seeds for p in splits
        ]
    return out


PAPER_SCALE = Study(
    name="paper_scale",
    what="The split sweep at the paper's sizes, on one GPU in chunks.",
    federations=preregistered.PAPER_SCALE,
    seeds=preregistered.PAPER_SCALE_SEEDS,
    learning_rates=(1e-3, 5e-4),
    splits=None,
    arms="every split p = 0 … L of the prefix federation (prefix_p<p>)",
    rates="two fixed rates: the paper's FMNIST rate for PLayer-FL (1e-3) and its neighbour",
    profile="paper",
    scoring=(
        ("val_per_client", 2000),
        ("test_per_client", 2000),
        ("round_and_oracle", "large validation"),
    ),  # fmt: skip
    claim="R1 and R2's scope at the paper's sizes",
    loader=(("eval_per_client", 2000),),
    training=(("rounds", 100), ("batch_size", 128), ("width", 1.0)),
    declared="2026-12-05",
    commit="92dabcc",
    why=(
        "Every verdict of the book is decided at reduced sizes (400 images per client, the CNN "
        "at a quarter width, 10 rounds). This sweep asks whether the rule's split, the "
        "validation oracle and the regret hold at the paper's sizes (appendix §1.1): 2,000 "
        "images per client, width 1.0, batch 128, 100 rounds, at the paper's FMNIST learning "
        "rate for PLayer-FL and Local (1e-3, appendix §9.1) and its neighbour in the paper's "
        "grid (5e-4, FedAvg's), on 2,000-image evaluation sets so a run's score is not the "
        "draw of a few test images."
    ),
    store="paper_scale",
    computes="playerfl_core.study.paper_scale",
    work="paper_scale",
    work_in_stores=True,
)
"""The study as declared, before any of its runs was computed."""

TINY = replace(
    PAPER_SCALE,
    name="paper_scale_tiny",
    federations=PAPER_SCALE.federations[:1],
    seeds=(0,),
    learning_rates=PAPER_SCALE.learning_rates[:1],
    splits=(0, 1),
    profile="quick",
    loader=(("samples_per_client", 100), ("eval_per_client", 50)),
    training=(("rounds", 2), ("batch_size", 32), ("width", 0.25)),
    why="A CPU stand-in: the chunking and resuming of the study, not its numbers.",
    store="paper_scale_tiny",
    work="paper_scale_tiny",
)
"""Two runs at small sizes: tries the chunked command on the CPU in seconds."""


def task_name(task: tuple[str, float, int, int]) -> str:
    """A run's name: ``<federation>_lr<rate>_s<seed>_p<split>``."""
    dataset, lr, seed, p = task
    return f"{dataset}_lr{lr:g}_s{seed}_p{p}"


# -- chunks on disk ---------------------------------------------------------------------------
def chunk_stem(tasks) -> str:
    names = [task_name(t) for t in tasks]
    digest = hashlib.sha256("\n".join(names).encode()).hexdigest()[:8]
    return f"{names[0]}_{len(names)}runs_{digest}"


def finished_chunks(study: Study, folders, say=print) -> dict[Path, dict]:
    """The intact chunks of ``study`` in ``folders`` (rows file → record); others refused."""
    out = {}
    for folder in dict.fromkeys(folders):
        for stem, record in runner.done_runs(folder, say).items():
            if record.get("study_key") == study.key():
                out[folder / f"{stem}.parquet"] = record
            else:
                say(f"refusing {folder / stem}: declared for another study "
                    f"({record.get('study_key')}); computed again.")  # fmt: skip
    return out


def load(study: Study = PAPER_SCALE, folders=None) -> pd.DataFrame:
    """The long table of every finished run of ``study``, by federation, rate, seed, split."""
    found = finished_chunks(study, folders or [study.work_dir()])
    tables = [pd.read_parquet(rows) for rows, rec in found.items() if rec["status"] == "ok"]
    if not tables:
        raise ValueError(f"No finished chunk of {study.name}; compute it: {COMMAND}.")
    table = pd.concat(tables, ignore_index=True)
    return table.sort_values(["dataset", "lr", "seed", "algorithm"], kind="stable")


COMMAND = "playerfl study run paper_scale --out $OUT --budget-s 480 --device cuda"


# -- computing --------------------------------------------------------------------------------
def _record(study: Study, tasks, device: str, seconds: float, status: str, error: str) -> dict:
    return {
        "study": study.name,
        "study_key": study.key(),
        "declared": study.declared,
        "runs": [task_name(t) for t in tasks],
        "status": status,
        "error": error,
        "driver": batched.DRIVER,
        "batch_runs": len(tasks),
        "seconds": round(seconds, 2),
        "device": torch.cuda.get_device_name(device) if device.startswith("cuda") else "cpu",
        "torch": torch.__version__,
        "code": code_fingerprint(),
        "batched_code": hashlib.sha256(Path(batched.__file__).read_bytes()).hexdigest()[:12],
        "machine": machine.fingerprint(),
        "finished": datetime.now(UTC).isoformat(timespec="seconds"),
    }


def compute_chunk(study: Study, tasks, device: str, deadline: float | None):
    """One chunk's table as one batched computation, and its seconds."""
    dataset, lr = tasks[0][:2]
    start = time.monotonic()
    table = batched.run_prefix_batch(
        [(federation(study, dataset, s), s, p) for _, _, s, p in tasks],
        study.config(dataset, device, lr=lr),
        deadline,
    )
    return table, time.monotonic() - start


def compute(
    study: Study,
    out: Path,
    budget_s: float,
    device: str,
    k: int,
    max_chunks: int | None = None,
    say=print,
) -> dict:
    """Compute the runs missing from the committed chunks and ``out``, K at a time, stopping before
    a chunk would end after ``budget_s`` (a first chunk too long is halved). Returns counts."""
    start = time.monotonic()
    deadline = start + budget_s
    folder = Path(out) / study.name
    for orphan in sorted(folder.glob("*.parquet")) if folder.is_dir() else []:
        if not any(p.exists() for p in (orphan.with_suffix(".json"), Path(f"{orphan}.json"))):
            # a chunk cut off before its record (not the committed table): recompute it
            say(f"paper_scale: removing {orphan}, a chunk cut off before its record.")
            orphan.unlink()
    found = finished_chunks(study, [study.work_dir(), folder], say)
    done = {n for rec in found.values() for n in rec["runs"]}
    todo = [t for t in study_tasks(study) if task_name(t) not in done]
    computed, chunks, per_run, stopped = 0, 0, None, ""
    queue = _cut(todo, k)
    while queue and not stopped:
        tasks = queue.pop(0)
        if max_chunks is not None and chunks >= max_chunks:
            stopped, queue = f"--max-chunks {max_chunks} written", [tasks, *queue]
            break
        if per_run and time.monotonic() + per_run * len(tasks) > deadline:
            stopped, queue = "the next chunk would end after the budget", [tasks, *queue]
            break
        if device.startswith("cuda"):
            torch.cuda.empty_cache()  # what a chunk stopped for memory or time left behind
        try:
            table, seconds = compute_chunk(study, tasks, device, deadline)
            status, error = "ok", ""
        except (batched.OutOfTime, torch.cuda.OutOfMemoryError) as err:
            if chunks == 0 and len(tasks) > 1:
                say(f"paper_scale: {len(tasks)} runs at once: {str(err)[:120]}; trying halves.")
                k = max(1, len(tasks) // 2)
                queue = _cut([t for c in [tasks, *queue] for t in c], k)
                continue
            stopped, queue = f"out of time or memory ({str(err)[:120]})", [tasks, *queue]
            break
        except DivergenceError as err:
            if len(tasks) > 1:  # find the run that diverged; keep the others
                half = len(tasks) // 2
                queue = [tasks[:half], tasks[half:], *queue]
                continue
            table, seconds, status, error = None, 0.0, "diverged", str(err)
        stem = chunk_stem(tasks)
        runner.keep(folder, stem, table, _record(study, tasks, device, seconds, status, error))
        chunks += 1
        computed += len(tasks)
        per_run = seconds / len(tasks) if seconds else per_run
        say(f"paper_scale: {stem}: {len(tasks)} runs in {seconds:.1f} s ({status}).")
    return {
        "computed": computed,
        "chunks": chunks,
        "already_done": len(done),
        "left": sum(len(c) for c in queue),
        "seconds": round(time.monotonic() - start, 1),
        "stopped": stopped,
    }


def _cut(tasks, k: int) -> list[list]:
    """Chunks of at most ``k`` runs, each of one federation and learning rate."""
    chunks, current = [], []
    for t in tasks:
        if current and (len(current) == k or current[-1][:2] != t[:2]):
            chunks.append(current)
            current = []
        current.append(t)
    return chunks + ([current] if current else [])


def compute_table(study: Study, options, say=print) -> tuple[pd.DataFrame, dict] | None:
    """Compute what fits in ``options.budget_s`` into ``options.out``; once no run is left, the
    table of every chunk and its record's fields, else None."""
    if options.out is None:
        raise ValueError(f"study run {study.name}: give --out FOLDER for its finished chunks.")
    out = Path(options.out)
    device = options.device or default_device()
    if options.budget_s <= 0:
        raise ValueError("--budget-s must be > 0 seconds.")
    if out.exists() and not out.is_dir():
        raise ValueError(f"--out {out} is a file; give a folder.")
    try:
        RunConfig(rounds=1, lr=1e-3, batch_size=1, device=device)
    except ValueError as err:
        raise ValueError(f"--device: {err}") from None
    k = options.workers or (30 if device.startswith("cuda") else 2)
    summary = compute(study, out, options.budget_s, device, k, options.max_chunks, say=say)
    total = summary["computed"] + summary["already_done"] + summary["left"]
    say(
        f"paper_scale ({study.name}): {summary['computed']} runs computed in "
        f"{summary['chunks']} chunks ({summary['seconds']} s), {summary['already_done']} "
        f"already done, {summary['left']} of {total} left"
        + (f"; stopped: {summary['stopped']}" if summary["stopped"] else "")
        + (f". Commit {out / study.name}/* to {study.work_dir()}/." if summary["chunks"] else ".")
    )
    if summary["left"]:
        return None
    folders = [study.work_dir(), out / study.name]
    found = finished_chunks(study, folders, say).values()
    extra = {
        "study_key": study.key(),
        "runs": sum(len(r["runs"]) for r in found),
        "diverged": sorted(n for r in found if r["status"] != "ok" for n in r["runs"]),
        "device_seconds": round(sum(r["seconds"] for r in found), 1),
        "devices": sorted({r["device"] for r in found}),
        "driver": batched.DRIVER,
    }
    return load(study, folders), extra


def dry_run(study: Study, options) -> str:
    """Every run of the study and whether a chunk holds it already; computes nothing."""
    folders = [study.work_dir()] + ([Path(options.out) / study.name] if options.out else [])
    done = {n for rec in finished_chunks(study, folders).values() for n in rec["runs"]}
    names = [task_name(t) for t in study_tasks(study)]
    lines = [f"{'done' if n in done else 'todo'}  {n}" for n in names]
    left = sum(n not in done for n in names)
    return "\n".join([*lines, f"{study.name}: {len(names)} runs, {left} to compute"])
