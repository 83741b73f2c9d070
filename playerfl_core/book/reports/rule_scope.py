"""What the split-rule study's bottom line rests on: its sets, its distinct rules, the kinds that
decide claim R2, the re-analysis, verdicts set apart only by family size, and how regrets were
scored. Reads a :class:`rule_study.RuleStudy`."""

from __future__ import annotations

import pandas as pd

from data_prep.preregistered import LADDER
from playerfl_core.book.prose import seed_span
from playerfl_core.book.reports.table_text import and_list, p_text, signed
from playerfl_core.book.style import dataset_label, set_label
from playerfl_core.stats.p_values import p_value_text
from playerfl_core.stats.split_verdicts import TOLERANCE
from playerfl_core.study import preregistration as P
from playerfl_core.study import rungs
from playerfl_core.study.rescore import TEST_PER_CLIENT
from playerfl_core.study.rungs import BOOK_TEST_IMAGES

TESTED = ("evaluation", "follow-up", P.SECOND_FOLLOW_UP, P.CONFIRMING)
"""The sets whose seeds no threshold was tuned on."""
SAME_RULE = 0.95
"""Two entries count as one rule when they choose the same split on this share of seeds."""


def plan_table() -> pd.DataFrame:
    """Per federation of the study (the confirmation's with its fresh seeds): set, kind, seeds."""
    rows = [(dataset_label(d), P.role_of(d), P.kind_of(d), len(P.seeds_of(d)))
            for d in [*P.DEVELOPMENT, *P.EVALUATION, *P.FOLLOW_UP, *P.FOLLOW_UP_2]]  # fmt: skip
    fresh = f"seeds {P.CONFIRMATION_SEEDS[0]}–{P.CONFIRMATION_SEEDS[-1]}"
    rows += [(f"{dataset_label(d)}, {fresh}", P.CONFIRMING, P.kind_of(d),
              len(P.CONFIRMATION_SEEDS)) for d in P.CONFIRMATION]  # fmt: skip
    plan = pd.DataFrame(rows, columns=["federation", "set", "kind of heterogeneity", "seeds"])
    return plan.assign(set=plan["set"].map(set_label)).set_index("federation")


def distinct_rules(regrets: pd.DataFrame) -> list[tuple[str, list[tuple[str, float]]]]:
    """The first-epoch entries grouped by the splits they choose on the tested seeds: an entry
    joins the first group whose leader agrees with it on ≥ :data:`SAME_RULE` of their common
    seeds. Returns (leader, [(entry, share of seeds agreeing)])."""
    wide = _tested_splits(regrets)
    groups: list[tuple[str, list[tuple[str, float]]]] = []
    for entry in [e for e in P.FIRST_EPOCH if e in wide.columns]:
        for leader, members in groups:
            share = _agreement(wide, leader, entry)
            if share >= SAME_RULE:
                members.append((entry, share))
                break
        else:
            groups.append((entry, [(entry, 1.0)]))
    return groups


def _tested_splits(regrets: pd.DataFrame) -> pd.DataFrame:
    """The split each first-epoch entry chooses, per tested (dataset, lr, seed)."""
    part = regrets[regrets["role"].isin(TESTED) & regrets["entry"].isin(P.FIRST_EPOCH)]
    return part.pivot_table(index=["dataset", "lr", "seed"], columns="entry", values="p_rule")


def _agreement(wide: pd.DataFrame, a: str, b: str) -> float:
    """The share of the seeds both entries were computed on where they choose the same split."""
    both = wide[[a, b]].dropna()
    return float((both[a] == both[b]).mean())


def distinct_text(regrets: pd.DataFrame) -> str:
    """ "the 7 first-epoch rules tested are 5 distinct rules on the tested seeds: “a”; “b” (with
    “c”: the same split on ≥ 95% of seeds); …", from :func:`distinct_rules`."""
    groups = distinct_rules(regrets)
    named = []
    for leader, members in groups:
        others = [(e, s) for e, s in members if e != leader]
        text = f"“{leader}”"  # labels hold commas: quoted, they read
        if others:
            low = min(s for _, s in others)
            together = and_list([f"“{e}”" for e, _ in others])
            text += f" (with {together}: the same split on ≥ {low:.0%} of seeds)"
        named.append(text)
    n = sum(len(m) for _, m in groups)
    return (
        f"the {n} first-epoch rules tested are {len(groups)} distinct rules on the tested "
        f"seeds: {'; '.join(named)}"
    )


def paper_forms_agreement(regrets: pd.DataFrame) -> str:
    """ "81–95 %": over the paper's other forms (tuned threshold, poolings), the range of the share
    of tested seeds on which a form picks the paper's rule's split."""
    wide = _tested_splits(regrets)
    paper, *forms = [e.label for e in P.ENTRIES if e.rule.startswith("paper")]
    shares = [_agreement(wide, paper, form) for form in forms if form in wide.columns]
    low, high = min(shares), max(shares)
    return f"{low:.0%}" if round(low, 2) == round(high, 2) else f"{low:.0%}–{high:.0%}"


def deciding_kinds(parts: pd.DataFrame) -> str:
    """Where R2's first-epoch entries are beyond δ (R2's parts: part, kind, verdict): the kinds
    where every entry is, which decide R2 alone; else each kind with its count, most first."""
    n, counts = _beyond_counts(parts)
    counts = counts.sort_values(ascending=False, kind="stable")
    every = [_named(k) for k, c in counts.items() if c == n]
    if every:
        return f"every one is beyond δ on {' and on '.join(every)}, which decides R2 alone"
    return "beyond δ on " + "; ".join(f"{_named(kind)} ({k} of {n})" for kind, k in counts.items())


def _beyond_counts(parts: pd.DataFrame) -> tuple[int, pd.Series]:
    """How many first-epoch entries R2's parts hold, and per kind how many are beyond δ."""
    first = parts[parts["part"].isin(P.FIRST_EPOCH)]
    beyond = first[first["verdict"] == P.BEYOND]
    return first["part"].nunique(), beyond.groupby("kind")["part"].nunique()


def _named(kind: str, plain: bool = False) -> str:
    """A confirmation kind with its federations and fresh seeds: "… (confirmation: Fashion-MNIST,
    rotated, seeds 10–29)", or ``plain`` "Fashion-MNIST, rotated (feature skew), confirmed on
    fresh seeds 10–29"; other kinds as they are."""
    base, sep, _ = kind.rpartition(" (confirmation)")
    if not sep:
        return kind
    feds = ", ".join(dataset_label(d) for d in P.CONFIRMATION if P.kind_of(d) == base)
    seeds = f"{P.CONFIRMATION_SEEDS[0]}–{P.CONFIRMATION_SEEDS[-1]}"
    if plain:
        return f"{feds} ({base.split(' (')[0]}), confirmed on fresh seeds {seeds}"
    return f"{base} (confirmation: {feds}, seeds {seeds})"


def r2_scope(study, claim) -> str:
    """The reason for claim R2's verdict (``claim``: :func:`rule_study.r2_claim`), plain and
    short: where every first-epoch rule is beyond δ (else the verdict's reason), how many
    distinct rules they are, and the deciding federation's regret beyond the book's sizes."""
    n, beyond = _beyond_counts(claim.parts)
    every = [_named(k, plain=True) for k, c in beyond.items() if c == n]
    if every:
        lead = f"Every first-epoch rule is beyond δ on {' and on '.join(every)}"
    else:
        lead = f"{claim.verdict.reason}: {deciding_kinds(claim.parts)}"
    groups = distinct_rules(study.regrets)
    same = len(groups) < n and (
        f"the {n} rules tested are {len(groups)} distinct ones (some pick the same split on "
        f"≥ {SAME_RULE:.0%} of seeds)"
    )
    parts = (lead, same, scale_text())
    return ". ".join(p[0].upper() + p[1:] for p in parts if p)


def scale_text(dataset: str | None = None) -> str:
    """The paper's rule's mean regret on R2's deciding federation (default the ladder's last) in
    each committed rung beyond the book's sizes, with its seeds; "" when neither is committed."""
    dataset = dataset or LADDER[-1]
    parts = []
    rung_words = {
        "eval_rung": "with 2,000 validation and 2,000 test images per client",
        "middle_rung": "when each client trains on 1,000 images with the CNN at half width (too "
        "few seeds for a test)",
    }
    for name, words in rung_words.items():
        committed = rungs.load(name)
        if committed is None or dataset not in committed[1]["datasets"]:
            continue
        reg = rungs.regrets(committed[0])
        reg = reg[reg["dataset"] == dataset]
        parts.append(f"{signed(reg['regret'].mean())} on {seed_span(reg)} {words}")
    if not parts:
        return ""
    return (
        f"on {dataset_label(dataset)}, the paper's rule's mean regret is "
        f"{', and '.join(parts)}; δ = {TOLERANCE:g}"
    )


# -- the fifth declaration's re-analysis -----------------------------------------------------------
def reanalysis_table(re: pd.DataFrame) -> pd.DataFrame:
    """The verdicts the test of the mean changed (``preregistration.reanalysis`` rows), as shown:
    family, rule, kind, mean regret, seeds, and both tests' verdict and Holm-adjusted p."""
    moved = re[re["changed"]]

    def verdicts(test):
        pairs = zip(moved[f"verdict_{test}"], moved[f"p_holm_{test}"], strict=True)
        return [f"{v}, p {p_text(p)}" for v, p in pairs]

    return pd.DataFrame(
        {
            "family": moved["family"].map(set_label),
            "rule": moved["entry"],
            "kind": moved["kind"],
            "mean regret": [signed(m) for m in moved["mean"]],
            "seeds": moved["n"],
            "Wilcoxon (declared)": verdicts("wilcoxon"),
            "test of the mean": verdicts("mean"),
        }
    ).set_index(["family", "rule"])


def reanalysis_lines(re: pd.DataFrame) -> str:
    """Markdown: per declared family, how many verdicts the test of the mean changed."""
    lines = []
    for family, g in re.groupby("family", sort=False):
        moved = g[g["changed"]]
        what = "; ".join(
            f"{r.entry} on {r.kind}: from {r.verdict_wilcoxon} to **{r.verdict_mean}**"
            for r in moved.itertuples()
        )
        tests = "1 test" if len(g) == 1 else f"{len(g)} tests"
        lines.append(f"- {set_label(family)} ({tests}): {what or 'none changed'}.")
    return "\n".join(lines)


def reanalysis_count(re: pd.DataFrame) -> str:
    """ "8 of the 104" verdicts changed."""
    return f"{int(re['changed'].sum())} of the {len(re)}"


# -- one regret, two verdicts ----------------------------------------------------------------------
def same_regret_pairs(study, sets=None) -> pd.DataFrame:
    """Pairs of entries of two declared families of one set (``sets``, default every tested one)
    with equal regrets seed by seed but different verdicts (only Holm's family sizes differ).
    Columns: set, kind, seeds, and per side (``_a`` the smaller family) entry, tests, p, p_holm,
    verdict."""
    keys = ["kind", "dataset", "lr", "seed"]
    held = {
        "evaluation": study.evaluation,
        "follow-up": study.follow_up,
        P.SECOND_FOLLOW_UP: study.second_follow_up,
        P.CONFIRMING: study.confirmation,
    }
    families = []  # the declared families the study holds: (name, set, verdicts)
    for name, role, added in P.FAMILIES:
        verdicts = (study.added or {}).get(role) if added else held.get(role)
        if verdicts is not None and (sets is None or role in sets):
            families.append((name, role, verdicts))
    out = []
    for role in dict.fromkeys(r for _, r, _ in families):
        rows = [(name, len(v), r) for name, rr, v in families if rr == role
                for r in v.itertuples()]  # fmt: skip
        part = study.regrets[study.regrets["role"] == role]
        wide = part.pivot_table(index=keys, columns="entry", values="regret")
        for i, one in enumerate(rows):
            for other in rows[i + 1 :]:
                (fa, ma, a), (fb, mb, b) = sorted([one, other], key=lambda t: t[1])
                if fa == fb or a.kind != b.kind or a.verdict == b.verdict:
                    continue
                both = wide.loc[a.kind, [a.entry, b.entry]]
                if both.isna().any().any() or not (both[a.entry] == both[b.entry]).all():
                    continue
                out.append((role, a.kind, len(both), a.entry, ma, a.p, a.p_holm, a.verdict,
                            b.entry, mb, b.p, b.p_holm, b.verdict))  # fmt: skip
    sides = [f"{c}_{s}" for s in "ab" for c in ("entry", "tests", "p", "p_holm", "verdict")]
    return pd.DataFrame(out, columns=["set", "kind", "seeds", *sides])


def family_size_note(study, sets=None, plain: bool = False) -> str:
    """One sentence per pair of :func:`same_regret_pairs`: same regrets and test, verdicts set
    apart only by the families' sizes; "" when no pair is. ``plain``: words for a main-path page
    (how many tests Holm adjusts over, not "family")."""
    pairs = same_regret_pairs(study, sets)
    group = ["set", "entry_a", "tests_a", "verdict_a", "entry_b", "tests_b", "verdict_b"]
    notes = []
    for (role, a, ma, va, b, mb, vb), g in pairs.groupby(group, sort=False):
        kinds = and_list(list(g["kind"]))
        where = {"evaluation": "the evaluation set", P.CONFIRMING: "the confirmation test"}
        if plain:
            first, second = ("alone" if m == 1 else f"among {m} tests" for m in (ma, mb))
            why = "how many tests Holm's adjustment counts"
        else:
            first = "its own family of " + ("one test" if ma == 1 else f"{ma} tests")
            second, why = f"a family of {mb}", "the size of the families"
        notes.append(
            f"On {kinds} ({where.get(role, f'the {set_label(role)}')}), “{a}” and “{b}” have "
            f"the same regret on every seed, so the same p before adjustment "
            f"({_p_range(g['p_a'])}), yet “{a}” is {va} and “{b}” {vb}: the first is tested "
            f"{'' if plain else 'in '}{first} (Holm-adjusted p {_p_range(g['p_holm_a'])}), the "
            f"second {'' if plain else 'in '}{second} (Holm-adjusted p "
            f"{_p_range(g['p_holm_b'])}). The verdicts differ by {why}, not by the rules."
        )
    return " ".join(notes)


def _p_range(ps: pd.Series) -> str:
    lo, hi = p_value_text(ps.min()), p_value_text(ps.max())
    return lo if lo == hi else f"{lo} to {hi}"


# -- which test sets a table reads -----------------------------------------------------------------
def scoring_text(study, role: str, record: bool = True) -> str:
    """Which test sets a set's regrets were scored on, per base federation, for its table's
    caption ("Regrets scored: Fashion-MNIST on 2,000 test images per client (the tenth
    declaration); Digits on the book's test sets."); without ``record``, no declaration named."""
    keys = ["dataset", "lr", "seed", "entry"]
    rows = study.regrets[study.regrets["role"] == role][[*keys, "rescored"]]
    if study.test_only is not None:  # the validation rescore's rows are those its store replaced
        before = study.test_only.regrets[[*keys, "rescored"]]
        rows = rows.merge(before, on=keys, suffixes=("", "_test"))
        level = 2 * rows["rescored"] + (rows["rescored_test"] & ~rows["rescored"])
    else:
        level = rows["rescored"].astype(int)
    words = {level: _scored(level, record) for level in range(3)}
    by_base = rows.assign(base=rows["dataset"].map(P.base_of), level=level.to_numpy())
    merged: dict[str, list[str]] = {}
    order = by_base.groupby("base", sort=False)["level"].max()
    for base in order.sort_values(ascending=False, kind="stable").index:
        counts = by_base.loc[by_base["base"] == base, "level"].value_counts().sort_index()[::-1]
        what = ", ".join(f"{int(c)} {words[int(lv)]}" for lv, c in counts.items())
        what = words[int(counts.index[0])] if len(counts) == 1 else what
        merged.setdefault(what, []).append(dataset_label(base))
    text = "; ".join(f"{' and '.join(labels)} {what}" for what, labels in merged.items())
    return f"Regrets scored: {text}."


def _scored(level: int, record: bool = True) -> str:
    """How a regret was scored: 0 the book's test sets, 1 the large-test rescore, 2 the validation
    rescore; with ``record``, the declaration that made it."""
    n = f"{TEST_PER_CLIENT:,}"
    names = ("", " (the tenth declaration)", " (the eleventh declaration)") if record else ("",) * 3
    return (
        "on the book's test sets",
        f"on {n} test images per client{names[1]}",
        f"with {n} validation and {n} test images per client{names[2]}",
    )[level]


def disclosed_regret_text(study) -> str:
    """The paper's rule's mean regret on the Fashion-MNIST base federation that the fifth
    declaration disclosed (on the book's test sets), beside the rescored value the evaluation
    table reads now."""

    def mean(verdicts) -> str:
        row = verdicts[(verdicts["entry"] == P.ENTRIES[0].label)
                       & (verdicts["kind"] == "base federation")]  # fmt: skip
        return signed(float(row["mean"].iloc[0]))

    then = (
        f"mean regret {mean((study.book or study).evaluation)} on the book's test sets of about "
        f"{BOOK_TEST_IMAGES} images per client, the only scoring at the time"
    )
    if study.book is None:
        return then
    level = 1 if study.test_only is None else 2
    return (
        f"{then}; the evaluation table below reads {mean(study.evaluation)} for the same seeds, "
        f"scored {_scored(level)}"
    )
