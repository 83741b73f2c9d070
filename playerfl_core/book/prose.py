"""Numbers and names as a reader expects them in a sentence ("the first three units", "on
Fashion-MNIST"), for text the chapters glue into their prose. Formatting only: nothing here
changes what a run computes."""

from playerfl_core.book.style import dataset_label

_WORDS = ("zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten")


def number_word(n: int) -> str:
    """0-10 in words, larger counts as digits (the usual style rule for running text)."""
    n = int(n)
    if n < 0:
        raise ValueError(f"number_word: n={n} must be a count (>= 0)")
    return _WORDS[n] if n < len(_WORDS) else str(n)


def counted(n: int, singular: str, plural: str | None = None) -> str:
    """'one unit', 'three units', '12 units'."""
    return f"{number_word(n)} {singular if int(n) == 1 else (plural or singular + 's')}"


def first_units(p: int) -> str:
    """The federated prefix of split p in words: 'no unit', 'the first unit', 'the first three
    units'."""
    p = int(p)
    if p == 0:
        return "no unit"
    if p == 1:
        return "the first unit"
    return f"the first {counted(p, 'unit')}"


def dataset_name(name: str) -> str:
    """The display name of a registered dataset (the figures' label), e.g. 'Fashion-MNIST'."""
    return dataset_label(name)
