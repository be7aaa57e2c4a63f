"""The `ledger` command line. Each subcommand lives in `ledger_cli.commands.<name>`.

A subcommand module exposes `register(subparsers)`, which adds its parser and sets
`run=<callable(args) -> int>` as a default. Exit codes (`ledger_cli.errors`): 0 holds, 1 a
violation, 2 bad usage or input, 3 the harness's own failure, 130 interrupted. A `LedgerError`
a command does not handle itself ends it here: one line on stderr, its family's exit code.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.metadata
import sys
from typing import Sequence

from ledger_cli.errors import EXIT_USAGE, exit_code, one_line
from ledger_spec.errors import LedgerError

DISTRIBUTION = "ledger-runtime"
COMMANDS: tuple[str, ...] = (
    "verify", "prove", "check_detector", "replay", "sessions", "hook", "hooks", "serve", "economize", "audit",
)


def installed_version() -> str:
    """The version of the installed distribution (one source of truth: pyproject's, as installed)."""
    try:
        return importlib.metadata.version(DISTRIBUTION)
    except importlib.metadata.PackageNotFoundError:
        return "unknown (not installed: run from a source tree)"


def build_parser(commands: Sequence[str] = COMMANDS) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="ledger",
        description="Verification-first execution state for coding agents.",
    )
    parser.add_argument("--version", action="version", version=f"ledger {installed_version()}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in commands:
        importlib.import_module(f"ledger_cli.commands.{name}").register(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    # An agent starts `ledger hook` around every tool call, and the thin client starts `ledger
    # serve` on an agent's first call: each loads only its own module, not the proof and hunt
    # machinery the other commands import.
    parser = build_parser((argv[0],) if argv[:1] in (["hook"], ["serve"]) else COMMANDS)
    args = parser.parse_args(argv)
    if not getattr(args, "run", None):
        parser.print_help()
        return EXIT_USAGE
    try:
        return int(args.run(args))
    except LedgerError as error:  # one line, and the exit code of its family (ledger_cli.errors)
        print(f"ledger {args.command}: {one_line(error)}", file=sys.stderr)
        return exit_code(error)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
