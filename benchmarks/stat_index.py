"""The persisted stat index against `git status`, side by side, on 7,000 and 100,000 files.

    python benchmarks/stat_index.py [--files 7000,100000] [--runs 7]

For each size, generates a tree committed to git in /tmp (the tree of `benchmarks/detection.py`),
lets it age past the racy window, then times in one run:
  git status       `git status --porcelain` (untracked files included), warm;
  index (no edit)  `changes_since` with the stored index: decode, scan, diff, encode;
  index (1 edit)   the same after one file was changed;
  first index      `changes_since` with nothing stored (a full scan, nothing to reuse);
and the size of the stored index. Medians of `--runs`. A script, not a test: it prints a table.
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

from benchmarks.detection import GIT_ENV, generate_tree  # noqa: E402
from ledger_impl.detectors.stat_index import changes_since, decode  # noqa: E402
from ledger_impl.tree_snapshot import RACY_WINDOW_NS  # noqa: E402


MEASURES = ("git status", "index (no edit)", "decode only", "index (1 edit)", "first index")


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


def measure(files: int, runs: int) -> dict[str, object]:
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

        return {
            "files": files,  # type: ignore[dict-item]
            "git status": git_ms,
            "index (no edit)": timed(no_edit, runs),
            "decode only": timed(lambda: decode(stored[0]), runs),
            "index (1 edit)": timed(one_edit, runs),
            "first index": timed(lambda: changes_since(root, None), max(1, runs // 2)),
            "index MiB": (len(stored[0]) / 2**20, 0.0),
        }
    finally:
        shutil.rmtree(base, ignore_errors=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", default="7000,100000", help="comma-separated tree sizes")
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()
    print("milliseconds per call, medians; wall includes waiting for a core on a shared machine, cpu does not")
    print("| files | " + " | ".join(f"{name} wall / cpu" for name in MEASURES) + " | index MiB |")
    print("|---:|" + "---:|" * (len(MEASURES) + 1), flush=True)
    for size in args.files.split(","):
        row = measure(int(size), args.runs)
        cells = [f"{row[name][0]:.0f} / {row[name][1]:.0f}" for name in MEASURES]  # type: ignore[index]
        print(f"| {int(size):,} | " + " | ".join(cells) + f" | {row['index MiB'][0]:.1f} |", flush=True)  # type: ignore[index]
    return 0


if __name__ == "__main__":
    sys.exit(main())
