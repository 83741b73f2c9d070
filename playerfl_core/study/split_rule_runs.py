"""The pre-registered split-rule studies (``registry.SPLIT_RULE_STUDIES``) through the one runner
(:mod:`~playerfl_core.study.runner`: :func:`compute_table`, :func:`dry_run`).

Their runs are split sweeps at each base's tuned rate, computed by the grid into the profile's
store and packed into ``stores/standard``; their table is the rules table
(:mod:`~playerfl_core.study.split_rules_table`) of every declared sweep, one store for all
(``stores/rules/standard.parquet``). Seeds already in the table keep their rows.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from data_prep import preregistered
from playerfl_core.study import registry, runner
from playerfl_core.study.archive import (
    MANIFEST_FILE,
    archive_dir,
    load_archive,
    pack,
    read_manifest,
)
from playerfl_core.study.declaration import Study
from playerfl_core.study.fair_sweeps import sweep_lr
from playerfl_core.study.grid import SPLIT_PREFIX, plan_grid, run_grid
from playerfl_core.study.preregistration import PROBE_ROUNDS
from playerfl_core.study.run_spec import REPO_ROOT
from playerfl_core.study.run_store import ERROR, Store, default_store
from playerfl_core.study.split_rules_table import PROBE, check_replay, probe_rows, rules_for_sweep
from playerfl_core.study.split_scores import sweep_rows
from playerfl_core.study.split_sweeps import RUN, check_sweeps_complete

ROW = [*RUN, "rule", "unit"]
"""What names one row of a rules table."""
READS_ONLY = ("split_rule_mean_test",)
"""Studies declared on the other studies' runs (a correction of the analysis): no runs of their
own; their table is the others'."""


def sweep_seeds(study: Study) -> dict[str, tuple[int, ...]]:
    """Each federation of ``study`` with the seeds it is swept on (on a development federation also
    ``preregistered.TUNING_SEEDS``); empty for a study that reads only."""
    if study.name in READS_ONLY:
        return {}
    first = preregistered.TUNING_SEEDS
    return {ds: tuple(sorted({*study.seeds, *first.get(ds, ())})) for ds in study.federations}


def family(study: Study) -> tuple[Study, ...]:
    """The studies whose sweeps one rules table holds (every registered one, or a stand-in)."""
    return registry.SPLIT_RULE_STUDIES if study in registry.SPLIT_RULE_STUDIES else (study,)


def _rounds(study: Study) -> int | None:
    """The study's rounds (``training``): the one training setting a grid takes."""
    training = dict(study.training)
    rounds = training.pop("rounds", None)
    if study.loader or training:
        raise ValueError(
            f"{study.name}: a split-rule study sweeps through the grid, which takes rounds "
            f"alone; not loader {dict(study.loader)} or training {training}."
        )
    return rounds


def _where(study: Study, options) -> tuple[Path, Path]:
    """The grid's store and the archive it is packed into (the profile's, or under ``out``)."""
    if options.out is None:
        return default_store(study.profile), archive_dir(study.profile)
    return Path(options.out) / study.name / "grid", Path(options.out) / study.name / "sweeps"


def _grids(study: Study, store: Path) -> list[dict]:
    """``run_grid``'s arguments per set of seeds: PLayer-FL at each base's rate, every split too."""
    by_seeds: dict[tuple[int, ...], list[str]] = {}
    for ds, seeds in sweep_seeds(study).items():
        by_seeds.setdefault(seeds, []).append(ds)
    return [dict(datasets=names, algorithms=["playerfl"], profile=study.profile, seeds=list(seeds),
                 fixed_lr={(ds, "playerfl"): sweep_lr(ds) for ds in names},
                 rounds=_rounds(study), splits=True, store=store)
            for seeds, names in by_seeds.items()]  # fmt: skip


def _keys(studies) -> pd.MultiIndex:
    """Every (dataset, lr, seed) the studies sweep."""
    keys = {(ds, sweep_lr(ds), s) for st in studies for ds, ss in sweep_seeds(st).items()
            for s in ss}  # fmt: skip
    return pd.MultiIndex.from_tuples(sorted(keys), names=RUN)


def _reads_only(study: Study) -> str:
    others = ", ".join(s.name for s in family(study) if s.name not in READS_ONLY)
    return (
        f"{study.name}: nothing to compute, it has no runs of its own; it reads those of "
        f"{others} ({study.what.rstrip('.')})."
    )


def _shown(path: Path) -> str:
    try:
        return str(Path(path).resolve().relative_to(REPO_ROOT))
    except ValueError:
        return str(path)


def _previous(path: Path) -> pd.DataFrame | None:
    """The rules table at ``path`` (checked against its SHA-256), or None."""
    return runner.load_store(path)[0] if Path(path).exists() else None


def rules_with(
    sweep: pd.DataFrame, profile: str, previous: pd.DataFrame | None = None, progress=True
) -> tuple[pd.DataFrame, int]:
    """The rules table of ``sweep`` and how many seeds were replayed: seeds ``previous`` holds keep
    their rows; the probe's are read from the sweep again."""
    check_sweeps_complete(sweep)
    wanted = pd.MultiIndex.from_frame(sweep_rows(sweep)[RUN].drop_duplicates())
    parts, new = [], wanted
    if previous is not None:
        kept = previous[previous["rule"] != PROBE]
        kept = kept[pd.MultiIndex.from_frame(kept[RUN]).isin(wanted)]
        parts, new = [kept], wanted.difference(pd.MultiIndex.from_frame(kept[RUN]))
    if len(new):
        mine = sweep[pd.MultiIndex.from_frame(sweep[RUN]).isin(new)]
        parts.append(rules_for_sweep(mine, profile, probe_rounds=None, progress=progress))
    table = pd.concat([*parts, probe_rows(sweep, PROBE_ROUNDS)], ignore_index=True)
    if previous is not None:
        place = pd.Series(np.arange(len(previous)), pd.MultiIndex.from_frame(previous[ROW]))
        held = place.reindex(pd.MultiIndex.from_frame(table[ROW])).to_numpy()
        order = np.lexsort((np.arange(len(table)), np.nan_to_num(held, nan=np.inf)))
        table = table.iloc[order].reset_index(drop=True)
    return table, len(new)


def compute_table(study: Study, options, say=print) -> tuple[pd.DataFrame, dict] | None:
    """The study's sweeps (resumable, archived), then the rules table of its family and its record's
    fields; None while a run failed or a sweep is not archived yet."""
    if study.name in READS_ONLY:
        say(_reads_only(study))
        return _committed(study)
    store, archive = _where(study, options)
    used = set()
    for grid in _grids(study, store):
        result = run_grid(**grid, backend=options.backend, device=options.device,
                          workers=options.workers if options.local() else None,
                          progress=options.progress)  # fmt: skip
        say(f"{study.name}: {result.computed} runs computed in {_shown(store)}")
        if result.status["status"].eq(ERROR).any():
            say(result.note())
            return None
        used |= set(result.status["run_id"])
    archived = ({e["run_id"] for e in read_manifest(archive)["runs"]}
                if (archive / MANIFEST_FILE).exists() else set())  # fmt: skip
    if not used <= archived:
        pack(Store(store), study.profile, archive, command=runner.command(study))
        say(f"{study.name}: packed {_shown(store)} into {_shown(archive)}, "
            f"{len(used - archived)} runs new to it")  # fmt: skip
    sweep = _archived(study, archive, say)
    if sweep is None:
        return None
    table, replayed = rules_with(
        sweep, study.profile, _previous(runner.store_file(study, options.out)), options.progress
    )
    keys = set(_keys(family(study)))
    say(f"{study.name}: the rules table replayed the first epoch of {replayed} of its "
        f"{len(keys)} seeds")  # fmt: skip
    replay = check_replay(table, sweep)
    if not replay["same"].all():
        say(f"warning: the replayed first epoch gives another paper split than the sweep "
            f"recorded on {int((~replay['same']).sum())} of {len(replay)} seeds")  # fmt: skip
    entries = [e for e in read_manifest(archive)["runs"] if e["status"] == "ok"
               and (e["dataset"], float(e["lr"]), e["seed"]) in keys
               and e["algorithm"].startswith(SPLIT_PREFIX)]  # fmt: skip
    extra = {
        "sweeps": _shown(archive),
        "replay_same": [int(replay["same"].sum()), len(replay)],
        "runs": int((table["rule"] == PROBE).sum()),
        "cpu_seconds": runner.cpu_seconds(entries),
    }
    return table, extra


def _archived(study: Study, archive: Path, say) -> pd.DataFrame | None:
    """The archive's rows of the family's sweeps, or None, saying which study's it lacks."""
    keys = _keys(family(study))
    table = load_archive(archive)[0] if (archive / MANIFEST_FILE).exists() else None
    rows = table[pd.MultiIndex.from_frame(table[RUN]).isin(keys)] if table is not None else None
    there = (set(sweep_rows(rows)[RUN].itertuples(index=False, name=None))
             if rows is not None and len(rows) else set())  # fmt: skip
    waiting = {}
    for member in family(study):
        lacking = set(_keys([member])) - there
        if lacking:
            waiting[member] = f"{member.name} ({len(lacking)} of {len(_keys([member]))} seeds)"
    if waiting:
        first = runner.command(next(iter(waiting)))
        say(f"{study.name}: the rules table waits for the sweeps of {', '.join(waiting.values())} "
            f"in {_shown(archive)}; `{first}` computes the first")  # fmt: skip
        return None
    return rows.reset_index(drop=True)


def _committed(study: Study) -> tuple[pd.DataFrame, dict] | None:
    """The committed rules table and its record's own fields (a study that reads only)."""
    path = runner.store_file(study)
    if runner.store_record(path) is None:
        return None
    table, record = runner.load_store(path)
    made = ("created", "code", "machine", "rows", "sha256")
    extra = {k: v for k, v in record.items() if k not in made}
    return table, {**extra, "runs": int((table["rule"] == PROBE).sum())}


def dry_run(study: Study, options) -> str:
    """Each sweep run still to compute, the study's run count and the seeds it would replay."""
    if study.name in READS_ONLY:
        return _reads_only(study)
    store, _ = _where(study, options)
    lines, runs, todo = [], 0, 0
    for grid in _grids(study, store):
        plan, _ = plan_grid(**grid, compute=False, dry=True)
        ready, left = plan.todo()
        lines += [f"todo  {spec.run_id}" for spec in ready]
        runs, todo = runs + len(plan.records) + left, todo + left
    path = runner.store_file(study, options.out)
    previous = _previous(path)
    held = set() if previous is None else set(previous[RUN].itertuples(index=False, name=None))
    keys = _keys(family(study))
    replay = len(set(keys) - held)
    lines.append(
        f"{study.name}: {runs} runs (PLayer-FL and every split), {todo} to compute, in "
        f"{_shown(store)} (with the committed archive {_shown(archive_dir(study.profile))}); "
        f"the rules table {_shown(path)}: {len(keys) - replay} of {len(keys)} seeds held, "
        f"{replay} to replay"
    )
    return "\n".join(lines)
