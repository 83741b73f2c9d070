"""The before/after reports of chapters 04, 04b and the pre-registration appendix show, on the
committed stores, exactly what the code before their rewrite showed (``evidence_snapshot.json``,
written by ``tests/evidence_snapshot.py`` from that code): every table, verdict, number and
sentence."""

import json

import evidence_snapshot as E
import pytest


@pytest.fixture(scope="module")
def now() -> dict:
    """The chapters' outputs now, from the committed stores (the tests' default store is an
    empty folder)."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("PLAYERFL_STORES", str(E.ROOT / "stores"))
        return E.normalised(E.snapshot())


def test_every_output_is_as_before(now):
    before = json.loads(E.SNAPSHOT.read_text(encoding="utf-8"))
    assert sorted(now) == sorted(before), "the chapters' cells show other outputs than before"
    changed = [key for key in before if now[key] != before[key]]
    assert not changed, f"changed outputs: {changed}"
