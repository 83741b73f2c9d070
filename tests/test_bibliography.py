"""The bibliography's labels read as the text cites them (``_ext/author_year.py``)."""

import importlib.util
from pathlib import Path

from pybtex.database import Entry, Person

_SPEC = importlib.util.spec_from_file_location(
    "author_year", Path(__file__).parents[1] / "_ext" / "author_year.py"
)
author_year = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(author_year)


def _entry(year: str, *authors: str) -> Entry:
    return Entry("article", fields={"year": year, "title": "t"},
                 persons={"author": [Person(a) for a in authors]})  # fmt: skip


def test_labels_name_one_two_or_the_first_of_many_authors_then_the_year():
    entries = [
        _entry("1945", "Wilcoxon, Frank"),
        _entry("1993", "Efron, Bradley", "Tibshirani, Robert"),
        _entry("2017", "Xiao, Han", "Rasul, Kashif", "Vollgraf, Roland"),
        _entry("2022", "Ogier du Terrail, Jean", "Ayed, Samy", "Cyffers, Edwige"),
    ]
    labels = list(author_year.AuthorYearLabels().format_labels(entries))
    assert labels == ["Wilcoxon, 1945", "Efron and Tibshirani, 1993", "Xiao et al., 2017",
                      "Ogier du Terrail et al., 2022"]  # fmt: skip


def test_two_entries_with_one_label_get_letters_after_the_year():
    entries = [_entry("2020", "Li, Tian", "Sahu, Anit", "Zaheer, Manzil"),
               _entry("2020", "Li, Tian", "Hu, Shengyuan", "Beirami, Ahmad")]  # fmt: skip
    assert list(author_year.AuthorYearLabels().format_labels(entries)) == [
        "Li et al., 2020a",
        "Li et al., 2020b",
    ]


def test_entries_sort_as_their_labels_read():
    """Ditto's "Li et al., 2021" came before FedProx's "Li et al., 2020": the plain style sorts
    by every author's name, so Hu before Sahu (issue 35)."""
    ditto = _entry("2021", "Li, Tian", "Hu, Shengyuan", "Beirami, Ahmad")
    fedprox = _entry("2020", "Li, Tian", "Sahu, Anit", "Zaheer, Manzil")
    lin = _entry("2017", "Lin, Tsung-Yi", "Goyal, Priya")
    lee = _entry("2023", "Lee, Sunwoo", "Zhang, Tuo")
    li_alone = _entry("2024", "Li, Tian")
    author_year.setup(None)  # registers the style's plugins, as Sphinx does
    order = author_year.AuthorYearStyle().sort([lin, ditto, li_alone, fedprox, lee])
    assert order == [lee, li_alone, fedprox, ditto, lin]
