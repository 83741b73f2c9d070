"""The declaration of a federation: everything the library knows about one dataset, in one place.

A dataset module (``data_prep/heart.py``, or a user's own file, see ``registry``) ends with one
``FEDERATION = Federation(...)``. Only ``name`` and ``load`` are required: every other field has a
default that works for a small new federation, so the smallest dataset is a loader plus a model
name. Library code never names a dataset; it asks the declaration.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from .base import DataError

SIZES = ("quick", "paper")
"""Data and training sizes. ``standard`` runs the quick sizes with more seeds and rates."""
GRID_PROFILES = ("quick", "standard", "paper")
TRAINING_KEYS = {"rounds", "batch_size", "lr", "width", "local_epochs", "weight_decay"}
GRID_KEYS = {"lrs", "seeds", "tune_seeds", "widen"}
ANALYTICS_KEYS = {"seeds", "rounds", "settings"}
AUTHORS_TRAINING_KEYS = {"loss", "augment"}
NAME = re.compile(r"^[a-z][a-z0-9]*$")
"""Lower-case letters and digits: ``_`` separates a base name from its variant suffixes."""

DEFAULT_HYPERNETWORK = (32, 64)
"""pFedLA's (embedding, hidden) sizes where the paper gives none (appendix §1.2)."""
DEFAULT_TRAINING = {"rounds": 10, "batch_size": 32, "lr": 1e-3}
DEFAULT_GRIDS = {
    "quick": {"tune_seeds": (0,), "seeds": (0, 1)},
    "standard": {"tune_seeds": (100, 101), "seeds": tuple(range(10)), "widen": 2},
    "paper": {"tune_seeds": (1000, 1001, 1002), "seeds": tuple(range(10))},
}
"""Seeds of the comparison grids when a declaration gives none: tuning seeds kept apart from
the evaluation seeds; ``standard`` may widen a learning-rate grid by two values at an edge."""


@dataclass(frozen=True)
class Federation:
    """One federation's loader and settings.

    ``load(root, seed, **sizes)`` returns a :class:`~data_prep.base.FederatedData`; ``sizes``
    maps ``quick``/``paper`` to the loader's keyword arguments. ``training`` maps the same sizes
    to the engine's ``RunConfig`` fields (``paper`` defaults to ``quick``).
    ``lr_grid`` maps profiles to the rates tried when tuning (default: the training rate ×3,
    ×1, ×⅓); ``grids`` overrides the comparison grids' seeds and rates per profile;
    ``analytics`` the seeds, rounds and measurement sizes of the layer studies per size.
    """

    name: str
    load: Callable
    model: str = "mlp"
    """An architecture of the model zoo (``models.MODELS``), or one the dataset's own file
    registers with ``register_model``."""
    label: str = ""
    """Display name in figures and prose (default: ``name``)."""
    color: str = ""
    """Its colour in the book's figures (a hex string; default: a stable colour of the book's
    qualitative palette). Keep clear of the algorithms' colours (``book.style``)."""
    client_labels: Mapping[str, str] = field(default_factory=dict)
    """Display names of its clients where the code name does not read well (``va`` → "Long Beach
    VA"); other clients read as their names, with spaces for underscores."""
    paper_name: str = ""
    """Its column in the paper's published tables (the library's ``published`` module), if any."""
    sizes: Mapping[str, Mapping] = field(default_factory=lambda: {"quick": {}, "paper": {}})
    training: Mapping[str, Mapping] = field(default_factory=lambda: {"quick": DEFAULT_TRAINING})
    lr_grid: Mapping[str, tuple] = field(default_factory=dict)
    grids: Mapping[str, Mapping] = field(default_factory=dict)
    analytics: Mapping[str, Mapping] = field(default_factory=dict)
    reference_splits: Mapping[str, int] = field(default_factory=dict)
    """Published numbers of federated units p, by source (e.g. ``paper_transition``)."""
    hypernetwork: tuple[int, int] = DEFAULT_HYPERNETWORK
    """pFedLA's (embedding, hidden) sizes (appendix §1.2)."""
    authors_training: Mapping[str, object] = field(default_factory=dict)
    """What the authors trained it with beyond the book's defaults (``loss``, ``augment``):
    ``RunConfig(protocol="authors")`` applies it (``profiles.make_config``)."""
    seconds_per_run: float = 5.0
    """A first guess at one quick run's CPU time, for a grid's time estimate before it has any."""
    run_by_default: bool = False
    """In the grid a command runs when no dataset is named (the book's comparison federations)."""
    skew_variants: bool = False
    """Images on a pixel scale that ``data_prep.skew`` may re-partition and transform."""
    prepare: Callable[[Path], str] | None = None
    """``prepare(root) -> one-line status``: fetch and verify the raw files (None: nothing to
    fetch)."""
    held_out: Callable | None = None
    """``held_out(root, seed, **sizes) -> (x, y)``: images of the same source that no client of
    that federation holds, from which ``load(..., eval_per_client=n)`` draws larger evaluation
    sets (``data_prep.eval_sets``; None: the federation has no such images)."""
    source: str = ""
    """The file that declared it (set by ``registry.register``)."""

    def __post_init__(self) -> None:
        where = f" (declared in {self.source})" if self.source else ""
        if not isinstance(self.name, str) or not NAME.match(self.name):
            raise DataError(
                f"dataset name {self.name!r}{where} must be lower-case letters and digits, "
                "starting with a letter (e.g. 'wine' or 'cancer4'); '_' is reserved for "
                "heterogeneity variants."
            )
        if not callable(self.load):
            raise DataError(
                f"{self.name}{where}: load must be a function load(root, seed, **sizes) -> "
                f"FederatedData, got {self.load!r}."
            )
        if not isinstance(self.model, str) or not self.model:
            raise DataError(f"{self.name}{where}: model must name an architecture, e.g. 'mlp'.")
        _check_keys(self, "sizes", self.sizes, SIZES, None)
        _check_keys(self, "training", self.training, SIZES, TRAINING_KEYS)
        _check_keys(self, "grids", self.grids, GRID_PROFILES, GRID_KEYS)
        _check_keys(self, "analytics", self.analytics, SIZES, ANALYTICS_KEYS)
        unknown = sorted(set(self.authors_training) - AUTHORS_TRAINING_KEYS)
        if unknown:
            raise DataError(
                f"{self.name}{where}: authors_training has unknown entries {unknown}; valid: "
                f"{', '.join(sorted(AUTHORS_TRAINING_KEYS))}."
            )
        for profile, lrs in self.lr_grid.items():
            _check_keys(self, "lr_grid", {profile: {}}, GRID_PROFILES, None)
            if not lrs or not all(isinstance(r, int | float) and 0 < r < math.inf for r in lrs):
                raise DataError(
                    f"{self.name}{where}: lr_grid[{profile!r}] must be a non-empty list of "
                    f"positive learning rates, got {lrs!r}."
                )
        if "quick" not in self.training:
            raise DataError(f"{self.name}{where}: training needs a 'quick' entry.")
        for p, n in self.reference_splits.items():
            if not isinstance(n, int) or n < 0:
                raise DataError(
                    f"{self.name}{where}: reference_splits[{p!r}] must be a number of units ≥ 0."
                )

    @property
    def display_name(self) -> str:
        return self.label or self.name

    def loader_sizes(self, size: str) -> dict:
        """The loader's keyword arguments at ``size`` (``paper`` falls back to ``quick``)."""
        return dict(self.sizes.get(size, self.sizes.get("quick", {})))

    def training_settings(self, size: str) -> dict:
        """RunConfig fields at ``size`` (``paper`` falls back to ``quick``)."""
        return dict(self.training.get(size, self.training["quick"]))

    def learning_rates(self, profile: str) -> tuple[float, ...]:
        """Rates tried when tuning under ``profile``; ``standard`` falls back to ``quick``."""
        for key in (profile, "quick") if profile == "standard" else (profile,):
            if key in self.lr_grid:
                return tuple(float(r) for r in self.lr_grid[key])
        lr = self.training_settings("paper" if profile == "paper" else "quick")["lr"]
        return (3 * lr, lr, lr / 3)

    def grid(self, profile: str) -> dict:
        """The comparison grid under ``profile``: ``lrs``, ``tune_seeds``, ``seeds`` (and
        ``widen`` for ``standard``), declared values over :data:`DEFAULT_GRIDS`."""
        return {
            "lrs": self.learning_rates(profile),
            **DEFAULT_GRIDS[profile],
            **self.grids.get(profile, {}),
        }


def _check_keys(fed: Federation, what: str, table: Mapping, outer, inner) -> None:
    where = f" (declared in {fed.source})" if fed.source else ""
    if not isinstance(table, Mapping):
        raise DataError(f"{fed.name}{where}: {what} must be a dict keyed by {outer}.")
    for key, value in table.items():
        if key not in outer:
            raise DataError(
                f"{fed.name}{where}: {what} has the key {key!r}; valid keys: {', '.join(outer)}."
            )
        if inner is not None:
            unknown = sorted(set(value) - inner)
            if unknown:
                raise DataError(
                    f"{fed.name}{where}: {what}[{key!r}] has unknown entries {unknown}; valid: "
                    f"{', '.join(sorted(inner))}."
                )
