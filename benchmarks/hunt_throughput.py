"""Safety-hunt throughput, side by side in one run: steps per second of the default-detector hunt.

    python benchmarks/hunt_throughput.py [--workers N] [--ci-runs 8] [--thorough-runs 4] [--seed S] [--record]

Three set-ups, each on the same seed and the same number of state-machine runs, for a
`ci`-shaped hunt (25 steps per run) and a `thorough`-shaped one (60 steps per run):

  1 worker, no hash cache   one process, every file (`.git/` included) hashed at every look
  1 worker, hash cache      digests reused while a file's identity and timestamps hold
  N workers, hash cache     the runs shared out to N processes (default: every core)

Steps per second count every checked step (command, detector, ground truth, spec replay) over
the wall time of the whole hunt, process start-up included. On a shared machine the numbers
move with the load; compare columns of one run, not runs. `--record` stores the table as
`benchmarks/results/hunt-throughput.json`, with the machine, load, date and commit.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import pathlib
import sys
import time
from collections.abc import Sequence
from typing import Any, Iterator

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from benchmarks import record  # noqa: E402
from ledger_impl.detectors import default_detector  # noqa: E402
from ledger_properties import ground_truth  # noqa: E402
from ledger_properties.hunt import FULL_GRAMMAR, run_hunt  # noqa: E402
from ledger_properties.profiles import PROFILES, default_workers  # noqa: E402


@contextlib.contextmanager
def hash_cache_disabled() -> Iterator[None]:
    """Make every HashCache this process creates keep nothing (an infinite racy window)."""
    real = ground_truth.racy_window_for
    ground_truth.racy_window_for = lambda directory: 1 << 62  # type: ignore[assignment]
    try:
        yield
    finally:
        ground_truth.racy_window_for = real  # type: ignore[assignment]


def measure(profile: str, runs: int, seed: int, workers: int, cached: bool) -> tuple[int, float]:
    """(steps, seconds) of one hunt."""
    with contextlib.ExitStack() as stack:
        if not cached:
            stack.enter_context(hash_cache_disabled())
        started = time.monotonic()
        report = run_hunt(default_detector, PROFILES[profile], seed, max_examples=runs, grammar=FULL_GRAMMAR, workers=workers)
        seconds = time.monotonic() - started
    if report.found:
        print(f"  note: the hunt found {[d['property'] for d in report.counterexamples]} (time includes minimizing)")
    return report.steps, seconds


COLUMNS = (
    {"name": "profile shape", "align": "left"},
    {"name": "set-up", "align": "left"},
    {"name": "runs", "align": "right"},
    {"name": "steps", "align": "right", "format": "{:,}"},
    {"name": "s", "align": "right", "format": "{:.1f}"},
    {"name": "steps/s", "align": "right", "format": "{:.1f}"},
)


def main(argv: Sequence[str] | None = None, results: pathlib.Path = record.RESULTS) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, default=default_workers())
    parser.add_argument("--ci-runs", type=int, default=8)
    parser.add_argument("--thorough-runs", type=int, default=4)
    parser.add_argument("--seed", type=int, default=20261201)
    parser.add_argument("--record", action="store_true", help="store the table as benchmarks/results/hunt-throughput.json")
    args = parser.parse_args(argv)
    load_before = record.load_average()
    rows: list[dict[str, Any]] = []
    setups = [
        ("1 worker, no hash cache", 1, False),
        ("1 worker, hash cache", 1, True),
        (f"{args.workers} worker{'' if args.workers == 1 else 's'}, hash cache", args.workers, True),
    ]
    print(f"load average before: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    print("| profile shape | set-up | runs | steps | s | steps/s |")
    print("|---|---|---:|---:|---:|---:|")
    for profile, runs in (("ci", args.ci_runs), ("thorough", args.thorough_runs)):
        for name, workers, cached in setups:
            steps, seconds = measure(profile, runs, args.seed, workers, cached)
            print(f"| {profile} | {name} | {runs} | {steps} | {seconds:.1f} | {steps / seconds:.1f} |", flush=True)
            rows.append(record.row(COLUMNS, f"`{profile}`", name, runs, steps, round(seconds, 1), round(steps / seconds, 1)))
    print(f"load average after: {os.getloadavg()[0]:.1f}")
    if args.record:
        record.keep(
            "hunt-throughput", "Safety-hunt steps per second of the default detector, three set-ups in one run",
            "hunt_throughput.py", argv, COLUMNS, rows, load_before=load_before,
            notes=f"seed {args.seed}; every checked step over the wall time of the whole hunt, process start-up included", results=results,
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
