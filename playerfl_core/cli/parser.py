"""The ``playerfl`` command's parser: one subparser per command, the options each reads."""

from __future__ import annotations

import argparse

from playerfl_core.cli import study
from playerfl_core.cli.options import add_backend_options, add_training_options
from playerfl_core.fl.algorithms import ALGORITHMS
from playerfl_core.fl.profiles import PROFILE_NAMES


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
