"""The sentences pages glue from :mod:`.every_protocol`'s table, the same on every page."""

from __future__ import annotations

import pandas as pd

from playerfl_core.book.prose import listed
from playerfl_core.book.reports import every_protocol as EP
from playerfl_core.book.reports.every_protocol import BOOK, CLAIM, REGRET, headline
from playerfl_core.book.style import dataset_label
from playerfl_core.stats.split_verdicts import VERDICT_WORDS
from playerfl_core.study import rungs
from playerfl_core.study.preregistration import base_of, kind_of


def sets_text(name: str) -> str:
    """What protocol ``name`` scores on, in words ("2,000 test images per client", …)."""
    p = EP.protocol(name)
    if p.val_images and p.test_images:
        return f"{p.val_images:,} validation and test images per client"
    if p.test_images:
        return f"{p.test_images:,} test images per client"
    return "each split at its own tuned rate" if p.own_rates else "the book's evaluation sets"


def regret_text(table: pd.DataFrame | None, federation: str) -> str:
    """A federation's headline mean regret with its seeds and sets: "0.183 (seeds 0–29, 2,000
    validation and test images per client)"; "not measured here" without it."""
    if table is None or federation not in set(table["federation"]):
        return "not measured here"
    h = headline(REGRET, federation, table)
    seeds = h.detail or f"{h.seeds} seeds"
    return f"{h.value:.3f} ({seeds}, {sets_text(h.protocol)})"


def claim_text(table: pd.DataFrame, claim: str) -> str:
    """A claim's headline verdict: "R2 is contradicted, with strong evidence, with 2,000 …"."""
    h = headline(CLAIM, claim, table)
    evidence = "no evidence" if h.detail == "none" else f"{h.detail} evidence"
    sets = sets_text(h.protocol)
    how = "on" if sets.startswith("the") else "with"
    return f"{claim} is {h.verdict}, with {evidence}, {how} {sets}."


def headline_lines(federations, table: pd.DataFrame) -> str:
    """Markdown, a line per federation: its headline mean regret, verdict and protocol in words."""
    lines = []
    for d in federations:
        h = headline(REGRET, d, table)
        lines.append(f"- {dataset_label(d)}: {h.shown()} ({sets_text(h.protocol)})")
    return "\n".join(lines)


def largest(table: pd.DataFrame) -> str:
    """The federation with the largest headline mean regret: "Fashion-MNIST, rotated: 0.183 (…),
    beyond δ, on seeds 0–29 with 2,000 validation and test images per client"."""
    feds = dict.fromkeys(table.loc[table["quantity"] == REGRET, "federation"])
    best = {d: headline(REGRET, d, table) for d in feds}
    worst = max(best, key=lambda d: best[d].value)
    h = best[worst]
    seeds = f"on {h.detail} " if h.detail else ""
    sets = sets_text(h.protocol)
    scored = f"{seeds}{'scored on' if sets.startswith('the') else 'with'} {sets}"
    return f"{dataset_label(worst)}: {h.shown()}, {scored}"


def r1_parts(table: pd.DataFrame) -> str:
    """What R1's verdicts rest on, from the headline protocol's parts: where the "within δ" ones
    are and on which validation sets, the kinds of the "beyond δ" ones, and the sizes."""
    claim = headline(CLAIM, "R1", table).protocol
    parts = table[(table["quantity"] == REGRET) & (table["protocol"] == claim)]
    within = parts[parts["verdict"] == VERDICT_WORDS["oracle"]["supported"]]
    beyond = parts[parts["verdict"] == VERDICT_WORDS["oracle"]["contradicted"]]
    bases = listed(dataset_label(b) for b in dict.fromkeys(within["federation"].map(base_of)))
    n, small = len(within), int((~within["applies"]).sum())
    whose = "whose oracle is" if n == 1 or bases.count(" and ") == 0 else "whose oracles are"
    if n == 0:
        held = "No federation is within δ."
    elif small in (0, n):
        size = "small" if small else "large"
        first = "The one federation within δ is on" if n == 1 else f"All {n} within δ are on"
        held = f"{first} {bases}, {whose} chosen on {size} validation sets."
    else:
        has = "has" if small == 1 else "have"
        held = (f"The {n} federations within δ are on {bases}; {small} of them {has} an oracle "
                "chosen on small validation sets.")  # fmt: skip
    kinds = list(dict.fromkeys(kind_of(d).split(" (")[0] for d in beyond["federation"]))
    kinds = [f"{k} skew" if k == "mixed" else k for k in kinds]  # "mixed": feature + label
    labelled = any(k.endswith("label skew") for k in kinds)
    if not len(beyond):
        failed = "None is beyond δ."
    elif len(beyond) == 1:
        failed = f"The one federation beyond δ has {kinds[0]}"
        failed += "." if labelled else ", not label skew alone."
    else:
        failed = f"The {len(beyond)} federations beyond δ have {listed(sorted(kinds))}"
        failed += "." if labelled else "; none has label skew alone."
    return f"{held} {failed} {decided_at(table)}"


def decided_at(table: pd.DataFrame) -> str:
    """At which sizes the table's verdicts were decided: "These verdicts were decided at the
    book's sizes (Fashion-MNIST: 400 images per client, width 0.25, 10 rounds)." """
    decided = sorted({p.name for p in EP.PROTOCOLS if p.new_size}
                     & set(table.loc[table["verdict"].notna(), "protocol"]))  # fmt: skip
    sizes = rungs.rung_sizes()["book"].removeprefix("book: ")
    also = f" and at {listed(decided)}" if decided else ""
    return f"These verdicts were decided at the book's sizes (Fashion-MNIST: {sizes}){also}."


def own_rate_note(table: pd.DataFrame | None, where: str = "chapter 04") -> str:
    """The sentence the scorecard's R1 adds: where R1's verdict differs with each split at its
    own tuned rate ("" without that protocol); ``where``: the page that shows both."""
    if table is None:
        return ""
    regrets = table[table["quantity"] == REGRET].set_index("federation")
    book = regrets.loc[regrets["protocol"] == BOOK, "verdict"]
    own = regrets.loc[regrets["protocol"] == "own rates", "verdict"]
    if own.empty:
        return ""
    moved = [f"{dataset_label(d)} (from {book[d]} to {own[d]})"
             for d in book.index if d in own.index and book[d] != own[d]]  # fmt: skip
    where = f"; {where}" if where else ""
    head = f"With every split trained at its own tuned rate ({len(own)} federations, on the book's "
    head += f"test sets{where})"
    moves = f", the verdict moves on {listed(moved)}" if moved else " no verdict changes"
    return head + moves
