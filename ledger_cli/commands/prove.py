"""`ledger prove`: run the Z3 theorems and print each with its result and time.

Exit 0 only if every positive theorem is proved and every negative theorem yields its
counterexample; 1 otherwise. `--json` prints a JSON list instead of the table;
`--write-counterexamples [DIR]` turns each negative theorem's model into a replayable
counterexample file (schema in counterexamples/README.md).
"""

from __future__ import annotations

import argparse
import json
import pathlib
import sys

from rich.console import Console
from rich.table import Table

from ledger_cli.errors import EXIT_OK, EXIT_USAGE, EXIT_VIOLATION
from ledger_spec.z3_theorems import TheoremResult, run_all

__all__ = ["register", "run", "run_all"]


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("prove", help="run the Z3 proofs of the counter scheme, freshness and govern")
    parser.add_argument("--json", action="store_true", help="print results as a JSON list")
    parser.add_argument(
        "--write-counterexamples",
        nargs="?",
        const="counterexamples",
        default=None,
        metavar="DIR",
        help="write each negative theorem's counterexample as JSON under DIR (default: counterexamples)",
    )
    parser.set_defaults(run=run)


def _as_json(result: TheoremResult) -> dict[str, object]:
    shown = {name: getattr(result, name) for name in ("name", "kind", "statement", "status", "as_expected")}
    return {**shown, "seconds": round(result.seconds, 4), "model": result.model_text}


def _write_counterexamples(results: list[TheoremResult], directory: pathlib.Path) -> list[pathlib.Path]:
    from ledger_properties.counterexample import dump, from_trace

    written = []
    for result in results:
        if result.kind == "negative" and result.trace is not None:
            written.append(dump(from_trace(result.trace, theorem=result.name), directory / f"z3-{result.name}.json"))
    return written


def run(args: argparse.Namespace) -> int:
    directory = args.write_counterexamples
    if directory is not None and pathlib.Path(directory).exists() and not pathlib.Path(directory).is_dir():
        print(f"ledger prove: --write-counterexamples {directory} exists and is not a directory", file=sys.stderr)
        return EXIT_USAGE
    results = run_all()
    written: list[pathlib.Path] = []
    if args.write_counterexamples is not None:
        written = _write_counterexamples(results, pathlib.Path(args.write_counterexamples))
    ok = all(result.as_expected for result in results)
    if args.json:
        print(json.dumps([_as_json(result) for result in results], indent=2))
        return EXIT_OK if ok else EXIT_VIOLATION

    console = Console()
    if console.width < 100:  # pipes and CI logs default to 80 columns, which cut the results
        console = Console(width=100)
    table = Table(title="ledger prove")
    table.add_column("theorem", no_wrap=True)
    table.add_column("kind")
    table.add_column("result")
    table.add_column("seconds", justify="right")
    for result in results:
        style = "green" if result.as_expected else "bold red"
        table.add_row(result.name, result.kind, f"[{style}]{result.status}[/]", f"{result.seconds:.2f}")
    console.print(table)
    for result in results:
        if result.model_text and result.status != "proved":
            heading = "counterexample (expected)" if result.as_expected else "FAILED"
            console.print(f"\n[bold]{result.name}[/]: {heading}\n  {result.statement}", highlight=False)
            console.print(result.model_text, highlight=False, markup=False, soft_wrap=True)
    for path in written:
        console.print(f"wrote {path}", highlight=False)
    total = sum(result.seconds for result in results)
    verdict = "all theorems as expected" if ok else "SOME THEOREMS FAILED"
    console.print(f"\n{verdict} ({total:.2f}s)", highlight=False)
    return EXIT_OK if ok else EXIT_VIOLATION
