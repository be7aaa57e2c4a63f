"""What one tool call costs the durable session as the session grows, for this checkout and for
another one (an older store format) measured in the same run.

Each checkout runs in its own process (its code first on `sys.path`) on a workspace of 50 small
files: tool calls in a loop, two reads for every write, each decided and recorded by one
`DurableSession` kept open, as `ledger serve` keeps it (the probe off, so that what is timed is
the session and its store, not the probe's sandbox; the session's default detector, which is
Watchman where it is installed). At each size, two figures:
- **kept open**: the mean of decide + record over the last 50 calls (the service's path);
- **new process**: decide + record of one read by a session opened afresh, which holds nothing
  in memory and loads the stored state (a command hook's path, or the service's first call
  after a restart), the median of 5.
The command's own work (reading or writing the file) is done outside the timed calls.

    python benchmarks/session_growth.py --baseline /path/to/older/checkout [--sizes 250,500,1000] [--record]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import record  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
FILES = 50
WINDOW = 50
FRESH_SAMPLES = 5

COLUMNS = (
    {"name": "store", "align": "left"},
    {"name": "session steps", "align": "right", "format": "{:,}"},
    {"name": "call, session kept open (ms)", "align": "right", "format": "{:.1f}"},
    {"name": "call, session opened afresh (ms)", "align": "right", "format": "{:.1f}"},
    {"name": "database with its WAL (kB)", "align": "right", "format": "{:,}"},
)


def measure(sizes: list[int]) -> list[dict[str, float]]:
    """Run in the checkout under test (imports its `ledger_impl`)."""
    from ledger_impl.session import DurableSession

    points = []
    with tempfile.TemporaryDirectory() as scratch:
        root, state = Path(scratch) / "ws", Path(scratch) / "state"
        root.mkdir()
        for number in range(FILES):
            (root / f"f{number}.txt").write_text(f"file {number}\n" * 20)

        def one_call(session: DurableSession, number: int) -> float:
            name = f"f{(number * 7) % FILES}.txt"
            writes = number % 3 == 2
            command = f"echo {number} >> {name}" if writes else f"cat {name}"
            started = time.perf_counter()
            decision = session.decide(command, call_id=f"c{number}")
            spent = time.perf_counter() - started
            if decision.verdict == "reuse":
                return spent
            if writes:
                with open(root / name, "a") as handle:
                    handle.write(f"{number}\n")
                output = ""
            else:
                output = (root / name).read_text()
            started = time.perf_counter()
            session.record(f"c{number}", output, 0)
            return spent + time.perf_counter() - started

        kept = DurableSession.open(root, state_dir=state, probe=False)
        done = 0
        recent: list[float] = []
        for size in sizes:
            while done < size:
                recent = (recent + [one_call(kept, done)])[-WINDOW:]
                done += 1
            fresh = []
            for _ in range(FRESH_SAMPLES):
                with DurableSession.open(root, state_dir=state, probe=False) as opened:
                    fresh.append(one_call(opened, done))  # a read or a write, as the loop would
                done += 1
            database = kept.database
            stored = sum(p.stat().st_size for p in (database, Path(f"{database}-wal")) if p.exists())
            points.append({
                "steps": kept.snapshot().step, "kept_ms": 1000 * statistics.mean(recent),
                "fresh_ms": 1000 * statistics.median(fresh), "stored_kb": stored / 1024,
            })
        kept.close()
    return points


def run_checkout(checkout: Path, sizes: list[int]) -> list[dict[str, float]]:
    # The checkout first on sys.path: an editable install of this one would win over PYTHONPATH.
    program = (
        "import json, sys; sys.path[:0] = [sys.argv[1], sys.argv[2]]; import session_growth, ledger_impl;"
        " assert ledger_impl.__file__.startswith(sys.argv[1]), ledger_impl.__file__;"
        " print(json.dumps(session_growth.measure(json.loads(sys.argv[3]))))"
    )
    done = subprocess.run(
        [sys.executable, "-c", program, str(checkout), str(Path(__file__).resolve().parent), json.dumps(sizes)],
        capture_output=True, text=True, check=True,
    )
    return json.loads(done.stdout.splitlines()[-1])


def _describe(checkout: Path) -> str:
    def git(*args: str) -> str:
        return subprocess.run(["git", *args], cwd=checkout, capture_output=True, text=True).stdout.strip()

    commit = git("rev-parse", "--short", "HEAD") + ("-dirty" if git("status", "--porcelain", "--untracked-files=no") else "")
    version = subprocess.run(
        [sys.executable, "-c", "import sys; sys.path.insert(0, sys.argv[1]); from ledger_impl import store; print(store.SCHEMA_VERSION)",
         str(checkout)], capture_output=True, text=True,
    ).stdout.strip()
    return f"format {version} ({commit or checkout.name})"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--baseline", type=Path, required=True, help="a checkout of the Ledger to compare with")
    parser.add_argument("--sizes", default="250,500,1000", help="session sizes (tool calls) to measure at")
    parser.add_argument("--record", action="store_true", help="store the series under benchmarks/results/")
    args = parser.parse_args(argv)
    sizes = sorted(int(size) for size in args.sizes.split(","))
    load_before = record.load_average()
    rows = []
    for checkout in (args.baseline.resolve(), ROOT):
        name = _describe(checkout)
        for point in run_checkout(checkout, sizes):
            rows.append(record.row(
                COLUMNS, name, point["steps"], round(point["kept_ms"], 1), round(point["fresh_ms"], 1), round(point["stored_kb"]),
            ))
            print(json.dumps(rows[-1]))
    if args.record:
        record.keep(
            "session-growth", "A tool call's cost to the durable session as the session grows", "session_growth.py",
            argv, COLUMNS, rows, load_before=load_before,
            notes="50 files, two reads per write, the probe off; the two checkouts ran one after the other in one run",
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
