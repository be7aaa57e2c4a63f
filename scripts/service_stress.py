"""The long service stress: `python scripts/service_stress.py [--calls 1000] [--sessions 8] [--workspaces 2] [--record]`.

Runs `ledger_properties.service_stress.run_service_stress` in a temporary directory and prints its
report as JSON; exit 1 on a stale Reuse or an unanswered call. `--record` also stores the run as
the series `benchmarks/results/service-stress.json` (with the machine, load, date and commit),
whose table `docs/agents/service.md` shows. The suite runs a bounded version
(`tests/test_service_stress.py`).
"""

from __future__ import annotations

import argparse
import json
import pathlib
import shutil
import sys
import tempfile

import attrs

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))

from benchmarks import record  # noqa: E402
from ledger_properties.service_stress import run_service_stress  # noqa: E402

COLUMNS = [
    {"name": "sessions", "align": "right", "format": "{:,}"},
    {"name": "workspaces", "align": "right", "format": "{:,}"},
    {"name": "tool calls", "align": "right", "format": "{:,}"},
    {"name": "reuses (each run again and compared)", "align": "right", "format": "{:,}"},
    {"name": "stale", "align": "right", "format": "{:,}"},
    {"name": "unanswered", "align": "right", "format": "{:,}"},
    {"name": "answered in process (service down)", "align": "right", "format": "{:,}"},
    {"name": "kill -9", "align": "right", "format": "{:,}"},
    {"name": "seconds", "align": "right", "format": "{:.0f}"},
]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=1000)
    parser.add_argument("--sessions", type=int, default=8)
    parser.add_argument("--workspaces", type=int, default=2)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--record", action="store_true", help="store the run as benchmarks/results/service-stress.json")
    args = parser.parse_args()
    load_before = record.load_average()
    base = pathlib.Path(tempfile.mkdtemp(prefix="ledger-service-stress-"))
    try:
        report = run_service_stress(base, sessions=args.sessions, workspaces=args.workspaces, calls=args.calls,
                                    seed=args.seed)
    finally:
        shutil.rmtree(base, ignore_errors=True)
    print(json.dumps(attrs.asdict(report), indent=2))
    if args.record:
        row = record.row(COLUMNS, args.sessions, args.workspaces, report.calls, report.reused, len(report.stale),
                         len(report.errors), report.fallbacks, report.kills, report.seconds)
        command = "python scripts/service_stress.py " + " ".join(
            f"--{name} {getattr(args, name)}" for name in ("calls", "sessions", "workspaces", "seed"))
        series = record.measured(
            "service-stress", "ledger serve under kill -9: sessions on shared workspaces", command, COLUMNS, [row],
            load_before=load_before,
            notes="every Reuse served was compared at once with the file as it then was; every call answered, by the "
                  "service or, while it was down, by the in-process path the thin client falls back to",
        )
        print(f"recorded {record.write(series)}", file=sys.stderr)
    return 0 if report.ok else 1


if __name__ == "__main__":
    sys.exit(main())
