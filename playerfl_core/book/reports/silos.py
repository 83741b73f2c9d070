"""Chapter 07 ("From notebook to silos"): the same runs in-process and on Flower, and the wire."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from playerfl_core.book.style import (
    FIGURE_WIDTH,
    algorithm_color,
    algorithm_label,
    apply_book_style,
)

apply_book_style()

TRAINING_UP, TRAINING_DOWN = ("uploads",), ("send",)
SCORING_UP, SCORING_DOWN = ("deployment uploads",), ("deploy",)
"""Wire calls by purpose: training, and what only scores a model no client holds (FedLAMA's)."""
ASKS = ("uploads", "deployment uploads", "reports", "checkpoint")
"""Calls the server waits for: each sends a silo one message (with the calls queued before it);
a silo's other messages (opening, closing) are outside the rounds."""


def equivalence(in_process: dict[str, pd.DataFrame], flower: pd.DataFrame) -> pd.DataFrame:
    """Per algorithm: rows of each run, whether every row is identical, and the largest absolute
    difference of the values (inf when the rows differ in anything but their value)."""
    rows = []
    for name, expected in in_process.items():
        got = flower[flower["algorithm"] == name].reset_index(drop=True)
        expected = expected.reset_index(drop=True)
        keys = [c for c in expected.columns if c != "value"]
        same_keys = len(got) == len(expected) and got[keys].equals(expected[keys])
        gap = np.abs(got["value"].to_numpy() - expected["value"].to_numpy()) if same_keys else None
        diff = float(np.max(gap)) if same_keys else float("inf")
        rows.append(
            {
                "algorithm": algorithm_label(name),
                "rows in-process": len(expected),
                "rows on Flower": len(got),
                "identical": same_keys and got.equals(expected),
                "largest |difference|": diff,
            }
        )
    return pd.DataFrame(rows).set_index("algorithm")


def traffic(wire: pd.DataFrame, rounds: int) -> pd.DataFrame:
    """Per algorithm (internal name): mean kB a silo sends and receives per round for training and
    for scoring only, the numbers it reports, and its messages (per round, over the run, and
    outside the rounds: those no call of :data:`ASKS` asked for)."""
    rows = []
    for name, w in wire.groupby("algorithm", sort=False):
        silos = w["silo"].nunique()

        def kb(calls, column, w=w, silos=silos):
            return w[w["call"].isin(calls)][column].sum() / silos / rounds / 1000

        messages = w["messages"].iloc[0]
        rows.append(
            {
                "algorithm": name,
                "up kB/round": kb(TRAINING_UP, "bytes_from_silo"),
                "down kB/round": kb(TRAINING_DOWN, "bytes_to_silo"),
                "scoring kB/round": kb(SCORING_UP, "bytes_from_silo")
                + kb(SCORING_DOWN, "bytes_to_silo"),
                "numbers reported": int(w["numbers_from_silo"].sum() / silos),
                "messages/round": messages / silos / rounds,
                "messages": int(messages / silos),
                "outside rounds": int((messages - w["call"].isin(ASKS).sum()) / silos),
            }
        )
    return pd.DataFrame(rows).set_index("algorithm")


def shown_traffic(table: pd.DataFrame) -> pd.DataFrame:
    """:func:`traffic` with display names, rounded for the page."""
    out = table.drop(columns=["messages", "outside rounds"])
    out = out.round({"up kB/round": 1, "down kB/round": 1, "scoring kB/round": 1})
    out["messages/round"] = out["messages/round"].round(2)
    out.index = pd.Index([algorithm_label(n) for n in out.index], name="algorithm")
    return out


def messages_note(table: pd.DataFrame, rounds: int) -> str:
    """The caption's words on messages per round: why FedAvg's one message a round reads more."""
    if "fedavg" not in table.index:
        return f"a silo's messages over the run divided by its {rounds} rounds"
    f = table.loc["fedavg"]
    return (
        f"a silo's messages over the run divided by its {rounds} rounds, the "
        f"{int(f['outside rounds'])} that open and close the run included, so FedAvg's one "
        f"message a round reads {f['messages/round']:.2f}"
    )


EXTRA = {
    "playerfl": "one in round 0 that collects the sensitivities",
    "playerfl_random": "one in round 0 that collects the sensitivities",
    "fedlama": "one a round for the uploads that only scoring its global average needs",
}
"""Why an algorithm's silo gets more messages than FedAvg's (the count is measured)."""


def plot_traffic(table: pd.DataFrame):
    """Horizontal bars per algorithm: kB a silo uploads and downloads per round for training, and
    (hatched) what only scoring a global average needs; a row with no traffic says 0."""
    names = list(table.index)
    y = np.arange(len(names))
    fig, ax = plt.subplots(figsize=(FIGURE_WIDTH, 0.38 * len(names) + 1.5), layout="constrained")
    colors = [algorithm_color(n) for n in names]
    ax.barh(y - 0.2, table["up kB/round"], height=0.4, color=colors, label="upload (training)")
    ax.barh(
        y + 0.2,
        table["down kB/round"],
        height=0.4,
        color=colors,
        alpha=0.45,
        label="download (training)",
    )
    scoring = table["scoring kB/round"].to_numpy()
    some = scoring > 0
    if some.any():
        ax.barh(
            y[some] + 0.2,
            scoring[some],
            left=table["down kB/round"].to_numpy()[some],
            height=0.4,
            color="white",
            edgecolor="0.3",
            hatch="//",
            label="up + down for scoring only",
        )
    nothing = (table["up kB/round"] + table["down kB/round"] + table["scoring kB/round"]) == 0
    for k in y[nothing.to_numpy()]:  # an empty row reads as missing data: say it is zero
        ax.text(0, k, " 0 kB", va="center", ha="left", color="0.3")
    ax.set_yticks(y, [algorithm_label(n) for n in names])
    ax.invert_yaxis()
    ax.set_xlabel("kB per silo per round (mean)")
    # below the axes, not on them: a long bar at the bottom would run under it
    fig.legend(loc="outside lower center", ncol=3, frameon=False)
    return fig


def _messages_sentence(table: pd.DataFrame, rounds: int) -> str:
    if "fedavg" not in table.index:
        return ""
    f = table.loc["fedavg"]
    outside = int(f["outside rounds"])
    opening = "the opening one, which asks for the silo's training size and model"
    closing = "the closing one, which collects the last round's evaluation"
    which = f" ({opening}, and {closing})" if outside == 2 else ""
    text = (
        f"A FedAvg silo gets {int(f['messages'])} messages over the {rounds} rounds: one a "
        f"round, which carries the round's calls and asks for its upload, and {outside} outside "
        f"the rounds{which}, so the table reads {f['messages/round']:.2f} a round."
    )
    alike: dict[tuple[int, str], list[str]] = {}  # one clause for the same count and reason
    for name, n in (table["messages"] - f["messages"]).items():
        if n > 0 and name in EXTRA:
            alike.setdefault((int(n), EXTRA[name]), []).append(f"{algorithm_label(name)}'s")
    more = [  # the first clause says what gets the messages; the others leave it understood
        f"{' and '.join(names)}{'' if k else ' silos get' if len(names) > 1 else ' silo gets'} "
        f"{n} more{' each' if len(names) > 1 else ''} ({why})"
        for k, ((n, why), names) in enumerate(alike.items())
    ]
    if more:
        text += " " + (", ".join(more[:-1]) + " and " if len(more) > 1 else "") + more[-1] + "."
    return text


def wire_facts(table: pd.DataFrame, rounds: int | None = None) -> dict[str, str]:
    """Glued sentences: PLayer-FL's traffic against FedAvg's, and (``rounds``) a silo's messages."""
    facts = {"messages_sentence": _messages_sentence(table, rounds)} if rounds else {}
    parts = []
    if "playerfl" in table.index and "fedavg" in table.index:
        p, f = table.loc["playerfl"], table.loc["fedavg"]
        share = p["up kB/round"] / f["up kB/round"] if f["up kB/round"] else float("nan")
        parts.append(
            f"A PLayer-FL silo uploads {p['up kB/round']:.1f} kB per round, {share:.0%} of "
            f"FedAvg's {f['up kB/round']:.1f} kB, and reports {int(p['numbers reported'])} "
            "numbers once (its sensitivities)."
        )
    if "local" in table.index:
        local = table.loc["local", "up kB/round"]
        parts.append(f"Local sends {local:.0f} kB: nothing leaves its silos.")
    if "fedlama" in table.index and (lama := table.loc["fedlama"])["scoring kB/round"] > 0:
        parts.append(
            f"FedLAMA saves upload traffic ({lama['up kB/round']:.1f} kB per round) but "
            f"scoring its global model every round moves {lama['scoring kB/round']:.1f} "
            "kB more."
        )
    return {**facts, "wire_sentence": " ".join(parts) or "(No algorithm to compare here.)"}
