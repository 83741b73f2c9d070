"""Options several commands share: training settings and where runs compute."""

from __future__ import annotations

import argparse

from playerfl_core import checks
from playerfl_core.fl.config import PROTOCOLS
from playerfl_core.fl.engine import EVAL_TIMINGS
from playerfl_core.fl.losses import LOSSES
from playerfl_core.study.ray_cluster import RayBackend


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
