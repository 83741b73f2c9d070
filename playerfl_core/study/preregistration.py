"""The pre-registered test of the split rules: what it declares, the tuning and the analysis.

Declares the entries (a rule at a threshold: :data:`ENTRIES`, :data:`ADDED_ENTRIES`) and names a
federation's kind and set (:func:`kind_of`, :func:`role_of`); the federations, seeds and learning
rates live in ``data_prep/preregistered.py`` and are imported here, so ``preregistration as P`` is
the one import. Tunes each rule's threshold on the development set (:data:`GRIDS`, :func:`tune`;
the chosen :data:`TUNED`) and computes each seed's regret (:func:`entry_regrets`), the declared
test per family (:func:`evaluate`), the test of the mean beside the Wilcoxon test it replaced
(:func:`reanalysis`), the curvature comparison and claim R2 (:func:`claim`).

What was declared when, the disclosures and the declared corrections, in order, are the record of
the pre-registration appendix (``chapters/appendix_preregistration.ipynb``, section "The record:
every declaration, in order"); git history dates each declaration."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import pandas as pd

from data_prep.preregistered import (  # noqa: F401 (the declared sets, seeds and rates, read as P.NAME)
    CONFIRMATION,
    CONFIRMATION_SEEDS,
    DEFAULT_SEEDS,
    DEVELOPMENT,
    EVALUATION,
    FOLLOW_UP,
    FOLLOW_UP_2,
    LEARNING_RATES,
    SEEDS,
    TUNING_SEEDS,
)
from playerfl_core.stats.claims import claim_from
from playerfl_core.stats.decisions import STRENGTHS, Verdict
from playerfl_core.stats.seed_stats import bootstrap_interval
from playerfl_core.stats.split_verdicts import (
    TEST,  # the test of the mean
    TOLERANCE,  # δ = 0.02
    decide_family,
    difference_evidence,
    test_change,
    tolerance_verdicts,
)
from playerfl_core.stats.split_verdicts import tolerance_curve as verdicts_over_tolerances
from playerfl_core.study.split_rules_table import PROBE, rethreshold, rule_regrets, splits

# -- what it declares ---------------------------------------------------------------------------
PROBE_ROUNDS = 2
"""The validation probe trains every split for this many rounds."""


@dataclass(frozen=True)
class Entry:
    """One rule at one threshold, as evaluated."""

    label: str
    rule: str
    threshold: float | None
    """None: the value :data:`TUNED` holds for the rule."""


ENTRIES = (
    Entry("paper (t = 1)", "paper", 1.0),
    Entry("paper (tuned t)", "paper", None),
    Entry("paper, median pooling", "paper_median", 1.0),
    Entry("paper, geometric-mean pooling", "paper_geomean", 1.0),
    Entry("averaging cost (tuned τ)", "cost", None),
    Entry("update disagreement (tuned τ)", "disagreement", None),
    Entry("validation probe (2 rounds)", "probe", float(PROBE_ROUNDS)),
)
"""The first test's entries: the paper's rule at t = 1 and tuned, its median and geometric-mean
poolings, the averaging-cost and update-disagreement rules at their tuned τ, and the validation
probe as the practical upper reference."""
ADDED_ENTRIES = (Entry("averaging cost, second order (tuned τ)", "cost2", None),)
"""The second-order averaging-cost rule, declared after the first test and the follow-up were
known: tested in families of its own on their sets, with every entry on the second follow-up."""
ALL_ENTRIES = ENTRIES + ADDED_ENTRIES
"""Every declared entry: the first test's seven and the second-order rule."""


def seeds_of(dataset: str) -> tuple[int, ...]:
    """The declared seeds of a federation."""
    return SEEDS.get(dataset, DEFAULT_SEEDS)


def base_of(dataset: str) -> str:
    """The base dataset of a federation (``fmnist_rotate`` → ``fmnist``)."""
    return dataset.split("_", 1)[0]


def kind_of(dataset: str) -> str:
    """The kind of heterogeneity a federation of the test represents."""
    _, _, rest = dataset.partition("_")
    if not rest:
        return "base federation"
    if rest.startswith("alpha"):
        alpha = float(rest.removeprefix("alpha"))
        if alpha <= 0.1:
            return "strong label skew (α ≤ 0.1)"
        return "near IID (α = 10)" if alpha >= 10 else "moderate label skew (α 0.3–1)"
    if rest == "quantity":
        return "quantity skew"
    if rest == "swap":
        return "concept shift"
    kind, _, alpha = rest.partition("_alpha")
    return f"mixed ({kind} + α = {alpha})" if alpha else f"feature skew ({kind})"


KIND_ORDER = (
    "base federation",
    "strong label skew (α ≤ 0.1)",
    "moderate label skew (α 0.3–1)",
    "near IID (α = 10)",
    "feature skew (rotate)",
    "feature skew (invert)",
    "feature skew (noise)",
    "mixed (rotate + α = 0.1)",
    "mixed (noise + α = 0.1)",
    "quantity skew",  # the follow-up's kind
    "concept shift",  # the second follow-up's kind
)
"""The order in which tables list the kinds of heterogeneity."""


CONFIRMING = "confirmation"
"""The set of the confirmation's fresh seeds (:func:`role_of`)."""
SECOND_FOLLOW_UP = "second follow-up"
"""The set of the concept-shift federations (:func:`role_of`)."""


def role_of(dataset: str, seed: int | None = None) -> str:
    """The set a federation (with ``seed``: a seed of it) belongs to."""
    if seed is not None and dataset in CONFIRMATION and seed in CONFIRMATION_SEEDS:
        return CONFIRMING
    if dataset in DEVELOPMENT:
        return "development"
    if dataset in EVALUATION:
        return "evaluation"
    if dataset in FOLLOW_UP:
        return "follow-up"
    if dataset in FOLLOW_UP_2:
        return SECOND_FOLLOW_UP
    raise ValueError(
        f"{dataset!r} is in no set of the pre-registration (development: "
        f"{', '.join(DEVELOPMENT)}; evaluation: {', '.join(EVALUATION)}; follow-up: "
        f"{', '.join(FOLLOW_UP)}; second follow-up: {', '.join(FOLLOW_UP_2)})."
    )


# -- the tuning's grids and choices ---------------------------------------------------------------
GRIDS = {
    "paper": (0.1, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 16.0),
    "cost": (0.0, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0),
    "disagreement": (0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0),
    "cost2": (0.0, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0),  # the grid of "cost"
}
"""The thresholds :func:`tune` may choose from, per rule."""
TUNED = {"paper": 2.0, "cost": 0.1, "disagreement": 0.3, "cost2": 0.1}
"""The thresholds :func:`tune` chose on the development set (recomputed by a test); all but the
paper's rule's (whose default stays t = 1) are those rules' defaults in ``split_rules``."""


# -- tuning, on the development set only ------------------------------------------------------
def tuning_curve(rules_table: pd.DataFrame, scores: pd.DataFrame) -> pd.DataFrame:
    """Mean regret over the development federations per rule and threshold of :data:`GRIDS`, on
    :data:`TUNING_SEEDS` only. Columns: rule, threshold, regret."""

    def tuning_rows(frame):
        seeds = frame["dataset"].map(TUNING_SEEDS)
        keep = [isinstance(s, tuple) and x in s for s, x in zip(seeds, frame["seed"], strict=True)]
        return frame[keep]

    dev_rules = tuning_rows(rules_table)
    dev_scores = tuning_rows(scores)
    missing = sorted(set(DEVELOPMENT) - set(dev_rules["dataset"]))
    if missing:
        raise ValueError(f"The rules table lacks development federations {missing}.")
    rows = []
    for rule, grid in GRIDS.items():
        for t in grid:
            reg = rule_regrets(dev_scores, rethreshold(dev_rules, rule, t))
            rows.append((rule, t, reg.groupby("dataset")["regret"].mean().mean()))
    return pd.DataFrame(rows, columns=["rule", "threshold", "regret"])


def kept(curve: pd.DataFrame) -> pd.DataFrame:
    """Per rule, indexed by it, the row of :func:`tuning_curve` kept: the least regret (ties:
    the smaller threshold)."""
    best = curve.sort_values(["rule", "regret", "threshold"]).groupby("rule", sort=False).head(1)
    return best.set_index("rule")


def tune(rules_table: pd.DataFrame, scores: pd.DataFrame) -> dict[str, float]:
    """Per rule of :data:`GRIDS`: the threshold of least mean development regret (ties: smaller)."""
    best = kept(tuning_curve(rules_table, scores))["threshold"]
    return {rule: float(best[rule]) for rule in GRIDS}


# -- the declared analysis ------------------------------------------------------------------------
def entry_splits(rules_table: pd.DataFrame, entries: Sequence[Entry] = ALL_ENTRIES) -> pd.DataFrame:
    """Every entry's split per seed (default :data:`ALL_ENTRIES`), from the rules table.
    Columns: dataset, lr, seed, rule, threshold, p, entry."""
    parts = []
    for e in entries:
        if e.rule == PROBE:
            probe = rules_table[
                (rules_table["rule"] == PROBE) & (rules_table["threshold"] == e.threshold)
            ]
            if probe.empty:
                raise ValueError(
                    f"The rules table has no validation-probe rows of {e.threshold:g} rounds "
                    "(rules_for_sweep(..., probe_rounds=...) adds them)."
                )
            chosen = splits(probe)
        else:
            t = TUNED[e.rule] if e.threshold is None else e.threshold
            chosen = rethreshold(rules_table, e.rule, t)
        parts.append(chosen.assign(entry=e.label))
    return pd.concat(parts, ignore_index=True)


def entry_regrets(
    rules_table: pd.DataFrame, scores: pd.DataFrame, entries: Sequence[Entry] = ALL_ENTRIES
) -> pd.DataFrame:
    """Per seed and entry: the regret, with the federation's role and kind. Columns: dataset,
    lr, seed, entry, p_rule, p_oracle, test_rule, test_oracle, regret, role, kind."""
    chosen = entry_splits(rules_table, entries)
    out = rule_regrets(scores, chosen.drop(columns="rule").rename(columns={"entry": "rule"}))
    out = out.rename(columns={"rule": "entry"})
    out["role"] = [role_of(d, s) for d, s in zip(out["dataset"], out["seed"], strict=True)]
    out["kind"] = out["dataset"].map(kind_of)
    return out


def in_family(entries: pd.Series, role: str, added: bool = False) -> pd.Series:
    """Which rows one declared family tests on a set: every entry on the second follow-up and the
    confirmation; elsewhere all but :data:`ADDED_ENTRIES`, or with ``added`` those alone."""
    if role in (SECOND_FOLLOW_UP, CONFIRMING):
        return pd.Series(True, index=entries.index)
    later = entries.isin([e.label for e in ADDED_ENTRIES])
    return later if added else ~later


def family_rows(regrets: pd.DataFrame, role: str, added: bool = False) -> pd.DataFrame:
    """The regrets one declared family tests on a set (:func:`in_family`), in the tables' order:
    entries as they come, kinds as :data:`KIND_ORDER`."""
    part = regrets[(regrets["role"] == role) & in_family(regrets["entry"], role, added)]
    rank = {k: i for i, k in enumerate(KIND_ORDER)}
    entries = {e: i for i, e in enumerate(dict.fromkeys(part["entry"]))}
    return part.sort_values(
        ["entry", "kind"],
        key=lambda c: c.map(entries) if c.name == "entry" else c.map(rank),
        kind="stable",
    )


def evaluate(
    regrets: pd.DataFrame,
    role: str = "evaluation",
    tolerance: float = TOLERANCE,
    added: bool = False,
    test: str = TEST,
) -> pd.DataFrame:
    """The declared test on one set (:func:`family_rows`): per entry and kind, mean regret,
    bootstrap interval, test of δ − regret (``test``: the mean's or ``"wilcoxon"``), Holm and
    verdict. Columns: entry, kind, mean, lo, hi, median, n, p, p_holm, verdict, strength, reason."""
    part = family_rows(regrets, role, added)
    if part.empty:
        raise ValueError(f"No regrets of the {role} set.")
    return tolerance_verdicts(part, ["entry", "kind"], tolerance, test)


FAMILIES = (
    ("evaluation", "evaluation", False),
    ("evaluation, second-order rule", "evaluation", True),
    ("follow-up", "follow-up", False),
    ("follow-up, second-order rule", "follow-up", True),
    ("second follow-up", "second follow-up", False),
    ("confirmation", "confirmation", False),
)
"""The declared families of the tested sets: (name, set, the added entry alone)."""


def reanalysis(regrets: pd.DataFrame) -> pd.DataFrame:
    """Every declared family in ``regrets`` under the Wilcoxon test first declared and the test of
    the mean. Columns: family, entry, kind, mean, n, verdict_/p_holm_ wilcoxon and mean, changed."""
    parts = []
    for name, role, added in FAMILIES:
        part = family_rows(regrets, role, added)
        if len(part):
            both = test_change(part, ["entry", "kind"], old="wilcoxon", new="sign_flip")
            parts.append(both.assign(family=name))
    if not parts:
        raise ValueError("No regrets of any declared family to re-analyse.")
    out = pd.concat(parts, ignore_index=True)
    out.columns = [c.replace("_old", "_wilcoxon").replace("_new", "_mean") for c in out.columns]
    return out[["family", "entry", "kind", "mean", "n", "verdict_wilcoxon", "p_holm_wilcoxon",
                "verdict_mean", "p_holm_mean", "changed"]]  # fmt: skip


WITHIN, BEYOND = "within δ", "beyond δ"
"""The verdict words of the test (``split_verdicts.VERDICT_WORDS``)."""


def headline(verdicts: pd.DataFrame) -> list[str]:
    """The entries within tolerance on every kind of the set (possibly none)."""
    ok = verdicts.groupby("entry", sort=False)["verdict"].apply(lambda v: bool((v == WITHIN).all()))
    return [e for e, good in ok.items() if good]


def tolerance_curve(
    regrets: pd.DataFrame, tolerances: Sequence[float], role: str = "evaluation"
) -> pd.DataFrame:
    """The declared test over a range of δ (the figure that shows how much the answer depends
    on the tolerance). Columns: entry, kind, tolerance, verdict, p_holm."""
    part = regrets[(regrets["role"] == role) & in_family(regrets["entry"], role)]
    return verdicts_over_tolerances(part, tolerances, ["entry", "kind"])


CURVATURE_SETS = ("evaluation", "follow-up", SECOND_FOLLOW_UP)
"""The sets on which :func:`curvature_comparison` compares the first- and second-order rules."""


def curvature_comparison(regrets: pd.DataFrame, test: str = TEST) -> pd.DataFrame:
    """Does curvature pay? Per set, first-order minus second-order regret on the same seeds, the
    test of their mean (or ``"wilcoxon"``), Holm over the sets. Columns: set, mean, lo, hi, n,
    same_split, p, p_holm, verdict, strength, reason."""
    first, second = (next(e.label for e in ALL_ENTRIES if e.rule == r) for r in ("cost", "cost2"))
    key = ["dataset", "lr", "seed"]
    rows, parts = [], []
    for role in CURVATURE_SETS:
        part = regrets[regrets["role"] == role]
        a = part[part["entry"] == first].set_index(key)
        b = part[part["entry"] == second].set_index(key)
        if a.empty or b.empty:
            continue
        both = a.merge(b, left_index=True, right_index=True, suffixes=("_1", "_2"))
        d = (both["regret_1"] - both["regret_2"]).to_numpy()
        m, lo, hi = bootstrap_interval(d, seed=0)
        same = int((both["p_rule_1"] == both["p_rule_2"]).sum())
        rows.append((role, m, lo, hi, len(d), same))
        parts.append(difference_evidence(d, role, test=test))
    decided = decide_family(parts)
    out = pd.DataFrame(rows, columns=["set", "mean", "lo", "hi", "n", "same_split"])
    out["p"] = [e.pvalue for e in decided]
    out["p_holm"] = [e.p_adjusted for e in decided]
    out["verdict"] = [e.verdict for e in decided]
    out["strength"] = [e.strength for e in decided]
    out["reason"] = [e.reason for e in decided]
    return out


def worst_kinds(regrets: pd.DataFrame) -> dict[str, str]:
    """The confirmation's selection: per entry, the kind of its largest mean evaluation regret."""
    ev = regrets[regrets["role"] == "evaluation"]
    if ev.empty:
        raise ValueError("No regrets of the evaluation set to select the confirmation kinds from.")
    means = ev.groupby(["entry", "kind"], sort=False)["regret"].mean()
    return {entry: str(g.droplevel(0).idxmax()) for entry, g in means.groupby(level=0, sort=False)}


PROBE_LABEL = next(e.label for e in ENTRIES if e.rule == PROBE)
"""The validation probe's entry label."""
FIRST_EPOCH = tuple(e.label for e in ALL_ENTRIES if e.rule != PROBE)
"""The entries a client can compute after its first epoch (the probe trains every split)."""


def claim(
    verdicts: pd.DataFrame,
    profile: str = "",
    confirmation: pd.DataFrame | None = None,
    added: pd.DataFrame | None = None,
):
    """Claim R2: *supported* when some first-epoch rule is within δ on every kind, *contradicted*
    when every one is beyond δ on some kind, else *undecided*; with its strength."""
    rank = {s: i for i, s in enumerate(STRENGTHS)}
    first_epoch = [e.label for e in ENTRIES if e.rule != PROBE]
    rows = verdicts[verdicts["entry"].isin(first_epoch)]
    evidence = [rows]
    for extra, suffix in ((added, ""), (confirmation, " (confirmation)")):
        if extra is not None:
            extra = extra[extra["entry"].isin(FIRST_EPOCH)]
            evidence.append(extra.assign(kind=extra["kind"] + suffix))
    evidence = pd.concat(evidence, ignore_index=True)
    winners = headline(rows)
    if winners:
        g = rows[rows["entry"] == winners[0]]
        strength = max(g["strength"], key=rank.__getitem__)
        verdict = Verdict("supported", strength, f"{winners[0]}: within δ on all {len(g)} kinds")
    else:
        required = FIRST_EPOCH if confirmation is not None else dict.fromkeys(rows["entry"])
        beyond = evidence[evidence["verdict"] == BEYOND]
        failures = {e: beyond.loc[beyond["entry"] == e, "strength"].tolist() for e in required}
        if all(failures.values()):
            strongest = [min(f, key=rank.__getitem__) for f in failures.values()]
            weakest = max(strongest, key=rank.__getitem__)
            verdict = Verdict(
                "contradicted", weakest,
                f"each of the {len(failures)} first-epoch rules is beyond δ on at least one kind",
            )  # fmt: skip
        else:
            open_rules = [e for e, f in failures.items() if not f]
            verdict = Verdict(
                "undecided", "weak",
                f"{len(open_rules)} first-epoch rules are nowhere beyond δ but not within δ "
                "everywhere",
            )  # fmt: skip
    parts = evidence[["entry", "kind", "mean", "n", "p", "p_holm", "verdict", "strength"]]
    return claim_from("R2", parts.rename(columns={"entry": "part"}), verdict, profile)
