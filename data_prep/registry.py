"""Name -> federation declaration, and the one entry point ``load``.

The built-in federations are the ``FEDERATION`` declarations of this package's dataset modules.
A user adds one without editing the package, three ways:

- a Python file that declares ``FEDERATION = Federation(...)`` (or a list ``FEDERATIONS``), loaded
  with :func:`load_dataset_module` -- what chapters' ``-p dataset_module path.py`` and the CLI's
  ``--dataset-module path.py`` do;
- the environment variable ``PLAYERFL_DATASET_MODULES`` (such files, separated by ``:``), which
  spawned worker processes inherit, so a grid's workers see the same federations;
- an installed package's entry point in the group ``playerfl.datasets`` that names a
  :class:`~data_prep.federation.Federation` (or a module declaring one).
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import importlib.util
import inspect
import numbers
import os
import sys
import traceback
from dataclasses import replace
from pathlib import Path

from . import (
    base,
    cifar10,
    digits,
    emnist,
    eval_sets,
    fmnist,
    heart,
    isic2019,
    mimic3,
    sent140,
    skew,
)
from .base import DataError, FederatedData
from .federation import Federation
from .partition import check_protocol

BUILT_IN = (fmnist, heart, digits, emnist, cifar10, isic2019, sent140, mimic3)
PROFILES = ("quick", "standard", "paper")
SIZE_OF = {"quick": "quick", "standard": "quick", "paper": "paper"}
"""Data size of each profile: ``standard`` runs more seeds at the quick sizes."""
MODULES_ENV = "PLAYERFL_DATASET_MODULES"
ENTRY_POINT_GROUP = "playerfl.datasets"

_FEDERATIONS: dict[str, Federation] = {}
_loaded_files: set[Path] = set()
_discovered = False


def register(federation: Federation, replace: bool = False) -> Federation:
    """Add ``federation`` under its name; a name taken by another declaration is refused."""
    if not isinstance(federation, Federation):
        raise DataError(
            f"register() takes a data_prep.federation.Federation, got {type(federation).__name__}"
        )
    old = _FEDERATIONS.get(federation.name)
    if old is not None and not replace and old.source != federation.source:
        first = old.source or "the library"
        raise DataError(
            f"dataset name {federation.name!r} is already registered (by {first}); "
            f"{federation.source or 'the new declaration'} must use another name."
        )
    _FEDERATIONS[federation.name] = federation
    return federation


def load_dataset_module(path: Path | str) -> list[str]:
    """Import a user's dataset file and register what it declares; returns the names.

    Idempotent for one file. The file is also added to ``PLAYERFL_DATASET_MODULES`` so worker
    processes spawned later (a grid's) register it too.
    """
    path = Path(path).expanduser().resolve()
    if not path.is_file():
        raise DataError(
            f"dataset module {str(path)!r} does not exist; give the path of a Python file that "
            "declares FEDERATION = Federation(name=..., load=...)."
        )
    if path.suffix != ".py":
        raise DataError(
            f"dataset module {str(path)!r} is not a Python file (.py): give the file that "
            "declares FEDERATION = Federation(name=..., load=...), not a data or results file."
        )
    _discover()  # the built-in names first, so a clash names the library, not the user's file
    if path in _loaded_files:
        return [n for n, f in _FEDERATIONS.items() if f.source == str(path)]
    digest = hashlib.sha256(str(path).encode()).hexdigest()[:12]
    spec = importlib.util.spec_from_file_location(f"playerfl_dataset_{digest}", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    try:
        spec.loader.exec_module(module)
    except SystemExit as err:
        del sys.modules[spec.name]
        raise DataError(
            f"dataset module {path} called sys.exit({err.code!r}) while being imported; a "
            "dataset file must only declare FEDERATION (move script code under "
            "`if __name__ == '__main__':`)."
        ) from None
    except Exception as err:
        del sys.modules[spec.name]
        where = traceback.extract_tb(err.__traceback__)[-1]
        raise DataError(
            f"dataset module {path} failed to import: {type(err).__name__}: {err} (line "
            f"{where.lineno} of {where.filename}). Fix the file; it must import cleanly."
        ) from err
    declared = getattr(module, "FEDERATIONS", None) or (
        [module.FEDERATION] if hasattr(module, "FEDERATION") else []
    )
    if not declared:
        raise DataError(
            f"dataset module {path} declares no federation: end it with "
            "FEDERATION = Federation(name=..., load=...) (see chapter 'Bring your own "
            "federation')."
        )
    names = []
    for fed in declared:
        if not isinstance(fed, Federation):
            raise DataError(
                f"dataset module {path}: FEDERATION must be a data_prep.federation.Federation, "
                f"got {type(fed).__name__}."
            )
        names.append(register(_with_source(fed, path)).name)
    _loaded_files.add(path)
    listed = [p for p in os.environ.get(MODULES_ENV, "").split(os.pathsep) if p]
    if str(path) not in listed:
        os.environ[MODULES_ENV] = os.pathsep.join([*listed, str(path)])
    return names


def federation(name: str) -> Federation:
    """The declaration of ``name``, or of the base of a heterogeneity variant
    (``digits_rotate`` trains like ``digits``)."""
    _discover()
    variant = skew.parse_variant(name, skew_bases())
    key = variant.base if variant is not None else name
    if key not in _FEDERATIONS:
        raise DataError(
            f"unknown dataset {name!r}; available: {', '.join(available_datasets())}, and the "
            f"heterogeneity variants <base>_alpha<a>, <base>_<kind>, <base>_<kind>_alpha<a> "
            f"for base in {skew_bases()}, kind in {tuple(skew.KINDS)}, <base>_"
            f"{skew.QUANTITY} (quantity skew) and <base>_{skew.SWAP} (concept shift). To add "
            "one, write a "
            "file that declares FEDERATION = Federation(name=..., load=...) and pass it as "
            "-p dataset_module FILE (chapters) or --dataset-module FILE (CLI)."
        )
    return _FEDERATIONS[key]


def is_registered(name: str) -> bool:
    """Whether ``name`` is a registered federation (not a variant)."""
    _discover()
    return name in _FEDERATIONS


def is_declared(name: str) -> bool:
    """Whether ``name`` is a registered federation or a variant of one."""
    _discover()
    return name in _FEDERATIONS or parse_variant(name) is not None


def available_datasets() -> list[str]:
    _discover()
    return sorted(_FEDERATIONS)


def default_datasets() -> list[str]:
    """The federations run when none is named (declared ``run_by_default``), in name order."""
    return [f.name for f in declarations() if f.run_by_default]


def declarations() -> list[Federation]:
    _discover()
    return [_FEDERATIONS[n] for n in sorted(_FEDERATIONS)]


def skew_bases() -> tuple[str, ...]:
    """Registered federations whose heterogeneity variants ``data_prep.skew`` can build."""
    return tuple(sorted(n for n, f in _FEDERATIONS.items() if f.skew_variants))


def base_dataset(name: str) -> str:
    """The registered dataset a name builds on: itself, or a heterogeneity variant's base
    (``data_prep.skew``: ``fmnist_alpha0.1``, ``digits_rotate``, ``digits_invert_alpha0.1``).
    Training settings and learning-rate grids are the base's."""
    return federation(name).name


def parse_variant(name: str) -> skew.Variant | None:
    """The heterogeneity variant ``name`` denotes, over the registered bases (None: not one)."""
    _discover()
    return skew.parse_variant(name, skew_bases())


def load(
    name: str,
    profile: str = "quick",
    seed: int = 0,
    data_root: Path | str | None = None,
    protocol: str = "book",
    **overrides,
) -> FederatedData:
    """Build the federation `name` at size `profile`; same arguments give identical tensors.

    `overrides` (e.g. `n_clients`, `samples_per_client`, `alpha`) replace the profile's
    values; the accepted keys are the keyword arguments of the declaration's `load`, and
    `eval_per_client` for a declaration with `held_out` images (``data_prep.eval_sets``).
    ``protocol="authors"``: the authors' data pipeline, where the declaration's loader has one.
    """
    eval_per_client = overrides.pop("eval_per_client", None)
    fed = federation(name)
    variant = parse_variant(name)
    check_protocol(protocol)
    if protocol != "book":
        if variant is not None or "protocol" not in inspect.signature(fed.load).parameters:
            having = [f.name for f in declarations() if "protocol" in _parameters(f.load)]
            raise DataError(
                f"{name} has no {protocol}' data pipeline (federations with one: "
                f"{', '.join(having)}); use protocol='book'."
            )
        overrides["protocol"] = protocol
    if profile not in PROFILES:
        raise DataError(f"unknown profile {profile!r}; available: {', '.join(PROFILES)}")
    if isinstance(seed, bool) or not isinstance(seed, numbers.Integral) or seed < 0:
        raise DataError(f"seed must be an integer ≥ 0, got {seed!r}")
    accepted = [p for p in inspect.signature(fed.load).parameters if p not in ("root", "seed")]
    unknown = sorted(set(overrides) - set(accepted))
    if unknown:
        raise DataError(f"{name} does not take {unknown}; it accepts {accepted or 'no overrides'}")
    if variant is not None and variant.alpha is not None and "alpha" in overrides:
        raise DataError(
            f"{name} fixes alpha={variant.alpha:g} in its name; drop the alpha override"
        )
    params = {**fed.loader_sizes(SIZE_OF[profile]), **overrides}
    root = Path(data_root).expanduser().resolve() if data_root is not None else base.data_root()
    with_eval = _eval_sets(fed, name, eval_per_client, root, int(seed), params)
    if variant is not None:
        fd = skew.build(variant, fed.load, root, int(seed), params, with_eval)
    else:
        fd = _checked_load(fed, root, int(seed), params)
        if with_eval is not None:
            fd.clients = with_eval(fd.clients)
    if with_eval is not None:
        fd.params = {**fd.params, "eval_per_client": eval_per_client}
        fd.notes += (
            f" Evaluation sets: {eval_per_client} validation and {eval_per_client} test images "
            "per client, drawn with the client's label mix from images no client trains on "
            "(data_prep.eval_sets)."
        )
    fd.model = fd.model or fed.model
    fd.params = {"profile": profile, "seed": int(seed), **fd.params}
    return fd


def _parameters(fn) -> list[str]:
    return list(inspect.signature(fn).parameters)


def _eval_sets(fed: Federation, name: str, n, root: Path, seed: int, params: dict):
    """``clients -> clients`` with larger evaluation sets (None when ``n`` is None)."""
    if n is None:
        return None
    n = eval_sets.check_size(n, name)
    if fed.held_out is None:
        having = [f.name for f in declarations() if f.held_out is not None]
        raise DataError(
            f"{name}: its declaration has no held-out images, so eval_per_client cannot apply; "
            f"federations with them: {', '.join(having) or 'none'}"
        )
    pool = fed.held_out(root, seed, **params)
    return lambda clients: eval_sets.with_eval_sets(clients, pool, n, seed, name)


def _checked_load(fed: Federation, root: Path, seed: int, params: dict) -> FederatedData:
    """Call a loader; what is not a valid FederatedData is refused naming the declaring file."""
    try:
        fd = fed.load(root, seed, **params)
    except Exception as err:
        if not fed.source:
            raise
        raise DataError(  # a user's loader: say where to look
            f"{fed.name}: load() in {fed.source} failed: {type(err).__name__}: {err}"
        ) from err
    if not isinstance(fd, FederatedData):
        raise DataError(
            f"{fed.name}: load() in {fed.source or 'its module'} returned "
            f"{type(fd).__name__}; it must return data_prep.FederatedData (float32 inputs, "
            "int64 labels per client, see data_prep/base.py)."
        )
    return fd


def _with_source(fed: Federation, path: Path) -> Federation:
    return replace(fed, source=str(path))


def _discover() -> None:
    """Register the built-in declarations, then the environment's files and entry points."""
    global _discovered
    if _discovered:
        return
    _discovered = True
    for module in BUILT_IN:
        register(module.FEDERATION)
    for path in [p for p in os.environ.get(MODULES_ENV, "").split(os.pathsep) if p]:
        try:
            load_dataset_module(path)
        except DataError as err:
            raise DataError(
                f"the environment variable {MODULES_ENV} names {path!r}, which cannot be loaded: "
                f"{err} Fix or unset {MODULES_ENV}."
            ) from None
    for entry in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP):
        try:
            obj = entry.load()
        except Exception as err:
            raise DataError(
                f"the entry point {entry.name} = {entry.value} (group {ENTRY_POINT_GROUP}) "
                f"failed to import: {type(err).__name__}: {err}"
            ) from err
        fed = getattr(obj, "FEDERATION", obj)
        register(_with_source(fed, Path(entry.value)) if isinstance(fed, Federation) else fed)
