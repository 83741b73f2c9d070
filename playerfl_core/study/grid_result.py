"""What a grid gives back: its long table, each run's status, the chosen learning rates, and a
note on what is missing, diverged or at the edge of the LR grid (:class:`GridResult`)."""

from __future__ import annotations

from dataclasses import dataclass, field

import pandas as pd

from playerfl_core.study.run_store import OK, Store


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
        """Per dataset: how many algorithms chose an edge of their LR grid, and ``widened``."""
        rows = []
        for ds, g in self.tuning.groupby("dataset", sort=False):
            pairs = g.groupby("algorithm")
            lo, hi = pairs["lr"].transform("min"), pairs["lr"].transform("max")
            chosen = g["chosen"]
            added = g.get("added", pd.Series(False, index=g.index))
            rows.append(
                {
                    "dataset": ds,
                    "algorithms": g["algorithm"].nunique(),
                    "smallest": g["lr"].min(),
                    "at smallest": int((chosen & (g["lr"] == lo)).sum()),
                    "largest": g["lr"].max(),
                    "at largest": int((chosen & (g["lr"] == hi)).sum()),
                    "widened": int(added.sum()),
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
                f"{stale} stored runs were computed by a version of the code that was never "
                "checked against this one (`playerfl archive check-code` re-computes one run of "
                "each; until then they are flagged stale_code). `make test` re-computes a sample "
                "of the committed runs; `--recompute-stale` redoes them all."
            )
        machines = self.status.get("machine", pd.Series(dtype=str)).value_counts()
        if len(machines) > 1:
            counts = ", ".join(f"{n} on {key}" for key, n in machines.items())
            lines.append(
                f"These runs were computed on {len(machines)} machines ({counts}; 'unknown': "
                "stored before machines were recorded). Runs repeat bit for bit only on the "
                "machine that computed them; across machines they agree statistically (README, "
                "'What reproduces where')."
            )
        return "\n".join(lines) if lines else "All runs finished; nothing excluded."
