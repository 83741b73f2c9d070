"""``playerfl study``: list the declared studies, show one, or run one (``study.registry``,
``study.runner``)."""

from __future__ import annotations

import argparse
from pathlib import Path

from playerfl_core.cli.options import add_backend_options, backend_from
from playerfl_core.study import registry, runner
from playerfl_core.study.declaration import REQUIRED
from playerfl_core.study.run_store import default_store


def add_parser(sub, common: argparse.ArgumentParser) -> None:
    """The ``study`` command and its ``list``, ``show`` and ``run`` subcommands."""
    study = sub.add_parser(
        "study", parents=[common], help="list, show or run a declared study (its runs, store)"
    )
    cmds = study.add_subparsers(dest="study_command", required=True)
    cmds.add_parser("list", help="every declared study: name, what it asks, committed or not")
    show = cmds.add_parser("show", help="what a study declares, its store, SHA-256 and cost")
    show.add_argument("name", help="a study's name (playerfl study list)")
    run = cmds.add_parser("run", help="compute a study (resumable) and commit its store")
    run.add_argument("name", help="a study's name (playerfl study list)")
    add_backend_options(run)
    run.add_argument(
        "--workers",
        type=int,
        help="local worker processes (default 2 on a CPU); paper_scale: runs per chunk",
    )
    run.add_argument("--device", help="cpu or cuda (default: cpu locally, the backend's on Ray)")
    run.add_argument("--dry-run", action="store_true", help="list the runs, compute nothing")
    run.add_argument("--tiny", action="store_true", help="a CPU stand-in, where the study has one")
    run.add_argument(
        "--out",
        type=Path,
        help="a folder for finished runs and the table in place of the study's own "
        "(--tiny: default results/tiny)",
    )
    run.add_argument(
        "--budget-s", type=float, default=480.0, help="paper_scale: seconds to stop within"
    )
    run.add_argument("--max-chunks", type=int, help="paper_scale: stop after this many chunks")


def cmd_study(args) -> int:
    if args.study_command == "list":
        return _list(registry.studies())
    study = registry.tiny(args.name) if getattr(args, "tiny", False) else registry.study(args.name)
    if args.study_command == "show":
        return _show(study)
    return _run(study, args)


def _list(studies) -> int:
    width = max(len(n) for n in studies)
    for name, study in studies.items():
        committed = "committed" if runner.store_state(study)["committed"] else "not committed"
        print(f"{name:<{width}}  {committed:<13}  {study.what}")
    return 0


def _show(study) -> int:
    fields = [f for f in REQUIRED if f != "name"]
    fields += [f for f in ("learning_rates", "splits", "loader", "training", "training_profile",
                           "work") if getattr(study, f) not in ((), None)]  # fmt: skip
    print(study.name)
    for field in fields:
        print(f"  {field}: {_text(getattr(study, field))}")
    state = runner.store_state(study)
    if not state["committed"]:
        print(f"  store: {state['path']} is not committed; compute it: {runner.command(study)}")
        return 0
    sha = {True: "matches its record", False: "DIFFERS from its record",
           None: "not kept in its record"}[state["sha256_matches"]]  # fmt: skip
    if state["cpu_seconds"] is not None:
        cost = f"cost {state['cpu_seconds']:,.0f} CPU-s"
    elif state["device_seconds"] is not None:
        cost = f"cost {state['device_seconds']:,.0f} device-s"
    else:
        cost = "its record keeps no cost"
    runs = f" over {state['runs']} runs" if state["runs"] is not None else ""
    print(f"  store: {state['path']} committed; SHA-256 {sha}; {cost}{runs}")
    return 0 if state["sha256_matches"] is not False else 1


def _text(value) -> str:
    if isinstance(value, tuple) and value and isinstance(value[0], tuple):
        return ", ".join(f"{k} = {v}" for k, v in value)
    if isinstance(value, tuple):
        return ", ".join(map(str, value))
    return str(value)


def _run(study, args) -> int:
    if args.workers is not None and args.workers < 1:
        raise ValueError(f"--workers {args.workers}: give at least 1.")
    backend, device = backend_from(args)
    out = args.out or (default_store("tiny") if args.tiny else None)
    options = runner.RunOptions(
        backend, args.workers, device, out, args.budget_s, max_chunks=args.max_chunks
    )
    return (runner.dry_run if args.dry_run else runner.run)(study, options)
