"""Shared fixtures: small real federations (UCI heart disease, scikit-learn digits)."""

import pytest

from data_prep import load


@pytest.fixture(scope="session")
def heart():
    return load("heart", profile="quick", seed=0)


@pytest.fixture(scope="session")
def digits():
    return load("digits", profile="quick", seed=0)
