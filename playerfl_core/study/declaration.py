"""A study, declared as data (:class:`Study`): which runs, how they are scored, which claim
they feed, when and why it was declared, where its evidence is committed and what computes it."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from data_prep import load
from playerfl_core.fl.profiles import make_config
from playerfl_core.study.archive import pending_dir, stores_dir
from playerfl_core.study.run_store import default_store
from playerfl_core.study.split_sweeps import model_units

Pairs = tuple[tuple[str, object], ...]
EVERY_SPLIT = "every split p = 0 … L of the prefix federation (prefix_p<p>)"
ONE_RATE = "one rate per federation: PLayer-FL's tuned rate (preregistered.LEARNING_RATES)"
R2_FAMILIES = "R2 (pre-registered split-rule test)"


@dataclass(frozen=True)
class Study:
    """What a study is: which runs (``federations``, ``seeds``, ``arms``), their data and training
    (``profile``, ``loader``, ``training``), rates, ``scoring``, the ``claim`` it feeds, when and
    why it was declared, its ``store``, the module that ``computes`` it and its ``work`` folder."""

    name: str
    what: str
    federations: tuple[str, ...]
    seeds: tuple[int, ...]
    arms: str
    rates: str
    profile: str
    scoring: Pairs
    claim: str
    declared: str
    commit: str
    why: str
    store: str
    computes: str
    learning_rates: tuple[float, ...] = ()
    splits: tuple[int, ...] | None = None
    loader: Pairs = ()
    training: Pairs = ()
    training_profile: str | None = None
    work: str | None = None
    work_in_stores: bool = False

    def key(self) -> str:
        """12 hex digits naming what decides the study's runs (not its name, prose or store):
        the same fields, in the same order, as the chunked GPU driver's records carry."""
        names = "federations seeds learning_rates splits profile loader training declared commit"
        decisive = {name: getattr(self, name) for name in names.split()}
        return hashlib.sha256(json.dumps(decisive, default=str).encode()).hexdigest()[:12]

    def store_path(self) -> Path:
        """``stores/<store>`` (``PLAYERFL_STORES`` replaces ``stores``)."""
        return stores_dir() / self.store

    def work_dir(self) -> Path:
        """Where finished runs wait until the study is complete."""
        if self.work is None:
            raise ValueError(f"{self.name}: its runs are kept by its own store, not a work folder.")
        return pending_dir(self.work) if self.work_in_stores else default_store(self.work)

    def config(self, dataset: str, device: str | None = "cpu", **settings):
        """The :class:`~playerfl_core.fl.config.RunConfig` of one run: the training profile's
        settings with the study's ``training`` in their place (and ``settings``, e.g. seed)."""
        return make_config(
            dataset,
            self.training_profile or self.profile,
            device=device,
            progress=False,
            **settings,
            **dict(self.training),
        )


@lru_cache(maxsize=4)
def federation(study: Study, dataset: str, seed: int):
    """The study's federation of one seed (its partition depends on the seed)."""
    return load(dataset, study.profile, seed=seed, **dict(study.loader))


def n_splits(study: Study, dataset: str) -> int:
    """How many splits a sweep of ``dataset`` has (L + 1 for a model of L units)."""
    width = study.config(dataset, seed=study.seeds[0]).width
    return len(model_units(federation(study, dataset, study.seeds[0]), width)) + 1


REQUIRED = ("name", "what", "federations", "seeds", "arms", "rates", "profile", "scoring",
            "claim", "declared", "commit", "why", "store", "computes")  # fmt: skip
"""The fields every registered study fills in (``unknown`` is an answer for a date or commit)."""
