"""`ledger sessions list|show|prune`: the durable session databases in the state directory.

`list` prints one line per workspace database; `show ROOT|ID` its details, latest notes and
inform view; `prune` deletes databases whose workspace is gone (always), untouched for
`--older-than DAYS`, or that cannot be read (`--unreadable`), and those set aside when discarded.
Nothing here writes to a database it keeps.
Exit 2 on bad usage (an unknown session, a negative age).
"""

from __future__ import annotations

import argparse
import datetime
import os
import sys
import time
from pathlib import Path

from ledger_cli.errors import EXIT_USAGE
from ledger_impl.session import trusted_ledger
from ledger_impl.store import (
    SessionSummary,
    database_path,
    discarded_databases,
    list_sessions,
    read_state,
    remove_database,
)


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "sessions",
        help="list, show or prune the durable session databases",
        description="The session databases hooks keep outside each workspace.",
    )
    parser.add_argument("--state-dir", default=None, help="where the databases live (default: $XDG_STATE_HOME/ledger)")
    actions = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    actions.add_parser("list", help="one line per workspace").set_defaults(run=run_list)
    show = actions.add_parser("show", help="details, notes and inform view of one session")
    show.add_argument("session", metavar="ROOT|ID", help="the workspace directory, or the id `list` prints")
    show.set_defaults(run=run_show)
    prune = actions.add_parser("prune", help="delete databases of gone workspaces (and, with --older-than, idle ones)")
    prune.add_argument("--older-than", type=float, default=None, metavar="DAYS", help="also those idle this long")
    prune.add_argument("--unreadable", action="store_true", help="also those that cannot be read")
    prune.add_argument("--dry-run", action="store_true", help="say what would be deleted, delete nothing")
    prune.set_defaults(run=run_prune)


def _when(timestamp: float | None) -> str:
    if timestamp is None:
        return "never"
    return datetime.datetime.fromtimestamp(timestamp, datetime.timezone.utc).strftime("%Y-%m-%d %H:%M:%SZ")


def run_list(args: argparse.Namespace) -> int:
    sessions = list_sessions(args.state_dir)
    if not sessions:
        print("no sessions")
        return 0
    for summary in sessions:
        if summary.problem is not None:
            print(f"{summary.ident}  {summary.problem}  {summary.path}")
            continue
        print(
            f"{summary.ident}  steps {summary.steps:<5} pending {summary.pending:<2} "
            f"updated {_when(summary.updated_at)}  {summary.size / 1024:.0f} KiB  {summary.root}"
        )
    return 0


def _find(args: argparse.Namespace) -> SessionSummary | None:
    sessions = list_sessions(args.state_dir)
    wanted = args.session
    if os.path.isdir(wanted):
        path = database_path(wanted, args.state_dir)
        return next((s for s in sessions if s.path == path), None)
    matches = [s for s in sessions if s.ident.startswith(wanted) or s.root == wanted]
    return matches[0] if len(matches) == 1 else None


def run_show(args: argparse.Namespace) -> int:
    summary = _find(args)
    if summary is None:
        print(f"ledger sessions show: no single session matches {args.session!r} (see `ledger sessions list`)", file=sys.stderr)
        return EXIT_USAGE
    print(f"session {summary.ident}\nroot    {summary.root}\nstore   {summary.path}")
    if summary.problem is not None:
        print(f"problem {summary.problem}")
        return 0
    print(f"steps   {summary.steps}; pending {summary.pending}; abandoned {summary.abandoned}; updated {_when(summary.updated_at)}")
    row, rows, notes = read_state(summary.path)
    for at, text in notes:
        print(f"note    {_when(at)} {text}")
    if row is not None:
        ledger, _, problem = trusted_ledger(row, rows, None)
        print(ledger.render() if ledger is not None else f"(ledger not shown: {problem})")
    return 0


def run_prune(args: argparse.Namespace) -> int:
    if args.older_than is not None and args.older_than < 0:
        print("ledger sessions prune: --older-than must be at least 0 days", file=sys.stderr)
        return EXIT_USAGE
    cutoff = None if args.older_than is None else time.time() - args.older_than * 86400
    removed = 0
    for summary in list_sessions(args.state_dir):
        if summary.problem is not None:
            if not args.unreadable:
                continue
            reason = summary.problem
        elif summary.root is None or not Path(summary.root).is_dir():
            reason = "workspace gone"
        elif cutoff is not None and (summary.updated_at or 0) < cutoff:
            reason = f"idle since {_when(summary.updated_at)}"
        else:
            continue
        print(f"{'would delete' if args.dry_run else 'deleted'} {summary.ident} ({reason}) {summary.root or summary.path}")
        if not args.dry_run:
            remove_database(summary.path)
        removed += 1
    for path in discarded_databases(args.state_dir):
        print(f"{'would delete' if args.dry_run else 'deleted'} {path.name} (set aside when discarded)")
        if not args.dry_run:
            remove_database(path)
    print(f"{removed} session(s) {'to delete' if args.dry_run else 'deleted'}")
    return 0
