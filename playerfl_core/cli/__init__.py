"""The ``playerfl`` command: runs outside the book, writing the long results table.

``playerfl run`` trains a few algorithms on one dataset and writes one CSV. ``playerfl grid``
runs the resumable dataset × algorithm × learning-rate × seed grid into a store directory
(:mod:`playerfl_core.study.experiments`); kill it at any time and start it again to continue.
``playerfl status`` summarises a store. ``playerfl sweep`` runs the prefix federation at every
split p = 0 … L at one learning rate (:mod:`playerfl_core.study.split_oracle`); with ``--rules``
it also writes every split rule's choice on the sweep's seeds. ``playerfl rules`` lists the
split rules with their cost, or computes their table for a stored sweep
(:mod:`playerfl_core.study.split_rules_table`).

Length (about 890 lines): the parser and one short function per command; each command reads
the options the parser above defines, so they stay together.
"""

from __future__ import annotations

import argparse
import os
import sys
import warnings

import pandas as pd
from tqdm import tqdm

from data_prep.base import DataError
from data_prep.registry import default_datasets
from playerfl_core import checks
from playerfl_core.cli import study
from playerfl_core.fl.algorithms import ALGORITHMS, get_algorithm
from playerfl_core.fl.config import PROTOCOLS
from playerfl_core.fl.engine import EVAL_TIMINGS, LR_MAX, DivergenceError, run_federated
from playerfl_core.fl.losses import LOSSES
from playerfl_core.fl.profiles import PROFILE_NAMES, make_config
from playerfl_core.stats.results import save_table
from playerfl_core.study import machine
from playerfl_core.study.archive import ArchiveError
from playerfl_core.study.experiments import DamagedRunError
from playerfl_core.study.workers import WorkerDied, interrupts_as_keyboard, stop_reason


def add_training_options(parser: argparse.ArgumentParser) -> None:
    """Options that change what is trained or scored (:class:`playerfl_core.RunConfig`)."""
    parser.add_argument(
        "--eval-timing",
        choices=EVAL_TIMINGS,
        default="after_aggregation",
        help="when clients are scored: after_aggregation (the model they deploy, default) or "
        "before_aggregation (right after local training, as the authors' code, appendix §5.2)",
    )
    parser.add_argument(
        "--loss",
        choices=LOSSES,
        default="cross_entropy",
        help="training loss; 'focal': the authors' focal loss (Heart, appendix §4.1)",
    )
    parser.add_argument(
        "--augment",
        action="store_true",
        help="augment training batches as the authors did (Fashion-MNIST, EMNIST, CIFAR-10, "
        "Fed-ISIC-2019; appendix §2; the dataset's notes list the differences)",
    )
    parser.add_argument(
        "--protocol",
        choices=PROTOCOLS,
        default="book",
        help="book (default) or authors: their data pipeline (Heart, Fashion-MNIST), loss, "
        "augmentation, scoring before aggregation and round selection by the validation value "
        "of their training loss (sets --eval-timing, --loss, --augment; engine docstring)",
    )


def add_backend_options(parser: argparse.ArgumentParser) -> None:
    """Where the runs compute (:mod:`playerfl_core.study.backends`); the numbers do not change."""
    parser.add_argument(
        "--backend",
        choices=("local", "ray"),
        default="local",
        help="local: worker processes on this machine (default); ray: each run a task of a Ray "
        "cluster, written into the store by this process (README, 'Running on a cluster')",
    )
    parser.add_argument(
        "--address",
        help="Ray cluster (--backend ray): auto (default: the cluster `ray start` made here, or "
        "RAY_ADDRESS), HEAD:6379, ray://HEAD:10001, or local (a throw-away Ray on this machine)",
    )
    parser.add_argument(
        "--cpus",
        type=float,
        help="CPUs Ray reserves per run (--backend ray; default 1; runs compute with one "
        "thread, so their numbers do not depend on the cluster)",
    )
    parser.add_argument(
        "--gpus",
        type=float,
        help="GPUs Ray reserves per run (--backend ray; default 0; fractions share a GPU, e.g. "
        "0.25: four runs per GPU; then runs compute on CUDA)",
    )
    parser.add_argument(
        "--max-retries",
        type=int,
        help="times Ray re-runs a run whose worker or node was lost (--backend ray; default 3)",
    )


def backend_from(args):
    """``--backend`` and its options as :func:`~playerfl_core.study.grid.run_grid` takes them,
    and the device, checked: Ray's options only with ``--backend ray``, ``--workers`` only
    without it; a CUDA device on Ray only when runs reserve a GPU."""
    ray_options = {
        "--address": args.address,
        "--cpus": args.cpus,
        "--gpus": args.gpus,
        "--max-retries": args.max_retries,
    }
    given = [name for name, value in ray_options.items() if value is not None]
    if args.backend == "local":
        if given:
            raise checks.OptionError(
                f"{', '.join(given)}: options of --backend ray; add --backend ray or drop them."
            )
        return "local", checks.device(args.device)
    if args.workers is not None:
        raise checks.OptionError(
            "--workers: a setting of --backend local; on Ray, how many runs compute at once "
            "follows from the cluster and --cpus/--gpus per run."
        )
    from playerfl_core.study.ray_cluster import RayBackend

    backend = RayBackend(
        **{
            key: value
            for key, value in (
                ("address", args.address),
                ("cpus", args.cpus),
                ("gpus", args.gpus),
                ("max_retries", args.max_retries),
            )
            if value is not None
        }
    )
    return backend, backend.check_device(args.device)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="playerfl", description=__doc__)
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument(
        "--dataset-module",
        action="append",
        metavar="FILE",
        help="a Python file declaring FEDERATION = Federation(...) (repeatable): your own "
        "federation, then usable as --dataset(s) NAME",
    )
    sub = parser.add_subparsers(dest="command", required=True)
    run = sub.add_parser(
        "run", parents=[common], help="run algorithms on a dataset and write the results table"
    )
    run.add_argument(
        "--dataset", required=True, help="a registered dataset (python -m data_prep.prepare)"
    )
    run.add_argument(
        "--algorithms",
        default="local,fedavg,playerfl",
        help=f"comma-separated, or 'all' ({', '.join(ALGORITHMS)})",
    )
    run.add_argument("--profile", default="quick", choices=PROFILE_NAMES)
    run.add_argument("--seeds", default="0", help="comma-separated integers")
    run.add_argument(
        "--out",
        required=True,
        help="file for the long results table: .csv or .parquet (the format follows the extension)",
    )
    run.add_argument("--rounds", type=int, help="override the profile's number of rounds")
    run.add_argument("--lr", type=float, help="override the profile's learning rate")
    run.add_argument("--device", help="cpu or cuda (default: cuda when present)")
    run.add_argument(
        "--backend",
        choices=("engine", "flower"),
        default="engine",
        help="engine: every silo in this process (default); flower: one Flower SuperNode per "
        "silo on Flower's simulation engine (same rows, CPU only)",
    )
    add_training_options(run)

    grid = sub.add_parser(
        "grid",
        parents=[common],
        help="resumable grid: tune the LR on validation data, then "
        "evaluate on several seeds; writes one file per finished run",
    )
    grid.add_argument(
        "--datasets",
        help="comma-separated (default: the federations declared run_by_default, the book's)",
    )
    grid.add_argument("--algorithms", default="all", help="comma-separated, or 'all'")
    grid.add_argument("--profile", default="quick", choices=PROFILE_NAMES)
    grid.add_argument(
        "--seeds",
        help="evaluation seeds, comma-separated (default: per dataset, its declaration's grid)",
    )
    grid.add_argument("--lrs", help="learning-rate grid, comma-separated (default: per dataset)")
    grid.add_argument("--tune-seeds", help="seeds the LR is tuned on (default: per dataset)")
    grid.add_argument("--store", help="store directory (default: <repo>/results/<profile>)")
    add_training_options(grid)
    grid.add_argument("--rounds", type=int, help="override the profile's number of rounds")
    grid.add_argument("--device", help="cpu or cuda (default: cuda when present)")
    grid.add_argument("--workers", type=int, help="parallel CPU processes (default: 2 on CPU)")
    add_backend_options(grid)
    grid.add_argument(
        "--dry-run",
        action="store_true",
        help="compute nothing: print the runs the grid would compute, per dataset and "
        "algorithm, and their estimated CPU-hours",
    )
    grid.add_argument(
        "--list-runs", action="store_true", help="with --dry-run: also every run's name"
    )
    grid.add_argument("--out", help="also write the evaluation table here (.csv or .parquet)")
    grid.add_argument("--fresh", action="store_true", help="recompute runs already stored")
    grid.add_argument(
        "--recompute-stale",
        action="store_true",
        help="recompute stored runs made by a different version of the code",
    )
    grid.add_argument(
        "--splits",
        action="store_true",
        help="add the split sweep prefix_p0..prefix_pL at PLayer-FL's tuned learning rate",
    )
    grid.add_argument(
        "--no-retry",
        action="store_true",
        help="do not retry runs that crashed (status 'error') last time",
    )

    archive = sub.add_parser(
        "archive",
        parents=[common],
        help="pack a grid's store into a committed, checksummed archive (stores/<profile>), "
        "verify one by re-computing a sample of its runs, or check-code: re-compute one run per "
        "earlier code version and dataset, and record which versions give today's runs bit for "
        "bit (stores/code_versions.json; the others stay flagged stale_code)",
    )
    archive.add_argument("action", choices=["pack", "verify", "check-code"])
    archive.add_argument("--profile", default="standard", choices=PROFILE_NAMES)
    archive.add_argument("--store", help="store to pack (default: <repo>/results/<profile>)")
    archive.add_argument("--archive", help="archive folder (default: <repo>/stores/<profile>)")
    archive.add_argument(
        "--sample",
        type=int,
        default=6,
        help="runs to re-compute (verify): bit for bit where this machine computed them, judged "
        "statistically over the sample where another machine did",
    )
    archive.add_argument(
        "--threads", type=int, default=1, help="CPU threads for re-computing (verify)"
    )
    archive.add_argument(
        "--datasets", help="pack only these datasets' runs (comma-separated; default: all)"
    )
    archive.add_argument("--seed", type=int, default=0, help="seed of the sample (verify)")

    sweep = sub.add_parser(
        "sweep",
        parents=[common],
        help="split sweep: the prefix federation at every split p = 0..L (p = 0 is Local, "
        "p = L FedAvg) at one learning rate; writes the long results table",
    )
    sweep.add_argument(
        "--dataset", required=True, help="a registered dataset or variant, e.g. heart"
    )
    sweep.add_argument("--profile", default="quick", choices=PROFILE_NAMES)
    sweep.add_argument("--seeds", default="0", help="comma-separated integers")
    sweep.add_argument(
        "--out", required=True, help="file for the long results table (.csv or .parquet)"
    )
    sweep.add_argument(
        "--lr", type=float, help="learning rate for every split (default: the profile's)"
    )
    sweep.add_argument("--rounds", type=int, help="override the profile's number of rounds")
    sweep.add_argument("--splits", help="only these p, comma-separated (default: 0..L)")
    sweep.add_argument("--device", help="cpu or cuda (default: cuda when present)")
    sweep.add_argument(
        "--workers", type=int, help="parallel CPU processes (default 1; results do not change)"
    )
    add_backend_options(sweep)
    sweep.add_argument(
        "--rules",
        help="also write every split rule's choice on the sweep's seeds, from its first epoch, "
        "to <out>.rules.csv (or .rules.parquet): 'all' or comma-separated rule names (see "
        "`playerfl rules`)",
    )

    rules = sub.add_parser(
        "rules",
        parents=[common],
        help="list the split rules with their cost; with --sweep, compute every rule's split "
        "on a stored sweep's seeds",
    )
    rules.add_argument(
        "--sweep",
        help="a stored sweep: CSV/parquet results table, committed archive folder or grid store",
    )
    rules.add_argument("--profile", help="the sweep's data profile (default: the archive's)")
    rules.add_argument("--datasets", help="only these datasets of the sweep (comma-separated)")
    rules.add_argument("--out", help="file for the rules table (.csv or .parquet)")

    status = sub.add_parser(
        "status", parents=[common], help="summarise a store: runs per status, failures"
    )
    status.add_argument("--store", help="store directory (default: <repo>/results/<profile>)")
    status.add_argument("--profile", default="quick", choices=PROFILE_NAMES)
    study.add_parser(sub, common)
    return parser


def cmd_grid(args) -> int:
    from playerfl_core.study.experiments import dry_run, run_grid

    if args.list_runs and not args.dry_run:
        raise checks.OptionError("--list-runs: only with --dry-run.")
    out = checks.output_file(args.out)
    datasets = checks.optional(checks.dataset_list, args.datasets, "--datasets")
    plan = dict(
        datasets=datasets if datasets is not None else default_datasets(),
        algorithms=checks.name_list(
            args.algorithms, "--algorithms", _known_algorithm, "algorithm", ALGS
        )
        if args.algorithms != "all"
        else "all",
        profile=args.profile,
        seeds=checks.optional(checks.int_list, args.seeds, "--seeds"),
        lrs=checks.optional(checks.float_list, args.lrs, "--lrs"),
        tune_seeds=checks.optional(checks.int_list, args.tune_seeds, "--tune-seeds"),
        eval_timing=args.eval_timing,
        loss=args.loss,
        augment=args.augment,
        protocol=args.protocol,
        rounds=checks.positive_int(args.rounds, "--rounds"),
        fresh=args.fresh,
        recompute_stale=args.recompute_stale,
        retry_errors=not args.no_retry,
        splits=args.splits,
    )
    workers = checks.positive_int(args.workers, "--workers")
    backend, device = backend_from(args)
    if args.dry_run:
        store = checks.optional(checks.nonempty, args.store, "--store")
        print(dry_run(**plan, store=store, list_runs=args.list_runs))
        return 0
    result = run_grid(
        **plan,
        device=device,
        workers=workers,
        backend=backend,
        store=checks.writable_store(args.store),  # last: every other option is checked first
    )
    print(
        f"store {result.store.root}: {result.computed} runs computed now, "
        f"{len(result.status)} in this grid, {len(result.failures)} failed"
    )
    print(result.chosen.to_string(index=False))
    print(result.note())
    if result.table.empty:  # every evaluation run diverged or failed: nothing to report
        print(
            f"playerfl: no evaluation run of this grid finished ({len(result.failures)} "
            "diverged or failed; see above), so nothing was written; try smaller --lrs.",
            file=sys.stderr,
        )
        return 3
    if out:
        path = _save_rows(result.table, out)
        print(f"wrote {path} ({len(result.table)} rows)")
    crashed = result.failures["status"].eq("error").any() if len(result.failures) else False
    return 3 if crashed else 0  # diverged LRs are an expected outcome of tuning


ALGS = f"available: {', '.join(ALGORITHMS)}, prefix_p<k>, or 'all'"


def _known_algorithm(name: str) -> bool:
    from playerfl_core.fl.algorithms import is_algorithm

    return is_algorithm(name)


def cmd_archive(args) -> int:
    from playerfl_core.study.archive import archive_dir, pack, verify
    from playerfl_core.study.experiments import Store, default_store

    checks.positive_int(args.sample, "--sample")
    checks.positive_int(args.seed, "--seed", minimum=0)
    checks.positive_int(args.threads, "--threads")
    if args.action == "pack":
        path = checks.writable_folder(args.archive, "--archive") or archive_dir(args.profile)
        given = checks.optional(checks.existing_store, args.store, "--store")
        store = Store(given or default_store(args.profile))
        datasets = (  # any stored dataset's name; pack says which cannot be archived
            checks.name_list(args.datasets, "--datasets", lambda _: True, "dataset")
            if args.datasets is not None
            else None
        )
        command = " ".join(["playerfl", *sys.argv[1:]])
        out = pack(store, args.profile, path, command=command, datasets=datasets)
        print(f"wrote {out}")
        return 0
    path = checks.optional(checks.nonempty, args.archive, "--archive") or archive_dir(args.profile)
    if args.action == "check-code":
        return _check_code(path, args.seed)
    found = verify(path, n=args.sample, seed=args.seed, threads=args.threads)
    print(found.report.to_string(index=False))
    print(f"machine here: {machine.describe(machine.fingerprint(threads=args.threads))}")
    print(found.summary())
    if not found.consistent:
        print(f"playerfl: the archive does not re-compute ({found.case})", file=sys.stderr)
        return 1
    return 0


def _code_versions_line(codes: pd.Series) -> str:
    """Which code computed the store's runs: today's, versions checked to give today's runs bit
    for bit, or versions never checked (or that differ), which grids flag stale_code."""
    from playerfl_core.study.code_versions import equivalent_codes
    from playerfl_core.study.run_store import code_fingerprint

    code = code_fingerprint()
    same = equivalent_codes(code)
    now, checked = int((codes == code).sum()), int((codes.isin(same) & (codes != code)).sum())
    return (
        f"code: {now} runs by this version ({code}), {checked} by earlier versions checked to "
        f"give the same runs bit for bit, {len(codes) - now - checked} by versions not shown to "
        "(flagged stale_code; `playerfl archive check-code` checks the committed archive's)"
    )


def _check_code(path, seed: int) -> int:
    from playerfl_core.study.code_versions import check_code_versions, record_checks
    from playerfl_core.study.run_store import code_fingerprint

    code = code_fingerprint()
    report = check_code_versions(path, code, seed=seed)
    if report.empty:
        print(
            f"{path}: every run was computed by this version of the code ({code}) or by one "
            "already shown to give its runs bit for bit (stores/code_versions.json)"
        )
        return 0
    print(report[["earlier", "run_id", "case", "identical", "max_abs_diff"]].to_string(index=False))
    for check in record_checks(report, code):
        verdict = "gives today's runs bit for bit" if check["identical"] else "differs"
        n = len(check["runs"])
        print(f"code {check['earlier']}: {verdict} ({n} run{'s' if n != 1 else ''} re-computed)")
    return 0


def cmd_status(args) -> int:
    from playerfl_core.study.experiments import Store, default_store

    root = checks.optional(checks.existing_store, args.store, "--store")
    root = root or default_store(args.profile)
    if not root.is_dir():
        env = os.environ.get("PLAYERFL_RESULTS") if args.store is None else None
        where = f" (PLAYERFL_RESULTS={env!r} chose this folder)" if env else ""
        print(f"{root}: no store yet (no grid has run with profile {args.profile!r}){where}")
        return 0
    store = Store(root)
    records, damaged = store.scan()
    if not records and not damaged:
        print(f"{root}: no finished runs")
        return 0
    if records:
        frame = pd.DataFrame(records)
        keys = [k for k in ("dataset", "eval_timing", "loss", "augment", "status") if k in frame]
        counts = frame.groupby(keys, dropna=False).size().rename("runs")
        seconds = pd.to_numeric(frame.get("seconds"), errors="coerce").sum()
        print(f"{root}: {len(frame)} runs, {seconds:.0f} s of compute")
        print(counts.reset_index().to_string(index=False))
        for _, r in frame[frame["status"] != "ok"].iterrows():
            error = r.get("error")
            last = str(error).strip().splitlines()[-1] if isinstance(error, str) and error else ""
            print(f"  {r['status']}: {r['run_id']}: {last}")
        on = pd.Series([machine.key(r.get("machine")) for r in records]).value_counts()
        here = machine.fingerprint(threads=1)["key"]
        print(
            "  computed on: "
            + "; ".join(
                f"{n} run{'s' if n != 1 else ''} on {key}"
                + (" (this machine, one thread)" if key == here else "")
                + (" (stored before machines were recorded)" if key == machine.UNKNOWN else "")
                for key, n in on.items()
            )
            + (f" (this machine with one thread: {here})" if here not in on else "")
        )
        print("  " + _code_versions_line(frame.get("code", pd.Series(dtype=str))))
        sealed = frame["csv_sha256"].notna() if "csv_sha256" in frame else False
        legacy = int(((frame["status"] == "ok") & ~sealed).sum())
        if legacy:
            print(
                f"  {legacy} finished runs were stored before checksums (legacy): their files "
                "are checked for header, complete last line and recorded row count only."
            )
    if damaged:
        print(f"{len(damaged)} damaged runs (not counted above; `playerfl grid` recomputes them):")
        for problem in damaged.values():
            print(f"  damaged: {problem}")
    return 0


def cmd_run(args) -> int:
    from data_prep import DataError, load
    from playerfl_core.fl.divergence import check_table

    if args.backend == "flower" and args.device not in (None, "cpu"):
        raise checks.OptionError("--backend flower runs on the CPU: drop --device.")
    dataset = checks.dataset_list(args.dataset, "--dataset")
    if len(dataset) != 1:
        raise checks.OptionError(f"--dataset: give one dataset, got {args.dataset!r}.")
    names = (
        list(ALGORITHMS)
        if args.algorithms == "all"
        else checks.name_list(args.algorithms, "--algorithms", _known_algorithm, "algorithm", ALGS)
    )
    for name in names:
        get_algorithm(name)  # fail fast on a typo, before any training
    seeds = checks.int_list(args.seeds, "--seeds")
    out = checks.output_file(args.out)
    settings = dict(
        rounds=checks.positive_int(args.rounds, "--rounds"),
        lr=checks.positive_float(args.lr, "--lr", maximum=LR_MAX),
        device=checks.device(args.device),
        eval_timing=args.eval_timing,
        loss=args.loss,
        augment=args.augment,
        protocol=args.protocol,
        progress=False,
    )
    if args.backend == "flower":
        settings["device"] = "cpu"
        if args.protocol != "book":
            raise checks.OptionError("--protocol authors: in-process runs only; drop --backend.")
    for seed in seeds:  # every RunConfig field checked before any training
        make_config(args.dataset, args.profile, seed=seed, **settings)
    if args.backend == "flower":
        return _run_on_flower(args, names, seeds, settings, out)

    tables, diverged = [], []
    jobs = [(seed, name) for seed in seeds for name in names]
    seed = name = None
    try:
        with (
            interrupts_as_keyboard(),
            tqdm(jobs, desc=f"playerfl {args.dataset}", unit="run") as bar,
        ):
            for seed, name in bar:  # the bar closes before any message below
                data = load(args.dataset, profile=args.profile, seed=seed, protocol=args.protocol)
                config = make_config(args.dataset, args.profile, seed=seed, **settings)
                try:
                    run = run_federated(data, get_algorithm(name), config)
                    tables.append(check_table(run.table()))
                except DivergenceError as err:  # the other runs' rows are kept
                    diverged.append(f"{name} seed {seed}: {err}")
    except DataError as err:  # e.g. a dataset file whose loader fails for this seed
        return _keep_finished(tables, out, len(jobs), f"seed {seed} failed: {err}", 2, diverged)
    except KeyboardInterrupt as err:
        return _keep_finished(tables, out, len(jobs), *stop_reason(err), diverged)
    except Exception as err:  # noqa: BLE001 - a bug or a broken dataset file: keep the others
        why = f"{name} seed {seed} failed: {type(err).__name__}: {err}"
        return _keep_finished(tables, out, len(jobs), why, _failure_code(err), diverged)
    for line in diverged:
        print(f"playerfl: diverged (no rows written): {line}", file=sys.stderr)
    if not tables:
        print("playerfl: every run diverged; nothing written.", file=sys.stderr)
        return 3
    path = _save_rows(pd.concat(tables, ignore_index=True), out)
    print(f"wrote {path} ({sum(len(t) for t in tables)} rows)")
    return 3 if diverged else 0


def _failure_code(err: Exception) -> int:
    """Exit code of a run that raised ``err``: 2 bad settings or data (as when refused before
    any run), 1 the machine (a dead worker, a full disk), 3 the run itself failed."""
    if isinstance(err, ValueError):
        return 2
    return 1 if isinstance(err, (WorkerDied, OSError)) else 3


class RowsNotWritten(OSError):
    """The results could not be written where asked (a full disk): where they went instead, or
    that they are lost."""


def _keep_finished(tables, out, n_jobs: int, why: str, code: int, diverged=()) -> int:
    """``run`` or ``sweep`` stopped early (a signal, a failing dataset, a failed run): write the
    runs that finished, and say in one line why it stopped, how many of how many finished and
    where they are. Returns ``code``, the exit code of what stopped it."""
    why = why.rstrip(". ")  # the reason is followed by what was kept
    for line in diverged:
        print(f"playerfl: diverged (no rows written): {line}", file=sys.stderr)
    if not tables:
        print(f"playerfl: {why}; no run had finished, nothing written.", file=sys.stderr)
        return code
    runs = f"{len(tables)} finished run{'s' if len(tables) != 1 else ''} of {n_jobs}"
    try:
        path = _save_rows(pd.concat(tables, ignore_index=True), out)
    except RowsNotWritten as err:
        print(f"playerfl: {why}; {runs}, but {err.strerror}", file=sys.stderr)
        return 1
    again = "run again" if code in (129, 130) else "fix that and run again"
    print(
        f"playerfl: {why}; wrote the {runs} ({sum(len(t) for t in tables)} rows) to {path} "
        f"({again} to compute all of them).",
        file=sys.stderr,
    )
    return code


def _save_rows(table: pd.DataFrame, out) -> str:
    """:func:`save_table` to ``out``; when that fails (a full disk, a quota), once to a file in
    the temporary folder, if it is on another file system or the failure was not lack of space,
    and :class:`RowsNotWritten` says where the rows are, or that they could not be kept."""
    import errno
    import os
    import tempfile
    from pathlib import Path

    try:
        return str(save_table(table, out))
    except OSError as err:
        problem = (
            f"could not write {out} ({err.strerror or err}): free space there or give "
            f"another --out; the {len(table)} finished rows"
        )
        full = err.errno in (errno.ENOSPC, errno.EDQUOT)
        folder = Path(tempfile.gettempdir())
        if not full or _device(folder) != _device(Path(out).resolve().parent):
            rescue = folder / f"playerfl-{os.getpid()}-{Path(out).name}"
            try:
                saved = save_table(table, rescue)
            except OSError:
                pass
            else:
                raise RowsNotWritten(
                    err.errno, f"{problem} were written to {saved} instead."
                ) from None
        raise RowsNotWritten(err.errno, f"{problem} could not be kept.") from None


def _device(path) -> int | None:
    """The file system of ``path`` or of its nearest existing folder."""
    import os

    for folder in (path, *path.parents):
        try:
            return os.stat(folder).st_dev
        except OSError:
            continue
    return None


def _run_on_flower(args, names, seeds, settings, out) -> int:
    """``playerfl run --backend flower``: the same runs, each silo a Flower SuperNode."""
    import tempfile
    from dataclasses import asdict

    from data_prep import DataError, load
    from playerfl_core.fl.divergence import check_table
    from playerfl_core.flower.link import FlowerRunError, Job, simulate

    jobs, silos = [], 0
    try:  # every seed's data is loaded here, before any run: a failing seed stops all of them
        for seed in seeds:
            silos = len(load(args.dataset, profile=args.profile, seed=seed).clients)
            config = asdict(make_config(args.dataset, args.profile, seed=seed, **settings))
            modules = tuple(args.dataset_module or ())
            jobs += [
                Job(args.dataset, name, {}, config, args.profile, seed, modules) for name in names
            ]
    except DataError as err:
        print(f"playerfl: seed {seed} failed, before any run: {err}", file=sys.stderr)
        return 2

    finished: list[pd.DataFrame] = []
    try:
        with interrupts_as_keyboard(), tempfile.TemporaryDirectory() as tmp:
            result = simulate(jobs, silos, tmp, finished=finished, progress=True)
    except KeyboardInterrupt as err:
        tables = [check_table(t) for t in finished]
        return _keep_finished(tables, out, len(jobs), *stop_reason(err))
    except FlowerRunError as err:  # a silo lost or failing: every run stops
        return _keep_finished([check_table(t) for t in finished], out, len(jobs), str(err), 3)
    except Exception as err:  # noqa: BLE001 - Flower or Ray crashed: keep the finished runs
        why = f"the Flower run failed: {type(err).__name__}: {err}"
        tables = [check_table(t) for t in finished]
        return _keep_finished(tables, out, len(jobs), why, _failure_code(err))
    for failure in result.failed:
        print(
            f"playerfl: failed (no rows written): {failure['run']}: {failure['error']}",
            file=sys.stderr,
        )
    if result.table.empty:
        print("playerfl: every run failed; nothing written.", file=sys.stderr)
        return 3
    path = _save_rows(check_table(result.table), out)
    print(f"wrote {path} ({len(result.table)} rows)")
    return 3 if result.failed else 0


def cmd_sweep(args) -> int:
    from data_prep import DataError
    from playerfl_core.study.split_oracle import run_sweep

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
            table = run_sweep(
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
    from playerfl_core.fl.split_rules import RULES

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
    from playerfl_core.stats.results import save_table
    from playerfl_core.study import split_rules_table as R

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
        path = R.save_rules_table(table, out, source, check)
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
    from pathlib import Path

    path = Path(out)
    return str(path.with_name(f"{path.stem}.rules{path.suffix}"))


def _rules_out(out):
    """The rules file of ``--out`` (and its record beside a Parquet one), checked up front."""
    path = checks.output_file(out, "--out")
    if str(path).endswith(".parquet"):
        checks.output_file(f"{path}.json", "--out (its record file)", formats=None)
    return path


def cmd_rules(args) -> int:
    from playerfl_core.fl.split_rules import describe_rules
    from playerfl_core.study.split_sweeps import load_sweeps

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
    from pathlib import Path

    from playerfl_core.study.archive import MANIFEST_FILE, read_manifest

    if Path(path).is_dir() and (Path(path) / MANIFEST_FILE).exists():
        return read_manifest(Path(path))["profile"]
    raise checks.OptionError("--profile: give the sweep's data profile (quick, standard, paper).")


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    with warnings.catch_warnings():
        warnings.simplefilter("always", checks.OptionWarning)  # e.g. duplicate seeds dropped
        warnings.showwarning = _show_warning
        return _dispatch(args)


def _show_warning(message, category, *args, **kwargs) -> None:
    print(f"playerfl: warning: {message}", file=sys.stderr)


def _dispatch(args) -> int:
    """Run the command; Ctrl-C, SIGTERM and SIGHUP anywhere in it stop it with one line (long
    commands first keep what finished), exit 130 (129 for SIGHUP)."""
    try:
        with interrupts_as_keyboard():
            return _command(args)
    except KeyboardInterrupt as err:  # a grid says what it kept; elsewhere nothing was lost
        why, code = stop_reason(err)
        print(f"playerfl: {why.rstrip('.')}.", file=sys.stderr)
        return code
    except (ValueError, DataError, ArchiveError, DamagedRunError) as err:
        print(f"playerfl: {err}", file=sys.stderr)
        return 2
    except (OSError, WorkerDied) as err:  # a full disk, a killed worker: said in one line
        print(f"playerfl: {_message(err)}", file=sys.stderr)
        return 1


def _message(err: BaseException) -> str:
    """An exception's text; an OSError(errno, text) prints as '[Errno 28] text' otherwise."""
    if isinstance(err, OSError) and err.strerror:
        return f"{err.filename}: {err.strerror}" if err.filename else err.strerror
    return str(err)


def _command(args) -> int:
    for path in args.dataset_module or []:
        checks.dataset_module(path)
    commands = {
        "run": cmd_run,
        "grid": cmd_grid,
        "status": cmd_status,
        "archive": cmd_archive,
        "sweep": cmd_sweep,
        "rules": cmd_rules,
        "study": study.cmd_study,
    }
    return commands[args.command](args)


if __name__ == "__main__":
    sys.exit(main())
