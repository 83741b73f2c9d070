"""The bibliography's labels in the form the text cites them: "[Xiao et al., 2017]", not the
alpha style's "[XRV17]", so that a reader who follows a citation finds the same words at the
entry it points to (``bibtex_reference_style: author_year`` sets the citations' form)."""

from collections import Counter

from pybtex.plugin import register_plugin
from pybtex.style.formatting.plain import Style as PlainStyle
from pybtex.style.labels import BaseLabelStyle
from pybtex.style.sorting import BaseSortingStyle


def _names(entry) -> str:
    people = entry.persons.get("author") or entry.persons.get("editor") or []
    last = [" ".join(p.prelast_names + p.last_names) for p in people]
    if not last:
        return entry.fields.get("title", entry.key)
    if len(last) == 1:
        return last[0]
    if len(last) == 2:
        return f"{last[0]} and {last[1]}"
    return f"{last[0]} et al."


class AuthorYearLabels(BaseLabelStyle):
    """Surname, Surname and Surname, or Surname et al., then the year; two entries with the same
    label get a, b, … after the year."""

    def format_labels(self, sorted_entries):
        labels = [f"{_names(e)}, {e.fields.get('year', 'n.d.')}" for e in sorted_entries]
        repeats, seen = Counter(labels), Counter()
        for label in labels:
            seen[label] += 1
            suffix = "abcdefghijklmnopqrstuvwxyz"[seen[label] - 1] if repeats[label] > 1 else ""
            yield label + suffix


class AuthorYearOrder(BaseSortingStyle):
    """Entries in the order of their labels: the first author's surname, then the label's
    names ("Li et al."), the year and the title. The plain style sorts by every author's full
    name, which put "Li et al., 2021" before "Li et al., 2020" (issue 35)."""

    def sorting_key(self, entry):
        people = entry.persons.get("author") or entry.persons.get("editor") or []
        first = " ".join(people[0].prelast_names + people[0].last_names) if people else ""
        year = entry.fields.get("year", "")
        return (first.lower(), _names(entry).lower(), year, entry.fields.get("title", "").lower())


class AuthorYearStyle(PlainStyle):
    """The plain style with author-year labels, sorted as the labels read."""

    default_label_style = "author_year_labels"
    default_sorting_style = "author_year_order"


def setup(app):
    register_plugin("pybtex.style.labels", "author_year_labels", AuthorYearLabels)
    register_plugin("pybtex.style.sorting", "author_year_order", AuthorYearOrder)
    register_plugin("pybtex.style.formatting", "author_year_plain", AuthorYearStyle)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
