"""`ledger check-detector MODULE:FACTORY`: hunt stale reuse for a user's detector.

Exit 0 if the hunt found no violation, 1 if it found one (each minimized counterexample is
written to --out), 2 on a usage error: the module is not found, the factory raises, or what it
returns is not a detector.
"""

from __future__ import annotations

import argparse
import json
import sys

from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from properties.profiles import default_workers
from properties.replay import DetectorLoadError, load_factory


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


def run(args: argparse.Namespace) -> int:
    from properties.hunt import run_hunt
    from properties.profiles import profile as named_profile

    err = Console(stderr=True)
    if args.max_examples is not None and args.max_examples < 1:
        err.print("ledger check-detector: --max-examples must be at least 1")
        return 2
    if args.workers is not None and args.workers < 1:
        err.print("ledger check-detector: --workers must be at least 1")
        return 2
    try:
        chosen = named_profile(args.profile)
        factory = load_factory(args.detector, args.path)
    except (DetectorLoadError, ValueError) as error:
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
            )
        except Exception as error:  # noqa: BLE001 - the user's detector raised mid-hunt
            print(f"ledger check-detector: the detector raised during the hunt: {type(error).__name__}: {error}", file=sys.stderr)
            return 2

    summary = {
        "detector": report.detector,
        "profile": report.profile,
        "seed": report.seed,
        "runs": report.examples,
        "steps": report.steps,
        "seconds": round(report.seconds, 2),
        "steps_per_second": round(report.steps_per_second, 2),
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
    return 1 if report.found else 0
