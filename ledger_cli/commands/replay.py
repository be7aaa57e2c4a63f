"""`ledger replay FILE [--detector MODULE:FACTORY]`: replay a counterexample step by step.

Each step is printed with its verdict; at the violation, a diff of the stale (reused) output
against what running the command printed. Exit 1 if the violation occurs, 0 if it does not,
2 if the file or the detector cannot be loaded.
"""

from __future__ import annotations

import argparse
import difflib
import sys

from rich.console import Console
from rich.markup import escape

from properties.replay import CounterexampleError, DetectorLoadError, load_document, load_factory, replay


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "replay",
        help="replay a counterexample file; exit 1 if the violation occurs",
        description="Replay a counterexample in a fresh temporary repository, step by step.",
    )
    parser.add_argument("file", metavar="FILE")
    parser.add_argument("--detector", metavar="MODULE:FACTORY", default=None,
                        help="replay against this detector instead of the one recorded in FILE")
    parser.add_argument("--path", default=None, help="directory to import MODULE from")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    try:
        document = load_document(args.file)
        spec = args.detector or str(document["detector"])
        factory = load_factory(spec, args.path)
    except (CounterexampleError, DetectorLoadError) as error:
        print(f"ledger replay: {error}", file=sys.stderr)
        return 2
    out = Console(highlight=False)
    out.print(f"[bold]{document['id']}[/bold]: {escape(str(document.get('explanation', '')))}")
    out.print(f"property {document['property']}, detector {spec}")

    def show(record: object) -> None:
        command = record.template.replace("\n", "\\n")  # type: ignore[attr-defined]
        if len(command) > 100:
            command = command[:97] + "..."
        colour = {"reuse": "yellow", "nudge": "cyan"}.get(record.verdict, "white")  # type: ignore[attr-defined]
        out.print(f"{record.index + 1:>3} [{colour}]{record.verdict:<5}[/{colour}] exit {record.exit_code:<3} {escape(command)}")  # type: ignore[attr-defined]

    result = replay(document, factory, on_record=show)
    violation = result.violation
    if violation is None:
        out.print(f"[green]not reproduced[/green]: no {result.property} violation in {len(result.records)} steps")
        return 0
    out.print(f"[red]violation at step {violation.step + 1}[/red]: {escape(violation.message)}")  # type: ignore[attr-defined]
    expected, observed = violation.expected, violation.observed  # type: ignore[attr-defined]
    if "output" in expected and "output" in observed:
        diff = difflib.unified_diff(
            str(observed["output"]).splitlines(keepends=True),
            str(expected["output"]).splitlines(keepends=True),
            "stale (reused)",
            "fresh (run now)",
        )
        text = "".join(line if line.endswith("\n") else line + "\n\\ No newline at end of output\n" for line in diff)
        out.print(escape(text), end="")
        if observed.get("exit_code") != expected.get("exit_code"):
            out.print(f"exit status: stale {observed.get('exit_code')}, fresh {expected.get('exit_code')}")
    else:
        out.print(f"expected {expected}\nobserved {observed}")
    return 1
