"""``playerfl sweep`` and ``playerfl rules``: the split sweep and the split rules' table."""

from __future__ import annotations

import sys
from pathlib import Path

from data_prep import DataError
from playerfl_core import checks
from playerfl_core.cli.options import backend_from
from playerfl_core.cli.output import _failure_code, _keep_finished, _save_rows
from playerfl_core.fl.engine import LR_MAX
from playerfl_core.fl.profiles import make_config
from playerfl_core.fl.split_rules import RULES, describe_rules
from playerfl_core.stats.results import save_table
from playerfl_core.study import split_oracle
from playerfl_core.study import split_rules_table as R
from playerfl_core.study.archive import MANIFEST_FILE, read_manifest
from playerfl_core.study.runner import write_store
from playerfl_core.study.split_sweeps import load_sweeps
from playerfl_core.study.workers import interrupts_as_keyboard, stop_reason


def cmd_sweep(args) -> int:
    dataset = checks.dataset_list(args.dataset, "--dataset")
    if len(dataset) != 1:
        raise checks.OptionError(f"--dataset: give one dataset, got {args.dataset!r}.")
    seeds = checks.int_list(args.seeds, "--seeds")
    out = checks.output_file(args.out)
    rule_names = _rule_names(args.rules)
    rules_out = _rules_out(_rules_path(args.out)) if rule_names is not None else None
    workers = checks.positive_int(args.workers, "--workers") or 1
    backend, device = backend_from(args)
    settings = dict(
        lr=checks.positive_float(args.lr, "--lr", maximum=LR_MAX),
        rounds=checks.positive_int(args.rounds, "--rounds"),
        device=device,
    )
    make_config(args.dataset, args.profile, **{**settings, "device": None})  # device: checked

    diverged, finished, planned = [], [], []
    splits = checks.optional(checks.int_list, args.splits, "--splits")
    try:
        with interrupts_as_keyboard():
            table = split_oracle.run_sweep(
                args.dataset, seeds, args.profile, **settings, splits=splits, workers=workers,
                diverged=diverged, finished=finished, backend=backend, planned=planned,
            )  # fmt: skip
    except DataError as err:
        return _keep_finished(finished, out, len(planned), str(err), 2, _split_lines(diverged))
    except KeyboardInterrupt as err:
        return _keep_finished(finished, out, len(planned), *stop_reason(err),
                              _split_lines(diverged))  # fmt: skip
    except Exception as err:  # noqa: BLE001 - a failed run or worker: keep the finished ones
        if isinstance(err, ValueError) and not finished:  # refused before any run: one line
            raise
        why = f"the sweep failed: {type(err).__name__}: {err}"
        return _keep_finished(finished, out, len(planned), why, _failure_code(err),
                              _split_lines(diverged))  # fmt: skip
    for line in _split_lines(diverged):
        print(f"playerfl: diverged (no rows written): {line}", file=sys.stderr)
    if table.empty:
        print("playerfl: every run of the sweep diverged; nothing written.", file=sys.stderr)
        return 3
    path = _save_rows(table, out)
    print(f"wrote {path} ({len(table)} rows, algorithms {', '.join(table['algorithm'].unique())})")
    if diverged:
        print(
            f"playerfl: {len(diverged)} run(s) diverged; the table holds the other splits (lower "
            "--lr for a complete sweep).",
            file=sys.stderr,
        )
    if rule_names is not None and not diverged:
        _write_rules(table, args.profile, rule_names, rules_out, settings["device"])
    elif rule_names is not None:
        print("playerfl: no rules table: a diverged split leaves the sweep incomplete.",
              file=sys.stderr)  # fmt: skip
    return 3 if diverged else 0


def _split_lines(diverged) -> list[str]:
    return [f"{ds} seed {seed}, split p = {p}: {reason}" for ds, seed, p, reason in diverged]


def _rule_names(text: str | None) -> list[str] | None:
    """``--rules``: None, 'all' or comma-separated names, checked before any training."""
    if text is None:
        return None
    names = [n.strip() for n in text.split(",") if n.strip()]
    if not names:
        raise checks.OptionError(f"--rules: give 'all' or rule names ({', '.join(RULES)}).")
    if names == ["all"]:
        return list(RULES)
    unknown = [n for n in names if n not in RULES]
    if unknown:
        raise checks.OptionError(
            f"--rules: unknown split rules {unknown}; available: {', '.join(RULES)} or 'all'."
        )
    return names


def _write_rules(sweep, profile, names, out, device=None, source: str = "") -> None:
    """The rules table of a sweep next to it, with the replay check and one line per rule."""
    if device not in (None, "cpu"):
        print("playerfl: the rules table replays the first epoch on the CPU.", file=sys.stderr)
    table = R.rules_for_sweep(sweep, profile, names)
    check = R.check_replay(table, sweep)
    if "paper" in names and not check["same"].all():
        bad = check[~check["same"]]
        print(
            f"playerfl: warning: the replayed first epoch gives another paper split than the "
            f"sweep recorded on {len(bad)} of {len(check)} seeds (another machine or thread "
            "count made the sweep; the rules table is the replay's).",
            file=sys.stderr,
        )
    if str(out).endswith(".parquet"):
        replay = [int(check["same"].sum()), len(check)]
        path = write_store(table, out, {"sweeps": source, "replay_same": replay})
    else:
        path = save_table(table, out)
    chosen = R.splits(table)
    summary = chosen.groupby("rule", sort=False)["p"].apply(lambda p: " ".join(map(str, p)))
    print(f"wrote {path} ({len(table)} rows); split per seed:")
    for rule, ps in summary.items():
        print(f"  {rule:14s} {ps}")


def _rules_path(out: str) -> str:
    """``<out>.rules.csv`` beside a sweep's table, in its format (``x.parquet``:
    ``x.rules.parquet``)."""
    path = Path(out)
    return str(path.with_name(f"{path.stem}.rules{path.suffix}"))


def _rules_out(out):
    """The rules file of ``--out`` (and its record beside a Parquet one), checked up front."""
    path = checks.output_file(out, "--out")
    if str(path).endswith(".parquet"):
        checks.output_file(f"{path}.json", "--out (its record file)", formats=None)
    return path


def cmd_rules(args) -> int:
    if args.sweep is None:
        for row in describe_rules():
            print(f"{row['rule']} (p in {row['range']}, default threshold {row['threshold']:g})")
            print(f"    {row['decides']}")
            print(f"    cost: {row['cost']}")
        print(
            "probe (reference, read from a sweep): every p trained for 2 rounds, the best "
            "validation score chooses; cost: (L+1)·2 local epochs per client."
        )
        return 0
    if args.out is None:
        raise checks.OptionError("--out: give a file for the rules table (.csv or .parquet).")
    out = _rules_out(args.out)
    sweep = load_sweeps(args.sweep)
    if sweep is None:
        raise checks.OptionError(f"--sweep: {args.sweep} does not exist.")
    if args.datasets:
        wanted = checks.dataset_list(args.datasets, "--datasets")
        there = sorted(sweep["dataset"].astype(str).unique())
        sweep = sweep[sweep["dataset"].isin(wanted)]
        if sweep.empty:
            raise checks.OptionError(
                f"--datasets: {args.datasets!r} matched none of the datasets in {args.sweep} "
                f"({', '.join(there)}); give some of those, or leave --datasets out."
            )
    profile = args.profile or _archive_profile(args.sweep)
    _write_rules(sweep, profile, _rule_names("all"), out, source=str(args.sweep))
    return 0


def _archive_profile(path) -> str:
    if Path(path).is_dir() and (Path(path) / MANIFEST_FILE).exists():
        return read_manifest(Path(path))["profile"]
    raise checks.OptionError("--profile: give the sweep's data profile (quick, standard, paper).")
