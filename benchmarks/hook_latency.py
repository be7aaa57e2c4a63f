"""Latency of a `decide` in a fresh process, as a PreToolUse hook pays it, on a 7,000-file tree.

    python benchmarks/hook_latency.py [--files 7000] [--runs 30] [--baseline SRC]

Generates the tree of `benchmarks/detection.py` in /tmp with a state directory beside it, lets it
age past the racy window, then times whole processes, side by side in one run:
  python -c pass       the floor: starting the interpreter;
  import hook path     the interpreter plus what `ledger hook` imports;
  decide (reuse)       open the session, decide a repeated read: served from the ledger;
  decide (allow)       open the session, decide a new command (a pending call is stored);
  record               open the session, record that command's result (PostToolUse).
Every decide and record scans the tree against the stored stat index. p50 and p95 of wall
and CPU milliseconds. A script, not a test: it prints a table.

`--record` also stores the table as `benchmarks/results/hook-latency-probe.json` (with the
machine, load and commit `benchmarks/record.py` adds).

`--baseline SRC` (a checkout of another revision, e.g. `git worktree add /tmp/base main`) runs
every row a second time with that checkout's packages first on PYTHONPATH, against its own state
directory, interleaved with this checkout's runs: before and after side by side, in one run.
With PYTHONDONTWRITEBYTECODE set and no `__pycache__` (an editable install), every process
compiles the sources again; run `python -m compileall` on both checkouts first to time what an
installed Ledger pays.
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

from benchmarks import record  # noqa: E402
from benchmarks.detection import generate_tree  # noqa: E402
from ledger_impl.tree_snapshot import RACY_WINDOW_NS  # noqa: E402

DECIDE = """
import sys
from ledger_impl import DurableSession
with DurableSession.open(sys.argv[1], state_dir=sys.argv[2]) as session:
    decision = session.decide(sys.argv[3], call_id=sys.argv[4])
assert decision.verdict == sys.argv[5], decision
"""
# The observation the reuse runs serve: the read run for real and recorded, then its probe run
# (with the probe on, a read serves only once its probe confirmed it; a baseline before the
# probe has no probes to run).
WARM = """
import subprocess, sys
from ledger_impl import DurableSession
root, state, command = sys.argv[1:4]
with DurableSession.open(root, state_dir=state) as session:
    assert session.decide(command, call_id="warm").verdict == "allow"
    done = subprocess.run(["bash", "-c", command], cwd=root, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    session.record("warm", done.stdout, done.returncode)
    getattr(session, "run_queued_probes", lambda: None)()
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


def run_process(argv: list[str], source: str | None = None) -> tuple[float, float]:
    # `-c` puts the current directory first on sys.path: run elsewhere, so that the checkout
    # given by `source` (or the installed one) is what the process imports.
    env = None if source is None else {**os.environ, "PYTHONPATH": source}
    started, before = time.perf_counter(), os.times()
    subprocess.run(argv, check=True, stdout=subprocess.DEVNULL, env=env, cwd=tempfile.gettempdir())
    after = os.times()
    return (time.perf_counter() - started) * 1000, (after[2] + after[3] - before[2] - before[3]) * 1000


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=7000)
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument("--baseline", default=None, help="a checkout of another revision to time beside this one")
    parser.add_argument("--record", action="store_true", help="store the table under benchmarks/results/")
    args = parser.parse_args()
    load_before = record.load_average()
    # The persisted stat index is what this script splits out: its child processes pin it even
    # where a `watchman` binary would be chosen (`claude_hook_latency.py` times both).
    os.environ["LEDGER_SESSION_DETECTOR"] = "stat-index"
    base = pathlib.Path(tempfile.mkdtemp(prefix="ledger-hook-bench-"))
    variants: dict[str, str | None] = {"": None}
    if args.baseline:
        variants[" [baseline]"] = os.path.abspath(args.baseline)
    try:
        root = base / "tree"
        root.mkdir()
        generate_tree(root, args.files)
        time.sleep(RACY_WINDOW_NS / 1e9 + 0.5)
        python = sys.executable
        target = str(next(root.rglob("file1.py")).relative_to(root))
        names = ("import hook path", "decide (reuse)", "decide (allow)", "record")
        samples: dict[str, list[tuple[float, float]]] = {"python -c pass": []}
        samples.update({name + label: [] for name in names for label in variants})
        for label, source in variants.items():
            state = str(base / f"state{len(label)}")
            # The first decide and record build the index and the observation the reuse runs serve.
            run_process([python, "-c", WARM, str(root), state, f"cat {target}"], source)
        for index in range(args.runs):  # interleaved, so load changes hit every row alike
            samples["python -c pass"].append(run_process([python, "-c", "pass"]))
            for label, source in variants.items():
                state = str(base / f"state{len(label)}")
                samples["import hook path" + label].append(
                    run_process([python, "-c", "import ledger_cli.commands.hook"], source)
                )
                samples["decide (reuse)" + label].append(
                    run_process([python, "-c", DECIDE, str(root), state, f"cat {target}", f"r{index}", "reuse"], source)
                )
                samples["decide (allow)" + label].append(
                    run_process([python, "-c", DECIDE, str(root), state, f"echo {index}", f"a{index}", "allow"], source)
                )
                samples["record" + label].append(run_process([python, "-c", RECORD, str(root), state, f"a{index}"], source))
        print(f"{args.files:,} files, {args.runs} runs each; milliseconds per process")
        print("| process | p50 wall | p95 wall | p50 cpu | p95 cpu |\n|---|---:|---:|---:|---:|")
        rows = []
        for name, pairs in samples.items():
            walls, cpus = [w for w, _ in pairs], [c for _, c in pairs]
            rows.append({"process": name, "p50 wall": round(statistics.median(walls)), "p95 wall": round(percentile(walls, 0.95)),
                         "p50 cpu": round(statistics.median(cpus)), "p95 cpu": round(percentile(cpus, 0.95))})
            print("| " + " | ".join(str(value) for value in rows[-1].values()) + " |")
        if args.record:
            columns = [{"name": "process", "align": "left"}] + [
                {"name": name, "align": "right"} for name in ("p50 wall", "p95 wall", "p50 cpu", "p95 cpu")
            ]
            notes = (f"{args.files:,} files, {args.runs} fresh processes per row, interleaved; ms. "
                     "[baseline]: " + (args.baseline or "none"))
            path = record.write(record.measured(
                "hook-latency-probe", "Hook process latency with the probe on the hook path",
                "python benchmarks/hook_latency.py " + " ".join(sys.argv[1:]), columns, rows,
                load_before=load_before, notes=notes,
            ))
            print(f"recorded {path}")
    finally:
        shutil.rmtree(base, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
