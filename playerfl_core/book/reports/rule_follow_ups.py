"""The later declarations of chapter 04b's split-rule study in sentences: the follow-up tests, the
second-order rule in its own family, its curvature term, and the confirmation on fresh seeds."""

from __future__ import annotations

import pandas as pd

from playerfl_core.book.reports.rule_study import RuleStudy, r2_verdict
from playerfl_core.book.reports.table_text import interval_text, p_text, signed
from playerfl_core.book.style import set_label
from playerfl_core.stats.p_values import p_value_text
from playerfl_core.study import preregistration as P
from playerfl_core.study.rescore import family_comparison


def follow_up_lines(verdicts: pd.DataFrame | None, datasets=P.FOLLOW_UP) -> str:
    """Markdown, per entry: a follow-up test's verdict, mean regret, interval, seeds, Holm p."""
    if verdicts is None:
        return (
            "- The sweeps read here do not hold every declared seed of the follow-up's "
            f"federations ({', '.join(datasets)}); `make standard` computes them."
        )
    return "\n".join(
        f"- **{r.entry}**: {r.verdict} (mean regret {interval_text(r.mean, r.lo, r.hi)}, "
        f"{r.n} seeds, Holm-adjusted p {p_value_text(r.p_holm)})"
        for r in verdicts.itertuples()
    )


def added_lines(study: RuleStudy) -> str:
    """Markdown, per set: the second-order rule's verdicts in its own family, its largest regret."""
    if study.added is None:
        return "- The rules table read here has no rows of the second-order rule."
    lines = []
    for role, v in study.added.items():
        worst = v.sort_values("mean").iloc[-1]
        counts = v["verdict"].value_counts()
        family = f"Holm over its {len(v)} kinds" if len(v) > 1 else "one kind, one test"
        lines.append(
            f"- **{set_label(role)} set** ({family}): within δ on "
            f"{int(counts.get(P.WITHIN, 0))}, beyond δ on {int(counts.get(P.BEYOND, 0))}, "
            f"undecided on {int(counts.get('undecided', 0))}; largest mean regret "
            f"{interval_text(worst['mean'], worst['lo'], worst['hi'])} on {worst['kind']}."
        )
    return "\n".join(lines)


_CURVATURE_WORDS = {
    "supported": "the second order has the smaller regret",
    "contradicted": "the first order has the smaller regret",
    "undecided": "undecided",
}


def curvature_lines(study: RuleStudy) -> str:
    """Markdown, per set: does the curvature term lower the regret? (paired by seed)."""
    if study.added is None:
        return "- The rules table read here has no rows of the second-order rule."
    comp = P.curvature_comparison(study.regrets)
    declared = P.curvature_comparison(study.regrets, "wilcoxon")
    return "\n".join(
        f"- **{set_label(r.set)}**: regret of the first order minus the second "
        f"{interval_text(r.mean, r.lo, r.hi)} over {r.n} seeds (the same split on {r.same_split}); "
        f"Holm-adjusted p {p_text(r.p_holm, _NO_P)}: {_CURVATURE_WORDS[r.verdict]}"
        + ("" if w == r.verdict else f" (the declared Wilcoxon test: {_CURVATURE_WORDS[w]})")
        + "."
        for r, w in zip(comp.itertuples(), declared["verdict"], strict=True)
    )


_NO_P = "not computable (too few seeds that differ)"
MARKS = {P.WITHIN: "✓", P.BEYOND: "✗", "undecided": "?"}
"""A verdict's mark in a table: ✓ within δ, ✗ beyond it, ? undecided."""


def follow_up_headline(
    verdicts: pd.DataFrame | None, kind: str = "quantity skew", added: pd.DataFrame | None = None
) -> str:
    """One sentence: which first-epoch entries a follow-up decided within δ on its kind (names
    apart by semicolons: names hold commas); ``added``, the second-order rule's verdicts, are
    counted with the others."""
    if verdicts is None:
        return f"The follow-up on {kind} is not computed in these sweeps."
    if added is not None:
        verdicts = pd.concat([verdicts, added[added["kind"] == kind]], ignore_index=True)
    rows = verdicts[verdicts["entry"] != P.PROBE_LABEL]
    aside = ""
    if len(rows) < len(verdicts):
        left = P.PROBE_LABEL.split(" (")[0]  # no brackets within brackets
        aside = f" (the {left} trains every split, so it is left out)"
    within = rows[rows["verdict"] == P.WITHIN]["entry"].tolist()
    beyond = rows[rows["verdict"] == P.BEYOND]["entry"].tolist()
    n = len(rows)
    undecided = n - len(within) - len(beyond)
    if undecided == n:
        return (
            f"On {kind}, of the {n} first-epoch rules{aside}, none is within δ = "
            f"{P.TOLERANCE:g} and none is decided beyond it: all {n} are "
            "undecided."
        )

    def group(names: list[str], what: str) -> str:
        if not names:
            return f"none is {what}"
        if len(names) == n > 1:
            return f"all {n} are {what}"
        return f"{len(names)} {'is' if len(names) == 1 else 'are'} {what}: {'; '.join(names)}"

    beyond_text = group(beyond, "beyond it")
    rest = f" {undecided} {'is' if undecided == 1 else 'are'} undecided." if undecided else ""
    return (
        f"On {kind}, of the {n} first-epoch rules{aside}, "
        f"{group(within, f'within δ = {P.TOLERANCE:g}')}. "
        f"{beyond_text[0].upper()}{beyond_text[1:]}.{rest}"
    )


def confirmation_lines(verdicts: pd.DataFrame | None) -> str:
    """Markdown, per entry: the confirmation test's verdict on each of its kinds with the mean
    regret, its interval and the Holm-adjusted p (or a sentence saying it is absent)."""
    if verdicts is None:
        return (
            f"- The sweeps read here do not hold seeds {P.CONFIRMATION_SEEDS[0]}–"
            f"{P.CONFIRMATION_SEEDS[-1]} of {', '.join(P.CONFIRMATION)}; `make standard` "
            "computes them."
        )
    return "\n".join(
        f"- **{entry}** ({int(g['n'].min())} seeds each): "
        + "; ".join(
            f"{r.kind}: {r.verdict}, {interval_text(r.mean, r.lo, r.hi)}, Holm-adjusted p "
            f"{p_text(r.p_holm, _NO_P)}"
            for r in g.itertuples()
        )
        for entry, g in verdicts.groupby("entry", sort=False)
    )


def selection_text(study: RuleStudy) -> str:
    """The confirmation's selection, recomputed: each kind and the entries worst on it."""
    by_kind: dict[str, list[str]] = {}
    for entry, kind in P.worst_kinds(study.regrets).items():
        by_kind.setdefault(kind, []).append(entry)
    return " — ".join(f"{kind}: {'; '.join(es)}" for kind, es in by_kind.items())


def confirmation_headline(study: RuleStudy) -> str:
    """One sentence: the first-epoch entries the confirmation found beyond δ, and R2's verdict."""
    v = study.confirmation
    if v is None:
        return "The confirmation test is not computed in these sweeps."
    rows = v[v["entry"].isin(P.FIRST_EPOCH)]
    beyond = rows[rows["verdict"] == P.BEYOND].groupby("entry", sort=False).size()
    r2 = r2_verdict(study)
    n = rows["entry"].nunique()
    found = (
        f"every one of the {n} first-epoch entries is"
        if len(beyond) == n
        else (
            f"{len(beyond)} of the {n} first-epoch entries ({'; '.join(beyond.index) or 'none'})"
            f" {'is' if len(beyond) == 1 else 'are'}"
        )
    )
    k = len(P.headline(rows))
    both = "none is" if not k else f"{k} of them {'is' if k == 1 else 'are'}"
    strength = f" ({r2.strength} evidence)" if r2.strength != "none" else ""
    return (
        f"On fresh seeds of the two kinds where they failed worst, {found} beyond δ = "
        f"{P.TOLERANCE:g} on at least one kind, and {both} within δ on both. So claim R2 (some "
        f"first-epoch rule within δ on every kind) is {r2.verdict}{strength}."
    )


def r2_tests(study) -> pd.DataFrame | None:
    """Every test of R2's declared families (family, rule, kind): seeds, how many rescored, and
    per evaluation protocol the mean regret with its verdict's mark (✓, ✗, ?); None when
    nothing was rescored."""
    if study.book is None:
        return None
    keys = ["family", "entry", "kind"]
    first = family_comparison(study.book.regrets, (study.test_only or study).regrets)
    out = first[keys].assign(seeds=first["n"], rescored=first["rescored"])
    columns = {"book's test sets": (first, "book"), "2,000 images": (first, "large")}
    if study.test_only is not None:
        then = family_comparison(study.test_only.regrets, study.regrets).set_index(keys)
        rows = then.loc[pd.MultiIndex.from_frame(first[keys])].reset_index()
        columns["2,000 validation too"] = (rows, "large")
    for name, (frame, side) in columns.items():
        pairs = zip(frame[f"mean_{side}"], frame[f"verdict_{side}"], strict=True)
        out[name] = [f"{signed(m)} {MARKS.get(v, '?')}" for m, v in pairs]
    out["family"] = out["family"].map(set_label)
    return out.rename(columns={"entry": "rule"}).set_index(["family", "rule", "kind"])
