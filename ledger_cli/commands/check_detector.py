"""`ledger check-detector MODULE:FACTORY`: hunt stale reuse for a user's detector.

Exit 0 if the hunt found no violation, 1 if it found one (each minimized counterexample is
written as `<id>.json` into the directory --out, created if missing), 2 on a usage error, found before any hunting starts: --out is not a usable
directory, an unknown profile, a seed out of range, a name that is not MODULE:FACTORY, a module
not found, a factory that raises or returns no detector. 3 if the hunt's own code failed (a
harness error, never blamed on the detector), 130 if interrupted (Ctrl-C): the hunt's
temporary workspace and the commands it ran are gone.
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import shlex
import sys
import traceback
from typing import TYPE_CHECKING, Any, Mapping

from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from ledger_cli.errors import EXIT_HARNESS_ERROR, EXIT_INTERRUPTED, EXIT_OK, EXIT_USAGE, EXIT_VIOLATION
from ledger_properties.profiles import default_workers
from ledger_properties.replay import DetectorLoadError, load_factory, parse_spec

from .cluster import add_cluster_arguments, cluster_problem

if TYPE_CHECKING:  # the hunt machinery is imported when a hunt runs, not to parse arguments
    from ledger_properties.hunt import HuntReport

MAX_SEED = 2**32 - 1


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "check-detector",
        help="hunt stale reuse for a detector MODULE:FACTORY; exit 1 if a counterexample is found",
        description="Run the real-filesystem safety hunt against FACTORY() and write each minimized "
        "counterexample as a JSON file.",
    )
    parser.add_argument("detector", metavar="MODULE:FACTORY", help="e.g. mypkg.detect:make_detector")
    parser.add_argument("--max-examples", type=int, default=None, help="state-machine runs (default: the profile's)")
    parser.add_argument("--seed", type=int, default=None, help="make the hunt repeatable (default: drawn, and printed)")
    parser.add_argument("--out", default="counterexamples", help="directory for counterexample files (default: %(default)s)")
    parser.add_argument("--profile", default=None, help="ci, dev or thorough (default: $LEDGER_PROFILE, else ci)")
    parser.add_argument("--path", default=None, help="directory to import MODULE from (the current one is searched too)")
    parser.add_argument("--json", action="store_true", help="print the summary as JSON")
    parser.add_argument(
        "--workers", type=int, default=None, metavar="N",
        help=f"processes sharing the hunt (default: the number of cores, {default_workers()} here; "
        "with --scheduler, one task per thread of the cluster)",
    )
    add_cluster_arguments(parser)
    parser.set_defaults(run=run)


def output_directory_problem(out: str) -> str | None:
    """Why `out` cannot receive counterexample files, or None: it must be a writable directory,
    or not exist yet below a writable directory (it is created, as a directory, only if
    something is found)."""
    path = pathlib.Path(out)
    if path.exists() and not path.is_dir():
        return f"--out {out} exists and is not a directory"
    existing = path
    while not existing.exists():
        existing = existing.parent
    if not existing.is_dir():
        return f"--out {out}: {existing} is not a directory"
    if not os.access(existing, os.W_OK | os.X_OK):
        return f"--out {out}: {existing} is not writable"
    return None


def usage_problem(args: argparse.Namespace) -> str | None:
    """The first argument that is wrong, checked before anything is imported or run."""
    from ledger_properties.profiles import profile as named_profile

    if args.max_examples is not None and args.max_examples < 1:
        return "--max-examples must be at least 1"
    if args.workers is not None and args.workers < 1:
        return "--workers must be at least 1"
    if args.seed is not None and not 0 <= args.seed <= MAX_SEED:
        return f"--seed must be between 0 and {MAX_SEED}"
    if args.path is not None and not pathlib.Path(args.path).is_dir():
        return f"--path {args.path} is not a directory"
    if (cluster := cluster_problem(args)) is not None:
        return cluster
    try:
        named_profile(args.profile)
        parse_spec(args.detector)
    except (DetectorLoadError, ValueError) as error:
        return str(error)
    return output_directory_problem(args.out)


def run(args: argparse.Namespace) -> int:
    from ledger_properties.dask_hunt import SchedulerUnavailable
    from ledger_properties.hunt import DetectorFailed, run_hunt
    from ledger_properties.profiles import profile as named_profile

    err = Console(stderr=True)
    problem = usage_problem(args)
    if problem is not None:
        print(f"ledger check-detector: {problem}", file=sys.stderr)
        return EXIT_USAGE
    chosen = named_profile(args.profile)
    try:
        # The user typed this name: their current directory is searched too.
        factory = load_factory(args.detector, args.path, search_cwd=True)
    except DetectorLoadError as error:
        print(f"ledger check-detector: {error}", file=sys.stderr)
        return EXIT_USAGE

    total = args.max_examples or chosen.hunt_examples
    command = "ledger check-detector " + " ".join(sys.argv[2:]) if sys.argv[1:2] == ["check-detector"] else ""
    progress = Progress(
        TextColumn("[bold]hunting[/bold] {task.description}"),
        BarColumn(),
        TextColumn("{task.completed}/{task.total} runs, {task.fields[steps]} steps"),
        TimeElapsedColumn(),
        console=err,
        disable=args.json,
        transient=True,
    )
    with progress:
        task = progress.add_task(args.detector, total=total, steps=0)

        def on_step(examples: int, steps: int) -> None:
            progress.update(task, completed=min(examples, total), steps=steps)

        try:
            report = run_hunt(
                factory,
                chosen,
                seed=args.seed,
                out_dir=args.out,
                detector=args.detector,
                command=command or f"ledger check-detector {args.detector}",
                on_step=on_step,
                max_examples=args.max_examples,
                workers=args.workers if args.workers is not None or args.scheduler else default_workers(),
                scheduler=args.scheduler,
                database=args.database,
                fingerprint=False,  # the detector is judged alone: the fingerprint would hide its misses
                probe=False,  # and so would the probe's identity checks
            )
        except KeyboardInterrupt:
            progress.stop()
            print("ledger check-detector: interrupted; the hunt's workspace was removed and its commands stopped", file=sys.stderr)
            return EXIT_INTERRUPTED
        except (DetectorFailed, SchedulerUnavailable) as error:
            print(f"ledger check-detector: {error}", file=sys.stderr)
            return EXIT_USAGE
        except Exception as error:  # noqa: BLE001 - the harness's own fault: say so, with where
            where = traceback.extract_tb(error.__traceback__)[-1]
            print(
                f"ledger check-detector: internal error in the hunt harness (not your detector): "
                f"{type(error).__name__}: {(str(error).splitlines() or [''])[0]} at {pathlib.Path(where.filename).name}:{where.lineno}",
                file=sys.stderr,
            )
            return EXIT_HARNESS_ERROR

    summary = hunt_summary(report)
    print_summary(summary, Console(), as_json=args.json)
    return EXIT_VIOLATION if report.found else EXIT_OK


def hunt_summary(report: "HuntReport") -> dict[str, Any]:
    """What `--json` prints. Each violation's `step` counts from 1 (the file's and the replay's
    numbering) and `stale_read` says which read the finding makes stale, or is null."""
    from ledger_properties.counterexample import from_json
    from ledger_properties.findings import stale_read

    def violation(document: Mapping[str, Any], path: pathlib.Path | None) -> dict[str, Any]:
        read = stale_read(from_json(document))
        return {"id": document["id"], "property": document["property"], "step": document["violation"]["step"],
                "file": None if path is None else str(path), "stale_read": None if read is None else read.to_json()}

    return {
        "detector": report.detector,
        "profile": report.profile,
        "seed": report.seed,
        "runs": report.examples,
        "steps": report.steps,
        "seconds": round(report.seconds, 2),
        "steps_per_second": round(report.steps_per_second, 2),
        "detector_errors": dict(report.detector_errors),
        "unconfirmed": report.unconfirmed,
        "violations": [
            violation(document, path)
            for document, path in zip(report.counterexamples, report.files or [None] * len(report.counterexamples))
        ],
    }


def print_summary(summary: Mapping[str, Any], out: Console, *, as_json: bool = False) -> None:
    """The summary as JSON, or as a table, one stale-read sentence per finding and the exact
    `ledger replay` line of each file written."""
    if as_json:
        print(json.dumps(summary, indent=2))
        return
    violations = summary["violations"]
    table = Table(title=f"check-detector {summary['detector']} ({summary['profile']}, seed {summary['seed']})")
    for column in ("property", "step", "file"):
        table.add_column(column, overflow="fold")  # a path is shown whole: it is what to replay
    for found in violations:
        table.add_row(found["property"], str(found["step"]), found["file"] or "(not written)")
    if violations:
        out.print(table)
        for found in violations:
            if found["stale_read"] is not None:
                out.print(f"{found['id']}: {escape(found['stale_read']['sentence'])}", highlight=False)
        out.print(f"[red]{len(violations)} violation(s)[/red]; replay with:")
        for found in violations:
            if found["file"] is not None:
                out.print(f"  ledger replay {escape(shlex.quote(found['file']))}", highlight=False, soft_wrap=True)
    else:
        out.print(f"[green]no violation[/green] in {summary['runs']} runs")
    out.print(f"{summary['steps']} steps in {summary['seconds']:.1f} s ({summary['steps_per_second']:.1f} steps/s)")
    for message, count in summary["detector_errors"].items():
        out.print(f"[yellow]the detector failed to report[/yellow] at {count} step(s) (recorded as unknown, costing reuse): {escape(message)}", highlight=False)
    if summary["unconfirmed"]:
        out.print(f"[yellow]{summary['unconfirmed']} failing run(s) did not fail again when replayed[/yellow] (flaky; not written)")
