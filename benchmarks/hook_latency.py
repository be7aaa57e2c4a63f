"""Latency of a `decide` in a fresh process, as a PreToolUse hook pays it, on a 7,000-file tree.

    python benchmarks/hook_latency.py [--files 7000] [--runs 30] [--baseline SRC] [--record]

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
installed Ledger pays. `--record` stores the table (ms wall / CPU; the baseline's columns empty
without `--baseline`) as `benchmarks/results/hook-latency-split.json`, with the machine, load,
date and commit.
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
from collections.abc import Sequence

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


#: Each measured process, as the documentation's table names it.
ROW_NAMES = {
    "python -c pass": "`python -c pass`",
    "import hook path": "`import ledger_cli.commands.hook`",
    "decide (reuse)": "`decide`, served from the ledger",
    "decide (allow)": "`decide`, a new command",
    "record": "`record`",
}
COLUMNS = tuple({"name": name, "align": "left" if name == "process" else "right"}
                for name in ("process", "p50", "p95", "before: p50", "before: p95"))


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


def wall_and_cpu(pairs: list[tuple[float, float]]) -> tuple[str, str]:
    """The p50 and p95 cells of one row: `wall / CPU` milliseconds."""
    walls, cpus = [w for w, _ in pairs], [c for _, c in pairs]
    return (f"{statistics.median(walls):,.0f} / {statistics.median(cpus):,.0f}",
            f"{percentile(walls, 0.95):,.0f} / {percentile(cpus, 0.95):,.0f}")


def table_rows(samples: dict[str, list[tuple[float, float]]]) -> list[dict[str, str | None]]:
    """The `hook-latency-split` rows: this checkout's p50 and p95, and the baseline's where it ran."""
    rows = []
    for name, shown in ROW_NAMES.items():
        before = samples.get(name + " [baseline]")
        cells = (*wall_and_cpu(samples[name]), *(wall_and_cpu(before) if before else (None, None)))
        rows.append(record.row(COLUMNS, shown, *cells))
    return rows


def main(argv: Sequence[str] | None = None, results: pathlib.Path = record.RESULTS) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=7000)
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument("--baseline", default=None, help="a checkout of another revision to time beside this one")
    parser.add_argument("--record", action="store_true", help="store the table as benchmarks/results/hook-latency-split.json")
    args = parser.parse_args(argv)
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
        print("| process | p50 wall / cpu | p95 wall / cpu |\n|---|---:|---:|")
        for name, pairs in samples.items():
            print(f"| {name} | " + " | ".join(wall_and_cpu(pairs)) + " |")
    finally:
        shutil.rmtree(base, ignore_errors=True)
    if args.record:
        record.keep(
            "hook-latency-split", "A hook's decide and record in fresh processes, this checkout and a baseline",
            "hook_latency.py", argv, COLUMNS, table_rows(samples), load_before=load_before,
            notes=f"{args.files:,} files, {args.runs} fresh processes each, interleaved; ms wall / CPU", results=results,
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
