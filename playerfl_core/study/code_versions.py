"""Which earlier versions of the code are known to give the current code's runs, bit for bit.

Most code changes move the fingerprint without moving a number. :func:`check_code_versions`
recomputes one run of every dataset each earlier version computed; the version counts as today's
only if all come out identical. The answer is kept in ``stores/code_versions.json``
(:func:`equivalent_codes`), so a grid flags ``stale_code`` only for unchecked or changed versions.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pandas as pd

from playerfl_core.study import machine
from playerfl_core.study.archive import load_archive, recompute_runs, stores_dir

RECORD_FILE = "code_versions.json"


def record_path() -> Path:
    """``<repo>/stores/code_versions.json`` (``PLAYERFL_STORES`` replaces ``<repo>/stores``)."""
    return stores_dir() / RECORD_FILE


def read_record(path: Path | None = None) -> list[dict]:
    """The checks made so far, one object per (earlier version, current version); [] if none."""
    path = path or record_path()
    if not path.is_file():
        return []
    try:
        return json.loads(path.read_text())["checks"]
    except (OSError, ValueError, KeyError, TypeError) as err:
        raise ValueError(
            f"{path}: not a record of code-version checks ({err}); restore it from git or "
            "delete it (every earlier version then counts as unchecked)."
        ) from None


def equivalent_codes(code: str, path: Path | None = None) -> set[str]:
    """Every fingerprint shown to give ``code``'s runs bit for bit, directly or through a chain of
    checks (A gave B's runs, B gave C's: A gives C's), ``code`` itself included."""
    links: dict[str, set[str]] = {}
    for check in read_record(path):
        if check.get("identical"):
            links.setdefault(check["earlier"], set()).add(check["current"])
            links.setdefault(check["current"], set()).add(check["earlier"])
    seen, todo = {code}, [code]
    while todo:
        new = links.get(todo.pop(), set()) - seen
        seen |= new
        todo += new
    return seen


def check_code_versions(
    archive: Path, code: str, seed: int = 0, record: Path | None = None
) -> pd.DataFrame:
    """Re-compute with today's code the shortest run per (earlier code version, dataset) of
    ``archive`` not yet settled by ``record``, and compare every row (columns of
    :func:`recompute_runs`)."""
    _, manifest = load_archive(archive)
    settled = equivalent_codes(code, record)  # today's, and versions already shown the same
    older = [  # runs stored without a fingerprint count as today's everywhere, so not here
        e for e in manifest["runs"] if e["status"] == "ok" and e.get("code") not in {None, *settled}
    ]
    same_as = {c: min(equivalent_codes(c, record)) for c in {e.get("code") for e in older}}
    rng = np.random.default_rng(seed)
    chosen = []
    for key in sorted({(same_as[e.get("code")], e["dataset"]) for e in older}):
        group = [e for e in older if (same_as[e.get("code")], e["dataset"]) == key]
        least = min(float(e.get("seconds") or 0) for e in group)
        shortest = [e for e in group if float(e.get("seconds") or 0) == least]
        chosen.append(shortest[rng.integers(len(shortest))])
    report = recompute_runs(archive, [e["run_id"] for e in chosen])
    return report.assign(earlier=[e.get("code") for e in chosen])


def record_checks(report: pd.DataFrame, code: str, path: Path | None = None) -> list[dict]:
    """Add one check per earlier version in ``report`` to the record and return the new checks:
    ``identical`` only if every one of its re-computed runs was bit for bit the stored one."""
    path = path or record_path()
    here = machine.fingerprint(threads=1)["key"]
    when = datetime.now(UTC).isoformat(timespec="seconds")
    new = [
        {
            "earlier": earlier,
            "current": code,
            "identical": bool((runs["identical"] & runs["same_spec"]).all()),
            "runs": sorted(runs["run_id"]),
            "machine": here,
            "checked": when,
        }
        for earlier, runs in report.groupby("earlier", sort=True)
    ]
    replaced = {(c["earlier"], c["current"]) for c in new}
    kept = [c for c in read_record(path) if (c["earlier"], c["current"]) not in replaced]
    text = json.dumps({"checks": kept + new}, indent=1, sort_keys=True)
    path.write_text(text + "\n")
    return new
