"""`ledger verify`: run every check that exists and print one summary table."""

from __future__ import annotations

import argparse


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("verify", help="run the proofs, the spec checks and the safety hunt")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    raise SystemExit("ledger verify: not wired yet")
