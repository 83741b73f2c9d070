"""The numbers chapters 04 and 04b showed before the answer under every protocol replaced their
before/after sections, read from ``tests/fixtures/evidence_snapshot.json`` (written by the code
of those sections, then deleted; never rewritten from the new code), beside the same quantity
under the same protocol in ``book.reports.every_protocol``'s table.

Each old table compared two protocols; a side is compared where it measured what the new table
holds: the same protocol on the same seeds (a side read on fewer seeds than the protocol has is
another quantity and is skipped). Reads stores only; trains nothing."""

from __future__ import annotations

import json
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SNAPSHOT = ROOT / "tests" / "fixtures" / "evidence_snapshot.json"
CH04, CH04B = "04_does_the_rule_pick_the_right_split", "04b_beyond_the_paper"
BOOK, TEST, BOTH = "book's sets", "2,000 test", "2,000 val + test"

SIDES = {
    f"{CH04}: display 1": [("one rate", BOOK), ("own rates", "own rates")],
    f"{CH04}: display 6": [("book's sets", BOOK), ("2,000 images", "evaluation rung")],
    f"{CH04}: display 9": [("book's test sets", BOOK), ("2,000 images", TEST)],
    f"{CH04}: display 10": [("2,000 test images per client", TEST),
                            ("2,000 validation images too", BOTH)],
}  # fmt: skip
"""The old R1 side-by-side tables: per side, the words its column names end with and the
protocol it was. Regret columns read "regret, <words>", verdict columns "<R1 or verdict>,
<words>"."""


def old() -> dict:
    return json.loads(SNAPSHOT.read_text(encoding="utf-8"))


def _frame(entry: dict) -> list[dict]:
    f = entry["frame"]
    return [dict(zip(f["columns"], row, strict=True)) for row in f["rows"]]


def regret_cells() -> list[tuple[str, str, str, str, str, int]]:
    """(display, federation label, protocol, regret cell, verdict, seeds) of every side of the
    old R1 tables."""
    snap, out = old(), []
    for key, sides in SIDES.items():
        for row in _frame(snap[key]):
            for words, protocol in sides:
                verdict = next(v for c, v in row.items() if c.endswith(f", {words}")
                               and c.startswith(("verdict", "R1")))  # fmt: skip
                out.append((key, row["federation"], protocol, row[f"regret, {words}"], verdict,
                            row["seeds"]))  # fmt: skip
    return out


def rung_cells() -> list[tuple[str, str, str, str, int | None]]:
    """(federation label, protocol, quantity, cell, seeds) of the old ladder tables: the middle
    rung's splits and mean regret, the paper-size first epochs' splits, the book's splits."""
    snap, out = old(), []
    for row in _frame(snap[f"{CH04}: display 4"]):
        protocol = "middle rung" if row["sizes"].startswith("middle") else BOOK
        out.append((row["federation"], protocol, "rule's split", row["rule's p (p×seeds)"],
                    row["seeds"]))  # fmt: skip
        out.append((row["federation"], protocol, "mean regret",
                    row["mean regret (95 % interval)"], row["seeds"]))  # fmt: skip
    for row in _frame(snap[f"{CH04}: display 3"]):
        protocol = "paper's sizes" if row["sizes"].startswith("paper") else BOOK
        seeds = sum(int(part.split("×")[1]) for part in row["rule's p (p×seeds)"].split(", "))
        out.append((row["federation"], protocol, "rule's split", row["rule's p (p×seeds)"],
                    seeds))  # fmt: skip
    return out


def claim_r2() -> dict[str, str]:
    """Claim R2 per protocol, "contradicted (strong)", from the old summaries' last sentence
    ("Claim R2 is contradicted (strong) with both test sizes")."""
    snap = old()
    pattern = re.compile(r"Claim R2 is (\w+) \((\w+)\) with both")
    test = pattern.search(snap[f"{CH04B}: glue r2_rescore_summary"]).groups()
    val = pattern.search(snap[f"{CH04B}: glue r2_val_summary"]).groups()
    return {BOOK: "{} ({})".format(*test), TEST: "{} ({})".format(*test),
            BOTH: "{} ({})".format(*val)}  # fmt: skip


def costs() -> dict[str, tuple[int, float]]:
    """(runs, CPU-hours to one decimal) per protocol, from the old cost sentences; the
    2,000-test protocol is R1's and R2's rescores together (hours summed as shown)."""
    snap = old()

    def glue(name: str, chapter: str = CH04) -> str:
        return snap[f"{chapter}: glue {name}"]

    def runs_hours(text: str) -> tuple[int, float]:
        runs = re.search(r"([\d,]+) runs", text).group(1).replace(",", "")
        return int(runs), float(re.search(r"([\d.]+) CPU-hours", text).group(1))

    r1, r2 = runs_hours(glue("rescore_cost")), runs_hours(glue("r2_rescore_cost", CH04B))
    return {
        "own rates": runs_hours(glue("fair_cost")),
        "evaluation rung": runs_hours(glue("eval_cost")),
        "middle rung": runs_hours(glue("middle_cost")),
        TEST: (r1[0] + r2[0], r1[1] + r2[1]),
        BOTH: runs_hours(glue("val_rescore_cost")),
    }


def r2_test_rows() -> tuple[list[str], list[list]]:
    """(columns, rows) of the pre-registration appendix's table of every R2 test under each
    evaluation protocol."""
    frame = old()["appendix_preregistration: display 1"]["frame"]
    return frame["columns"], frame["rows"]
