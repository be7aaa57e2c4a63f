"""The `ledger` command line. Each subcommand lives in `ledger_cli.commands.<name>`.

A subcommand module exposes `register(subparsers)`, which adds its parser and sets
`run=<callable(args) -> int>` as a default. Exit codes: 0 holds, 1 a violation, 2 bad usage.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from typing import Sequence

COMMANDS: tuple[str, ...] = ("verify", "prove", "check_detector", "replay", "sessions", "hook", "hooks", "serve", "economize", "audit")


def build_parser(commands: Sequence[str] = COMMANDS) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="ledger",
        description="Verification-first execution state for coding agents.",
    )
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
        return 2
    return int(args.run(args))


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
