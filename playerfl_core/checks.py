"""Up-front checks of user input: command-line options and chapter parameters.

Every check runs before any training and raises :class:`OptionError` (a ValueError) whose
message names the option, the bad value and what would be valid, so a mistake costs seconds,
not a finished grid. :class:`~playerfl_core.fl.engine.RunConfig` and the algorithms check their own
fields; these helpers cover what only the caller knows (lists typed as text, paths, devices).
"""

from __future__ import annotations

import math
import os
import tempfile
import warnings
from pathlib import Path

import torch

from data_prep.base import DataError
from data_prep.registry import federation, load_dataset_module
from playerfl_core.stats.results import folder_problem, not_a_file, write_fix
from playerfl_core.study.run_store import Store, StoreError


class OptionError(ValueError):
    """A bad option or parameter; the message names it, its value and the valid range."""


class OptionWarning(UserWarning):
    """An option was accepted after a correction (e.g. duplicate seeds dropped)."""


def optional(parse, text, option: str, *args, **kwargs):
    """``parse(text, option, ...)`` for an option that has a default: None (not given) passes
    as None, so the caller's default applies; any given value, the empty string included, is
    parsed, and the list parsers refuse an empty list. An empty value never means the default
    (``grid --seeds ""`` is refused, as ``run --seeds ""`` is)."""
    return None if text is None else parse(text, option, *args, **kwargs)


def int_list(text, option: str, minimum: int = 0, dedupe: bool = True) -> list[int]:
    """Comma-separated integers ≥ ``minimum``; duplicates are dropped with a warning."""
    values = []
    for item in _items(text, option):
        try:
            value = int(item)
        except ValueError:
            raise OptionError(
                f"{option}: {item!r} (in {text!r}) is not an integer; give comma-separated "
                f"integers ≥ {minimum}, e.g. 0,1,2."
            ) from None
        if value < minimum:
            raise OptionError(f"{option}: {value} is below the valid range (integers ≥ {minimum}).")
        values.append(value)
    return _deduped(values, option) if dedupe else values


def float_list(text, option: str, positive: bool = True) -> list[float]:
    """Comma-separated finite numbers (> 0 when ``positive``); duplicates dropped with a warning."""
    values = []
    for item in _items(text, option):
        try:
            value = float(item)
        except ValueError:
            raise OptionError(
                f"{option}: {item!r} (in {text!r}) is not a number; give comma-separated "
                "numbers, e.g. 0.01,0.003."
            ) from None
        if not math.isfinite(value) or (positive and value <= 0):
            raise OptionError(
                f"{option}: {item!r} is outside the valid range (finite numbers"
                f"{' > 0' if positive else ''})."
            )
        values.append(value)
    return _deduped(values, option)


def name_list(text, option: str, valid, kind: str, hint: str = "") -> list[str]:
    """Comma-separated names, each accepted by ``valid`` (a callable or a collection)."""
    names = _items(text, option)
    accept = valid if callable(valid) else (lambda n: n in valid)
    for name in names:
        if not accept(name):
            shown = hint or ("" if callable(valid) else f"valid: {', '.join(map(str, valid))}")
            raise OptionError(f"{option}: unknown {kind} {name!r}{'; ' if shown else ''}{shown}.")
    return _deduped(names, option)


def dataset_list(text, option: str = "--datasets") -> list[str]:
    """Registered datasets or heterogeneity variants (``data_prep.skew``)."""
    names = _items(text, option)
    for name in names:
        try:
            federation(name)
        except DataError as err:
            raise OptionError(f"{option}: {err}") from None
    return _deduped(names, option)


def dataset_module(path, option: str = "--dataset-module") -> list[str]:
    """Import a user's dataset file (None passes) and register its federations; their names."""
    if path is None:
        return []
    if not str(path).strip():
        raise OptionError(
            f"{option}: an empty path; give your dataset file (a .py declaring FEDERATION) or "
            "leave the option out."
        )
    try:
        return load_dataset_module(path)
    except DataError as err:
        raise OptionError(f"{option}: {err}") from None


def positive_int(value, option: str, minimum: int = 1):
    """``value`` (None passes) as an integer ≥ ``minimum``."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or int(value) != value:
        raise OptionError(f"{option}: {value!r} is not an integer (valid: integers ≥ {minimum}).")
    if value < minimum:
        raise OptionError(f"{option}: {value} is outside the valid range (integers ≥ {minimum}).")
    return int(value)


def positive_float(value, option: str, maximum: float = math.inf):
    """``value`` (None passes) as a finite number in (0, maximum]."""
    if value is None:
        return None
    valid = f"a finite number > 0{f' and ≤ {maximum:.3g}' if maximum < math.inf else ''}"
    if isinstance(value, bool) or not isinstance(value, int | float) or not value > 0:
        raise OptionError(f"{option}: {value!r} is outside the valid range ({valid}).")
    if not math.isfinite(value) or value > maximum:
        raise OptionError(f"{option}: {value!r} is outside the valid range ({valid}).")
    return float(value)


def device(value, option: str = "--device") -> str | None:
    """A torch device this machine has (None passes: the default device)."""
    if value is None:
        return None
    try:
        dev = torch.device(value)
    except (RuntimeError, TypeError) as err:
        raise OptionError(
            f"{option}: {value!r} is not a device ({err}); use cpu, cuda or cuda:<index>."
        ) from None
    if dev.type == "cuda":
        if not torch.cuda.is_available():
            raise OptionError(f"{option}: {value!r}, but this machine has no CUDA; use cpu.")
        if dev.index is not None and dev.index >= torch.cuda.device_count():
            raise OptionError(
                f"{option}: {value!r}, but this machine has {torch.cuda.device_count()} CUDA "
                f"devices (cuda:0..cuda:{torch.cuda.device_count() - 1})."
            )
    elif dev.type == "mps":
        if not torch.backends.mps.is_available():
            raise OptionError(f"{option}: {value!r}, but MPS is not available here; use cpu.")
    elif dev.type != "cpu":
        raise OptionError(f"{option}: {value!r} is not supported; use cpu or cuda.")
    return str(value)


def output_file(path, option: str = "--out", formats=(".csv", ".parquet")) -> Path | None:
    """A file that can be written: ending in one of ``formats`` (the format follows the
    extension; None: any), a regular file or a new name (never a directory, device, named pipe
    or symbolic link, which writing would replace with a plain file), in a folder that exists
    or can be made and is writable (checked by creating and removing a probe file there)."""
    if path is None:
        return None
    path = Path(nonempty(path, option)).expanduser()
    kind = not_a_file(path)
    if kind == "a directory":
        raise OptionError(
            f"{option}: {str(path)!r} is a directory; give a file name, e.g. out.csv."
        )
    if kind:
        raise OptionError(f"{option} {path} is {kind}; {write_fix(kind)}.")
    suffix = path.suffix.lower()
    if formats is not None and suffix not in formats:
        raise OptionError(
            f"{option}: {str(path)!r} ends in {suffix or 'no extension'}; give a file ending in "
            f"{' or '.join(formats)} (the format follows the extension)."
        )
    parent = path.parent
    for folder in [parent, *parent.parents]:
        if folder.exists():
            if not folder.is_dir():
                raise OptionError(
                    f"{option}: cannot write {str(path)!r}: {str(folder)!r} is a file, "
                    "not a folder."
                )
            break
    try:
        parent.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=parent, prefix=".playerfl-probe-"):
            pass
    except OSError as err:
        raise OptionError(
            f"{option}: cannot write {str(path)!r} ({err.strerror}); choose a writable folder."
        ) from None
    if path.exists() and not os.access(path, os.W_OK):
        raise OptionError(f"{option}: {str(path)!r} exists and is read-only.")
    return path


def existing_store(path, option: str = "--store") -> Path:
    """A store folder that exists (reading a typo'd store must not say 'no runs')."""
    path = Path(nonempty(path, option)).expanduser()
    if path.exists() and not path.is_dir():
        raise OptionError(f"{option}: {str(path)!r} is a file, not a store folder.")
    if not path.is_dir():
        parent = path.parent
        near = sorted(p.name for p in parent.iterdir() if p.is_dir())[:8] if parent.is_dir() else []
        hint = f" Folders in {parent}: {', '.join(near)}." if near else ""
        raise OptionError(f"{option}: the store {str(path)!r} does not exist.{hint}")
    return path


def writable_store(path, option: str = "--store") -> Path | None:
    """A store folder runs can be written into (None passes: the default store, which
    :func:`~playerfl_core.study.grid.run_grid` checks the same way before any compute)."""
    if path is None:
        return None
    store = Store(nonempty(path, option))
    try:
        store.check_writable()
    except StoreError as err:
        raise OptionError(f"{option}: {err}") from None
    return store.root


def writable_folder(path, option: str) -> Path | None:
    """A folder files can be written into, or can be made (None passes: the default)."""
    if path is None:
        return None
    path = Path(nonempty(path, option)).expanduser()
    problem = folder_problem(path)
    if problem:
        raise OptionError(f"{option}: cannot write into {str(path)!r}: {problem}.")
    return path


def nonempty(path, option: str):
    """``path`` unless it is empty (an empty option never means the default)."""
    if not str(path).strip():
        raise OptionError(f"{option}: {path!r} is empty; give a folder, or leave {option} out.")
    return path


def _items(text, option: str) -> list[str]:
    if isinstance(text, list | tuple):
        items = [str(t).strip() for t in text]
    else:
        items = [t.strip() for t in str(text).split(",")]
    if not any(items) or any(not t for t in items):
        raise OptionError(
            f"{option}: {text!r} has an empty entry; give a comma-separated list without "
            "empty items."
        )
    return items


def _deduped(values: list, option: str) -> list:
    unique = list(dict.fromkeys(values))
    if len(unique) != len(values):
        dup = sorted({v for v in values if values.count(v) > 1}, key=values.index)
        warnings.warn(
            f"{option}: duplicate values {dup} ignored (each runs once, else its rows would be "
            "counted twice).",
            OptionWarning,
            stacklevel=3,
        )
    return unique
