"""Memory under "read a 2 MB file, append" x N, capped and uncapped, side by side.

    python benchmarks/memory.py [--rounds 150] [--cap-mb 8] [--record]

Each round runs `cat big.txt` (2 MB, growing) and then appends a line, through a real Runtime.
Before stored outputs were bounded, every output was kept forever (about 300 MB after 150
rounds). The table shows, per configuration, the most bytes of stored outputs the ledger held
at any point and how much the process's resident memory grew; the capped run must stay within
twice the cap. A script, not a test: the eviction logic itself is tested in
tests/test_runtime_hardening.py. `--record` stores the table, with the machine, load, date and
commit, as `benchmarks/results/memory.json`, the series the documentation's table is drawn from.
"""

from __future__ import annotations

import argparse
import gc
import pathlib
import sys
import tempfile
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))

from benchmarks import record  # noqa: E402
from ledger_impl import Policy, Runtime  # noqa: E402

COLUMNS = (
    {"name": "configuration", "align": "left"},
    {"name": "most stored MB", "align": "right", "format": "{:.1f}"},
    {"name": "RSS growth MB", "align": "right", "format": "{:.1f}"},
)


def resident_bytes() -> int:
    for line in pathlib.Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    return 0


def run(rounds: int, cap: int) -> tuple[int, int, float]:
    with tempfile.TemporaryDirectory(prefix="ledger-memory-") as scratch:
        root = pathlib.Path(scratch)
        (root / "big.txt").write_text(("x" * 79 + "\n") * (2 * 1024 * 1024 // 80))
        gc.collect()
        before = resident_bytes()
        started = time.monotonic()
        most = 0
        with Runtime(root, policy=Policy(stored_output_limit=cap)) as runtime:
            for round_ in range(rounds):
                runtime.step("cat big.txt")
                most = max(most, runtime.ledger.stored_bytes)
                runtime.step(f"echo round {round_} >> big.txt")
                most = max(most, runtime.ledger.stored_bytes)
            gc.collect()
            grown = resident_bytes() - before
        return most, grown, time.monotonic() - started


def main(argv: list[str] | None = None, results: pathlib.Path = record.RESULTS) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=150)
    parser.add_argument("--cap-mb", type=float, default=8.0)
    parser.add_argument("--record", action="store_true", help="store the table as benchmarks/results/memory.json")
    args = parser.parse_args(argv)
    cap = int(args.cap_mb * 1024 * 1024)
    load_before = record.load_average()
    rows = []
    print(f"{'configuration':28} {'most stored MB':>15} {'RSS growth MB':>14} {'seconds':>8}")
    for label, limit in ((f"capped at {args.cap_mb:g} MB", cap), ("uncapped (limit 2**62)", 2**62)):
        most, grown, seconds = run(args.rounds, limit)
        print(f"{label:28} {most / 2**20:15.1f} {grown / 2**20:14.1f} {seconds:8.1f}")
        rows.append({"configuration": label, "most stored MB": round(most / 2**20, 1), "RSS growth MB": round(grown / 2**20, 1)})
    if args.record:
        command = f"python benchmarks/memory.py --rounds {args.rounds} --cap-mb {args.cap_mb:g}"
        series = record.measured(
            "memory", f"Memory over {args.rounds} rounds of read a 2 MB file, append a line", command, COLUMNS, rows,
            load_before=load_before,
        )
        print(f"recorded {record.write(series, results)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
