"""Latency of one `ledger hook claude` PreToolUse call, as Claude Code pays it, next to a bare
Python start.

    python benchmarks/claude_hook_latency.py [--runs 40] [--files 7000] [--record]

Generates the tree of `benchmarks/detection.py` (`--files` files, committed to git), then for
each run starts the real hook process (`python -m ledger_cli.main hook claude`) with a
PreToolUse payload on stdin, and also a matching PostToolUse, alternating read commands; and
`python -c pass` in the same run. Each hook call is a fresh process that opens the session's
database and polls its detector, exactly as under Claude Code: the persisted stat index, and,
when a `watchman` binary is on PATH, Watchman too (each with a state directory of its own,
calls interleaved; the Watchman daemon's own CPU is not a child's and is not counted). Prints
p50/p95 in milliseconds, wall and CPU. A script, not a test. (`benchmarks/hook_latency.py` times the
session's `decide` and `record` alone, without the CLI.) `--record` stores the table as
`benchmarks/results/claude-hook-latency.json`, or `claude-hook-latency-watchman.json` when
Watchman was timed too, with the machine, load, date and commit.
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
from collections.abc import Sequence

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))

from benchmarks import record  # noqa: E402
from benchmarks.detection import generate_tree  # noqa: E402

#: How a row names each detector in the documentation's tables.
DETECTOR_NAMES = {"stat-index": "stat index", "watchman": "Watchman"}


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


def columns(files: int, runs: int) -> list[dict[str, str]]:
    figures = [{"name": name, "align": "right", "format": "{:,}"}
               for name in ("p50 wall ms", "p95 wall ms", "p50 CPU ms", "p95 CPU ms")]
    return [{"name": f"process ({files:,} files, {runs} runs)", "align": "left"}, *figures]


def main(argv: Sequence[str] | None = None, results: pathlib.Path = record.RESULTS) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=40)
    parser.add_argument("--files", type=int, default=7000)
    parser.add_argument("--record", action="store_true", help="store the table under benchmarks/results/")
    args = parser.parse_args(argv)
    load_before = record.load_average()
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
        samples: dict[str, list[tuple[float, float]]] = {"`python -c pass`": []}
        for detector in detectors:
            samples[f"PreToolUse, {DETECTOR_NAMES[detector]}"], samples[f"PostToolUse, {DETECTOR_NAMES[detector]}"] = [], []
            timed(hook(detector), json.dumps({"hook_event_name": "SessionStart"}))  # the first baseline
        try:
            for run in range(args.runs):
                command = commands[run % len(commands)]
                samples["`python -c pass`"].append(timed([sys.executable, "-c", "pass"]))
                done = subprocess.run(["bash", "-c", command], cwd=root, capture_output=True, text=True)
                for detector in detectors:
                    call = {"hook_event_name": "PreToolUse", "tool_name": "Bash", "tool_use_id": f"toolu_{run}",
                            "cwd": str(root), "tool_input": {"command": command}}
                    samples[f"PreToolUse, {DETECTOR_NAMES[detector]}"].append(timed(hook(detector), json.dumps(call)))
                    post = {**call, "hook_event_name": "PostToolUse",
                            "tool_response": {"stdout": done.stdout.rstrip(), "stderr": "", "interrupted": False}}
                    samples[f"PostToolUse, {DETECTOR_NAMES[detector]}"].append(timed(hook(detector), json.dumps(post)))
        finally:
            # Each PostToolUse left a detached probe that writes its verdict into the session's
            # database after the hook has answered: the state directories go only once every
            # probe is done (removing them under a running probe failed with ENOTEMPTY).
            from ledger_impl.detectors.stat_index import StatIndex
            from ledger_impl.session import DurableSession

            for detector in detectors:
                with DurableSession.open(root, state_dir=pathlib.Path(states) / detector, detector=StatIndex()) as session:
                    session.wait_for_probes(60)
            if "watchman" in detectors:
                from ledger_impl.detectors.watchman import Daemon

                Daemon(pathlib.Path(states) / "watchman" / "watchman").shutdown()
        load = os.getloadavg()[0]
        print(f"{args.files} files, {args.runs} runs, load average {load:.1f} on {os.cpu_count()} CPUs")
        table = columns(args.files, args.runs)
        rows = []
        for name, pairs in samples.items():
            walls, cpus = [wall for wall, _ in pairs], [cpu for _, cpu in pairs]
            figures = [statistics.median(walls), percentile(walls, 0.95), statistics.median(cpus), percentile(cpus, 0.95)]
            rows.append({table[0]["name"]: name, **{column["name"]: round(figure) for column, figure in zip(table[1:], figures)}})
        print("| " + " | ".join(column["name"] for column in table) + " |\n|---|---:|---:|---:|---:|")
        for row in rows:
            print("| " + " | ".join(str(cell) for cell in row.values()) + " |")
    if args.record:
        series_id = "claude-hook-latency" + ("-watchman" if "watchman" in detectors else "")
        record.keep(
            series_id, "One `ledger hook claude` call per process, next to a bare Python start",
            "claude_hook_latency.py", argv, table, rows, load_before=load_before,
            notes=f"{args.files:,}-file tree, {args.runs} runs, calls interleaved"
                  + ("; the Watchman daemon's own CPU is not counted" if "watchman" in detectors else ""), results=results,
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
