"""How one number appears in the book's tables and prose (signs, intervals, p-values, significant
digits, missing values), in one place so every chapter writes numbers the same way."""

from __future__ import annotations

import math
import re

import pandas as pd

from playerfl_core.stats.p_values import p_value_text, scientific_text


def signed(x: float, decimals: int = 3) -> str:
    """``x`` at ``decimals`` places with a true minus sign, none on a value that rounds to zero."""
    return f"{_no_negative_zero(x, decimals):.{decimals}f}".replace("-", "\u2212")


def signed_change(x: float, decimals: int = 3) -> str:
    """A change with its sign always shown, the minus a true one: ``+0.012``, ``−0.094``."""
    return f"{_no_negative_zero(x, decimals):+.{decimals}f}".replace("-", "\u2212")


def _no_negative_zero(x: float, decimals: int) -> float:
    return 0.0 if round(x, decimals) == 0 else x


def interval_text(value: float, lo: float, hi: float, decimals: int = 3) -> str:
    """``0.925 (0.906–0.949)``; ``−0.020 (−0.036 to −0.006)`` with a minus; ``–`` when missing."""
    if pd.isna(value):
        return "–"
    if pd.isna(lo) or pd.isna(hi):
        return signed(value, decimals)
    bounds = signed(lo, decimals), signed(hi, decimals)
    sep = " to " if any(b.startswith("\u2212") for b in bounds) else "–"
    return f"{signed(value, decimals)} ({bounds[0]}{sep}{bounds[1]})"


def p_text(p: float, missing: str = "not run") -> str:
    """A p-value at two significant digits, or ``missing`` (why there is none) when it is NaN."""
    return missing if pd.isna(p) else f"{p_value_text(p)}"


def leading_number(cell) -> float:
    """The number a cell shows first ("0.925 (0.906–0.949)" -> 0.925); NaN when there is none."""
    if isinstance(cell, (int, float)) and not isinstance(cell, bool):
        return float(cell)
    if isinstance(cell, str):
        head = cell.strip().split(" ")[0].replace("\u2212", "-").rstrip("%")
        try:
            return float(head)
        except ValueError:
            return float("nan")
    return float("nan")


MINUS = "\u2212"
"""The minus sign tables and prose write (a hyphen reads as a dash)."""

MISSING = "–"
"""What a table shows where it has no value (an en dash, in every table of the book)."""

FEW_DIGITS = 4
"""Up to this many significant digits a table keeps trailing zeros (0.020 beside 0.016)."""


def number_text(value, spec: str = ".6g") -> str:
    """``format(value, spec)`` with a true minus sign, ``–`` when missing; at ``FEW_DIGITS`` or
    fewer significant digits, trailing zeros and a large number's integer digits kept."""
    if value is None or (isinstance(value, float) and value != value):
        return "–"
    return _significant(value, spec).replace("-", MINUS)


def _significant(value, spec: str) -> str:
    digits = re.fullmatch(r"\.(\d+)g", spec)
    if digits and int(digits[1]) <= FEW_DIGITS and math.isfinite(value) and value != 0:
        n = int(digits[1])
        rounded = float(f"{value:.{n - 1}e}")
        exponent = math.floor(math.log10(abs(rounded)))
        if exponent < -4:  # 1.2 × 10⁻⁵ reads better than six zeros
            return scientific_text(value, n)
        return f"{rounded:.{max(n - 1 - exponent, 0)}f}"
    text = format(value, spec)
    if "e" not in text or not math.isfinite(value):
        return text
    mantissa, exponent = text.split("e")  # Python's 1e-05 as the page writes it: 1 × 10⁻⁵
    return scientific_text(value, len(mantissa.lstrip("-").replace(".", "")))


def label_text(value) -> str:
    """An index or column label: a float as short as it is exact, a true minus; others as is."""
    if isinstance(value, float):  # NaN: number_text's "–"
        return number_text(int(value), "d") if value.is_integer() else number_text(value, "g")
    if isinstance(value, int) and not isinstance(value, bool):
        return number_text(value, "d")
    return str(value)


def and_list(names: list[str]) -> str:
    """Names as a sentence lists them: "a", "a and b", "a, b and c"."""
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} and {names[-1]}"
