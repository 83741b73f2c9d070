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


def listed(items) -> str:
    """Items as a sentence lists them: "Heart", "Heart and Digits", "Heart, Digits and
    Fashion-MNIST" (the caller words the empty case: "none" reads as an unfilled template)."""
    items = [str(i) for i in items]
    if len(items) < 2:
        return "".join(items)
    return f"{', '.join(items[:-1])} and {items[-1]}"


def moved_text(after, before, what: str) -> str:
    """Which way a rescore moved ``len(after)`` mean regrets: "the mean regret is higher on 13
    and lower on 0 of the 13 federations" (with "unchanged on k" where some did not move), so
    that a reader sees the direction, not "lower on 0 of 13"."""
    higher, lower = int((after > before).sum()), int((after < before).sum())
    same = len(after) - higher - lower
    parts = [f"higher on {higher}", f"lower on {lower}"]
    parts += [f"unchanged on {same}"] if same else []
    return f"the mean regret is {listed(parts)} of the {len(after)} {what}"


def changes_verdicts(changed, n: int) -> str:
    """What a re-analysis does to ``n`` verdicts, naming the ``changed`` ones: "changes 2 of the
    13 verdicts (Heart and Digits)"; none in words ("changes none of the 13 verdicts", "changes
    neither of the two verdicts", "does not change the verdict"), not "0 of … (none)"."""
    changed = list(changed)
    if changed:
        return f"changes {len(changed)} of the {n} verdicts ({listed(changed)})"
    if n == 1:
        return "does not change the verdict"
    return "changes neither of the two verdicts" if n == 2 else f"changes none of the {n} verdicts"


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


def seed_span(regrets) -> str:
    """Which seeds a mean regret averages, for a reader comparing two values of one quantity:
    "seeds 0–29" (:func:`seeds_text`), or "30 seeds" where a seed has several rows."""
    if "seed" not in regrets or regrets["seed"].nunique() < len(regrets):
        return f"{len(regrets)} seeds"
    return seeds_text(regrets["seed"])


def seeds_text(seeds) -> str:
    """ "seeds 0–29" or "seeds 0–9, 20–29": which seeds a mean is over, runs of consecutive
    seeds joined, so a page can say which seeds two tables share."""
    spans: list[list[int]] = []
    for s in sorted({int(s) for s in seeds}):
        if spans and s == spans[-1][1] + 1:
            spans[-1][1] = s
        else:
            spans.append([s, s])
    named = ", ".join(f"{a}–{b}" if a != b else f"{a}" for a, b in spans)
    return f"seed {named}" if len(spans) == 1 and spans[0][0] == spans[0][1] else f"seeds {named}"
