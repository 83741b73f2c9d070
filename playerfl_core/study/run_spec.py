"""What names a run: its :class:`RunSpec` (the choices that make its file name in a store) and
:func:`code_fingerprint` (the code that computes it).

Part of the run store (:mod:`playerfl_core.study.run_store`, which re-exports every name here);
apart so that the names a run carries read on one page, without the store's file handling.
"""

from __future__ import annotations

import ast
import functools
import hashlib
import io
import json
import tokenize
from dataclasses import MISSING, asdict, dataclass, fields
from functools import cached_property
from pathlib import Path

from data_prep.registry import federation, is_registered
from playerfl_core.fl.algorithms import get_algorithm
from playerfl_core.fl.engine import RunConfig
from playerfl_core.fl.profiles import SIZE_OF, authors_settings, make_config

PACKAGE_DIR = Path(__file__).resolve().parents[1]
REPO_ROOT = PACKAGE_DIR.parent


def code_fingerprint() -> str:
    """Hash of the code a run depends on (engine, models, algorithms, data preparation), each file
    by :func:`code_text`; a stored run of another fingerprint is flagged ``stale_code``."""
    h = hashlib.sha256()
    core = [PACKAGE_DIR / f"{m}.py" for m in RUN_MODULES]
    files = (
        core
        + sorted((PACKAGE_DIR / "fl" / "algorithms").glob("*.py"))
        + sorted(p for p in (REPO_ROOT / "data_prep").glob("*.py") if p.name not in NOT_RUN)
    )
    for f in files:
        if f.exists():
            code = _cached_code_text(f.read_bytes())
            # Lengths frame each part, so no two file sets hash alike by shifting bytes across.
            h.update(f"\0{f.relative_to(REPO_ROOT).as_posix()}\0{len(code)}\0".encode())
            h.update(code)
    return h.hexdigest()[:12]


@functools.lru_cache(maxsize=256)
def _cached_code_text(source: bytes) -> bytes:
    """:func:`code_text`, remembered by content (Flower asks for the fingerprint per message)."""
    return code_text(source)


def _statements(body: list[ast.stmt]):
    """Every statement of ``body`` and of the blocks inside it, in order (not expressions)."""
    for stmt in body:
        yield stmt
        for field in ("body", "orelse", "finalbody"):
            yield from _statements(getattr(stmt, field, None) or [])
        for block in (*getattr(stmt, "handlers", ()), *getattr(stmt, "cases", ())):
            yield from _statements(block.body)


def code_text(source: bytes) -> bytes:
    """``source`` without its comments and docstrings, cut where the parser and tokenizer say (so
    independent of the Python version); a file that does not parse counts by its bytes."""
    try:
        text = source.decode()
        tree = ast.parse(text)
        tokens = list(tokenize.generate_tokens(io.StringIO(text).readline))
    except (UnicodeDecodeError, SyntaxError, tokenize.TokenError):
        return source
    rows = text.split("\n")
    lines = [row.encode() for row in rows]
    cuts = [  # (first line, first byte, last line, byte after), lines counted from 1
        (n.lineno, n.col_offset, n.end_lineno, n.end_col_offset)
        for n in _statements(tree.body)
        if isinstance(n, ast.Expr)
        and isinstance(n.value, ast.Constant)
        and isinstance(n.value.value, str)
    ]
    for t in tokens:  # a comment runs to the end of its line; the tokenizer counts characters
        if t.type == tokenize.COMMENT:
            row, col = t.start
            start = len(rows[row - 1][:col].encode())
            cuts.append((row, start, row, len(lines[row - 1])))
    touched = set()
    for first, start, last, end in sorted(cuts, reverse=True):
        lines[first - 1] = lines[first - 1][:start] + lines[last - 1][end:]
        for row in range(first + 1, last + 1):
            lines[row - 1] = b""
        touched.update(range(first, last + 1))
    kept = [
        line.rstrip() if row in touched else line
        for row, line in enumerate(lines, 1)
        if row not in touched or line.strip()
    ]
    return b"\n".join(kept)


NOT_RUN = ("preregistered.py",)
"""Files of ``data_prep`` that no run reads: the pre-registered study's lists of federations and
seeds (a new declaration must not make every stored run look stale)."""

RUN_MODULES = (
    "fl/engine",
    "fl/config",  # cut out of the engine
    "fl/client",  # cut out of the engine
    "fl/seeding",
    "fl/errors",
    "fl/schema",
    "fl/models",
    "fl/units",
    "fl/sensitivity",
    "fl/profiles",
    "stats/results",
    "fl/scoring",
    "fl/losses",
    "fl/determinism",  # CUDA kernels (the CPU's are deterministic already)
)
"""Modules of ``playerfl_core`` (paths under the package) whose code decides a run's numbers
(besides ``fl/algorithms/``)."""


def options_tag(loss: str, augment: bool) -> str:
    """``""`` for the default training options, else ``_focal`` and/or ``_augment``."""
    return ("_focal" if loss == "focal" else "") + ("_augment" if augment else "")


def protocol_tag(protocol: str) -> str:
    """``""`` for the book's protocol, else ``_<protocol>``."""
    return "" if protocol == "book" else f"_{protocol}"


@dataclass(frozen=True)
class RunSpec:
    """Everything that names one run; :attr:`run_id` is its file name in the store."""

    dataset: str
    algorithm: str
    lr: float
    seed: int
    profile: str = "quick"
    eval_timing: str = "after_aggregation"
    rounds: int | None = None
    loss: str = "cross_entropy"
    augment: bool = False
    protocol: str = "book"

    def __post_init__(self):
        """Under the authors' protocol, hold the settings it implies so the name says what ran."""
        if self.protocol == "authors":
            chosen = {"eval_timing": self.eval_timing, "loss": self.loss, "augment": self.augment}
            implied = {**chosen, **authors_settings(self.dataset, chosen)}
            for key, value in implied.items():
                object.__setattr__(self, key, value)

    def config(self, device: str | None = None) -> RunConfig:
        return make_config(
            self.dataset,
            self.profile,
            seed=self.seed,
            lr=self.lr,
            rounds=self.rounds,
            device=device,
            eval_timing=self.eval_timing,
            loss=self.loss,
            augment=self.augment,
            protocol=self.protocol,
            progress=False,
        )

    def fingerprint(self) -> dict:
        """What the user chose for this run: dataset, algorithm, data profile and the settings that
        differ from their defaults (so a new option off by default keeps every stored run's name).
        """
        config = asdict(self.config("cpu"))
        defaults = {f.name: f.default for f in fields(RunConfig) if f.default is not MISSING}
        chosen = {
            k: v
            for k, v in config.items()
            if k not in ("device", "progress", "dataset")
            and (k not in defaults or v != defaults[k])
        }
        algorithm = get_algorithm(self.algorithm)
        hyper = {
            k: v for k, v in algorithm.hyperparameters().items() if v != algorithm.defaults()[k]
        }
        size = SIZE_OF[self.profile]
        data = federation(self.dataset).loader_sizes(size) if is_registered(self.dataset) else {}
        return {
            "dataset": self.dataset,
            "algorithm": self.algorithm,
            "config": chosen,
            "hyperparameters": hyper,
            "data": {"profile": self.profile, **data},
        }

    @cached_property
    def run_id(self) -> str:
        digest = hashlib.sha256(
            json.dumps(self.fingerprint(), sort_keys=True, default=str).encode()
        ).hexdigest()
        rounds = f"_r{self.rounds}" if self.rounds is not None else ""
        timing = "" if self.eval_timing == "after_aggregation" else f"_{self.eval_timing}"
        return (
            f"{self.dataset}_{self.algorithm}_lr{self.lr:g}_s{self.seed}{timing}{rounds}"
            f"{options_tag(self.loss, self.augment)}{protocol_tag(self.protocol)}_{digest[:8]}"
        )
