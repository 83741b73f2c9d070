"""The ``playerfl`` command: runs outside the book, writing the long results table.

``playerfl run`` trains a few algorithms on one dataset and writes one CSV. ``playerfl grid``
runs the resumable dataset × algorithm × learning-rate × seed grid into a store directory
(:mod:`playerfl_core.study.experiments`); kill it at any time and start it again to continue.
``playerfl status`` summarises a store. ``playerfl sweep`` runs the prefix federation at every
split p = 0 … L at one learning rate (:mod:`playerfl_core.study.split_oracle`); with ``--rules``
it also writes every split rule's choice on the sweep's seeds. ``playerfl rules`` lists the
split rules with their cost, or computes their table for a stored sweep
(:mod:`playerfl_core.study.split_rules_table`).

The parser lives in ``cli.parser`` (shared options in ``cli.options``), the commands by concern:
``run`` here (with the output helpers the others share), ``grid``/``archive``/``status`` in
``cli.stores``, ``sweep``/``rules`` in ``cli.sweep``, ``study`` in ``cli.study``.
"""

from __future__ import annotations

import sys
import tempfile
import warnings
from dataclasses import asdict

import pandas as pd
from tqdm import tqdm

from data_prep import DataError, load
from playerfl_core import checks
from playerfl_core.cli import study
from playerfl_core.cli.options import add_backend_options, add_training_options
from playerfl_core.cli.output import _failure_code, _keep_finished, _save_rows
from playerfl_core.cli.parser import build_parser
from playerfl_core.cli.stores import ALGS, _known_algorithm, cmd_archive, cmd_grid, cmd_status
from playerfl_core.cli.sweep import _rules_path, cmd_rules, cmd_sweep
from playerfl_core.fl.algorithms import ALGORITHMS, get_algorithm
from playerfl_core.fl.divergence import check_table
from playerfl_core.fl.engine import LR_MAX, DivergenceError, run_federated
from playerfl_core.fl.profiles import make_config
from playerfl_core.study.archive import ArchiveError
from playerfl_core.study.experiments import DamagedRunError
from playerfl_core.study.workers import WorkerDied, interrupts_as_keyboard, stop_reason

__all__ = ["_rules_path", "add_backend_options", "add_training_options", "build_parser", "main"]


def cmd_run(args) -> int:
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


def _run_on_flower(args, names, seeds, settings, out) -> int:
    """``playerfl run --backend flower``: the same runs, each silo a Flower SuperNode."""
    from playerfl_core.flower import link  # deferred: Flower (flwr) takes about 1 s to import

    jobs, silos = [], 0
    try:  # every seed's data is loaded here, before any run: a failing seed stops all of them
        for seed in seeds:
            silos = len(load(args.dataset, profile=args.profile, seed=seed).clients)
            config = asdict(make_config(args.dataset, args.profile, seed=seed, **settings))
            modules = tuple(args.dataset_module or ())
            jobs += [
                link.Job(args.dataset, name, {}, config, args.profile, seed, modules)
                for name in names
            ]
    except DataError as err:
        print(f"playerfl: seed {seed} failed, before any run: {err}", file=sys.stderr)
        return 2

    finished: list[pd.DataFrame] = []
    try:
        with interrupts_as_keyboard(), tempfile.TemporaryDirectory() as tmp:
            result = link.simulate(jobs, silos, tmp, finished=finished, progress=True)
    except KeyboardInterrupt as err:
        tables = [check_table(t) for t in finished]
        return _keep_finished(tables, out, len(jobs), *stop_reason(err))
    except link.FlowerRunError as err:  # a silo lost or failing: every run stops
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
