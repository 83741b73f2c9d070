"""Errors a run can raise, below the engine and the algorithms (both raise them)."""


class DivergenceError(RuntimeError):
    """Training produced a non-finite loss (NaN/inf): the run is unusable."""
