"""How a p-value is written on the page: one place, so prose, tables and verdict reasons agree
(a module of its own: every stats module may import it without a circle)."""

from __future__ import annotations

_SUPERSCRIPT = str.maketrans("-0123456789", "⁻⁰¹²³⁴⁵⁶⁷⁸⁹")


def p_value_text(p: float, digits: int = 2) -> str:
    """A p-value at ``digits`` significant digits as prose writes it: ``0.041``, ``0.00041``,
    ``8.1 × 10⁻⁵`` (not Python's ``8.1e-05``)."""
    text = f"{p:.{digits}g}"
    if "e" not in text:
        return text
    mantissa, exponent = text.split("e")
    return f"{mantissa} × 10{str(int(exponent)).translate(_SUPERSCRIPT)}"
