"""Every study of the book, one declaration each (:class:`~playerfl_core.study.declaration.Study`).

Dates and commits are those of the commit that declared the study (``git log --follow`` of the
module or of the pre-registration's item that declared it). The pre-registered split-rule test
and its follow-ups point at their constants in ``study.preregistration`` (federations, seeds,
rates); the ladder's studies read their modules' constants at each call, so what a module
declares is what the registry says.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from data_prep import preregistered as PR
from playerfl_core.study.declaration import EVERY_SPLIT, Study

BOOK_SCORING = (("val_per_client", "the profile's"), ("test_per_client", "the profile's"),
                ("round_and_oracle", "validation"))  # fmt: skip
"""The book's scoring: each client's validation and test split of its profile; a client's
round and the oracle's split chosen on validation."""
ONE_RATE = "one rate per federation: PLayer-FL's tuned rate (preregistered.LEARNING_RATES)"
PREREGISTRATION = "playerfl_core.study.preregistration"
SWEEPS = "playerfl_core.study.split_sweeps"
R2_FAMILIES = "R2 (pre-registered split-rule test)"


def _split_rule_tests() -> list[Study]:
    """The pre-registered test of the split rules and what was declared after it."""
    base = Study(
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
        "federations unseen when its threshold was tuned (pre-registration §1-6)? Heart "
        "runs 50 seeds (preregistration.SEEDS).",
        store="rules/standard.parquet",
        computes=SWEEPS,
    )
    return [
        base,
        replace(
            base, name="split_rule_follow_up", federations=PR.FOLLOW_UP,
            seeds=PR.FOLLOW_UP_SEEDS, what="The follow-up: the same entries on quantity skew.",
            declared="2026-12-01", commit="e31df63",
            why="Does the first test's pattern hold on a kind neither set contains "
            "(pre-registration §7, preregistration.FOLLOW_UP)?",
        ),
        replace(
            base, name="split_rule_development_seeds", federations=PR.DEVELOPMENT,
            seeds=PR.DEVELOPMENT_ADDED_SEEDS,
            what="More development seeds: the Digits heterogeneity federations at seeds 10-19.",
            declared="2026-12-01", commit="af500a6",
            why="Describe the development federations with 20 seeds; tuning keeps its seeds "
            "(pre-registration §8, preregistration.DEVELOPMENT_ADDED_SEEDS).",
        ),
        replace(
            base, name="split_rule_second_follow_up", federations=PR.FOLLOW_UP_2,
            seeds=PR.FOLLOW_UP_2_SEEDS,
            arms=f"{EVERY_SPLIT}; preregistration.ALL_ENTRIES (with the second-order cost rule)",
            what="The second follow-up: every entry, cost2 added, on concept shift.",
            declared="2026-12-01", commit="af500a6",
            why="Does curvature explain the first-order rule's misses, and does the pattern "
            "hold on concept shift (pre-registration §9, preregistration.FOLLOW_UP_2, "
            "ADDED_ENTRIES)?",
        ),
        replace(
            base, name="split_rule_confirmation", federations=PR.CONFIRMATION,
            seeds=PR.CONFIRMATION_SEEDS,
            arms=f"{EVERY_SPLIT}; preregistration.ALL_ENTRIES",
            what="The confirmation test: every entry on its worst kinds, fresh seeds 10-29.",
            declared="2026-12-02", commit="67a5b2e",
            why="Is each entry beyond δ where the first test saw it fail worst, with enough "
            "seeds to decide (pre-registration §10, preregistration.CONFIRMATION)?",
        ),
        replace(
            base, name="split_rule_mean_test",
            federations=(*PR.EVALUATION, *PR.FOLLOW_UP, *PR.FOLLOW_UP_2, *PR.CONFIRMATION),
            seeds=tuple(sorted({*PR.DEFAULT_SEEDS, *PR.FOLLOW_UP_SEEDS, *PR.CONFIRMATION_SEEDS})),
            arms="preregistration.ALL_ENTRIES; no new runs",
            what="A declared correction: the sign-flip test of the mean replaces Wilcoxon.",
            declared="2026-12-02", commit="72efc53",
            why="The tables say 'mean regret within δ'; Wilcoxon decides on a symmetric centre "
            "(pre-registration §11, split_verdicts.TEST).",
            computes=PREREGISTRATION,
        ),
    ]  # fmt: skip


def _fair_sweeps() -> Study:
    from playerfl_core.study import fair_sweeps as F

    return Study(
        name="fair_sweeps",
        what="Every split at its own tuned learning rate (the fair sweep).",
        federations=tuple(F.DATASETS),
        seeds=PR.DEFAULT_SEEDS,
        arms=EVERY_SPLIT,
        rates="each arm's own rate, tuned on the grid's tuning seeds (study.tuning)",
        profile=F.PROFILE,
        scoring=BOOK_SCORING,
        claim="R1 at each split's own rate",
        declared="2026-12-02",
        commit="01055fd",
        why="A one-rate sweep handicaps the splits the rule did not choose, so the oracle is "
        "weaker than it could be (pre-registration §12). Heart runs its 50 seeds.",
        store="fair",
        computes="playerfl_core.study.fair_sweeps",
    )


def _middle_rung() -> Study:
    from playerfl_core.study import middle_rung

    return middle_rung.rung()


def _eval_rung() -> Study:
    from playerfl_core.study import eval_rung

    return eval_rung.rung()


def _scale_ladder() -> Study:
    from playerfl_core.study import scale_ladder as L

    return Study(
        name="scale_ladder",
        what="The paper-size first epochs: the rule's split at the paper's sizes.",
        federations=tuple(L.DATASETS),
        seeds=tuple(L.SEEDS),
        arms="the paper's rule (one local epoch per seed: all the rule reads)",
        rates="the paper profile's rate (1e-3)",
        profile=L.PAPER,
        scoring=(
            ("val_per_client", "none (first epoch only)"),
            ("test_per_client", "none (first epoch only)"),
            ("round_and_oracle", "none"),
        ),  # fmt: skip
        claim="descriptive (R2's scope: the rule's choice at the paper's sizes)",
        declared="2026-12-02",
        commit="de09bbb",
        why="Does the paper's rule choose the same split at the paper's sizes as at the "
        "book's? Its choice there costs one epoch per seed.",
        store="ladder/paper_first_epoch.parquet",
        computes="playerfl_core.study.scale_ladder",
        work="ladder_paper_first_epoch",
    )


def _rescores() -> list[Study]:
    from playerfl_core.study import r1_rescore as R1

    test_only = (("val_per_client", "the profile's"), ("test_per_client", R1.TEST_PER_CLIENT),
                 ("round_and_oracle", "validation"))  # fmt: skip
    r1 = Study(
        name="r1_rescore",
        what="R1's regrets with their test terms on 2,000 test images per client.",
        federations=("every federation of R1's family with held-out images",),
        seeds=tuple(range(30)),  # each federation's committed seeds of these: 10, 20 or 30
        arms="the committed runs of the paper's rule's split and the validation oracle's",
        rates=ONE_RATE,
        profile=R1.PROFILE,
        scoring=test_only,
        claim="R1",
        declared="2026-12-03",
        commit="4f240c7",
        why="A seed's regret moves by about δ from the draw of 80 test images alone "
        "(pre-registration §15).",
        store="ladder/r1_rescore.parquet",
        computes="playerfl_core.study.r1_rescore",
        work="r1_rescore",
    )
    r2 = replace(
        r1, name="r2_rescore",
        what="R2's regrets with their test terms on 2,000 test images per client.",
        federations=("every federation of R2's tested sets with held-out images",),
        arms="the committed runs of every entry's split and the oracle's that R1's rescore lacks",
        claim=R2_FAMILIES, declared="2026-12-03", commit="0ad807f",
        why="R2's families still read 80 test images per client (pre-registration §16).",
        store="ladder/r2_rescore.parquet", computes="playerfl_core.study.r2_rescore",
        work="r2_rescore",
    )  # fmt: skip
    val = replace(
        r1, name="val_rescore",
        what="R1's and R2's regrets with 2,000 validation and 2,000 test images per client.",
        federations=("every federation of R1's family and R2's tested sets with held-out images",),
        arms=f"{EVERY_SPLIT}, the committed runs trained again (the evaluation rung's seeds read "
        "from its store)",
        scoring=(("val_per_client", R1.TEST_PER_CLIENT), ("test_per_client", R1.TEST_PER_CLIENT),
                 ("round_and_oracle", "large validation")),
        claim=f"R1 and {R2_FAMILIES}", declared="2026-12-03", commit="07c1796",
        why="The book's 64 validation images choose the oracle's split and each client's round; "
        "their noise is about δ (pre-registration §17).",
        store="ladder/val_rescore.parquet", computes="playerfl_core.study.val_rescore",
        work="val_rescore", work_in_stores=True,
    )  # fmt: skip
    return [r1, r2, val]


def _paper_scale() -> Study:
    from playerfl_core.study import paper_scale as P

    return P.PAPER_SCALE


def _authors_mode() -> Study:
    from playerfl_core.study import authors_mode as A

    return A.DECLARED


BUILDERS: tuple[Callable[[], Study | list[Study]], ...] = (
    _split_rule_tests, _fair_sweeps, _eval_rung, _middle_rung, _scale_ladder, _rescores,
    _paper_scale, _authors_mode,
)  # fmt: skip


def studies() -> dict[str, Study]:
    """Every registered study by name, as its modules declare it now."""
    out: dict[str, Study] = {}
    for build in BUILDERS:
        made = build()
        for study in made if isinstance(made, list) else [made]:
            out[study.name] = study
    return out


def study(name: str) -> Study:
    """The registered study ``name``; raises naming the valid ones."""
    known = studies()
    if name not in known:
        raise ValueError(f"Unknown study {name!r}; choose one of: {', '.join(known)}.")
    return known[name]


def tiny(name: str) -> Study:
    """The CPU stand-in of study ``name`` (seconds, not its numbers); raises when it has none."""
    from playerfl_core.study import paper_scale as P

    stand_ins = {"paper_scale": P.TINY, "middle_rung": _tiny_rung(study("middle_rung"))}
    if name not in stand_ins:
        study(name)  # an unknown name says so first
        raise ValueError(
            f"--tiny: study {name!r} has no tiny stand-in; those with one: {', '.join(stand_ins)}."
        )
    return stand_ins[name]


def _tiny_rung(rung: Study) -> Study:
    """One federation and seed at 60 images per client and one round, kept in its own work
    folder."""
    return replace(
        rung, name=f"{rung.name}_tiny", federations=rung.federations[:1], seeds=(0,),
        loader=(("samples_per_client", 60),), training=(("width", 0.5), ("rounds", 1)),
        why="A CPU stand-in: the runner's resuming, not the study's numbers.",
        work=f"{rung.work}_tiny",
    )  # fmt: skip
