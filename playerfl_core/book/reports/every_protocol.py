"""The answer under every protocol: one long table of the split rule's mean regret, chosen split
and claims R1 and R2 under each way of measuring them (:class:`Protocol`), from the committed
stores. :func:`headline` picks one value per quantity from the best protocol that measures it,
so every page names the same number."""

from __future__ import annotations

import json
from dataclasses import dataclass

import pandas as pd

from playerfl_core.book.prose import seed_span
from playerfl_core.book.reports import rule_family as RF
from playerfl_core.book.reports.rule_follow_ups import MARKS
from playerfl_core.book.reports.rule_study import RULES_FILE
from playerfl_core.book.reports.tables import interval_text, signed
from playerfl_core.book.style import dataset_label
from playerfl_core.stats.claims import r1_rule_finds_oracle
from playerfl_core.stats.split_verdicts import OLD_TEST as OLD_MEAN_TEST
from playerfl_core.stats.split_verdicts import TEST as MEAN_TEST
from playerfl_core.stats.split_verdicts import VERDICT_WORDS, r1_family
from playerfl_core.study import fair_sweeps as F
from playerfl_core.study import registry, rescore, rungs
from playerfl_core.study import split_oracle as O
from playerfl_core.study.archive import archive_dir, read_manifest
from playerfl_core.study.split_scores import interval, split_counts

REGRET, SPLIT, CLAIM = "mean regret", "rule's split", "claim"
COLUMNS = ["quantity", "federation", "protocol", "value", "lo", "hi", "verdict", "detail",
           "seeds", "applies", "runs", "cpu_hours"]  # fmt: skip
"""One row per quantity, federation (or claim) and protocol. ``detail``: the splits per seed, the
seeds or a claim's strength; ``applies``: False where the protocol left the row as the book
scores it; ``runs``, ``cpu_hours``: what the protocol's own runs cost."""


@dataclass(frozen=True)
class Protocol:
    """One way of measuring: which studies it reads, what it changes, and how it ranks."""

    name: str
    """For tables and sentences: "2,000 val + test"."""
    short: str
    """A column name narrow enough for a phone: "val+test 2k"."""
    studies: tuple[str, ...]
    """The ``study.registry`` entries whose stores it reads (the first one's cost is its own)."""
    changes: str
    val_images: int = 0
    """Validation images per client (0: the book's, 64 on Fashion-MNIST)."""
    test_images: int = 0
    own_rates: bool = False
    new_size: bool = False
    """Trains another federation size: it answers another question, never a headline."""
    tests: bool = True
    """Whether it decides a verdict (enough seeds, a declared family)."""
    mean_test: str = MEAN_TEST
    """The test of a mean regret against δ; a protocol with another is never a headline."""


BOOK = "book's sets"
PROTOCOLS: tuple[Protocol, ...] = (
    Protocol(BOOK, "book", ("split_rule_test",),
             "the book's sweeps: every split at PLayer-FL's rate, scored on each client's own "
             "small validation and test sets"),
    Protocol("2,000 test", "test 2k", ("r1_rescore", "r2_rescore"),
             "the same runs, each test term scored on 2,000 test images per client",
             test_images=2000),
    Protocol("2,000 val + test", "val+test 2k", ("val_rescore",),
             "the same runs, the oracle's split and each client's round chosen on 2,000 "
             "validation images, scored on 2,000 test images", val_images=2000, test_images=2000),
    Protocol("sign-flip test alone", "sign-flip", ("val_rescore",),
             "the headline's regrets (2,000 validation and test images), a mean called within or "
             "beyond δ by the exact sign-flip test alone, without the studentized bootstrap "
             "that now confirms it (the book's test until the skewed, zero-inflated regrets "
             "showed it said \"within δ\" too often)", val_images=2000, test_images=2000,
             mean_test=OLD_MEAN_TEST),
    Protocol("own rates", "own lr", ("fair_sweeps",),
             "every split trained at its own tuned rate, the book's evaluation sets",
             own_rates=True),
    Protocol("evaluation rung", "eval rung", ("eval_rung",),
             "the book's runs of two federations on ten seeds, scored on 2,000 validation and "
             "test images, tested as a family of two", val_images=2000, test_images=2000),
    Protocol("middle rung", "middle", ("middle_rung",),
             "every split trained at 1,000 images per client, the CNN at half width, 20 rounds, "
             "five seeds", new_size=True, tests=False),
    Protocol("paper's sizes", "paper", ("scale_ladder",),
             "the rule's first epoch at the paper's sizes (2,000 images per client, full "
             "width); no split trained to the end", new_size=True, tests=False),
)  # fmt: skip


def protocol(name: str) -> Protocol:
    """The protocol named ``name``; raises naming the valid ones."""
    for p in PROTOCOLS:
        if p.name == name:
            return p
    raise ValueError(f"Unknown protocol {name!r}; choose one of: {', '.join(PROTOCOL_NAMES)}.")


PROTOCOL_NAMES = tuple(p.name for p in PROTOCOLS)
BEST_FIRST = tuple(p.name for p in sorted((p for p in PROTOCOLS
                                            if not p.new_size and p.mean_test == MEAN_TEST),
                                           key=lambda p: (-p.val_images, -p.test_images,
                                                          not p.own_rates)))  # fmt: skip
"""The headline's order: largest evaluation sets first, then own-rate training (stable)."""


# -- reading each protocol's regrets (dataset, seed, p_rule, p_oracle, regret, applies) --------
@dataclass
class Stores:
    """What every protocol reads: the standard sweeps, the book's regrets and the rule's splits."""

    sweep: pd.DataFrame
    regrets: pd.DataFrame
    rules: pd.DataFrame


def _val_test_2000(s: Stores) -> pd.DataFrame:
    out = rescore.r1_family(s.regrets)
    return out.drop(columns="rescored").rename(columns={"large_val": "applies"})


def _own_rates(s: Stores) -> pd.DataFrame | None:
    committed = F.load()
    if committed is None:
        return None
    table, manifest = committed
    scores = F.own_rate_scores(table, F.own_rates(table, manifest))
    return O.regrets(scores, s.rules).assign(applies=True)


def _rung(name: str) -> pd.DataFrame | None:
    committed = rungs.load(name)
    return None if committed is None else rungs.regrets(committed[0]).assign(applies=True)


def _paper_first_epoch(s: Stores) -> pd.DataFrame | None:
    committed = rungs.load("scale_ladder")
    if committed is None:
        return None
    splits = O.rule_splits(committed[0])
    return splits[splits["variant"] == "paper"].assign(applies=True)


READERS = {
    BOOK: lambda s: s.regrets.assign(applies=True),
    "2,000 test": lambda s: rescore.r1_regrets(s.regrets).rename(columns={"rescored": "applies"}),
    "2,000 val + test": _val_test_2000,
    "sign-flip test alone": _val_test_2000,
    "own rates": _own_rates,
    "evaluation rung": lambda s: _rung("eval_rung"),
    "middle rung": lambda s: _rung("middle_rung"),
    "paper's sizes": _paper_first_epoch,
}
"""How each protocol's regrets come out of its store (one reader per store format)."""


# -- the long table ---------------------------------------------------------------------------
def _regret_rows(p: Protocol, regrets: pd.DataFrame) -> list[dict]:
    verdicts = {}
    if p.tests:
        decided = r1_family(regrets, test=p.mean_test)
        verdicts = {ds: VERDICT_WORDS["oracle"][e.verdict] for ds, _, e in decided}
    rows = []
    for ds, g in regrets.groupby("dataset", sort=False):
        base = {"federation": ds, "protocol": p.name, "seeds": len(g),
                "applies": bool(g["applies"].all())}  # fmt: skip
        if p.new_size or p.name == BOOK:  # the other protocols keep the book's splits
            rows.append({**base, "quantity": SPLIT, "value": float(g["p_rule"].mode().min()),
                         "detail": split_counts(g["p_rule"])})  # fmt: skip
        if "regret" in g:
            mean, lo, hi = interval(g["regret"])
            rows.append({**base, "quantity": REGRET, "value": mean, "lo": lo, "hi": hi,
                         "verdict": verdicts.get(ds), "detail": seed_span(g)})  # fmt: skip
    return rows


def _claim_rows(p: Protocol, regrets: pd.DataFrame, r2) -> list[dict]:
    rows = []
    if p.tests:
        r1 = r1_rule_finds_oracle(regrets, test=p.mean_test).verdict
        rows.append({"federation": "R1", "verdict": r1.verdict, "detail": r1.strength,
                     "seeds": len(regrets)})  # fmt: skip
    if r2 is not None:
        rows.append({"federation": "R2", "verdict": r2.verdict, "detail": r2.strength})
    return [{**r, "quantity": CLAIM, "protocol": p.name, "applies": True} for r in rows]


def every_protocol() -> pd.DataFrame | None:
    """The long table (:data:`COLUMNS`); None when the standard sweeps are not committed."""
    sweep = O.load_sweeps(archive_dir("standard"))
    if sweep is None:
        return None
    swept = O.sweep_rows(sweep)
    scores, rules = O.sweep_scores(swept), O.rule_splits(O.table_sensitivities(swept))
    stores = Stores(swept, O.regrets(scores, rules), rules)
    r2 = {}  # claim R2's verdict per protocol that rescored its regrets (the pre-registered test)
    if RULES_FILE.exists():
        study = RF.analyse(stores.sweep, RF.load_rules())
        views = {BOOK: study.book or study, "2,000 test": study.test_only or study,
                 "2,000 val + test": study}  # fmt: skip
        r2 = {name: RF.r2_verdict(view) for name, view in views.items()}
    rows = []
    for p in PROTOCOLS:
        regrets = READERS[p.name](stores)
        if regrets is None:
            continue
        mine = _regret_rows(p, regrets)
        if "regret" in regrets:
            mine += _claim_rows(p, regrets, r2.get(p.name))
        runs, seconds = cost(p)
        rows += [{**r, "runs": runs, "cpu_hours": seconds / 3600} for r in mine]
    return pd.DataFrame(rows).reindex(columns=COLUMNS)


def cost(p: Protocol) -> tuple[int, float]:
    """(runs, CPU-seconds) of the protocol's own runs, from its stores' records."""
    if p.name in (BOOK, "own rates"):
        standard = read_manifest(archive_dir("standard"))
        if p.name == BOOK:
            runs = [r for r in standard["runs"] if r["algorithm"].startswith("prefix_p")]
            return len(runs), float(sum(r.get("cpu_seconds") or 0.0 for r in runs))
        committed = F.load()
        return (0, 0.0) if committed is None else F.cost(committed[1], standard)
    total_runs, total_seconds = 0, 0.0
    for name in p.studies:
        path = registry.study(name).store_path()
        record = json.loads(path.with_name(path.name + ".json").read_text(encoding="utf-8"))
        total_runs += record.get("runs") or len(record["datasets"]) * len(record["seeds"])
        total_seconds += record["cpu_seconds"]
    return total_runs, total_seconds


# -- what pages read --------------------------------------------------------------------------
@dataclass(frozen=True)
class Headline:
    """One quantity's value from the best protocol that measures it."""

    value: float | None
    lo: float | None
    hi: float | None
    verdict: str | None
    detail: str | None
    protocol: str
    seeds: int

    def __str__(self) -> str:
        """ "0.168 (0.137–0.201), beyond δ (2,000 val + test)": what a page prints."""
        if self.value is None:
            shown = f"{self.verdict} ({self.detail})"
        elif self.lo is None:
            shown = f"p = {self.value:.0f} (p×seeds: {self.detail})"
        else:
            shown = self.shown()
        return f"{shown} ({self.protocol})"

    def shown(self) -> str:
        """The value with its interval and verdict: "0.183 (0.137–0.201), beyond δ"."""
        verdict = f", {self.verdict}" if isinstance(self.verdict, str) else ""
        return interval_text(self.value, self.lo, self.hi) + verdict


def headline(quantity: str, federation: str, table: pd.DataFrame) -> Headline:
    """``quantity`` of ``federation`` (or "R1"/"R2") from the first protocol of BEST_FIRST."""
    rows = table[(table["quantity"] == quantity) & (table["federation"] == federation)]
    rows = rows[rows["applies"] & rows["protocol"].isin(BEST_FIRST)]
    if rows.empty:
        held = sorted(set(table.loc[table["quantity"] == quantity, "federation"]))
        raise ValueError(f"No protocol measures {quantity!r} of {federation!r}; held: {held}.")
    best = rows.iloc[rows["protocol"].map(BEST_FIRST.index).argsort().iloc[0]]
    best = best.astype(object).where(best.notna(), None)
    fields = ["value", "lo", "hi", "verdict", "detail", "protocol"]
    return Headline(*best[fields], int(best["seeds"] or 0))


def cell_text(row) -> str:
    """One cell of the wide display: "0.183 ✗", "3×5, 4×5", "contradicted (strong)"."""
    if row.quantity == CLAIM:
        return f"{row.verdict} ({row.detail})"
    if row.quantity == SPLIT:
        return str(row.detail)
    return f"{signed(row.value)} {MARKS.get(row.verdict, '')}".strip()


def wide(table: pd.DataFrame, quantity: str, protocols=PROTOCOL_NAMES) -> pd.DataFrame:
    """One quantity for a page: the federations some protocol other than the book's measures, by
    ``protocols`` as short columns (claims transposed: a protocol per row)."""
    t = table[(table["quantity"] == quantity) & table["applies"]]
    t = t[t["protocol"].isin(list(protocols))]
    others = set(t.loc[t["protocol"] != BOOK, "federation"])
    t = t[t["federation"].isin(others)]
    t = t.assign(cell=[cell_text(r) for r in t.itertuples()])
    out = t.pivot(index="federation", columns="protocol", values="cell")
    out = out.reindex(columns=[p for p in PROTOCOL_NAMES if p in out.columns])
    out = out.loc[list(dict.fromkeys(t["federation"]))].fillna("")
    if quantity != CLAIM:
        out = out.loc[sorted(out.index, key=federation_order)]
        out.index = out.index.map(dataset_label)
    out.index.name = "federation" if quantity != CLAIM else "claim"
    out.columns = [protocol(c).short for c in out.columns]
    return out.T.rename_axis(index="protocol", columns="claim") if quantity == CLAIM else out


def federation_order(name: str) -> tuple:
    """Sort key of a federation: base, kind of skew, then α as a number ("α = 1" before "10")."""
    base, _, rest = str(name).partition("_")
    kind, _, alpha = rest.partition("alpha")
    try:
        a = float(alpha) if alpha else -1.0
    except ValueError:
        a = float("inf")
    return base, kind.rstrip("_"), a


def notes(table: pd.DataFrame) -> str:
    """Markdown, a paragraph per protocol: what changes, why, and what its own runs cost."""
    costs = table.groupby("protocol", sort=False)[["runs", "cpu_hours"]].first()
    paragraphs, runs_of = [], {}
    for p in PROTOCOLS:
        if p.name not in costs.index:
            continue
        changes = f"**{p.name}** ({p.short}). {p.changes[0].upper()}{p.changes[1:]}."
        earlier = runs_of.get(p.studies)
        if earlier is not None:
            paragraphs.append(f"{changes} No runs of its own: it re-tests the {earlier} regrets.")
            continue
        runs_of[p.studies] = p.short
        why = " ".join(registry.study(s).why for s in p.studies[:1])
        runs, hours = costs.loc[p.name]
        paragraphs.append(
            f"{changes} {why} Cost, measured (the store's record): {int(runs):,} runs, "
            f"{hours:.1f} CPU-hours."
        )
    return "\n\n".join(paragraphs)
