"""``playerfl grid``, ``archive`` and ``status``: the resumable grid and the stores it fills."""

from __future__ import annotations

import os
import sys

import pandas as pd

from data_prep.registry import default_datasets
from playerfl_core import checks
from playerfl_core.cli.options import backend_from
from playerfl_core.cli.output import _save_rows
from playerfl_core.fl.algorithms import ALGORITHMS, is_algorithm
from playerfl_core.study import machine
from playerfl_core.study.archive import archive_dir, pack, verify
from playerfl_core.study.code_versions import check_code_versions, equivalent_codes, record_checks
from playerfl_core.study.experiments import Store, default_store, dry_run, run_grid
from playerfl_core.study.run_store import code_fingerprint


def cmd_grid(args) -> int:
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
    return is_algorithm(name)


def cmd_archive(args) -> int:
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
    code = code_fingerprint()
    same = equivalent_codes(code)
    now, checked = int((codes == code).sum()), int((codes.isin(same) & (codes != code)).sum())
    return (
        f"code: {now} runs by this version ({code}), {checked} by earlier versions checked to "
        f"give the same runs bit for bit, {len(codes) - now - checked} by versions not shown to "
        "(flagged stale_code; `playerfl archive check-code` checks the committed archive's)"
    )


def _check_code(path, seed: int) -> int:
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
