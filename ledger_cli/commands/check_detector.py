"""`ledger check-detector MODULE:FACTORY`: hunt stale reuse for a user's detector.

Exit 0 if the hunt found no violation, 1 if it found one (each minimized counterexample is
written to --out), 2 on a usage error, found before any hunting starts: --out is not a usable
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
import sys
import traceback

from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from properties.profiles import default_workers
from properties.replay import DetectorLoadError, load_factory, parse_spec

EXIT_HARNESS_ERROR = 3
EXIT_INTERRUPTED = 130
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
        help=f"processes sharing the hunt (default: the number of cores, {default_workers()} here)",
    )
    parser.set_defaults(run=run)


def output_directory_problem(out: str) -> str | None:
    """Why `out` cannot receive counterexample files, or None: it must be a writable directory,
    or not exist yet below a writable directory (it is created only if something is found)."""
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
    from properties.profiles import profile as named_profile

    if args.max_examples is not None and args.max_examples < 1:
        return "--max-examples must be at least 1"
    if args.workers is not None and args.workers < 1:
        return "--workers must be at least 1"
    if args.seed is not None and not 0 <= args.seed <= MAX_SEED:
        return f"--seed must be between 0 and {MAX_SEED}"
    if args.path is not None and not pathlib.Path(args.path).is_dir():
        return f"--path {args.path} is not a directory"
    try:
        named_profile(args.profile)
        parse_spec(args.detector)
    except (DetectorLoadError, ValueError) as error:
        return str(error)
    return output_directory_problem(args.out)


def run(args: argparse.Namespace) -> int:
    from properties.hunt import DetectorFailed, run_hunt
    from properties.profiles import profile as named_profile

    err = Console(stderr=True)
    problem = usage_problem(args)
    if problem is not None:
        print(f"ledger check-detector: {problem}", file=sys.stderr)
        return 2
    chosen = named_profile(args.profile)
    try:
        # The user typed this name: their current directory is searched too.
        factory = load_factory(args.detector, args.path, search_cwd=True)
    except DetectorLoadError as error:
        print(f"ledger check-detector: {error}", file=sys.stderr)
        return 2

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
                workers=args.workers if args.workers is not None else default_workers(),
                fingerprint=False,  # the detector is judged alone: the fingerprint would hide its misses
                probe=False,  # and so would the probe's identity checks
            )
        except KeyboardInterrupt:
            progress.stop()
            print("ledger check-detector: interrupted; the hunt's workspace was removed and its commands stopped", file=sys.stderr)
            return EXIT_INTERRUPTED
        except DetectorFailed as error:
            print(f"ledger check-detector: {error}", file=sys.stderr)
            return 2
        except Exception as error:  # noqa: BLE001 - the harness's own fault: say so, with where
            where = traceback.extract_tb(error.__traceback__)[-1]
            print(
                f"ledger check-detector: internal error in the hunt harness (not your detector): "
                f"{type(error).__name__}: {(str(error).splitlines() or [''])[0]} at {pathlib.Path(where.filename).name}:{where.lineno}",
                file=sys.stderr,
            )
            return EXIT_HARNESS_ERROR

    summary = {
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
            {"id": doc["id"], "property": doc["property"], "step": doc["violation"]["step"], "file": str(path)}  # type: ignore[index]
            for doc, path in zip(report.counterexamples, report.files or [None] * len(report.counterexamples))
        ],
    }
    if args.json:
        print(json.dumps(summary, indent=2))
    else:
        out = Console()
        table = Table(title=f"check-detector {report.detector} ({report.profile}, seed {report.seed})")
        for column in ("property", "steps", "file"):
            table.add_column(column)
        for violation in summary["violations"]:  # type: ignore[union-attr]
            table.add_row(violation["property"], str(violation["step"] + 1), violation["file"])
        if summary["violations"]:
            out.print(table)
            out.print(f"[red]{len(report.counterexamples)} violation(s)[/red]; replay with `ledger replay FILE`")
        else:
            out.print(f"[green]no violation[/green] in {report.examples} runs")
        out.print(f"{report.steps} steps in {report.seconds:.1f} s ({report.steps_per_second:.1f} steps/s)")
        for message, count in report.detector_errors.items():
            out.print(f"[yellow]the detector failed to report[/yellow] at {count} step(s) (recorded as unknown, costing reuse): {escape(message)}", highlight=False)
        if report.unconfirmed:
            out.print(f"[yellow]{report.unconfirmed} failing run(s) did not fail again when replayed[/yellow] (flaky; not written)")
    return 1 if report.found else 0
