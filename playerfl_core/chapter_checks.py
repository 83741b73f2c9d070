"""Up-front checks of every chapter's papermill parameters.

A chapter's second cell calls :func:`check_parameters` right after its parameters (and the ones
papermill injects): a wrong value or a misspelt name stops the chapter there, with a message that
names the parameter, the bad value and what is valid, instead of a traceback minutes into a grid.
``dataset_module`` is loaded first, so a user's own federation is known to the other checks.
"""

from __future__ import annotations

import ast
import difflib
import inspect
import math
from collections.abc import Callable
from pathlib import Path

from data_prep.registry import federation, skew_bases
from data_prep.skew import KINDS, LABEL_KINDS
from playerfl_core import checks
from playerfl_core.checks import OptionError
from playerfl_core.fl.algorithms import ALGORITHMS, is_algorithm
from playerfl_core.fl.profiles import PROFILE_NAMES


def _opt(check: Callable) -> Callable:
    """``check`` that lets None through (None means "the default")."""
    return lambda value, name: None if value is None else check(value, name)


def _one_of(*valid) -> Callable:
    def check(value, name):
        if value not in valid:
            raise OptionError(f"{name}: {value!r} is not valid; use one of {', '.join(valid)}.")

    return check


def _number(minimum: float = 0.0, strict: bool = False) -> Callable:
    def check(value, name):
        ok = isinstance(value, int | float) and not isinstance(value, bool)
        ok = ok and math.isfinite(value) and (value > minimum if strict else value >= minimum)
        if not ok:
            bound = f"> {minimum:g}" if strict else f"≥ {minimum:g}"
            raise OptionError(f"{name}: {value!r} is outside the valid range (a number {bound}).")

    return check


def _integer(minimum: int) -> Callable:
    def check(value, name):
        if value is None:
            raise OptionError(f"{name}: None is not valid here; give an integer ≥ {minimum}.")
        checks.positive_int(value, name, minimum)

    return check


def _ints(minimum: int = 0) -> Callable:
    return lambda value, name: checks.int_list(value, name, minimum)


def _floats(value, name):
    checks.float_list(value, name)


def _datasets(value, name):
    checks.dataset_list(value, name)


def _one_dataset(value, name):
    if len(checks.dataset_list(value, name)) != 1:
        raise OptionError(f"{name}: give one dataset, got {value!r}.")


def _alpha_dataset(value, name):
    """One federation whose loader takes a Dirichlet ``alpha`` (chapter 00's label-mix figure)."""
    _one_dataset(value, name)
    names = checks.dataset_list(value, name)
    if "alpha" not in inspect.signature(federation(names[0]).load).parameters:
        raise OptionError(
            f"{name}: {names[0]!r} has no Dirichlet label split (its loader takes no alpha); "
            "use an image federation such as digits or fmnist."
        )


def _skew_bases(value, name):
    if value in ("", None):
        raise OptionError(
            f"{name}: give at least one base federation for the heterogeneity study; valid: "
            f"{', '.join(skew_bases())} (federations declared with skew_variants=True)."
        )
    checks.name_list(value, name, skew_bases(), "heterogeneity base")


def _kinds(value, name):
    if value not in ("", None):
        checks.name_list(value, name, (*KINDS, *LABEL_KINDS), "feature-skew, quantity or swap kind")


def _mixed(value, name):
    if value in ("", None):
        return
    for item in checks.name_list(value, name, lambda t: ":" in t, "kind:alpha pair"):
        kind, _, alpha = item.partition(":")
        checks.name_list(kind, name, tuple(KINDS), "feature-skew kind")
        checks.float_list(alpha, name)


def _algorithms(value, name):
    if value != "all":
        checks.name_list(
            value, name, is_algorithm, "algorithm", f"valid: all, {', '.join(ALGORITHMS)}"
        )


def _existing_table(value, name):
    if not Path(value).expanduser().exists():
        raise OptionError(
            f"{name}: {str(value)!r} does not exist; give a CSV/parquet table or store."
        )


def _store(value, name):
    checks.output_file(Path(value) / "probe", name)


COMMON = {
    "device": checks.device,  # None passes: the default device
    "dataset_module": lambda value, name: None,  # loaded (and so checked) first, see below
}
ANALYTICS_PROFILE = _one_of("quick", "paper")

SPECS: dict[str, dict[str, Callable]] = {
    "00_federated_learning_in_one_hour": {
        "profile": ANALYTICS_PROFILE,
        "dataset": _alpha_dataset,
        "alphas": _floats,
        "seed": _integer(0),
    },
    "01_playerfl_in_one_run": {
        "dataset": _datasets,
        "profile": ANALYTICS_PROFILE,
        "seed": _integer(0),
        "rounds": _opt(_integer(1)),
        "threshold": _opt(_number(0, strict=True)),
    },
    "02_layerwise_divergence": {
        "dataset": _datasets,
        "profile": ANALYTICS_PROFILE,
        "seeds": _opt(_ints()),
        "rounds": _opt(_integer(1)),
    },
    "03_federation_sensitivity": {
        "dataset": _datasets,
        "profile": ANALYTICS_PROFILE,
        "seeds": _opt(_ints()),
        "rounds": _opt(_integer(1)),
        "thresholds": _floats,
        "batch_counts": _ints(1),
        "batch_draws": _integer(1),
    },
    "03a_the_algorithm_and_its_metric": {
        "dataset": _datasets,
        "profile": ANALYTICS_PROFILE,
        "seeds": _ints(),
    },
    "04_does_the_rule_pick_the_right_split": {
        "dataset": _datasets,
        "profile": _one_of("standard", "quick"),
        "seeds": _ints(),
        "het_base": _skew_bases,
        "het_alphas": lambda v, n: None if v in ("", None) else _floats(v, n),
        "het_kinds": _kinds,
        "het_mixed": _mixed,
        "het_seeds": _ints(),
        "store": _opt(_existing_table),
        "tolerance": _number(0),
        "margin": _number(0),
        "workers": _integer(1),
    },
    "05_playerfl_vs_baselines": {
        "dataset": _datasets,
        "algorithms": _algorithms,
        "profile": _one_of(*PROFILE_NAMES),
        "seeds": _opt(_ints()),
        "workers": _opt(_integer(1)),
        "store": _opt(_store),
        "n_boot": _integer(100),
    },
    "06_reproduction_report": {
        "dataset": _datasets,
        "profile": _one_of("quick", "paper"),
        "seeds": _opt(_ints()),
        "workers": _opt(_integer(1)),
        "store": _opt(_store),
        "timing_algorithms": _algorithms,
        "option_algorithms": _algorithms,
        "claims_profile": _one_of(*PROFILE_NAMES),
        "claims_datasets": _datasets,
        "metric_datasets": lambda v, n: None if v in ("", None) else _datasets(v, n),
        "n_boot": _integer(100),
        "authors_store": _opt(_existing_table),
    },
    "07_from_notebook_to_silos": {
        "dataset": _one_dataset,
        "profile": _one_of("quick", "paper"),
        "seed": _integer(0),
        "rounds": _opt(_integer(1)),
        "algorithms": _algorithms,
        "process_rounds": _integer(0),
        "device": None,  # no such parameter: Flower's silos train on the CPU
    },
    "04b_beyond_the_paper": {
        "sweeps": _opt(_existing_table),
        "rules_file": _opt(_existing_table),
        "device": None,  # no such parameter: the chapter reads committed tables only
        "dataset_module": None,  # the pre-registered federations only (your own: the appendix)
    },
    "appendix_preregistration": {  # 04b's full record: the same tables, and the δ grid
        "sweeps": _opt(_existing_table),
        "rules_file": _opt(_existing_table),
        "tolerances": _floats,
        "device": None,
        "dataset_module": None,
    },
    "appendix_every_protocol": {
        "example": _one_dataset,
        "device": None,  # no such parameter: the page reads committed stores only
        "dataset_module": None,
    },
    "appendix_bring_your_own": {
        "dataset": _datasets,
        "profile": _one_of("quick", "paper"),
        "seeds": _ints(),
        "sweep_seeds": _ints(),
        "tolerance": _number(0, strict=True),
        "workers": _integer(1),
    },
}
"""Per chapter (notebook file stem): parameter -> check, besides :data:`COMMON` (a check of
None: the chapter has no such parameter)."""


def parameters_of(chapter: str) -> dict[str, Callable]:
    if chapter not in SPECS:
        raise OptionError(f"no parameter checks for chapter {chapter!r}; known: {sorted(SPECS)}.")
    merged = {**COMMON, **SPECS[chapter]}
    return {name: check for name, check in merged.items() if check is not None}


def check_parameters(chapter: str, namespace: dict) -> None:
    """Check a chapter's parameters in ``namespace`` (its ``globals()``); load
    ``dataset_module`` first. Raises :class:`OptionError` naming the first bad one."""
    spec = parameters_of(chapter)
    unknown = sorted(_assigned_parameters(namespace) - set(spec))
    if unknown:
        near = {u: difflib.get_close_matches(u, spec, n=1) for u in unknown}
        hints = "; ".join(
            f"{u!r}" + (f" (did you mean {m[0]!r}?)" if m else "") for u, m in near.items()
        )
        raise OptionError(
            f"chapter {chapter}: unknown parameter {hints}. Its parameters: {', '.join(spec)}."
        )
    checks.dataset_module(namespace.get("dataset_module"), "-p dataset_module")
    for name, check in spec.items():
        if name in namespace:
            check(namespace[name], f"-p {name}")


def _assigned_parameters(namespace: dict) -> set[str]:
    """Names assigned in the cells executed so far that start with ``# Parameters``: the
    chapter's parameters cell and the one papermill injects after it."""
    names: set[str] = set()
    for source in namespace.get("In", []) or []:
        if not str(source).lstrip().startswith("# Parameters"):
            continue
        try:
            tree = ast.parse(source)
        except SyntaxError:
            continue
        for node in tree.body:
            if isinstance(node, ast.Assign):
                names |= {t.id for t in node.targets if isinstance(t, ast.Name)}
    return names
