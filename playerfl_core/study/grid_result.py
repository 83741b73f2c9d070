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
            lr, chosen = g["lr"], g["chosen"]
            by_pair = g.groupby("algorithm")["lr"]
            low, high = (int((chosen & (lr == by_pair.transform(f))).sum()) for f in ("min", "max"))
            widened = int(g.get("added", pd.Series(False, index=g.index)).sum())
            rows.append((ds, g["algorithm"].nunique(), lr.min(), low, lr.max(), high, widened))
        if not rows:
            return pd.DataFrame()
        columns = ["algorithms", "smallest", "at smallest", "largest", "at largest", "widened"]
        return pd.DataFrame(rows, columns=["dataset", *columns]).set_index("dataset")

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
