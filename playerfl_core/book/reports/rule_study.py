"""The split-rule study of chapter 04b as data: the committed rules table, the pre-registered
analysis of the sweeps (:func:`analyse`, a :class:`RuleStudy`) and claim R2."""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

import pandas as pd

from playerfl_core.book.reports.rule_scope import r2_scope
from playerfl_core.study import preregistration as P
from playerfl_core.study import rescore as V
from playerfl_core.study import split_rules_table as R
from playerfl_core.study.rescore import r2_regrets
from playerfl_core.study.runner import load_store
from playerfl_core.study.split_scores import sweep_scores

RULES_FILE = Path(__file__).resolve().parents[3] / "stores" / "rules" / "standard.parquet"
"""The committed rules table of the standard archive's sweeps (``make standard`` writes it)."""


@dataclass
class RuleStudy:
    """What the chapter derives from the sweeps and the rules table."""

    scores: pd.DataFrame
    rules: pd.DataFrame
    regrets: pd.DataFrame
    evaluation: pd.DataFrame
    development: pd.DataFrame
    tuning: pd.DataFrame
    replay: pd.DataFrame
    """Per seed: the paper's split from the replayed first epoch and the one the sweep recorded."""
    follow_up: pd.DataFrame | None = None
    """The follow-up test's verdicts (quantity skew); None while not in the tables."""
    second_follow_up: pd.DataFrame | None = None
    """The second follow-up's verdicts (concept shift); None while absent."""
    added: dict[str, pd.DataFrame] | None = None
    """Per set: the second-order rule's verdicts in a family of their own; None while absent."""
    confirmation: pd.DataFrame | None = None
    """The confirmation test's verdicts (fresh seeds); None while absent."""
    book: RuleStudy | None = None
    """The same study on the book's test sets, when a rescore replaced any of :attr:`regrets`."""
    test_only: RuleStudy | None = None
    """The same study on 2,000 test images only, when the validation rescore replaced any regret."""

    @property
    def headline(self) -> list[str]:
        return P.headline(self.evaluation)

    @property
    def book_regrets(self) -> pd.DataFrame:
        """The regrets on the book's test sets (the re-analysis's side by side reads them)."""
        return (self.book or self).regrets


def load_rules(path=None) -> pd.DataFrame:
    """The committed rules table (or the one at ``path``), checked against its record."""
    path = Path(path) if path is not None else RULES_FILE
    if not path.exists():
        raise FileNotFoundError(
            f"No rules table at {path}: `make standard` writes it, or `playerfl rules --sweep "
            "stores/standard --out stores/rules/standard.parquet` from the committed sweeps."
        )
    return load_store(path)[0]


def analyse(sweep: pd.DataFrame, rules: pd.DataFrame, rescore: bool = True) -> RuleStudy:
    """The pre-registered analysis of every declared set the sweeps and rules table hold in full.
    With ``rescore``, regrets read the rescores' larger test (and validation) sets where those
    hold them; :attr:`RuleStudy.book` and :attr:`RuleStudy.test_only` keep the studies before."""
    datasets = [*P.DEVELOPMENT, *P.EVALUATION]
    missing = sorted(set(datasets) - set(rules["dataset"]))
    if missing:
        raise ValueError(f"The rules table lacks the pre-registered federations {missing}.")
    follow_up = has_every_seed(sweep, rules)
    if follow_up:
        datasets += P.FOLLOW_UP
    added = {e.rule for e in P.ADDED_ENTRIES} <= set(rules["rule"])
    second = added and has_every_seed(sweep, rules, P.FOLLOW_UP_2)
    if second:
        datasets += P.FOLLOW_UP_2
    confirm = second and has_every_seed(sweep, rules, P.CONFIRMATION, P.CONFIRMATION_SEEDS)
    sweep = sweep[sweep["dataset"].isin(datasets)]
    rules = rules[rules["dataset"].isin(datasets)]
    keys = ["dataset", "lr"]
    lrs = {(ds, P.LEARNING_RATES[P.base_of(ds)]) for ds in datasets}
    sweep = sweep[[tuple(k) in lrs for k in sweep[keys].itertuples(index=False)]]
    scores = sweep_scores(sweep)
    scores = scores[[s in P.seeds_of(d) or (confirm and P.role_of(d, s) == P.CONFIRMING)
                     for d, s in zip(scores["dataset"], scores["seed"], strict=True)]]  # fmt: skip
    book = P.entry_regrets(rules, scores, P.ALL_ENTRIES if added else P.ENTRIES)
    roles = ["development", "evaluation", *(["follow-up"] if follow_up else [])]

    def study_of(regrets: pd.DataFrame, **fixed) -> RuleStudy:
        return RuleStudy(
            scores=scores,
            rules=rules,
            regrets=regrets,
            evaluation=P.evaluate(regrets, "evaluation"),
            development=P.evaluate(regrets, "development"),
            follow_up=P.evaluate(regrets, "follow-up") if follow_up else None,
            second_follow_up=P.evaluate(regrets, P.SECOND_FOLLOW_UP) if second else None,
            added={r: P.evaluate(regrets, r, added=True) for r in roles} if added else None,
            confirmation=P.evaluate(regrets, P.CONFIRMING) if confirm else None,
            **fixed,
        )

    on_book = study_of(book.assign(rescored=False), tuning=P.tuning_curve(rules, scores),
                       replay=R.check_replay(rules, sweep))  # fmt: skip
    new = r2_regrets(book) if rescore else on_book.regrets
    if not new["rescored"].any():
        return on_book
    fixed = {"tuning": on_book.tuning, "replay": on_book.replay, "book": on_book}
    test_only = study_of(new, **fixed)
    large = V.large_sweep() if rescore else None
    if large is None:
        return test_only
    newer = V.large_val_r2_regrets(new, large, rules)
    if not newer["rescored"].any():
        return test_only
    return study_of(newer, **fixed, test_only=test_only)


def has_every_seed(sweep: pd.DataFrame, rules: pd.DataFrame, datasets=P.FOLLOW_UP, seeds=None):
    """Whether both tables hold every declared seed (``seeds``, else its own) of ``datasets``."""
    return all(
        set(seeds or P.seeds_of(ds)) <= set(t.loc[t["dataset"] == ds, "seed"])
        for ds in datasets
        for t in (rules, sweep)
    )


def r2_claim(study: RuleStudy, profile: str = ""):
    """Claim R2 as the declarations decide it (the first test, the second-order rule's family,
    the confirmation), with :func:`rule_scope.r2_scope`'s reason when contradicted."""
    added = study.added["evaluation"] if study.added is not None else None
    claim = P.claim(study.evaluation, profile, confirmation=study.confirmation, added=added)
    if claim.verdict.verdict != "contradicted" or study.regrets is None:
        return claim
    reason = r2_scope(study, claim)
    return replace(claim, verdict=replace(claim.verdict, reason=reason))


def r2_verdict(study: RuleStudy):
    return r2_claim(study).verdict
