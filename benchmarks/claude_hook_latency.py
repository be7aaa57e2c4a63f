"""Latency of one `ledger hook claude` PreToolUse call, as Claude Code pays it, next to a bare
Python start.

    python benchmarks/claude_hook_latency.py [--runs 40] [--files 7000]

Generates the tree of `benchmarks/detection.py` (`--files` files, committed to git), then for
each run starts the real hook process (`python -m ledger_cli.main hook claude`) with a
PreToolUse payload on stdin, and also a matching PostToolUse, alternating read commands; and
`python -c pass` in the same run. Each hook call is a fresh process that opens the session's
database and polls its detector, exactly as under Claude Code: the persisted stat index, and,
when a `watchman` binary is on PATH, Watchman too (each with a state directory of its own,
calls interleaved; the Watchman daemon's own CPU is not a child's and is not counted). Prints
p50/p95 in milliseconds, wall and CPU. A script, not a test. (`benchmarks/hook_latency.py` times the
session's `decide` and `record` alone, without the CLI.)
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))

from detection import generate_tree  # noqa: E402


def timed(argv: list[str], stdin: str = "") -> tuple[float, float]:
    """Wall and CPU (user + system of the child) milliseconds of one process; CPU is what a
    loaded machine does not inflate."""
    start, before = time.perf_counter(), os.times()
    subprocess.run(argv, input=stdin, capture_output=True, text=True, check=True)
    after = os.times()
    cpu = (after.children_user - before.children_user) + (after.children_system - before.children_system)
    return (time.perf_counter() - start) * 1000, cpu * 1000


def percentile(samples: list[float], fraction: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, round(fraction * (len(ordered) - 1)))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=40)
    parser.add_argument("--files", type=int, default=7000)
    args = parser.parse_args()
    detectors = ["stat-index"] + (["watchman"] if shutil.which("watchman") else [])
    with tempfile.TemporaryDirectory() as scratch, tempfile.TemporaryDirectory() as states:
        root = pathlib.Path(scratch) / "repo"
        root.mkdir()
        generate_tree(root, args.files)

        def hook(detector: str) -> list[str]:
            state = pathlib.Path(states) / detector
            return ["env", f"LEDGER_SESSION_DETECTOR={detector}", sys.executable, "-m", "ledger_cli.main", "hook",
                    "claude", "--root", str(root), "--state-dir", str(state)]

        commands = ["cat -n pkg0/mod0/file0.py", "sed -n '1,5p' pkg1/mod3/file805.py", "grep -rn value_7 pkg2"]
        samples: dict[str, list[tuple[float, float]]] = {"python -c pass": []}
        for detector in detectors:
            samples[f"PreToolUse ({detector})"], samples[f"PostToolUse ({detector})"] = [], []
            timed(hook(detector), json.dumps({"hook_event_name": "SessionStart"}))  # the first baseline
        try:
            for run in range(args.runs):
                command = commands[run % len(commands)]
                samples["python -c pass"].append(timed([sys.executable, "-c", "pass"]))
                done = subprocess.run(["bash", "-c", command], cwd=root, capture_output=True, text=True)
                for detector in detectors:
                    call = {"hook_event_name": "PreToolUse", "tool_name": "Bash", "tool_use_id": f"toolu_{run}",
                            "cwd": str(root), "tool_input": {"command": command}}
                    samples[f"PreToolUse ({detector})"].append(timed(hook(detector), json.dumps(call)))
                    post = {**call, "hook_event_name": "PostToolUse",
                            "tool_response": {"stdout": done.stdout.rstrip(), "stderr": "", "interrupted": False}}
                    samples[f"PostToolUse ({detector})"].append(timed(hook(detector), json.dumps(post)))
        finally:
            if "watchman" in detectors:
                from ledger_impl.detectors.watchman import Daemon

                Daemon(pathlib.Path(states) / "watchman" / "watchman").shutdown()
        load = os.getloadavg()[0]
        print(f"{args.files} files, {args.runs} runs, load average {load:.1f} on {os.cpu_count()} CPUs")
        print("| process | p50 wall ms | p95 wall ms | p50 cpu ms | p95 cpu ms |\n|---|---:|---:|---:|---:|")
        for name, pairs in samples.items():
            walls, cpus = [wall for wall, _ in pairs], [cpu for _, cpu in pairs]
            print(f"| {name} | {statistics.median(walls):.0f} | {percentile(walls, 0.95):.0f} "
                  f"| {statistics.median(cpus):.0f} | {percentile(cpus, 0.95):.0f} |")


if __name__ == "__main__":
    main()
