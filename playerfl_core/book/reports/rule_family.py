"""Chapter 04b's answer (result box, details, advice), glued numbers and tables of the split
rules as a family, read from the committed sweeps and rules table. The study itself is in
:mod:`.rule_study`; its names are importable from here, as the chapters read ``RF.<name>``."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from playerfl_core.book.reports.rule_follow_ups import MARKS, added_lines, curvature_lines
from playerfl_core.book.reports.rule_scope import deciding_kinds, distinct_text, reanalysis_count
from playerfl_core.book.reports.rule_study import (  # noqa: F401 (the chapters' RF.load_rules)
    RuleStudy,
    analyse,
    load_rules,
    r2_claim,
    r2_verdict,
)
from playerfl_core.book.reports.table_text import interval_text, signed
from playerfl_core.book.style import dataset_label, rule_label
from playerfl_core.fl.split_rules import RULES, describe_rules
from playerfl_core.fl.units import unit_names, unit_sizes
from playerfl_core.stats.decisions import ALPHA
from playerfl_core.stats.p_values import p_value_text
from playerfl_core.study import preregistration as P
from playerfl_core.study import split_rules_table as R
from playerfl_core.study.rescore import TEST_PER_CLIENT, family_comparison


# -- tables ---------------------------------------------------------------------------------------
def rule_costs(models: dict[str, object]) -> pd.DataFrame:
    """Per rule (and the probe) and base (``models``: base → a model): local epochs spent before
    the split is known and each client's upload to decide it, in kB (float32)."""
    rows = []
    for base, model in models.items():
        sizes = unit_sizes(model)
        n, n_units = sum(sizes.values()), len(unit_names(model))
        for r in describe_rules():
            needs = RULES[r["rule"]].needs
            numbers = n_units + n * len(set(needs) & {"params", "grads", "fisher"})
            rows.append((r["rule"], dataset_label(base), 1, _kb(4 * numbers)))
        # the probe: every split p trained for PROBE_ROUNDS rounds, uploading its prefix each time
        prefix_sizes, rounds = np.cumsum([0, *sizes.values()]), P.PROBE_ROUNDS
        upload = _kb(4 * rounds * float(prefix_sizes.sum()))
        rows.append((R.PROBE, dataset_label(base), (n_units + 1) * rounds, upload))
    out = pd.DataFrame(rows, columns=["rule", "federation", "local epochs", "upload (kB)"])
    values = ["local epochs", "upload (kB)"]
    out = out.pivot_table(index="rule", columns="federation", values=values, sort=False)
    return out.rename_axis(columns=[None, None])


def _kb(n_bytes: float) -> float:
    """Bytes in kB to three significant digits (0.02 kB, 647 kB)."""
    return float(f"{n_bytes / 1000:.3g}")


def verdict_table(verdicts: pd.DataFrame) -> pd.DataFrame:
    """Kinds × entries: mean regret and verdict mark; a one-kind set transposed to fit the page."""
    cell = [f"{signed(r.mean)} {MARKS.get(r.verdict, '?')}" for r in verdicts.itertuples()]
    shown = verdicts.assign(cell=cell).pivot(index="kind", columns="entry", values="cell")
    entries = list(dict.fromkeys(verdicts["entry"]))
    kinds = [k for k in P.KIND_ORDER if k in shown.index]
    table = shown.loc[kinds, entries].rename_axis(index="kind of heterogeneity", columns="rule")
    return table.T if len(kinds) == 1 else table


def split_distribution(study: RuleStudy, entries) -> pd.DataFrame:
    """Per federation and source (entries, oracle): dataset, role, kind, source, p, seeds at p."""
    reg = study.regrets
    parts = [
        reg[reg["entry"] == e][["dataset", "seed", "p_rule"]]
        .rename(columns={"p_rule": "p"})
        .assign(source=e)
        for e in entries
    ]
    first = reg[reg["entry"] == entries[0]]
    parts.append(
        first[["dataset", "seed", "p_oracle"]].rename(columns={"p_oracle": "p"})
        .assign(source="oracle (validation)")
    )  # fmt: skip
    both = pd.concat(parts, ignore_index=True)
    both["role"] = [P.role_of(d, s) for d, s in zip(both["dataset"], both["seed"], strict=True)]
    keys = ["dataset", "role", "source", "p"]
    out = both.groupby(keys, sort=False).size().rename("seeds").reset_index()
    out["kind"] = out["dataset"].map(P.kind_of)
    return out


# -- glued sentences ------------------------------------------------------------------------------
def numbers(study: RuleStudy) -> dict:
    """Glue values of the chapter."""
    ev, dev = study.evaluation, study.development
    n_kinds = ev["kind"].nunique()
    lines = []
    for entry, t in _tally(ev).iterrows():
        worst = ev[ev["entry"] == entry].sort_values("mean").iloc[-1]
        lines.append(
            f"- **{entry}**: within δ on {int(t.within)} of {n_kinds} kinds, beyond "
            f"δ on {int(t.beyond)}; largest mean regret "
            f"{interval_text(worst['mean'], worst['lo'], worst['hi'])} on {worst['kind']}."
        )
    head = study.headline
    paper = study.regrets[study.regrets["entry"] == P.ENTRIES[0].label]
    moved = paper.groupby("dataset")["p_rule"].nunique()
    n_feds = paper["dataset"].nunique()
    oracle_spread = paper.groupby("dataset")["p_oracle"].agg(["min", "max"])
    replay = study.replay
    evaluation = study.regrets.query("role == 'evaluation'")
    return {
        "rule_headline": ("none of the rules" if not head else ", ".join(f"**{h}**" for h in head)),
        "rule_headline_count": len(head),
        "n_kinds": n_kinds,
        "n_eval_feds": int(evaluation["dataset"].nunique()),
        "n_dev_feds": int(study.regrets.query("role == 'development'")["dataset"].nunique()),
        "n_eval_seeds": int(evaluation.groupby("dataset")["seed"].nunique().min()),
        "eval_lines": "\n".join(lines),
        "paper_fixed_feds": f"{int((moved == 1).sum())} of {n_feds}",
        "paper_modal_p": int(paper["p_rule"].mode().iloc[0]),
        "oracle_range": f"{int(oracle_spread['min'].min())}–{int(oracle_spread['max'].max())}",
        "tuned_lines": tuned_lines(study.tuning),
        "replay_same": f"{int(replay['same'].sum())} of {len(replay)}",
        "power_note": power_note(study),
        "headline_text": ", ".join(head) if head else "none of the rules",
        "tuning_caption": tuning_caption(study.tuning),
        "added_lines": added_lines(study),
        "curvature_lines": curvature_lines(study),
        "dev_within_lines": "\n".join(
            f"- {entry}: within δ on {int(t.within)} of {int(t.kinds)} kinds of the development "
            f"set, beyond δ on {int(t.beyond)}"
            for entry, t in _tally(dev).iterrows()
        ),
    }


def tuning_caption(tuning: pd.DataFrame) -> str:
    """Caption line of the tuning figure: each rule's kept threshold and regret, and t = 1's."""
    best = P.kept(tuning)
    best = best.loc[[r for r in P.GRIDS if r in best.index], ["threshold", "regret"]]
    kept = "; ".join(f"{rule_label(r)} {t:g} ({g:.4f})" for r, t, g in best.itertuples(name=None))
    paper_t1 = tuning.query("rule == 'paper' and threshold == 1.0")["regret"]
    tail = f"; the paper's t = 1: {paper_t1.iloc[0]:.4f}" if len(paper_t1) else ""
    return f"Kept thresholds (mean development regret): {kept}{tail}"


def tuned_lines(tuning: pd.DataFrame) -> str:
    """Markdown, per rule: its kept threshold and mean development regret, by display name."""
    paper_t1 = tuning.query("rule == 'paper' and threshold == 1.0")["regret"]
    out = [
        f"- {rule_label(r.rule)}: threshold {r.threshold:g}, mean development regret {r.regret:.4f}"
        for r in P.kept(tuning).loc[list(P.GRIDS)].reset_index().itertuples()
    ]
    if len(paper_t1):
        out.append(f"- (the paper's t = 1 on the same federations: {paper_t1.iloc[0]:.4f})")
    return "\n".join(out)


def _tally(verdicts: pd.DataFrame) -> pd.DataFrame:
    """Per entry: kinds within δ, beyond δ, undecided, and the largest mean regret."""
    g = verdicts.groupby("entry", sort=False)
    return pd.DataFrame(
        {
            "within": g["verdict"].apply(lambda v: int((v == P.WITHIN).sum())),
            "beyond": g["verdict"].apply(lambda v: int((v == P.BEYOND).sum())),
            "kinds": g.size(),
            "worst": g["mean"].max(),
            "worst_kind": g.apply(
                lambda e: e.loc[e["mean"].idxmax(), "kind"], include_groups=False
            ),
        }
    )


def _on(kind: str) -> str:
    """ "on the base federation", "on feature skew (rotate)"."""
    return f"on the {kind}" if kind == "base federation" else f"on {kind}"


def power_note(study: RuleStudy) -> str:
    """What the declared design could decide: the smallest p (2/2ⁿ), Holm-adjusted, against α."""
    ev = study.evaluation
    m, n_min = len(ev), int(ev["n"].min())
    floor = m * 2 / 2**n_min
    needed = math.ceil(math.log2(2 * m / ALPHA))
    power = str(n_min).translate(str.maketrans("0123456789", "⁰¹²³⁴⁵⁶⁷⁸⁹"))
    decided = int((ev["verdict"] != "undecided").sum())
    big = ev.drop_duplicates("kind")
    decidable = int((big["n"] >= needed).sum())
    return (
        f"{decided} of the {m} (rule, kind) tests reached a decision. With {n_min} seeds the "
        f"smallest attainable p is 2/2{power} ≈ {p_value_text(2 / 2**n_min)}, "
        f"and Holm over {m} tests lifts it to {p_value_text(floor)} > {ALPHA:g}, the test level: "
        f"a kind needs at least {needed} seeds before any verdict is possible, which "
        f"{decidable} of the {len(big)} kinds have."
    )


R2_ANSWER = {
    "contradicted": "no rule that reads only the first local epoch keeps the {term}`regret` "
    "within the {term}`tolerance δ <tolerance δ>` of the best split on every kind of "
    "heterogeneity",
    "supported": "some rule that reads only the first local epoch keeps the {term}`regret` within "
    "the {term}`tolerance δ <tolerance δ>` of the best split on every kind of heterogeneity",
    "undecided": "the tests could not tell whether some rule that reads only the first local "
    "epoch keeps the {term}`regret` within the {term}`tolerance δ <tolerance δ>` everywhere",
}


def evaluation_seeds() -> str:
    """The evaluation set's seeds ("seeds 0–9"), said beside a mean regret."""
    seeds = sorted({s for d in P.EVALUATION for s in P.seeds_of(d)})
    return f"seeds {seeds[0]}–{seeds[-1]}"


def result_box(study: RuleStudy) -> str:
    """The chapter's answer: claim R2's verdict in a plain sentence, then why (Markdown)."""
    nums, tally, probe = numbers(study), _tally(study.evaluation), P.PROBE_LABEL
    r2 = r2_claim(study)
    v = r2.verdict
    strength = f" ({v.strength} evidence)" if v.strength != "none" else ""
    contradicted = v.verdict == "contradicted"
    kinds = f" Of the first-epoch rules, {deciding_kinds(r2.parts)}." if contradicted else ""
    return (
        f"**Claim R2 is {v.verdict}**{strength}: {R2_ANSWER[v.verdict]} (δ = {P.TOLERANCE:g} "
        f"macro-F1).\n\n"
        f"Why: the paper's rule picks p = {nums['paper_modal_p']} on every seed of "
        f"{nums['paper_fixed_feds']} federations, while the {{term}}`oracle split <oracle split>` "
        f"ranges over p = {nums['oracle_range']}.{kinds} The two-round validation probe, which "
        f"trains every split first, has a largest mean regret of {_worst(tally, probe, '{} ({})')}."
    )


def result_details(study: RuleStudy) -> str:
    """What :func:`result_box` rests on (Markdown): the distinct rules, the entries never beyond
    δ, and what the test-of-the-mean correction and the larger test sets changed."""
    re = P.reanalysis(study.book_regrets)  # the re-analysis's record, on the book's test sets
    verdicts = re if study.book is None else P.reanalysis(study.regrets)
    by_entry = verdicts.groupby("entry", sort=False)
    never = [e for e, g in by_entry if not (g["verdict_mean"] == P.BEYOND).any()]
    distinct = distinct_text(study.regrets)
    return (
        f"- {distinct[0].upper()}{distinct[1:]}.\n"
        f"- Never decided beyond δ in any declared test: {', '.join(never) or 'no entry'}.\n"
        "- The verdicts test the mean regret, as the text reports it (the fifth declaration): "
        f"{reanalysis_count(re)} declared verdicts changed from the Wilcoxon test first "
        "declared ({ref}`the correction <rules-correction>`)."
        + (f"\n-{_rescore_sentence(study)}" if study.book is not None else "")
    )


def _rescore_sentence(study: RuleStudy) -> str:
    """Where the rescored regrets were scored and how many verdicts that changed."""
    comparison = family_comparison(study.book.regrets, study.regrets)
    n = f"{TEST_PER_CLIENT:,}"
    where, sets = (f"scored on {n} test images per client (the tenth declaration)", "test sets")
    if study.test_only is not None:
        where = (
            f"chosen on {n} validation images and scored on {n} test images per client (the "
            "tenth and eleventh declarations)"
        )
        sets = "validation and test sets"
    changed = int(comparison["changed"].sum())
    return (
        f" Fashion-MNIST's regrets are {where}: {changed} of the {len(comparison)} verdicts "
        f"{'differs' if changed == 1 else 'differ'} from those on the book's {sets}."
    )


def advice(study: RuleStudy) -> str:
    """What a practitioner should do, as the evaluation verdicts say it (Markdown list)."""
    tally = _tally(study.evaluation)
    probe, paper = P.PROBE_LABEL, P.ENTRIES[0].label
    # the first-epoch entry with the most kinds within δ (then fewest beyond, smallest worst)
    rest = tally.drop(index=[probe], errors="ignore")
    best = str(rest.assign(neg=-rest["within"]).sort_values(["neg", "beyond", "worst"]).index[0])
    ev = study.evaluation
    delta, dont = f"δ = {P.TOLERANCE:g}", "- Do not count on a first-epoch rule to find the split"
    if study.headline:
        first = (
            f"- Use {' or '.join(study.headline)}: on the evaluation set its regret is within "
            f"{delta} on every kind of heterogeneity."
        )
    elif r2_verdict(study).verdict == "contradicted":
        first = (
            f"{dont}: each was shown to be beyond {delta} on at least one kind of "
            "heterogeneity (the confirmation test)."
        )
    else:
        first = f"{dont}: none was shown to be within {delta} on every kind of the evaluation set."
    bad = ev[(ev["entry"] == best) & (ev["verdict"] == P.BEYOND)]["kind"].tolist()
    lines = [
        first,
        f"- Among the first-epoch rules, {best} has the smallest largest mean regret on the "
        f"evaluation set ({_worst(tally, best)}; {_within(tally, best)} kinds decided within δ)"
        + (f"; it is beyond δ on {', '.join(bad)}." if bad else "."),
        f"- If 2·(L+1) local epochs of probing are affordable, probe every split for two rounds "
        f"and choose on validation data: its largest mean regret on the evaluation set is "
        f"{_worst(tally, probe)} ({_within(tally, probe)} kinds decided within δ, "
        f"{int(tally.loc[probe, 'beyond'])} beyond).",
    ]
    if study.added is not None:
        comp = P.curvature_comparison(study.regrets)
        n, same = int(comp["n"].sum()), int(comp["same_split"].sum())
        tail = (
            "no set shows a difference in regret, so the Fisher upload does not pay here."
            if (comp["verdict"] == "undecided").all()
            else "the paired test above says where that matters."
        )
        lines.append(
            f"- The curvature term moves the cost rule's split on {n - same} of {n} seeds of the "
            f"evaluation set and the follow-ups; {tail}"
        )
    lines.append(
        f"- The paper's rule (t = 1) is decided within δ on {_within(tally, paper)} kinds of the "
        f"evaluation set; its largest mean regret is {tally.loc[paper, 'worst']:.3f} "
        f"({evaluation_seeds()}), {_on(tally.loc[paper, 'worst_kind'])}."
    )
    return "\n".join(lines)


def _within(tally: pd.DataFrame, entry: str) -> str:
    """ "3 of 5": an entry's kinds decided within δ, of its kinds."""
    return f"{int(tally.loc[entry, 'within'])} of {int(tally.loc[entry, 'kinds'])}"


def _worst(tally: pd.DataFrame, entry: str, form: str = "{}, {}") -> str:
    """ "0.183, on feature skew (rotate)": an entry's largest mean regret and its kind."""
    return form.format(f"{tally.loc[entry, 'worst']:.3f}", _on(tally.loc[entry, "worst_kind"]))
