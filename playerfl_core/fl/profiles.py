"""Profiles, and a dataset's training settings under one (read from its declaration).

``quick``: a 2-core CPU in minutes (CI, students). ``standard``: the quick sizes with enough seeds
and learning rates to decide a comparison (computed once and committed). ``paper``: the paper's
sizes (appendix §1.1), meant for a GPU. Every number per dataset lives in its declaration
(``data_prep.federation.Federation``), next to its loader.
"""

from __future__ import annotations

from data_prep.base import DataError
from data_prep.registry import federation
from playerfl_core.fl.engine import RunConfig, default_device

PROFILE_NAMES = ("quick", "standard", "paper")
SIZE_OF = {"quick": "quick", "standard": "quick", "paper": "paper"}
"""The sizes (rounds, width, data) each profile trains at: ``standard`` differs from ``quick``
only in how many seeds and learning rates its grid runs, not in what one run is."""


def training_settings(dataset: str, profile: str) -> dict:
    """What one run of ``dataset`` trains with under ``profile`` (rounds, batch size, lr, ...)."""
    return federation(dataset).training_settings(SIZE_OF[profile])


def make_config(dataset: str, profile: str = "quick", **overrides) -> RunConfig:
    """The :class:`RunConfig` of ``dataset`` under ``profile``, with explicit overrides.

    ``device`` defaults to CUDA when present, else CPU. Unknown dataset or profile names raise
    a ValueError that lists the valid ones.
    """
    for what, value in (("dataset", dataset), ("profile", profile)):
        if not isinstance(value, str):
            raise TypeError(
                f"make_config takes the {what} by name (a str, e.g. make_config(<dataset>, "
                f"'quick')), got {type(value).__name__} {value!r}."
            )
    if profile not in PROFILE_NAMES:
        raise ValueError(f"Unknown profile {profile!r}; use one of {PROFILE_NAMES}.")
    try:
        declared = training_settings(dataset, profile)
    except DataError as err:
        raise ValueError(str(err)) from None
    settings = {"device": default_device(), **declared, "dataset": dataset}
    settings.update({k: v for k, v in overrides.items() if v is not None})
    if settings.get("protocol") == "authors":
        settings.update(authors_settings(dataset, overrides))
    return RunConfig(**settings)


def authors_settings(dataset: str, overrides: dict) -> dict:
    """What ``protocol="authors"`` changes in a run's settings: scoring before aggregation and
    the declaration's ``authors_training`` (their loss, their augmentation). An override that
    asks for something else than the book's default and the authors' value is refused."""
    authors = {"eval_timing": "before_aggregation", **federation(dataset).authors_training}
    book = {"eval_timing": "after_aggregation", "loss": "cross_entropy", "augment": False}
    for key, value in overrides.items():
        if key in book and value is not None and value not in (book[key], authors.get(key)):
            raise ValueError(
                f"protocol='authors' sets {key} to {authors.get(key, book[key])!r} on {dataset}; "
                f"drop {key}={value!r} or use protocol='book'."
            )
    return authors
