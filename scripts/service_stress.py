"""The long service stress: `python scripts/service_stress.py [--calls 1000] [--sessions 8] [--workspaces 2]`.

Runs `ledger_properties.service_stress.run_service_stress` in a temporary directory and prints its
report as JSON; exit 1 on a stale Reuse or an unanswered call. The suite runs a bounded version
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

from ledger_properties.service_stress import run_service_stress  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=1000)
    parser.add_argument("--sessions", type=int, default=8)
    parser.add_argument("--workspaces", type=int, default=2)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    base = pathlib.Path(tempfile.mkdtemp(prefix="ledger-service-stress-"))
    try:
        report = run_service_stress(base, sessions=args.sessions, workspaces=args.workspaces, calls=args.calls,
                                    seed=args.seed)
    finally:
        shutil.rmtree(base, ignore_errors=True)
    print(json.dumps(attrs.asdict(report), indent=2))
    return 0 if report.ok else 1


if __name__ == "__main__":
    sys.exit(main())
