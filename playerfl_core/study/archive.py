"""Committed results: a compact, self-checking copy of a grid's store that anyone can re-verify.

:func:`pack` turns a working store (``results/<profile>/runs/``) into ``runs.parquet`` (every row,
with ``run_id``) and ``manifest.json`` (provenance, machines, one checksummed entry per run) under
``stores/<profile>/``; :func:`unpack` writes them back, checking every run; :func:`verify`
recomputes a seeded sample; :func:`archive_view` shows a store as if unpacked, writing nothing.
The shared format is :mod:`playerfl_core.study.archive_manifest`, re-exported here.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, fields
from pathlib import Path

import numpy as np
import pandas as pd
from tqdm import tqdm

from data_prep import load
from data_prep.registry import is_declared
from playerfl_core.fl.algorithms import get_algorithm
from playerfl_core.fl.engine import run_federated
from playerfl_core.stats.results import COLUMNS, atomic_write, folder_problem
from playerfl_core.study import machine
from playerfl_core.study.archive_manifest import (  # noqa: F401 (re-exported: callers name them here)
    ARCHIVE_DIR,
    MANIFEST_FILE,
    PENDING,
    TABLE_FILE,
    ArchiveError,
    _is_ok,
    _other_profiles,
    archive_dir,
    pending_dir,
    provenance,
    read_manifest,
    seal,
    stores_dir,
    table_digest,
)
from playerfl_core.study.run_store import RunSpec, Store, encode_rows
from playerfl_core.study.verification import BITWISE, STATISTICAL, compare_run, statistical_verdict


def pack(
    store,
    profile: str,
    out: str | Path | None = None,
    command: str = "",
    datasets: list[str] | None = None,
    run_ids: set[str] | None = None,
) -> Path:
    """Write every run of ``store`` (or of ``datasets``/``run_ids``) as an archive, atomically;
    failed runs are listed without rows; every run must be of a declared federation."""
    out = Path(out) if out is not None else archive_dir(profile)
    problem = folder_problem(out)
    if problem:
        raise ArchiveError(
            f"Cannot write the archive into {out}: {problem} (pack writes {TABLE_FILE} and "
            f"{MANIFEST_FILE} into it)."
        )
    records, damaged = store.scan()
    if datasets is not None:
        there = sorted({r["dataset"] for r in records})
        records = [r for r in records if r["dataset"] in set(datasets)]
        if there and not records:
            raise ArchiveError(
                f"--datasets {','.join(datasets)} matched none of the datasets of {store.root} "
                f"({', '.join(there)}); give some of those, or leave --datasets out."
            )
    if run_ids is not None:
        records = [r for r in records if r["run_id"] in run_ids]
    foreign = sorted({r["dataset"] for r in records if not is_declared(r["dataset"])})
    if foreign:
        raise ArchiveError(
            f"{store.root} holds runs of {', '.join(foreign)}, which no federation of the package "
            "declares, so the archive could not be recomputed elsewhere; pack the others with "
            "--datasets (e.g. --datasets heart,digits,fmnist)."
        )
    if damaged:
        raise ArchiveError(
            f"{store.root} holds {len(damaged)} damaged runs; run the grid again to recompute "
            "them, then pack:\n  " + "\n  ".join(list(damaged.values())[:5])
        )
    if not records:
        raise ArchiveError(f"{store.root} holds no finished runs; run `playerfl grid` first.")
    others = _other_profiles(records, profile)
    if others:
        listed = ", ".join(f"{n} of profile {p!r}" for p, n in others.items())
        raise ArchiveError(
            f"{store.root} holds {listed} of its {len(records)} runs, not {profile!r} (--profile): "
            f"an archive holds one profile. Pack them with --profile {next(iter(others))}, or "
            f"give the store of the {profile} runs (--store results/{profile})."
        )
    combined, entries, machines = packed(store, records, f"pack {profile}")
    out.mkdir(parents=True, exist_ok=True)
    for col in ("dataset", "algorithm", "split", "metric", "run_id"):
        combined[col] = combined[col].astype("category")
    atomic_write(
        out / TABLE_FILE, lambda p: combined.to_parquet(p, index=False, compression="zstd")
    )
    manifest = {
        **provenance(profile, command),
        "machines": machines,
        "runs": entries,
        "seal": seal(out, entries),
    }
    text = json.dumps(manifest, indent=1, sort_keys=True, default=str)
    atomic_write(out / MANIFEST_FILE, lambda p: p.write_text(text))
    return out


def packed(store, records: list[dict], desc: str = "pack"):
    """The rows of the finished runs among ``records``, each with its ``run_id``; one manifest entry
    per run; and the facts of the machines that computed them, by key."""
    tables, entries, machines = [], [], {}
    for rec in tqdm(records, desc=desc, unit="run"):
        entry = {k: v for k, v in rec.items() if k not in ("info", "error", "csv_sha256")}
        entry["error"] = str(rec.get("error", ""))[-500:]
        entry["info"] = rec.get("info", {})
        entry["machine"] = machine.key(rec.get("machine"))
        if isinstance(rec.get("machine"), dict):
            machines[entry["machine"]] = {k: v for k, v in rec["machine"].items() if k != "key"}
        if rec["status"] == "ok":
            table = store.rows(rec["run_id"])[COLUMNS]
            entry["rows"], entry["sha256"] = len(table), table_digest(table)
            tables.append(table.assign(run_id=rec["run_id"]))
        entries.append(entry)
    return pd.concat(tables, ignore_index=True), entries, machines


def load_archive(path: str | Path) -> tuple[pd.DataFrame, dict]:
    """The archive's rows and manifest, after checking every run's row count and checksum."""
    path = Path(path)
    missing = [f for f in (TABLE_FILE, MANIFEST_FILE) if not (path / f).is_file()]
    if missing:
        raise ArchiveError(
            f"{path} is not a results archive: {', '.join(missing)} missing. Restore it with "
            f"`git checkout -- {path}` or rebuild it with `playerfl archive pack`."
        )
    manifest = read_manifest(path)
    try:
        table = pd.read_parquet(path / TABLE_FILE)
    except (OSError, ValueError) as err:
        first = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        raise ArchiveError(
            f"{path / TABLE_FILE} is damaged and cannot be read ({first}); restore it with "
            f"`git checkout -- {path / TABLE_FILE}` or delete the archive and re-pack it with "
            "`playerfl archive pack`."
        ) from None
    table["run_id"] = table["run_id"].astype(str)
    for col in ("dataset", "algorithm", "split", "metric"):
        table[col] = table[col].astype(str)
    finished = [e for e in manifest["runs"] if e["status"] == "ok"]
    if manifest.get("seal") == seal(path, manifest["runs"]):
        # The very bytes and checksums pack wrote after computing each run's checksum from its
        # rows: counting rows suffices, a second instead of a checksum per run.
        sizes = table["run_id"].value_counts()
        groups = dict.fromkeys(sizes.index)
        damaged = [e["run_id"] for e in finished if sizes.get(e["run_id"], 0) != e["rows"]]
    else:  # edited, re-written, or packed before seals: check every run, to name the damaged
        groups = dict(tuple(table.groupby("run_id", sort=False)))
        damaged = [
            e["run_id"]
            for e in finished
            if (rows := groups.get(e["run_id"])) is None
            or len(rows) != e["rows"]
            or table_digest(rows) != e["sha256"]
        ]
    unlisted = sorted(set(groups) - {e["run_id"] for e in manifest["runs"] if _is_ok(e)})
    if unlisted:
        raise ArchiveError(
            f"{path}: {len(unlisted)} runs of {TABLE_FILE} have no finished entry in "
            f"{MANIFEST_FILE}: {', '.join(unlisted[:3])}{' …' if len(unlisted) > 3 else ''}. The "
            "manifest was edited or damaged; restore it from git or rebuild the archive with "
            "`playerfl archive pack`."
        )
    if damaged:
        raise ArchiveError(
            f"{path}: {len(damaged)} runs do not match the manifest (rows or SHA-256): "
            f"{', '.join(damaged[:3])}{' …' if len(damaged) > 3 else ''}. The archive was "
            "edited or damaged; restore it from git or rebuild it with `playerfl archive pack`."
        )
    return table, manifest


def unpack(path: str | Path, store) -> int:
    """Write a verified archive's runs missing from ``store`` into it; return how many."""
    table, manifest = load_archive(path)
    groups = dict(tuple(table.groupby("run_id", sort=False)))
    written = 0
    for entry in manifest["runs"]:
        run_id = entry["run_id"]
        if store.checked_record(run_id) is not None:
            continue
        record = {k: v for k, v in entry.items() if k not in ("rows", "sha256")}
        facts = manifest.get("machines", {}).get(entry.get("machine"))
        if facts:
            record["machine"] = {**facts, "key": entry["machine"]}
        # the store's own check (row count, SHA-256 of the CSV) of the rows just verified
        rows = encode_rows(groups[run_id]) if entry["status"] == "ok" else None
        store.write_rows(run_id, record, rows)
        written += 1
    return written


def archive_view(store, profile: str):
    """``store`` as if ``profile``'s committed archive were unpacked into it, writing nothing."""
    path = archive_dir(profile)
    if not (path / MANIFEST_FILE).exists():
        return store
    table, manifest = load_archive(path)

    class ArchiveView(Store):
        """Read-only: the store's runs, and beneath them the archive's."""

        archived = {e["run_id"]: {k: v for k, v in e.items() if k not in ("rows", "sha256")}
                    for e in manifest["runs"]}  # fmt: skip
        rows_of = dict(tuple(table.groupby("run_id", sort=False)))

        def checked_record(self, run_id: str) -> dict | None:
            rec = super().checked_record(run_id)
            return rec if rec is not None else self.archived.get(run_id)

        def rows(self, run_id: str) -> pd.DataFrame:
            if (self.runs / f"{run_id}.json").exists() or run_id not in self.rows_of:
                return super().rows(run_id)
            return self.rows_of[run_id][COLUMNS].reset_index(drop=True)

        def timing_records(self) -> list[dict]:
            return [*super().timing_records(), *self.archived.values()]

    return ArchiveView(store.root)


def spec_of(entry: dict):
    """The :class:`~playerfl_core.study.experiments.RunSpec` a manifest entry was computed from."""
    names = {f.name for f in fields(RunSpec)}
    return RunSpec(**{k: v for k, v in entry.items() if k in names})


def recompute_sample(
    path: str | Path, n: int = 3, seed: int = 0, max_seconds: float | None = None, threads: int = 1
) -> pd.DataFrame:
    """Re-run ``n`` stored runs drawn with ``seed`` and compare every row."""
    _, manifest = load_archive(path)
    ok = [e for e in manifest["runs"] if e["status"] == "ok"]
    if max_seconds is not None:
        ok = [e for e in ok if float(e.get("seconds") or 0) <= max_seconds]
    if len(ok) < n:
        raise ArchiveError(f"{path}: only {len(ok)} finished runs to sample from, asked for {n}.")
    chosen = np.random.default_rng(seed).choice(len(ok), size=n, replace=False)
    return recompute_runs(path, [ok[i]["run_id"] for i in sorted(chosen)], threads)


def recompute_runs(path: str | Path, run_ids: list[str], threads: int = 1) -> pd.DataFrame:
    """Re-run the archive's runs ``run_ids`` on the CPU with ``threads`` threads and compare every
    row (``case``: ``bitwise`` on this machine, else ``statistical``; ``same_spec``: named as
    today)."""
    table, manifest = load_archive(path)
    entries = {e["run_id"]: e for e in manifest["runs"] if e["status"] == "ok"}
    out, here = [], machine.fingerprint(threads=threads)["key"]
    with machine.torch_threads(threads):
        for run_id in tqdm(run_ids, desc="recompute", unit="run"):
            entry = entries[run_id]
            spec = spec_of(entry)
            data = load(spec.dataset, profile=spec.profile, seed=spec.seed)
            fresh = run_federated(data, get_algorithm(spec.algorithm), spec.config("cpu")).table()
            stored = table[table["run_id"] == run_id]
            stored_on = machine.key(entry.get("machine"))
            case = BITWISE if stored_on == here else STATISTICAL
            out.append(
                {
                    "run_id": run_id,
                    "rows": len(stored),
                    "stored_on": stored_on,
                    "case": case,
                    "same_spec": spec.run_id == run_id,
                    **compare_run(fresh, stored),
                }
            )
    return pd.DataFrame(out)


@dataclass
class Verification:
    """What :func:`verify` found: per-run comparisons, the case, and the verdict with its reason."""

    report: pd.DataFrame
    case: str
    """``bitwise``, ``statistical``, or ``mixed`` (runs from this machine and from others)."""
    consistent: bool
    reason: str

    def summary(self) -> str:
        return f"{self.case}: {'PASS' if self.consistent else 'FAIL'}, {self.reason}"


def verify(
    path: str | Path, n: int = 3, seed: int = 0, max_seconds: float | None = None, threads: int = 1
) -> Verification:
    """Recompute a sample and judge it: bit for bit on this machine's key, else statistically."""
    report = recompute_sample(path, n=n, seed=seed, max_seconds=max_seconds, threads=threads)
    cases = set(report["case"])
    case = cases.pop() if len(cases) == 1 else "mixed"
    reasons, consistent = [], True
    renamed = report.loc[~report["same_spec"], "run_id"].tolist()
    if renamed:
        consistent = False
        reasons.append(f"{len(renamed)} runs are named differently by today's code: {renamed[:3]}")
    here = report[report["case"] == BITWISE]
    if len(here):
        differ = here.loc[~here["identical"], "run_id"].tolist()
        consistent &= not differ
        reasons.append(
            f"{len(here) - len(differ)} of {len(here)} runs computed on this machine repeat bit "
            f"for bit" + (f"; differ: {', '.join(differ[:3])}" if differ else "")
        )
    elsewhere = report[report["case"] == STATISTICAL]
    if len(elsewhere):
        ok, why = statistical_verdict(elsewhere)
        consistent &= ok
        n_identical = int(elsewhere["identical"].sum())
        unrecorded = int((elsewhere["stored_on"] == machine.UNKNOWN).sum())
        where = "another machine" + (
            f" ({unrecorded} stored before machines were recorded)" if unrecorded else ""
        )
        reasons.append(
            f"{len(elsewhere)} runs computed on {where}, {n_identical} identical nonetheless; {why}"
        )
    return Verification(report, case, consistent, "; ".join(reasons))
