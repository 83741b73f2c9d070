"""The bibliography's labels in the form the text cites them: "[Xiao et al., 2017]", not the
alpha style's "[XRV17]", so that a reader who follows a citation finds the same words at the
entry it points to (``bibtex_reference_style: author_year`` sets the citations' form)."""

from collections import Counter

from pybtex.plugin import register_plugin
from pybtex.style.formatting.plain import Style as PlainStyle
from pybtex.style.labels import BaseLabelStyle


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


class AuthorYearStyle(PlainStyle):
    """The plain style (entries sorted by author, year and title) with author-year labels."""

    default_label_style = "author_year_labels"


def setup(app):
    register_plugin("pybtex.style.labels", "author_year_labels", AuthorYearLabels)
    register_plugin("pybtex.style.formatting", "author_year_plain", AuthorYearStyle)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
