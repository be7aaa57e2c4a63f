"""The probe's cost next to the command's own run, side by side in one run, on a 7,000-file tree.

    nice python benchmarks/probe_cost.py [--files 7000] [--runs 5] [--out benchmarks/results/probe-cost.json]

Generates the tree of `benchmarks/detection.py` (small Python files in three levels, one git
commit) in /tmp, then, for each command, interleaves `--runs` rounds of:
  run        the command itself, as the Runtime runs it (`execution.run_command`);
  probe      the probe: bubblewrap + strace + libfaketime, the trace parsed and the dependency
             set collected (`ledger_impl.probe.probe`);
  revalidate what a Reuse then costs: the dependency set checked (`dependencies.first_changed`,
             stat calls and cached content hashes).
Medians and maxima of wall milliseconds, the probe's size (dependencies inside and outside the
root) and the machine's load average are written as JSON. A script, not a test.
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from typing import Any

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))

from benchmarks import record  # noqa: E402
from benchmarks.detection import generate_tree, pick_file  # noqa: E402
from ledger_impl.execution import command_environment, run_command  # noqa: E402
from ledger_impl.probe import dependencies, probe  # noqa: E402


def commands(root: pathlib.Path) -> dict[str, str]:
    target = pick_file(root).relative_to(root).as_posix()
    return {
        "cat": f"cat {target}",
        "sed -n": f"sed -n '1,20p' {target}",
        "grep -rn": "grep -rn value_10_ .",
        "git status": "git status",
        "git log": "git log --oneline",
        "ls -R": "ls -R",
    }


def _after_probe(row: dict[str, Any]) -> str:
    """The revalidation and dependency cells; a read the probe refused has none (a run recorded
    before `servable` was a field was servable)."""
    if not row.get("servable", True):
        return "not servable | | "
    return f"{row['revalidate_ms']['median']} | {row['inside_keys']} | {row['outside_paths']}"


def render(document: dict[str, Any]) -> str:
    """The JSON as the Markdown table of docs/safety/probe.md (`scripts/docs_generate.py` draws it)."""
    lines = ["| command | own run (ms) | probe (ms) | probe / run | revalidation at Reuse (ms) | inside keys | outside paths |",
             "|---|---:|---:|---:|---:|---:|---:|"]
    lines += [f"| `{row['text']}` | {row['run_ms']['median']} | {row['probe_ms']['median']} | {row['probe_over_run']} "
              f"| {_after_probe(row)} |" for row in document["rows"]]
    lines += ["", f"<small>Data: `benchmarks/results/probe-cost.json`, medians. Commit {document['commit']}; "
                  f"{document['machine']}; {document['load']}; {document['date']}.</small>"]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--files", type=int, default=7000)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--out", default="benchmarks/results/probe-cost.json")
    args = parser.parse_args()
    load_before = os.getloadavg()
    rows = []
    with tempfile.TemporaryDirectory(prefix="ledger-probe-cost-") as scratch:
        root = pathlib.Path(scratch) / "tree"
        root.mkdir()
        generate_tree(root, args.files)
        env = command_environment()
        run_command("git status", root, 60, 1 << 26, env)  # refresh the index once
        time.sleep(0.1)
        for label, command in commands(root).items():
            own, probed, revalidated = [], [], []
            result = None
            for _ in range(args.runs):
                started_ns = time.time_ns()
                t = time.perf_counter()
                done = run_command(command, root, 60, 1 << 26, env)
                own.append((time.perf_counter() - t) * 1000)
                t = time.perf_counter()
                result = probe(root, command, env, done.output, done.exit_code, started_ns=started_ns - 10**9, timeout=60,
                               output_limit=1 << 26)
                probed.append((time.perf_counter() - t) * 1000)
                if result.dependencies is not None:
                    t = time.perf_counter()
                    dependencies.first_changed(result.dependencies)
                    revalidated.append((time.perf_counter() - t) * 1000)
            assert result is not None
            found = result.dependencies
            rows.append({
                "command": label, "text": command,
                "run_ms": {"median": round(statistics.median(own), 1), "max": round(max(own), 1)},
                "probe_ms": {"median": round(statistics.median(probed), 1), "max": round(max(probed), 1)},
                "probe_over_run": round(statistics.median(probed) / statistics.median(own), 1),
                "revalidate_ms": {"median": round(statistics.median(revalidated), 2)} if revalidated else None,
                "servable": result.servable, "reason": result.reason,
                "inside_keys": len(found.inside) if found else None,
                "outside_paths": len(found.outside) if found else None,
                "inside_files_checked": len(found.inside_files) if found else None,
            })
            print(json.dumps(rows[-1]), flush=True)
    document = {
        "what": f"the probe's cost next to each command's own run on a {args.files}-file tree (benchmarks/detection.py), "
                f"{args.runs} interleaved rounds, wall milliseconds",
        "machine": f"{os.cpu_count()} cores, {platform.system()} {platform.release()}, Python {platform.python_version()}",
        "load": record.load_text(load_before[0], os.getloadavg()[0]),
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "commit": subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip(),
        "cores": os.cpu_count(), "load_average_before": load_before, "load_average_after": os.getloadavg(),
        "rows": rows,
    }
    pathlib.Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    pathlib.Path(args.out).write_text(json.dumps(document, indent=2) + "\n")


if __name__ == "__main__":
    main()
