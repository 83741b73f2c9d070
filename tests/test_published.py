"""The authors' published tables as the book shows them (appendix §9)."""

from pathlib import Path

import numpy as np
import pytest

from playerfl_core.stats.published import NAMES, published

APPENDIX = Path(__file__).resolve().parents[1] / "chapters" / "appendix_authors_code.md"


def _table(caption_start: str) -> list[list[str]]:
    """A ``{table}`` of the appendix: its body rows, cells stripped."""
    text = APPENDIX.read_text(encoding="utf-8")
    start = text.index("```{table} " + caption_start)
    rows = text[start : text.index("```", start + 10)].splitlines()[3:]
    return [[c.strip() for c in row.strip("|").split("|")] for row in rows]


@pytest.mark.parametrize(
    ("caption", "name", "scale"),
    [("Published accuracy", "accuracy", 1.0), ("Published fairness", "fairness_f1", 1e-3)],
)
def test_the_appendix_shows_the_published_numbers_as_the_library_holds_them(caption, name, scale):
    """The appendix writes the README's tables for a reader (accuracy with a non-breaking "±" so
    a cell never wraps inside, fairness in thousandths instead of "1.1e-2"); every cell must
    still be the library's number, in the README's order."""
    wide = published(name).pivot(index="algorithm", columns="dataset", values="value")
    ci = published(name).pivot(index="algorithm", columns="dataset", values="ci_half")
    columns = list(dict.fromkeys(published(name)["dataset"]))
    rows = _table(caption)
    assert [NAMES[r[0]] for r in rows] == list(dict.fromkeys(published(name)["algorithm"]))
    for row in rows:
        algorithm = NAMES[row[0]]
        for dataset, cell in zip(columns, row[1:], strict=True):  # the rank column too
            assert "e-" not in cell and " ± " not in cell, cell  # no exponent, no breaking space
            value, _, half = cell.partition("\u00a0±\u00a0")
            unit = 1.0 if dataset.endswith("rank") else scale  # a rank is a rank
            assert float(value) * unit == pytest.approx(wide.loc[algorithm, dataset]), cell
            if half:
                assert float(half) == pytest.approx(ci.loc[algorithm, dataset]), cell
            else:
                assert np.isnan(ci.loc[algorithm, dataset]), cell
