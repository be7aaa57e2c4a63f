"""Cost of one ground-truth look and one `changed`, this checkout beside a baseline checkout.

    python benchmarks/ground_truth_look.py [--repo PATH] [--files 7000] [--runs 10] [--rounds 3] [--baseline SRC] [--record]

`ledger audit` looks at the whole copy after every step, and the hunt's oracle after every
command, so the look is their main cost. This times `ledger_properties.ground_truth.look` (with a warm
`HashCache`, as both use it) and `changed` between two looks, over `--repo PATH` (only read) or
a generated tree of `--files` files committed to git. With `--baseline SRC` (a checkout of an
earlier commit, e.g. `git worktree add /tmp/base ec95298~2`) the same measure runs in a fresh
process importing SRC, alternating with this checkout for `--rounds` rounds, so a change of load
hits both alike. Prints median ms per call, wall and CPU: on a shared machine compare CPU.
`--record` stores the CPU medians as `benchmarks/results/ground-truth-look.json`, with the
machine, load, date and commit.

Each child loads the harness from the `properties/` folder of the checkout it measures: the
import name `ledger_properties` exists only through an install's mapping, so a plain import
would time the installed Ledger whatever PYTHONPATH says (and a baseline against itself).
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
from collections.abc import Sequence

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))

from benchmarks import record  # noqa: E402
from benchmarks.detection import generate_tree  # noqa: E402

# Run in a child by the interpreter, importing the checkout named on its PYTHONPATH and as argv[3].
MEASURE = """
import importlib.util, json, pathlib, statistics, sys, time
harness = pathlib.Path(sys.argv[3]) / "properties"
spec = importlib.util.spec_from_file_location("ledger_properties", harness / "__init__.py",
                                              submodule_search_locations=[str(harness)])
sys.modules["ledger_properties"] = importlib.util.module_from_spec(spec)
spec.loader.exec_module(sys.modules["ledger_properties"])
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


COLUMNS = (
    {"name": "checkout", "align": "left"},
    {"name": "look, median CPU ms", "align": "right", "format": "{:,}"},
    {"name": "`changed`, median CPU ms", "align": "right", "format": "{:.1f}"},
)


def measure_in_child(root: pathlib.Path, runs: int, source: str) -> dict[str, object]:
    done = subprocess.run(
        [sys.executable, "-c", MEASURE, str(root), str(runs), source], env={**os.environ, "PYTHONPATH": source},
        check=True, capture_output=True, text=True,
        cwd=tempfile.gettempdir(),  # not a checkout: `-c` puts the current directory first on sys.path
    )
    found: dict[str, object] = json.loads(done.stdout)
    if not pathlib.Path(str(found["source"])).resolve().is_relative_to(pathlib.Path(source).resolve()):
        raise SystemExit(f"the child timed {found['source']}, not the checkout {source}")
    return found


def checkout_label(label: str, source: str) -> str:
    """`this`, or the baseline's commit when it is a git checkout (its path otherwise)."""
    if label == "this":
        return label
    done = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=source, capture_output=True, text=True)
    return f"`{done.stdout.strip()}`" if done.returncode == 0 else source


def main(argv: Sequence[str] | None = None, results: pathlib.Path = record.RESULTS) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repo", type=pathlib.Path, default=None, help="look at this directory (only read)")
    parser.add_argument("--files", type=int, default=7000, help="files in the generated tree (without --repo)")
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--baseline", default=None, metavar="SRC", help="a checkout of an earlier commit to compare with")
    parser.add_argument("--record", action="store_true", help="store the table as benchmarks/results/ground-truth-look.json")
    args = parser.parse_args(argv)
    load_before = record.load_average()

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
    looked_at = f"{found['this'][0]['paths']:,} paths under {args.repo or f'a generated tree of {args.files:,} files'}"
    print(looked_at)
    print(f"{'checkout':<10} {'look wall':>10} {'look CPU':>9} {'changed wall':>13} {'changed CPU':>12}  (median ms)")
    table = []
    for (label, source), runs in zip(sources, found.values()):
        cells = [statistics.median(float(run[measure][index]) for run in runs)  # type: ignore[index]
                 for measure in ("look", "changed") for index in (0, 1)]
        print(f"{label:<10} {cells[0]:>10.1f} {cells[1]:>9.1f} {cells[2]:>13.2f} {cells[3]:>12.2f}")
        table.append(record.row(COLUMNS, checkout_label(label, source), round(cells[1]), round(cells[3], 1)))
    if args.record:
        record.keep(
            "ground-truth-look", "One ground-truth look and one `changed`, median CPU ms",
            "ground_truth_look.py", argv, COLUMNS, table, load_before=load_before,
            notes=f"{looked_at}, {args.rounds} rounds of {args.runs}, alternating in fresh processes", results=results,
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
