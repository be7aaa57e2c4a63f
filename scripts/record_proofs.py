"""Record `ledger prove`: `python scripts/record_proofs.py`.

Runs every Z3 theorem once (`ledger_spec.z3_theorems.run_all`) and stores the run as the series
`benchmarks/results/z3-proofs.json` (with the machine, load, date and commit), whose table
`docs/safety/proofs.md` shows; `python scripts/docs_generate.py` redraws it. Exit 1 if any
theorem did not come out as expected (a positive one not proved, a negative one without its
counterexample): a failed run is not recorded.
"""

from __future__ import annotations

import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))

from benchmarks import record  # noqa: E402
from ledger_spec.z3_theorems import run_all  # noqa: E402

COLUMNS = [
    {"name": "theorem", "align": "left"},
    {"name": "kind", "align": "left"},
    {"name": "result", "align": "left"},
    {"name": "s", "align": "right", "format": "{:.2f}"},
]


def main() -> int:
    load_before = record.load_average()
    results = run_all()
    for result in results:
        print(f"{result.name}: {result.summary}")
    if not all(result.as_expected for result in results):
        print("not recorded: a theorem did not come out as expected", file=sys.stderr)
        return 1
    rows = [record.row(COLUMNS, result.name, result.kind, result.status, result.seconds) for result in results]
    total = sum(result.seconds for result in results)
    series = record.measured(
        "z3-proofs", "ledger prove: the Z3 theorems", "python scripts/record_proofs.py", COLUMNS, rows,
        load_before=load_before, notes=f"{len(results)} theorems, {total:.1f} s of solver time in all",
    )
    print(record.write(series))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
