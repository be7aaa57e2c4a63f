"""The persisted stat index against `git status`, side by side, on 7,000 and 100,000 files.

    python benchmarks/stat_index.py [--files 7000,100000] [--runs 7] [--baseline SRC] [--record]

For each size, generates a tree committed to git in /tmp (the tree of `benchmarks/detection.py`),
lets it age past the racy window, then times in one run:
  git status       `git status --porcelain` (untracked files included), warm;
  index (no edit)  `changes_since` with the stored index: decode, scan, diff, encode;
  index (1 edit)   the same after one file was changed;
  first index      `changes_since` with nothing stored (a full scan, nothing to reuse);
and the size of the stored index. With a `watchman` binary on PATH, the Watchman session
detector beside them on the same tree (its daemon watching the tree's parent, started and
stopped here): "watchman (no edit)" and "watchman (1 edit)", its CPU including the daemon's.
Medians of `--runs`. A script, not a test: it prints a table.
`--baseline SRC` (a checkout of another revision) adds "no edit" and "1 edit" measured on the
same tree in fresh processes, this checkout's and that revision's in turn (three rounds, median):
before and after side by side, in one run.
`--record` stores the documentation's tables, ms wall / CPU: `benchmarks/results/stat-index-cost.json`
and, when Watchman was timed, `watchman-vs-stat-index.json`, with the machine, load, date and
commit (the decode-only and baseline columns are printed only).
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
from collections.abc import Mapping, Sequence
from typing import Any

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))

from benchmarks import record  # noqa: E402
from benchmarks.detection import GIT_ENV, generate_tree  # noqa: E402
from ledger_impl.detectors.stat_index import changes_since, decode  # noqa: E402
from ledger_impl.tree_snapshot import RACY_WINDOW_NS  # noqa: E402


MEASURES = ("git status", "index (no edit)", "decode only", "index (1 edit)", "first index")
WATCHMAN_MEASURES = ("watchman (no edit)", "watchman (1 edit)")

#: Each recorded series: its id, and its columns after `files` with the measure each one shows.
SERIES: dict[str, tuple[tuple[str, str], ...]] = {
    "stat-index-cost": (
        ("`git status --porcelain`", "git status"), ("stat index, nothing changed", "index (no edit)"),
        ("one file changed", "index (1 edit)"), ("first index (nothing stored)", "first index"),
        ("stored index", "index MiB"),
    ),
    "watchman-vs-stat-index": (
        ("`git status --porcelain`", "git status"), ("stat index, nothing changed", "index (no edit)"),
        ("stat index, one file changed", "index (1 edit)"), ("Watchman, nothing changed", "watchman (no edit)"),
        ("Watchman, one file changed", "watchman (1 edit)"),
    ),
}


def process_cpu_ms(pid: int) -> float:
    """CPU milliseconds process `pid` has used (utime + stime from /proc): the Watchman daemon
    is no child of this process, so `os.times` does not count it."""
    fields = pathlib.Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) * 1000 / os.sysconf("SC_CLK_TCK")


def measure_watchman(root: pathlib.Path, runs: int, target: pathlib.Path) -> dict[str, object]:
    """The Watchman session detector's no-edit and one-edit calls, CPU including its daemon's."""
    from ledger_impl.detectors.watchman import WatchmanIndex

    state = pathlib.Path(tempfile.mkdtemp(prefix="ledger-bench-watchman-"))
    index = WatchmanIndex(state)
    try:
        _, blob, _ = index.changes_since(root, None)  # starts the daemon and the watch
        stored = [blob]
        pid = index.daemon.pid()
        assert pid is not None

        def no_edit() -> None:
            changes, stored[0], _ = index.changes_since(root, stored[0])
            assert changes.empty, changes

        def one_edit() -> None:
            with open(target, "a") as handle:
                handle.write("#\n")
            changes, stored[0], _ = index.changes_since(root, stored[0])
            assert changes.paths, changes

        found: dict[str, object] = {}
        for name, action in (("watchman (no edit)", no_edit), ("watchman (1 edit)", one_edit)):
            daemon_before = process_cpu_ms(pid)
            wall, cpu = timed(action, runs)
            found[name] = (wall, cpu + (process_cpu_ms(pid) - daemon_before) / runs)
        return found
    finally:
        index.daemon.shutdown()
        shutil.rmtree(state, ignore_errors=True)


def timed(action: object, runs: int) -> tuple[float, float]:
    """Median wall and CPU milliseconds (CPU of this process and its children): on a shared
    machine the wall time includes waiting for a core, the CPU time does not."""
    walls, cpus = [], []
    for _ in range(runs):
        started, before = time.perf_counter(), os.times()
        action()  # type: ignore[operator]
        after = os.times()
        walls.append(time.perf_counter() - started)
        cpus.append(sum(after[:4]) - sum(before[:4]))
    return statistics.median(walls) * 1000, statistics.median(cpus) * 1000


# Run by the baseline's interpreter: the same two measures as `measure`, printed as JSON.
BASELINE = """
import json, os, pathlib, statistics, sys, time
from ledger_impl.detectors.stat_index import changes_since
root, runs, target = pathlib.Path(sys.argv[1]), int(sys.argv[2]), pathlib.Path(sys.argv[3])
stored = [changes_since(root, None)[1]]
def timed(action):
    walls, cpus = [], []
    for _ in range(runs):
        started, before = time.perf_counter(), os.times()
        action()
        after = os.times()
        walls.append(time.perf_counter() - started)
        cpus.append(sum(after[:4]) - sum(before[:4]))
    return statistics.median(walls) * 1000, statistics.median(cpus) * 1000
def no_edit():
    changes, stored[0], _ = changes_since(root, stored[0])
    assert changes.empty, changes
def one_edit():
    with open(target, "a") as handle:
        handle.write("#\\n")
    changes, stored[0], _ = changes_since(root, stored[0])
    assert changes.paths, changes
import ledger_impl
print(json.dumps({"no edit": timed(no_edit), "1 edit": timed(one_edit), "source": ledger_impl.__file__}))
"""


def measure_in_child(root: pathlib.Path, runs: int, target: pathlib.Path, source: str | None) -> dict[str, tuple]:
    """The no-edit and one-edit measures in a fresh process importing `source` (None: this checkout)."""
    env = {**os.environ, "PYTHONPATH": source} if source is not None else None
    done = subprocess.run(
        [sys.executable, "-c", BASELINE, str(root), str(runs), str(target)], env=env, check=True, capture_output=True, text=True,
        cwd=tempfile.gettempdir(),  # not this checkout: `-c` puts the current directory first on sys.path
    )
    found = json.loads(done.stdout)
    return {"no edit": tuple(found["no edit"]), "1 edit": tuple(found["1 edit"])}


def measure_baseline(root: pathlib.Path, runs: int, target: pathlib.Path, source: str, rounds: int = 3) -> dict[str, object]:
    """This checkout and the baseline, each in its own process, alternating for `rounds`: the
    median over rounds of each, so a change of load hits both alike."""
    found: dict[str, list[tuple]] = {}
    for _ in range(rounds):
        for label, src in (("this", None), ("baseline", source)):
            for name, value in measure_in_child(root, runs, target, src).items():
                found.setdefault(f"{label} (child, {name})", []).append(value)
    return {
        name: (statistics.median(w for w, _ in values), statistics.median(c for _, c in values))
        for name, values in found.items()
    }


def measure(files: int, runs: int, baseline: str | None = None) -> dict[str, object]:
    base = pathlib.Path(tempfile.mkdtemp(prefix=f"ledger-bench-{files}-"))
    try:
        root = base / "tree"
        root.mkdir()
        generate_tree(root, files)
        time.sleep(RACY_WINDOW_NS / 1e9 + 0.5)  # let every file age out of the racy window
        git = ["git", "status", "--porcelain", "--untracked-files=all"]
        subprocess.run(git, cwd=root, env=GIT_ENV, check=True, capture_output=True)  # refresh git's index
        git_ms = timed(lambda: subprocess.run(git, cwd=root, env=GIT_ENV, check=True, capture_output=True), runs)
        _, blob, _ = changes_since(root, None)  # after git: its index refresh writes .git/
        stored = [blob]

        def no_edit() -> None:
            changes, stored[0], _ = changes_since(root, stored[0])
            assert changes.empty, changes

        target = next(root.rglob("file1.py"))

        def one_edit() -> None:
            with open(target, "a") as handle:
                handle.write("#\n")
            changes, stored[0], _ = changes_since(root, stored[0])
            assert changes.paths, changes

        measured: dict[str, object] = {
            "files": files,  # type: ignore[dict-item]
            "git status": git_ms,
            "index (no edit)": timed(no_edit, runs),
            "decode only": timed(lambda: decode(stored[0]), runs),
            "index (1 edit)": timed(one_edit, runs),
            "first index": timed(lambda: changes_since(root, None), max(1, runs // 2)),
            "index MiB": (len(stored[0]) / 2**20, 0.0),
        }
        if shutil.which("watchman"):
            measured.update(measure_watchman(root, runs, target))
        if baseline is not None:
            measured.update(measure_baseline(root, runs, target, baseline))
        return measured
    finally:
        shutil.rmtree(base, ignore_errors=True)


def series_columns(series_id: str) -> list[dict[str, str]]:
    return [{"name": "files", "align": "right", "format": "{:,}"},
            *({"name": name, "align": "right"} for name, _ in SERIES[series_id])]


def series_row(series_id: str, measured: Mapping[str, Any]) -> dict[str, Any]:
    """One tree size in a recorded series: `wall / CPU` ms per measure, the index's size in MiB."""
    row: dict[str, Any] = {"files": measured["files"]}
    for name, measure in SERIES[series_id]:
        wall, cpu = measured[measure]
        row[name] = f"{wall:.1f} MiB" if measure == "index MiB" else f"{wall:,.0f} / {cpu:,.0f}"
    return row


def main(argv: Sequence[str] | None = None, results: pathlib.Path = record.RESULTS) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", default="7000,100000", help="comma-separated tree sizes")
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--baseline", default=None, help="a checkout of another revision to time beside this one")
    parser.add_argument("--record", action="store_true", help="store the tables under benchmarks/results/")
    args = parser.parse_args(argv)
    load_before = record.load_average()
    recorded = ["stat-index-cost"] + (["watchman-vs-stat-index"] if shutil.which("watchman") else [])
    rows: dict[str, list[dict[str, Any]]] = {series_id: [] for series_id in recorded}
    measures = MEASURES + (WATCHMAN_MEASURES if shutil.which("watchman") else ()) + (
        tuple(f"{who} (child, {what})" for what in ("no edit", "1 edit") for who in ("this", "baseline"))
        if args.baseline else ()
    )
    print("milliseconds per call, medians; wall includes waiting for a core on a shared machine, cpu does not")
    print("| files | " + " | ".join(f"{name} wall / cpu" for name in measures) + " | index MiB |")
    print("|---:|" + "---:|" * (len(measures) + 1), flush=True)
    for size in args.files.split(","):
        row = measure(int(size), args.runs, os.path.abspath(args.baseline) if args.baseline else None)
        cells = [f"{row[name][0]:.0f} / {row[name][1]:.0f}" for name in measures]  # type: ignore[index]
        print(f"| {int(size):,} | " + " | ".join(cells) + f" | {row['index MiB'][0]:.1f} |", flush=True)  # type: ignore[index]
        for series_id in recorded:
            rows[series_id].append(series_row(series_id, row))
    if args.record:
        titles = {"stat-index-cost": "The persisted stat index against `git status`",
                  "watchman-vs-stat-index": "Watchman against the persisted stat index"}
        for series_id in recorded:
            record.keep(
                series_id, titles[series_id], "stat_index.py", argv, series_columns(series_id),
                rows[series_id], load_before=load_before,
                notes=f"medians of {args.runs}, ms wall / CPU; the tree of benchmarks/detection.py committed to git, "
                      ".git/ included in the scan" + ("; the Watchman CPU counts the daemon's, read from /proc"
                                                      if series_id == "watchman-vs-stat-index" else ""), results=results,
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
