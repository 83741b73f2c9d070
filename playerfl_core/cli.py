"""The ``playerfl`` command: runs outside the book, writing the long results table.

``playerfl run`` trains a few algorithms on one dataset and writes one CSV. ``playerfl grid``
runs the resumable dataset × algorithm × learning-rate × seed grid into a store directory
(:mod:`playerfl_core.experiments`); kill it at any time and start it again to continue.
``playerfl status`` summarises a store. ``playerfl sweep`` runs the prefix federation at every
split p = 0 … L at one learning rate (:mod:`playerfl_core.split_oracle`).
"""

from __future__ import annotations

import argparse
import sys

import pandas as pd
from tqdm import tqdm

from playerfl_core.algorithms import ALGORITHMS, get_algorithm
from playerfl_core.engine import EVAL_TIMINGS, DivergenceError, run_federated
from playerfl_core.losses import LOSSES
from playerfl_core.profiles import PROFILE_NAMES, make_config
from playerfl_core.results import save_table


def _parse_list(text: str, cast=str) -> list:
    return [cast(t) for t in text.split(",") if t.strip()]


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
        help="augment training batches as the authors did (Fashion-MNIST, appendix §2.2)",
    )


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
    add_training_options(run)

    grid = sub.add_parser(
        "grid",
        help="resumable grid: tune the LR on validation data, then "
        "evaluate on several seeds; writes one file per finished run",
    )
    grid.add_argument("--datasets", default="fmnist,heart,digits", help="comma-separated")
    grid.add_argument("--algorithms", default="all", help="comma-separated, or 'all'")
    grid.add_argument("--profile", default="quick", choices=PROFILE_NAMES)
    grid.add_argument(
        "--seeds",
        help="evaluation seeds, comma-separated (default: per dataset, "
        "playerfl_core.experiments.GRIDS)",
    )
    grid.add_argument("--lrs", help="learning-rate grid, comma-separated (default: per dataset)")
    grid.add_argument("--tune-seeds", help="seeds the LR is tuned on (default: per dataset)")
    grid.add_argument("--store", help="store directory (default: <repo>/results/<profile>)")
    add_training_options(grid)
    grid.add_argument("--rounds", type=int, help="override the profile's number of rounds")
    grid.add_argument("--device", help="cpu or cuda (default: cuda when present)")
    grid.add_argument("--workers", type=int, help="parallel CPU processes (default: 2 on CPU)")
    grid.add_argument("--out", help="also write the evaluation table to this CSV")
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
        help="pack a grid's store into a committed, checksummed archive (stores/<profile>), "
        "or verify one by re-computing a sample of its runs",
    )
    archive.add_argument("action", choices=["pack", "verify"])
    archive.add_argument("--profile", default="standard", choices=PROFILE_NAMES)
    archive.add_argument("--store", help="store to pack (default: <repo>/results/<profile>)")
    archive.add_argument("--archive", help="archive folder (default: <repo>/stores/<profile>)")
    archive.add_argument("--sample", type=int, default=3, help="runs to re-compute (verify)")
    archive.add_argument("--seed", type=int, default=0, help="seed of the sample (verify)")

    sweep = sub.add_parser(
        "sweep",
        help="split sweep: the prefix federation at every split p = 0..L (p = 0 is Local, "
        "p = L FedAvg) at one learning rate; writes the long results table",
    )
    sweep.add_argument(
        "--dataset", required=True, help="a registered dataset or variant, e.g. heart"
    )
    sweep.add_argument("--profile", default="quick", choices=PROFILE_NAMES)
    sweep.add_argument("--seeds", default="0", help="comma-separated integers")
    sweep.add_argument("--out", required=True, help="CSV file for the long results table")
    sweep.add_argument(
        "--lr", type=float, help="learning rate for every split (default: the profile's)"
    )
    sweep.add_argument("--rounds", type=int, help="override the profile's number of rounds")
    sweep.add_argument("--splits", help="only these p, comma-separated (default: 0..L)")
    sweep.add_argument("--device", help="cpu or cuda (default: cuda when present)")
    sweep.add_argument(
        "--workers", type=int, default=1, help="parallel CPU processes (results do not change)"
    )

    status = sub.add_parser("status", help="summarise a store: runs per status, failures")
    status.add_argument("--store", help="store directory (default: <repo>/results/<profile>)")
    status.add_argument("--profile", default="quick", choices=PROFILE_NAMES)
    return parser


def cmd_grid(args) -> int:
    from playerfl_core.experiments import run_grid
    from playerfl_core.results import save_table

    result = run_grid(
        _parse_list(args.datasets),
        args.algorithms,
        args.profile,
        seeds=_parse_list(args.seeds, int) if args.seeds else None,
        lrs=_parse_list(args.lrs, float) if args.lrs else None,
        tune_seeds=_parse_list(args.tune_seeds, int) if args.tune_seeds else None,
        store=args.store,
        eval_timing=args.eval_timing,
        loss=args.loss,
        augment=args.augment,
        rounds=args.rounds,
        device=args.device,
        workers=args.workers,
        fresh=args.fresh,
        recompute_stale=args.recompute_stale,
        retry_errors=not args.no_retry,
        splits=args.splits,
    )
    print(
        f"store {result.store.root}: {result.computed} runs computed now, "
        f"{len(result.status)} in this grid, {len(result.failures)} failed"
    )
    print(result.chosen.to_string(index=False))
    print(result.note())
    if args.out:
        path = save_table(result.table, args.out)
        print(f"wrote {path} ({len(result.table)} rows)")
    crashed = result.failures["status"].eq("error").any() if len(result.failures) else False
    return 3 if crashed else 0  # diverged LRs are an expected outcome of tuning


def cmd_archive(args) -> int:
    from playerfl_core.archive import archive_dir, pack, recompute_sample
    from playerfl_core.experiments import Store, default_store

    path = args.archive or archive_dir(args.profile)
    if args.action == "pack":
        store = Store(args.store or default_store(args.profile))
        out = pack(store, args.profile, path, command=" ".join(["playerfl", *sys.argv[1:]]))
        print(f"wrote {out}")
        return 0
    report = recompute_sample(path, n=args.sample, seed=args.seed)
    print(report.to_string(index=False))
    if not report["identical"].all():
        print("playerfl: some re-computed runs differ from the archive", file=sys.stderr)
        return 1
    return 0


def cmd_status(args) -> int:
    import json
    from pathlib import Path

    from playerfl_core.experiments import default_store

    root = Path(args.store) if args.store else default_store(args.profile)
    records = [json.loads(f.read_text()) for f in sorted((root / "runs").glob("*.json"))]
    if not records:
        print(f"{root}: no finished runs")
        return 0
    frame = pd.DataFrame(records)
    keys = [k for k in ("dataset", "eval_timing", "loss", "augment", "status") if k in frame]
    counts = frame.groupby(keys).size().rename("runs")
    print(f"{root}: {len(frame)} runs, {frame['seconds'].sum():.0f} s of compute")
    print(counts.reset_index().to_string(index=False))
    bad = frame[frame["status"] != "ok"]
    for _, r in bad.iterrows():
        last = str(r["error"]).strip().splitlines()[-1] if r["error"] else ""
        print(f"  {r['status']}: {r['run_id']}: {last}")
    return 0


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
                eval_timing=args.eval_timing,
                loss=args.loss,
                augment=args.augment,
                progress=False,
            )
            tables.append(run_federated(data, name, config).table())
    except (DataError, DivergenceError) as err:
        print(f"playerfl: {err}", file=sys.stderr)
        return 2
    path = save_table(pd.concat(tables, ignore_index=True), args.out)
    print(f"wrote {path} ({sum(len(t) for t in tables)} rows)")
    return 0


def cmd_sweep(args) -> int:
    from data_prep import DataError
    from playerfl_core.split_oracle import run_sweep

    try:
        table = run_sweep(
            args.dataset,
            _parse_list(args.seeds, int),
            args.profile,
            lr=args.lr,
            rounds=args.rounds,
            device=args.device,
            splits=_parse_list(args.splits, int) if args.splits else None,
            workers=args.workers,
        )
    except (DataError, DivergenceError) as err:
        print(f"playerfl: {err}", file=sys.stderr)
        return 2
    path = save_table(table, args.out)
    print(f"wrote {path} ({len(table)} rows, algorithms {', '.join(table['algorithm'].unique())})")
    return 0


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        if args.command == "run":
            return cmd_run(args)
        if args.command == "grid":
            return cmd_grid(args)
        if args.command == "status":
            return cmd_status(args)
        if args.command == "archive":
            return cmd_archive(args)
        if args.command == "sweep":
            return cmd_sweep(args)
    except ValueError as err:
        print(f"playerfl: {err}", file=sys.stderr)
        return 2
    return 1


if __name__ == "__main__":
    sys.exit(main())
