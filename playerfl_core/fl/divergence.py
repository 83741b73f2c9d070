"""When a run counts as diverged: its numbers exist but mean nothing.

A run is *diverged* when any logged value is non-finite, or when a loss (training, validation
or test) exceeds :data:`LOSS_BOUND`. Cross-entropy at chance is ln C (≤ 2.3 for the ten-class
datasets here); the committed standard store's largest loss is 51 (Heart, lr 0.333). A loss
above 10^4 means the true class gets probability below e^-10000 on average: the weights have
blown up, and averaging such a run into a summary would only add noise. PLayer-FL's
non-finite sensitivities (the first epoch already blew up) raise
:class:`~playerfl_core.fl.engine.DivergenceError` where they are measured
(:meth:`playerfl_core.fl.algorithms.playerfl.PLayerFL.choose`).

Diverged runs are stored as such (no rows), never retried and listed by the grid's notes and
``playerfl status``.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from playerfl_core.fl.errors import DivergenceError

LOSS_BOUND = 1e4
"""Largest loss a usable run may log (any split); see the module text."""


def divergence(table: pd.DataFrame) -> str | None:
    """Why the run in ``table`` diverged, or None when it did not."""
    values = table["value"].astype(float).to_numpy()
    bad = ~np.isfinite(values)
    if bad.any():
        r = table[bad].iloc[0]
        return (
            f"non-finite {r['split']} {r['metric']} ({r['value']}) at round {r['round']} "
            f"(client {r['client']})"
        )
    loss = (table["metric"] == "loss").to_numpy() & (values > LOSS_BOUND)
    if loss.any():
        r = table[loss].iloc[0]
        return (
            f"{r['split']} loss {float(r['value']):.3g} above the divergence bound "
            f"{LOSS_BOUND:g} at round {r['round']} (client {r['client']}); lower the "
            f"learning rate (now {r['lr']:g})"
        )
    return None


def check_table(table: pd.DataFrame) -> pd.DataFrame:
    """``table`` unchanged, or :class:`DivergenceError` saying why the run diverged."""
    why = divergence(table)
    if why is not None:
        raise DivergenceError(why)
    return table
