"""Per-command overhead of each edit detector, side by side with `git status --porcelain`.

    python benchmarks/detection.py [--runs 50] [--files 7000] [--repo PATH] [--record]

Generates a tree of nested directories holding `--files` files, committed to a git repository,
then for each detector times before() + after() around a command that changes one file and
around a no-op command (the command's own run time is excluded), and times `git status
--porcelain` on the same tree in the same run. It also times the event detector's setup (its first
before(): the baseline scan and every watch) and counts the inotify watches it holds, with and
without inode watches on files, side by side. `--repo PATH` repeats the measurement on a copy
of a real repository (the given path is never modified). A script, not a test: it prints a table.
`--record` stores the documentation's three tables, `benchmarks/results/detection.json`,
`detection-fingerprint.json` and `detection-inode-watches.json` (with `--repo`, the copy's as
`detection-repository.json` and so on), with the machine, load, date and commit.
"""

from __future__ import annotations

import argparse
import os
import pathlib
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from typing import Any

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))

from benchmarks import record  # noqa: E402
from ledger_impl.classifier import classify  # noqa: E402
from ledger_impl.detectors import EventDetector, SnapshotDetector, default_detector  # noqa: E402
from ledger_impl.detectors.unsound import events_by_directory  # noqa: E402
from ledger_impl.execution import command_environment  # noqa: E402
from ledger_impl.fingerprint import take  # noqa: E402
from ledger_impl.tree_snapshot import RACY_WINDOW_NS  # noqa: E402

GIT_ENV = dict(
    os.environ,
    GIT_AUTHOR_NAME="bench",
    GIT_AUTHOR_EMAIL="bench@example.invalid",
    GIT_COMMITTER_NAME="bench",
    GIT_COMMITTER_EMAIL="bench@example.invalid",
    GIT_CONFIG_NOSYSTEM="1",
    GIT_CONFIG_GLOBAL="/dev/null",
    # No background `git gc --auto`: it would repack objects while the detectors are timed.
    GIT_CONFIG_COUNT="1",
    GIT_CONFIG_KEY_0="gc.auto",
    GIT_CONFIG_VALUE_0="0",
)


def generate_tree(root: pathlib.Path, files: int, seed: int = 7) -> None:
    """`files` small text files in a three-level directory tree, committed to git."""
    rng = random.Random(seed)
    made = 0
    while made < files:
        directory = root / f"pkg{made // 700}" / f"mod{(made // 35) % 20}"
        if made % 350 == 0:
            directory = directory / "deep" / "deeper"
        directory.mkdir(parents=True, exist_ok=True)
        lines = "".join(f"value_{made}_{i} = {rng.random()}\n" for i in range(rng.randint(1, 40)))
        (directory / f"file{made}.py").write_text(lines)
        made += 1
    subprocess.run(
        "git init -q && git add -A && git commit -qm generated", shell=True, cwd=root, env=GIT_ENV, check=True
    )


def copy_repository(source: pathlib.Path, destination: pathlib.Path) -> None:
    shutil.copytree(source, destination, symlinks=True)


def settle(root: pathlib.Path) -> None:
    """Let git refresh its index and let every timestamp leave the racy window."""
    subprocess.run(["git", "status", "--porcelain"], cwd=root, env=GIT_ENV, capture_output=True)
    time.sleep(RACY_WINDOW_NS / 1e9 + 0.2)


def pick_file(root: pathlib.Path) -> pathlib.Path:
    for directory, subdirectories, files in os.walk(root):
        subdirectories[:] = sorted(d for d in subdirectories if d != ".git")
        for name in sorted(files):
            path = pathlib.Path(directory) / name
            if path.is_file() and not path.is_symlink():
                return path
    raise SystemExit(f"no file to edit under {root}")


def time_detector(detector, root: pathlib.Path, target: pathlib.Path, runs: int) -> dict[str, list[float]]:
    """Seconds spent in before() + after() per command, for an edit and for a no-op."""
    detector.before(root, "warm up")
    detector.after(root, "warm up", 0)
    results: dict[str, list[float]] = {"edit": [], "noop": []}
    for i in range(runs):
        for kind in ("edit", "noop"):
            t0 = time.perf_counter()
            detector.before(root, kind)
            t1 = time.perf_counter()
            if kind == "edit":
                with open(target, "a") as handle:  # the command: append one line to one file
                    handle.write(f"# edit {i}\n")
            t2 = time.perf_counter()
            changes = detector.after(root, kind, 0)
            t3 = time.perf_counter()
            if kind == "edit" and not changes.unknown:
                assert str(target.relative_to(root)) in changes.paths, (detector.name, changes)
            results[kind].append((t1 - t0) + (t3 - t2))
    return results


def watch_count(detector: EventDetector) -> int:
    """The watches the detector's inotify instance holds, as the kernel lists them."""
    with open(f"/proc/self/fdinfo/{detector._inotify.fileno()}") as handle:
        return sum(1 for line in handle if line.startswith("inotify wd:"))


def time_setup(factory, root: pathlib.Path) -> tuple[float, float, int]:
    """Seconds for a fresh detector's first before() (baseline scan and watches), seconds for
    one full-diff fallback (what a queue overflow costs: a scan, and re-arming every watch),
    and the number of watches it holds."""
    detector = factory()
    t0 = time.perf_counter()
    detector.before(root, "setup")
    t1 = time.perf_counter()
    detector._full_diff(set())
    t2 = time.perf_counter()
    watches = watch_count(detector)
    detector.close()
    return t1 - t0, t2 - t1, watches


def time_fingerprint(root: pathlib.Path, command: str, runs: int) -> list[float]:
    """Seconds per `fingerprint.take` (what the Runtime adds to every Reuse decision)."""
    classified = classify(command, cwd=".", root=root)
    environment = command_environment(GIT_ENV)
    take(root, classified, environment)  # warm: config parse and PATH lookup caches
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        fingerprint = take(root, classified, environment)
        times.append(time.perf_counter() - t0)
        assert fingerprint is not None, command
    return times


def time_git_status(root: pathlib.Path, runs: int) -> list[float]:
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        subprocess.run(["git", "status", "--porcelain"], cwd=root, env=GIT_ENV, capture_output=True, check=True)
        times.append(time.perf_counter() - t0)
    return times


def p95(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(0.95 * (len(ordered) - 1))))]


Row = tuple[str, str, float, float]  # what was timed, on which command, median and p95 seconds
Setup = tuple[list[float], list[float], int]  # setup seconds, full-diff seconds, watches


def measure(label: str, root: pathlib.Path, runs: int) -> tuple[list[Row], dict[str, Setup]]:
    settle(root)
    target = pick_file(root)
    count = sum(len(files) for _, _, files in os.walk(root))
    print(f"\n{label}: {root} ({count} files including .git)", flush=True)
    rows = []
    git_times = time_git_status(root, runs)
    rows.append(("git status --porcelain", "-", statistics.median(git_times), p95(git_times)))
    setups = [("directory watches only (before)", events_by_directory), ("with inode watches (now)", EventDetector)]
    setup_rows: dict[str, Setup] = {name: ([], [], 0) for name, _ in setups}
    for _ in range(max(1, runs // 5)):
        for name, factory in setups:  # interleaved, so load on the machine hits both alike
            setup, fallback, watches = time_setup(factory, root)
            setup_rows[name][0].append(setup)
            setup_rows[name][1].append(fallback)
            setup_rows[name] = (setup_rows[name][0], setup_rows[name][1], watches)
    print(f"{'event detector':34} {'watches':>8} {'setup median ms':>16} {'p95':>8} {'full diff median ms':>20} {'p95':>8}")
    for name, (setup_times, fallback_times, watches) in setup_rows.items():
        print(
            f"{name:34} {watches:8d} {statistics.median(setup_times) * 1e3:16.1f} {p95(setup_times) * 1e3:8.1f}"
            f" {statistics.median(fallback_times) * 1e3:20.1f} {p95(fallback_times) * 1e3:8.1f}"
        )
    factories = [
        ("snapshot", SnapshotDetector),
        ("inotify-events, directories only", events_by_directory),
        ("inotify-events", EventDetector),
        (f"default ({type(default_detector()).__name__})", default_detector),
    ]
    for name, factory in factories:
        detector = factory()
        settle(root)
        results = time_detector(detector, root, target, runs)
        for kind in ("edit", "noop"):
            rows.append((name, kind, statistics.median(results[kind]), p95(results[kind])))
        if hasattr(detector, "close"):
            detector.close()
    relative = target.relative_to(root)
    for command in (f"sed -n '1,40p' {relative}", "git status --porcelain", "grep -rn value_1 ."):
        times = time_fingerprint(root, command, runs * 4)
        rows.append(("fingerprint.take", command, statistics.median(times), p95(times)))
    git_median = statistics.median(git_times)
    print(f"{'detector':34} {'command':8} {'median ms':>10} {'p95 ms':>10} {'vs git':>8}")
    for name, kind, median, high in rows:
        print(f"{name:34} {kind:8} {median * 1e3:10.2f} {high * 1e3:10.2f} {median / git_median:7.2f}x")
    return rows, setup_rows


DETECTOR_NAMES = {"inotify-events, directories only": "inotify events, directories only", "inotify-events": "inotify events"}
COMMAND_NAMES = {"edit": "edit one file", "noop": "no-op"}
#: The event detector of each setup row, whose edit and no-op rows the watches table repeats.
SETUP_DETECTORS = {"directory watches only (before)": "inotify-events, directories only",
                   "with inode watches (now)": "inotify-events"}
MS = {"align": "right", "format": "{:.2f}"}


def _ms(seconds: float) -> float:
    return round(seconds * 1e3, 2)


def detector_series(rows: Sequence[Row]) -> tuple[list[dict[str, str]], list[dict[str, Any]]]:
    """The `detection` table: git status, then each detector on an edit and on a no-op."""
    columns = [{"name": "detector", "align": "left"}, {"name": "command", "align": "left"},
               {"name": "median ms", **MS}, {"name": "p95 ms", **MS}]
    table = [{"detector": "`git status --porcelain`" if name == "git status --porcelain" else DETECTOR_NAMES.get(name, name),
              "command": COMMAND_NAMES.get(kind), "median ms": _ms(median), "p95 ms": _ms(high)}
             for name, kind, median, high in rows if name != "fingerprint.take"]
    return columns, table


def fingerprint_series(rows: Sequence[Row], target: str) -> tuple[list[dict[str, str]], list[dict[str, Any]]]:
    """The `detection-fingerprint` table: git status, the default detector, `fingerprint.take` per command."""
    columns = [{"name": "measured", "align": "left"}, {"name": "command", "align": "left"},
               {"name": "median ms", **MS}, {"name": "p95 ms", **MS}]
    table = []
    for name, kind, median, high in rows:
        if name == "git status --porcelain":
            measured, command = "`git status --porcelain`", None
        elif name.startswith("default"):
            measured, command = "default detector", COMMAND_NAMES[kind]
        elif name == "fingerprint.take":
            measured, command = "`fingerprint.take`", "`" + kind.replace(target, "FILE") + "`"
        else:
            continue
        table.append({"measured": measured, "command": command, "median ms": _ms(median), "p95 ms": _ms(high)})
    return columns, table


def watches_series(rows: Sequence[Row], setups: dict[str, Setup]) -> tuple[list[dict[str, str]], list[dict[str, Any]]]:
    """The `detection-inode-watches` table: each event detector's watches, setup, fallback, edit and no-op."""
    columns = [{"name": "event detector", "align": "left"}, {"name": "watches", "align": "right", "format": "{:,}"},
               {"name": "setup (first `before()`) median / p95 ms", "align": "right"},
               {"name": "full-diff fallback median / p95 ms", "align": "right"},
               {"name": "edit one file median ms", "align": "right"}, {"name": "no-op median ms", **MS}]
    timed = {(name, kind): median for name, kind, median, _ in rows}
    table = []
    for setup, (setup_times, fallback_times, watches) in setups.items():
        detector = SETUP_DETECTORS[setup]
        cells = (setup, watches,
                 f"{statistics.median(setup_times) * 1e3:,.0f} / {p95(setup_times) * 1e3:,.0f}",
                 f"{statistics.median(fallback_times) * 1e3:,.0f} / {p95(fallback_times) * 1e3:,.0f}",
                 f"{timed[(detector, 'edit')] * 1e3:.2f}", _ms(timed[(detector, 'noop')]))
        table.append(record.row(columns, *cells))
    git = f"{timed[('git status --porcelain', '-')] * 1e3:,.0f}"
    table.append(record.row(columns, "`git status --porcelain`, same run", None, None, None, git, None))
    return columns, table


def record_tree(label: str, suffix: str, rows: Sequence[Row], setups: dict[str, Setup], target: str,
                argv: Sequence[str] | None, load_before: float, results: pathlib.Path) -> None:
    """The three tables of one measured tree as series files."""
    tables = {
        "detection": ("Per-command detector overhead", detector_series(rows)),
        "detection-fingerprint": ("Detector and fingerprint cost", fingerprint_series(rows, target)),
        "detection-inode-watches": ("Inode watches against directory watches only", watches_series(rows, setups)),
    }
    for series_id, (title, (columns, table)) in tables.items():
        record.keep(series_id + suffix, title, "detection.py", argv, columns, table, load_before=load_before,
                    notes=f"{label}; before() + after(), timings side by side in one run", results=results)


def main(argv: Sequence[str] | None = None, results: pathlib.Path = record.RESULTS) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=50)
    parser.add_argument("--files", type=int, default=7000)
    parser.add_argument("--repo", type=pathlib.Path, help="a real repository to measure on (copied first)")
    parser.add_argument("--record", action="store_true", help="store the tables under benchmarks/results/")
    args = parser.parse_args(argv)
    load_before = record.load_average()
    with tempfile.TemporaryDirectory(prefix="ledger-bench-") as scratch:
        generated = pathlib.Path(scratch) / "generated"
        generated.mkdir()
        generate_tree(generated, args.files)
        trees = [(f"generated tree, {args.files:,} committed files", "", generated)]
        if args.repo is not None:
            copy = pathlib.Path(scratch) / "repo"
            copy_repository(args.repo.resolve(), copy)
            trees.append((f"a copy of {args.repo.name}", "-repository", copy))
        for label, suffix, root in trees:
            rows, setups = measure(label, root, args.runs)
            if args.record:
                target = str(pick_file(root).relative_to(root))
                record_tree(label, suffix, rows, setups, target, argv, load_before, results)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
