"""Glued prose reads as English: counts in words, display names for datasets."""

import pytest

from playerfl_core.book import prose


def test_first_units_reads_as_english():
    assert prose.first_units(0) == "no unit"
    assert prose.first_units(1) == "the first unit"
    assert prose.first_units(3) == "the first three units"
    assert prose.first_units(12) == "the first 12 units"


def test_counted_and_number_words():
    assert prose.counted(1, "seed") == "one seed"
    assert prose.counted(10, "seed") == "ten seeds"
    assert prose.counted(2, "child", "children") == "two children"
    with pytest.raises(ValueError, match="n=-1"):
        prose.number_word(-1)


def test_dataset_names_are_display_names():
    assert prose.dataset_name("fmnist") == "Fashion-MNIST"
    assert prose.dataset_name("unregistered") == "unregistered"
