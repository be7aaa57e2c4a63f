"""`ledger serve [run|status|stop]`: the per-user resident Ledger (see `ledger_impl.service`).

`run` (the default) serves in the foreground until `stop`, a signal, or `--idle-timeout`
seconds without a call; a second `run` on the same state directory exits 0 at once, saying a
service already runs. The thin client starts it on demand with `run`. `status` prints the
running service's state as JSON (exit 1 if none runs); `stop` asks it to exit.
"""

from __future__ import annotations

import argparse
import json
import signal
import sys

from ledger_cli.errors import EXIT_NOT_RUNNING
from ledger_client import thin


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("serve", help="the resident per-user Ledger service that hooks talk to")
    parser.add_argument("action", nargs="?", choices=("run", "status", "stop"), default="run")
    parser.add_argument("--state-dir", default=None, help="where sessions and the service's files live")
    parser.add_argument("--idle-timeout", type=float, default=None,
                        help="exit after this many seconds without a call (default: 1800)")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    state = thin.state_dir(args.state_dir)
    if args.action in ("status", "stop"):
        try:
            answer = thin.request(thin.socket_path(state), {"op": args.action}, 10.0)
        except thin.Unreachable as error:
            print(f"ledger serve: no service runs for {state} ({error})", file=sys.stderr)
            return EXIT_NOT_RUNNING
        print(json.dumps(answer.get("reply"), indent=2))
        return 0
    from ledger_impl.service.server import DEFAULT_IDLE_TIMEOUT_S, AlreadyRunning, Service

    service = Service(state, idle_timeout=args.idle_timeout if args.idle_timeout is not None else DEFAULT_IDLE_TIMEOUT_S)
    try:
        service.start()
    except AlreadyRunning as error:
        print(f"ledger serve: {error}")
        return 0
    for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(signum, lambda *_: service.stop())
    print(f"ledger serve: pid {service.status()['pid']} serving {state}", flush=True)
    service.wait()
    return 0
