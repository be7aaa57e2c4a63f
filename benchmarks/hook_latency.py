"""Latency of a `decide` in a fresh process, as a PreToolUse hook pays it, on a 7,000-file tree.

    python benchmarks/hook_latency.py [--files 7000] [--runs 30]

Generates the tree of `benchmarks/detection.py` in /tmp with a state directory beside it, lets it
age past the racy window, then times whole processes, side by side in one run:
  python -c pass       the floor: starting the interpreter;
  import ledger_impl   the interpreter plus Ledger's imports;
  decide (reuse)       open the session, decide a repeated read: served from the ledger;
  decide (allow)       open the session, decide a new command (a pending call is stored);
  record               open the session, record that command's result (PostToolUse).
Every decide and record scans the tree against the stored stat index. p50 and p95 of wall
and CPU milliseconds. A script, not a test: it prints a table.
"""

from __future__ import annotations

import argparse
import os
import pathlib
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))

from benchmarks.detection import generate_tree  # noqa: E402
from ledger_impl.tree_snapshot import RACY_WINDOW_NS  # noqa: E402

DECIDE = """
import sys
from ledger_impl import DurableSession
with DurableSession.open(sys.argv[1], state_dir=sys.argv[2]) as session:
    decision = session.decide(sys.argv[3], call_id=sys.argv[4])
assert decision.verdict == sys.argv[5], decision
"""
RECORD = """
import sys
from ledger_impl import DurableSession
with DurableSession.open(sys.argv[1], state_dir=sys.argv[2]) as session:
    session.record(sys.argv[3], "", 0)
"""


def percentile(samples: list[float], share: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, round(share * (len(ordered) - 1)))]


def run_process(argv: list[str]) -> tuple[float, float]:
    started, before = time.perf_counter(), os.times()
    subprocess.run(argv, check=True, stdout=subprocess.DEVNULL)
    after = os.times()
    return (time.perf_counter() - started) * 1000, (after[2] + after[3] - before[2] - before[3]) * 1000


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=7000)
    parser.add_argument("--runs", type=int, default=30)
    args = parser.parse_args()
    base = pathlib.Path(tempfile.mkdtemp(prefix="ledger-hook-bench-"))
    try:
        root, state = base / "tree", base / "state"
        root.mkdir()
        generate_tree(root, args.files)
        time.sleep(RACY_WINDOW_NS / 1e9 + 0.5)
        python = sys.executable
        target = str(next(root.rglob("file1.py")).relative_to(root))
        # The first decide and record build the index and the observation the reuse runs serve.
        run_process([python, "-c", DECIDE, str(root), str(state), f"cat {target}", "warm", "allow"])
        run_process([python, "-c", RECORD, str(root), str(state), "warm"])
        samples: dict[str, list[tuple[float, float]]] = {
            name: [] for name in ("python -c pass", "import ledger_impl", "decide (reuse)", "decide (allow)", "record")
        }
        for index in range(args.runs):  # interleaved, so load changes hit every row alike
            samples["python -c pass"].append(run_process([python, "-c", "pass"]))
            samples["import ledger_impl"].append(run_process([python, "-c", "import ledger_impl"]))
            samples["decide (reuse)"].append(
                run_process([python, "-c", DECIDE, str(root), str(state), f"cat {target}", f"r{index}", "reuse"])
            )
            samples["decide (allow)"].append(
                run_process([python, "-c", DECIDE, str(root), str(state), f"echo {index}", f"a{index}", "allow"])
            )
            samples["record"].append(run_process([python, "-c", RECORD, str(root), str(state), f"a{index}"]))
        print(f"{args.files:,} files, {args.runs} runs each; milliseconds per process")
        print("| process | p50 wall | p95 wall | p50 cpu | p95 cpu |\n|---|---:|---:|---:|---:|")
        for name, pairs in samples.items():
            walls, cpus = [w for w, _ in pairs], [c for _, c in pairs]
            print(
                f"| {name} | {statistics.median(walls):.0f} | {percentile(walls, 0.95):.0f} "
                f"| {statistics.median(cpus):.0f} | {percentile(cpus, 0.95):.0f} |"
            )
    finally:
        shutil.rmtree(base, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
