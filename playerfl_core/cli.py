"""The ``playerfl`` command: runs outside the book, writing the long results table."""

from __future__ import annotations

import argparse
import sys

import pandas as pd
from tqdm import tqdm

from playerfl_core.algorithms import ALGORITHMS, get_algorithm
from playerfl_core.engine import DivergenceError, run_federated
from playerfl_core.profiles import PROFILE_NAMES, make_config
from playerfl_core.results import save_table


def _parse_list(text: str, cast=str) -> list:
    return [cast(t) for t in text.split(",") if t.strip()]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="playerfl", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run", help="run algorithms on a dataset and write the results table")
    run.add_argument("--dataset", required=True, help="fmnist, heart or digits")
    run.add_argument(
        "--algorithms",
        default="local,fedavg,playerfl",
        help=f"comma-separated, or 'all' ({', '.join(ALGORITHMS)})",
    )
    run.add_argument("--profile", default="quick", choices=PROFILE_NAMES)
    run.add_argument("--seeds", default="0", help="comma-separated integers")
    run.add_argument("--out", required=True, help="CSV file for the long results table")
    run.add_argument("--rounds", type=int, help="override the profile's number of rounds")
    run.add_argument("--lr", type=float, help="override the profile's learning rate")
    run.add_argument("--device", help="cpu or cuda (default: cuda when present)")
    run.add_argument(
        "--eval-protocol",
        choices=["deployed", "authors"],
        default="deployed",
        help="'authors': score FedAvg-style methods before aggregation (ref. §5.2)",
    )
    return parser


def cmd_run(args) -> int:
    from data_prep import DataError, load

    names = list(ALGORITHMS) if args.algorithms == "all" else _parse_list(args.algorithms)
    for name in names:
        get_algorithm(name)  # fail fast on a typo, before any training
    seeds = _parse_list(args.seeds, int)
    tables = []
    jobs = [(seed, name) for seed in seeds for name in names]
    try:
        for seed, name in tqdm(jobs, desc=f"playerfl {args.dataset}", unit="run"):
            data = load(args.dataset, profile=args.profile, seed=seed)
            config = make_config(
                args.dataset,
                args.profile,
                seed=seed,
                rounds=args.rounds,
                lr=args.lr,
                device=args.device,
                eval_protocol=args.eval_protocol,
                progress=False,
            )
            tables.append(run_federated(data, name, config).table())
    except (DataError, DivergenceError) as err:
        print(f"playerfl: {err}", file=sys.stderr)
        return 2
    path = save_table(pd.concat(tables, ignore_index=True), args.out)
    print(f"wrote {path} ({sum(len(t) for t in tables)} rows)")
    return 0


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        if args.command == "run":
            return cmd_run(args)
    except ValueError as err:
        print(f"playerfl: {err}", file=sys.stderr)
        return 2
    return 1


if __name__ == "__main__":
    sys.exit(main())
