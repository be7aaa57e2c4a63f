"""The `--scheduler` and `--database` flags that `verify`, `check-detector` and `audit` share:
run the hunt's workers (or the audit's trajectories) as tasks on a Dask cluster."""

from __future__ import annotations

import argparse
import importlib.util


def add_cluster_arguments(parser: argparse.ArgumentParser, *, database: bool = True) -> None:
    parser.add_argument(
        "--scheduler", default=None, metavar="ADDRESS",
        help="a Dask (distributed) scheduler, e.g. tcp://10.0.0.5:8786: run the workers as tasks on its cluster",
    )
    if database:
        parser.add_argument(
            "--database", default=None, metavar="DIR",
            help="Hypothesis example database shared by the workers, on storage they all see "
            "(default with --scheduler: $XDG_STATE_HOME/ledger/hunt-examples; without: a temporary one)",
        )


def cluster_problem(args: argparse.Namespace) -> str | None:
    """Why the cluster flags cannot be honoured, or None (checked before any work starts)."""
    if args.scheduler is not None and importlib.util.find_spec("distributed") is None:
        return "--scheduler needs the `distributed` package (pip install distributed)"
    return None

