"""Shared fixtures: small real federations (UCI heart disease, scikit-learn digits); no
committed archive in sight unless a test names one."""

import os

import pytest

from data_prep import load


@pytest.fixture(scope="session")
def heart():
    return load("heart", profile="quick", seed=0)


@pytest.fixture(scope="session")
def digits():
    return load("digits", profile="quick", seed=0)


@pytest.fixture(scope="session", autouse=True)
def no_committed_archives(tmp_path_factory):
    """A grid fills an empty store from its profile's committed archive (``stores/``); tests
    count what their own grids compute, so they see an empty ``PLAYERFL_STORES``. The committed
    archives are tested by path (tests/test_archive.py)."""
    before = os.environ.get("PLAYERFL_STORES")
    os.environ["PLAYERFL_STORES"] = str(tmp_path_factory.mktemp("no_committed_archives"))
    yield
    if before is None:
        os.environ.pop("PLAYERFL_STORES", None)
    else:
        os.environ["PLAYERFL_STORES"] = before
