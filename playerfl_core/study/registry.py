"""Every study of the book, one declaration each (:class:`~playerfl_core.study.declaration.Study`).

Dates and commits are those of the commit that declared each study; the rungs and the rescores
are declared beside their code (``rungs.STUDIES``, ``rescore.STUDIES``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from data_prep import preregistered as PR
from playerfl_core.study import authors_mode, fair_sweeps, paper_scale, rescore, rungs
from playerfl_core.study.declaration import EVERY_SPLIT, ONE_RATE, R2_FAMILIES, Study
from playerfl_core.study.runner import named

BOOK_SCORING = (("val_per_client", "the profile's"), ("test_per_client", "the profile's"),
                ("round_and_oracle", "validation"))  # fmt: skip
"""The book's scoring: each client's validation and test split of its profile; a client's
round and the oracle's split chosen on validation."""
SPLIT_RULE_RUNS = "playerfl_core.study.split_rule_runs"
"""What computes a split-rule study: its sweeps through the grid, then the rules table."""


SPLIT_RULE_TEST = Study(
    name="split_rule_test",
    what="The pre-registered split-rule test: development (tuning) and evaluation sets.",
    federations=(*PR.DEVELOPMENT, *PR.EVALUATION),
    seeds=PR.DEFAULT_SEEDS,
    arms=f"{EVERY_SPLIT}; the split rules of preregistration.ENTRIES",
    rates=ONE_RATE,
    profile="standard",
    scoring=BOOK_SCORING,
    claim=R2_FAMILIES,
    declared="2026-12-01",
    commit="a025bfc",
    why="Does any split rule choose a split within δ of the validation oracle's, on "
    "federations unseen when its threshold was tuned (pre-registration, points 1–6)? Heart "
    "runs 50 seeds (preregistration.SEEDS).",
    store="rules/standard.parquet",
    computes=SPLIT_RULE_RUNS,
)
SPLIT_RULE_STUDIES = (
    SPLIT_RULE_TEST,
    replace(
        SPLIT_RULE_TEST, name="split_rule_follow_up", federations=PR.FOLLOW_UP,
        seeds=PR.FOLLOW_UP_SEEDS, what="The follow-up: the same entries on quantity skew.",
        declared="2026-12-01", commit="e31df63",
        why="Does the first test's pattern hold on a kind neither set contains "
        "(pre-registration, point 7, preregistration.FOLLOW_UP)?",
    ),
    replace(
        SPLIT_RULE_TEST, name="split_rule_development_seeds",
        federations=PR.DEVELOPMENT_ADDED,
        seeds=PR.DEVELOPMENT_ADDED_SEEDS,
        what="More development seeds: the Digits heterogeneity federations at seeds 10-19.",
        declared="2026-12-01", commit="af500a6",
        why="Describe the development federations with 20 seeds; tuning keeps its seeds "
        "(pre-registration, point 8, preregistration.DEVELOPMENT_ADDED_SEEDS).",
    ),
    replace(
        SPLIT_RULE_TEST, name="split_rule_second_follow_up", federations=PR.FOLLOW_UP_2,
        seeds=PR.FOLLOW_UP_2_SEEDS,
        arms=f"{EVERY_SPLIT}; preregistration.ALL_ENTRIES (with the second-order cost rule)",
        what="The second follow-up: every entry, cost2 added, on concept shift.",
        declared="2026-12-01", commit="af500a6",
        why="Does curvature explain the first-order rule's misses, and does the pattern "
        "hold on concept shift (pre-registration, point 9, preregistration.FOLLOW_UP_2, "
        "ADDED_ENTRIES)?",
    ),
    replace(
        SPLIT_RULE_TEST, name="split_rule_confirmation", federations=PR.CONFIRMATION,
        seeds=PR.CONFIRMATION_SEEDS,
        arms=f"{EVERY_SPLIT}; preregistration.ALL_ENTRIES",
        what="The confirmation test: every entry on its worst kinds, fresh seeds 10-29.",
        declared="2026-12-02", commit="67a5b2e",
        why="Is each entry beyond δ where the first test saw it fail worst, with enough "
        "seeds to decide (pre-registration, point 10, preregistration.CONFIRMATION)?",
    ),
    replace(
        SPLIT_RULE_TEST, name="split_rule_mean_test",
        federations=(*PR.EVALUATION, *PR.FOLLOW_UP, *PR.FOLLOW_UP_2, *PR.CONFIRMATION),
        seeds=tuple(sorted({*PR.DEFAULT_SEEDS, *PR.FOLLOW_UP_SEEDS, *PR.CONFIRMATION_SEEDS})),
        arms="preregistration.ALL_ENTRIES; no new runs",
        what="A declared correction: the sign-flip test of the mean replaces Wilcoxon.",
        declared="2026-12-02", commit="72efc53",
        why="The tables say 'mean regret within δ'; Wilcoxon decides on a symmetric centre "
        "(pre-registration, point 11, split_verdicts.TEST).",
    ),
)  # fmt: skip
"""The pre-registered test of the split rules and what was declared after it."""


FAIR_SWEEPS = Study(
    name="fair_sweeps",
    what="Every split at its own tuned learning rate (the fair sweep).",
    federations=tuple(fair_sweeps.DATASETS),
    seeds=PR.DEFAULT_SEEDS,
    arms=EVERY_SPLIT,
    rates="each arm's own rate, tuned on the grid's tuning seeds (study.tuning)",
    profile=fair_sweeps.PROFILE,
    scoring=BOOK_SCORING,
    claim="R1 at each split's own rate",
    declared="2026-12-02",
    commit="01055fd",
    why="A one-rate sweep handicaps the splits the rule did not choose, so the oracle is "
    "weaker than it could be (pre-registration, point 12). Heart runs its 50 seeds.",
    store="fair",
    computes="playerfl_core.study.fair_sweeps",
)


BUILDERS: tuple[Callable[[], Study | list[Study]], ...] = (
    lambda: [*SPLIT_RULE_STUDIES, FAIR_SWEEPS, *rungs.STUDIES, *rescore.STUDIES],
    lambda: [paper_scale.PAPER_SCALE, authors_mode.DECLARED],
)
"""Functions that return a study or a list of them, in the order ``playerfl study list`` shows."""


def studies() -> dict[str, Study]:
    """Every registered study by name, as its modules declare it now."""
    made = [build() for build in BUILDERS]
    return {s.name: s for m in made for s in (m if isinstance(m, list) else [m])}


def study(name: str) -> Study:
    """The registered study ``name``; raises naming the valid ones."""
    return named(studies().values(), name)


def tiny(name: str) -> Study:
    """The CPU stand-in of study ``name`` (seconds, not its numbers); raises when it has none."""
    stand_ins = {"paper_scale": paper_scale.TINY, "middle_rung": _tiny_rung(study("middle_rung")),
                 "split_rule_test": _tiny_split_rules(SPLIT_RULE_TEST)}  # fmt: skip
    if name not in stand_ins:
        study(name)  # an unknown name says so first
        raise ValueError(
            f"--tiny: study {name!r} has no tiny stand-in; those with one: {', '.join(stand_ins)}."
        )
    return stand_ins[name]


def _tiny_rung(rung: Study) -> Study:
    """One federation and seed at 60 images per client and one round, in its own work folder."""
    return replace(
        rung, name=f"{rung.name}_tiny", federations=rung.federations[:1], seeds=(0,),
        loader=(("samples_per_client", 60),), training=(("width", 0.5), ("rounds", 1)),
        why="A CPU stand-in: the runner's resuming, not the study's numbers.",
        work=f"{rung.work}_tiny",
    )  # fmt: skip


def _tiny_split_rules(test: Study) -> Study:
    """One evaluation federation and seed at the quick sizes and two rounds (the probe's)."""
    return replace(
        test, name=f"{test.name}_tiny", federations=(PR.TINY_SWEEP,), seeds=(0,),
        profile="quick", training=(("rounds", 2),),
        why="A CPU stand-in: the sweeps' resuming and the rules table, not the study's numbers.",
    )  # fmt: skip
