"""Cost of one ground-truth look and one `changed`, this checkout beside a baseline checkout.

    python benchmarks/ground_truth_look.py [--repo PATH] [--files 7000] [--runs 10] [--rounds 3] [--baseline SRC]

`ledger audit` looks at the whole copy after every step, and the hunt's oracle after every
command, so the look is their main cost. This times `ledger_properties.ground_truth.look` (with a warm
`HashCache`, as both use it) and `changed` between two looks, over `--repo PATH` (only read) or
a generated tree of `--files` files committed to git. With `--baseline SRC` (a checkout of an
earlier commit, e.g. `git worktree add /tmp/base ec95298~2`) the same measure runs in a fresh
process importing SRC, alternating with this checkout for `--rounds` rounds, so a change of load
hits both alike. Prints median ms per call, wall and CPU: on a shared machine compare CPU.
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

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))

from benchmarks.detection import generate_tree  # noqa: E402

# Run in a child by the interpreter, importing the checkout named on its PYTHONPATH.
MEASURE = """
import json, statistics, sys, time
from ledger_properties import ground_truth
root, runs = sys.argv[1], int(sys.argv[2])
cache = ground_truth.HashCache()
first = ground_truth.look(root, cache)
def timed(action):
    walls, cpus = [], []
    for _ in range(runs):
        started, before = time.perf_counter(), time.process_time()
        action()
        cpus.append(time.process_time() - before)
        walls.append(time.perf_counter() - started)
    return statistics.median(walls) * 1000, statistics.median(cpus) * 1000
second = ground_truth.look(root, cache)
print(json.dumps({"paths": len(first.nodes), "look": timed(lambda: ground_truth.look(root, cache)),
                  "changed": timed(lambda: ground_truth.changed(first, second)), "source": ground_truth.__file__}))
"""


def measure_in_child(root: pathlib.Path, runs: int, source: str) -> dict[str, object]:
    done = subprocess.run(
        [sys.executable, "-c", MEASURE, str(root), str(runs)], env={**os.environ, "PYTHONPATH": source},
        check=True, capture_output=True, text=True,
        cwd=tempfile.gettempdir(),  # not a checkout: `-c` puts the current directory first on sys.path
    )
    found: dict[str, object] = json.loads(done.stdout)
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repo", type=pathlib.Path, default=None, help="look at this directory (only read)")
    parser.add_argument("--files", type=int, default=7000, help="files in the generated tree (without --repo)")
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--baseline", default=None, metavar="SRC", help="a checkout of an earlier commit to compare with")
    args = parser.parse_args(argv)

    this = str(pathlib.Path(__file__).resolve().parent.parent)
    sources = [("this", this)] + ([("baseline", str(pathlib.Path(args.baseline).resolve()))] if args.baseline else [])
    scratch = None
    root = args.repo
    if root is None:
        scratch = pathlib.Path(tempfile.mkdtemp(prefix="ledger-bench-look-"))
        root = scratch / "tree"
        root.mkdir()
        generate_tree(root, args.files)
    try:
        found: dict[str, list[dict[str, object]]] = {label: [] for label, _ in sources}
        for _ in range(args.rounds):
            for label, source in sources:
                found[label].append(measure_in_child(root, args.runs, source))
    finally:
        if scratch is not None:
            shutil.rmtree(scratch)
    print(f"{found['this'][0]['paths']:,} paths under {args.repo or f'a generated tree of {args.files:,} files'}")
    print(f"{'checkout':<10} {'look wall':>10} {'look CPU':>9} {'changed wall':>13} {'changed CPU':>12}  (median ms)")
    for label, rows in found.items():
        cells = [statistics.median(float(row[measure][index]) for row in rows)  # type: ignore[index]
                 for measure in ("look", "changed") for index in (0, 1)]
        print(f"{label:<10} {cells[0]:>10.1f} {cells[1]:>9.1f} {cells[2]:>13.2f} {cells[3]:>12.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
