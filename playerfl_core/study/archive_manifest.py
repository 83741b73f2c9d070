"""The committed archive's format: its files, the checksum of a run's rows and the seal over
them all, the provenance a manifest records, and reading a manifest with every check.
Re-exported by :mod:`playerfl_core.study.archive`."""

from __future__ import annotations

import hashlib
import json
import os
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path

import pandas as pd

from playerfl_core.stats.results import COLUMNS, env_folder
from playerfl_core.study import machine
from playerfl_core.study.run_spec import code_fingerprint

ARCHIVE_DIR = Path(__file__).resolve().parents[2] / "stores"


TABLE_FILE, MANIFEST_FILE = "runs.parquet", "manifest.json"


class ArchiveError(RuntimeError):
    """A committed archive is missing, damaged or does not match its manifest."""


def stores_dir() -> Path:
    """``<repo>/stores``, or the folder ``PLAYERFL_STORES`` names."""
    return env_folder("PLAYERFL_STORES") or ARCHIVE_DIR


PENDING = "pending"
"""``stores/pending/<work>/``: finished runs of a computation longer than one session, committed
as they end so any machine resumes it; nothing reads them until every run exists."""


def pending_dir(work: str) -> Path:
    """``<stores>/pending/<work>``: where a long computation's finished runs wait."""
    return stores_dir() / PENDING / work


def archive_dir(profile: str) -> Path:
    """``<repo>/stores/<profile>`` (``PLAYERFL_STORES`` replaces ``<repo>/stores``)."""
    return stores_dir() / profile


def table_digest(table: pd.DataFrame) -> str:
    """SHA-256 of a run's rows in the results schema (floats written at round-trip precision)."""
    text = table[COLUMNS].to_csv(index=False, float_format="%.17g", lineterminator="\n")
    return hashlib.sha256(text.encode()).hexdigest()


def seal(folder: Path, entries: list[dict]) -> str:
    """SHA-256 of the archive's table file and of every finished run's id, row count and
    checksum: equal to the manifest's seal only if neither was changed since pack checked them."""
    digest = hashlib.sha256()
    with open(folder / TABLE_FILE, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    runs = [(e["run_id"], e["rows"], e["sha256"]) for e in entries if _is_ok(e)]
    digest.update(json.dumps(runs).encode())
    return digest.hexdigest()


def provenance(profile: str, command: str) -> dict:
    """Who, what and where: enough to tell whether a re-computation should match bit for bit."""
    versions = {**machine.fingerprint()["versions"], "pandas": pd.__version__}
    return {
        "profile": profile,
        "code": code_fingerprint(),
        "created": datetime.now(UTC).isoformat(timespec="seconds"),
        "command": command,
        "machine": {**machine.fingerprint(threads=1), "cpu_count": os.cpu_count()},
        "versions": versions,
    }


def _manifest_error(file: Path, why: str) -> ArchiveError:
    return ArchiveError(
        f"{file}: not a results-archive manifest ({why}); restore it with "
        f"`git checkout -- {file}` or rebuild the archive with `playerfl archive pack`."
    )


def read_manifest(path: str | Path) -> dict:
    """The manifest of the archive folder ``path``, checked for the shape readers rely on, else one
    :class:`ArchiveError` naming the file and how to restore it."""
    file = Path(path) / MANIFEST_FILE
    try:
        manifest = json.loads(file.read_text())
    except (OSError, UnicodeDecodeError) as err:
        raise ArchiveError(f"{file}: cannot read the archive's manifest ({err}).") from err
    except ValueError as err:
        raise _manifest_error(file, f"not valid JSON: {err}") from None
    if not isinstance(manifest, dict):
        raise _manifest_error(file, f"a JSON {type(manifest).__name__}, not an object")
    runs = manifest.get("runs")
    if not isinstance(runs, list):
        raise _manifest_error(file, 'no "runs" list' if runs is None else '"runs" is not a list')
    for i, entry in enumerate(runs):
        need = ("run_id", "status", *(("rows", "sha256") if _is_ok(entry) else ()))
        lacking = [k for k in need if k not in entry] if isinstance(entry, dict) else None
        if lacking is None or lacking:
            what = "is not an object" if lacking is None else f"lacks {', '.join(lacking)}"
            raise _manifest_error(file, f"runs[{i}] {what}")
    others = _other_profiles(runs, manifest.get("profile"))
    if others:
        listed = ", ".join(f"{n} of profile {p!r}" for p, n in others.items())
        raise ArchiveError(
            f"{file}: {listed} of its {len(runs)} runs, but the manifest says profile "
            f"{manifest.get('profile')!r} (an archive holds one profile); restore it with "
            f"`git checkout -- {Path(path)}` or pack each profile's store into its own archive."
        )
    return manifest


def _other_profiles(runs: list[dict], profile) -> dict[str, int]:
    """How many ``runs`` (records or entries) record a data profile other than ``profile``."""
    return Counter(run["profile"] for run in runs if run.get("profile") not in (None, profile))


def _is_ok(entry) -> bool:
    return isinstance(entry, dict) and entry.get("status") == "ok"
