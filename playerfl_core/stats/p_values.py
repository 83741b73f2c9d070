"""How a p-value is written on the page: one place, so prose, tables and verdict reasons agree
(a module of its own: every stats module may import it without a circle)."""

from __future__ import annotations

import math

_SUPERSCRIPT = str.maketrans("-0123456789", "⁻⁰¹²³⁴⁵⁶⁷⁸⁹")
NBSP = "\u00a0"
"""The spaces around × in 2.9 × 10⁻⁴: no-break, so a narrow cell never splits the number."""

SCIENTIFIC_BELOW = 1e-3
"""Below this a p-value is written ``a × 10⁻ⁿ``: ``2.9 × 10⁻⁴``, not ``0.00029`` (zeros a
reader must count), and ``0.0013`` above it; the statistics primer states the rule."""


def p_value_text(p: float, digits: int = 2) -> str:
    """A p-value at ``digits`` significant digits, trailing zeros kept (``0.10`` beside
    ``0.39``, not ``0.1``): ``0.041``, ``0.0013``, and below 0.001 ``8.1 × 10⁻⁵`` (not Python's
    ``8.1e-05``). The digits are counted after rounding, so 0.000999 at two reads ``0.0010``."""
    if not math.isfinite(p) or p == 0:
        return f"{p:g}"
    rounded = float(f"{p:.{digits - 1}e}")
    if rounded >= SCIENTIFIC_BELOW:
        exponent = math.floor(math.log10(rounded))
        return f"{rounded:.{max(digits - 1 - exponent, 0)}f}"
    return scientific_text(p, digits)


def scientific_text(x: float, digits: int = 2) -> str:
    """``x`` at ``digits`` significant digits as ``a × 10ⁿ`` (``8.1 × 10⁻⁵``), as a page writes
    a power of ten, not Python's ``8.1e-05``; the spaces are no-break (:data:`NBSP`)."""
    mantissa, exponent = f"{x:.{digits - 1}e}".split("e")
    return f"{mantissa}{NBSP}×{NBSP}10{str(int(exponent)).translate(_SUPERSCRIPT)}"
