"""Safety-hunt throughput on a Dask cluster: steps per second with 1 and 2 Dask workers, side by side.

    python benchmarks/dask_hunt.py [--runs 8] [--seed S] [--out benchmarks/results/dask-hunt.json]

For each worker count, a `distributed.LocalCluster` of that many worker processes (one thread
each, on loopback) is started and the `ledger verify` hunt (default detector, full grammar,
`ci` profile: 25 steps per run) runs `--runs` state-machine runs on it through
`ledger_impl`'s --scheduler path, the same seed both times. Steps per second count every
checked step over the wall time of the hunt (tasks' child interpreters' start-up included, the
cluster's own start-up excluded). The file records the machine (cores), the load average
before and after each series and the commit: on a shared machine the numbers move with the
load, so compare the columns of one run, not runs.
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import platform
import subprocess
import sys
import tempfile
import time

import attrs

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from benchmarks import record  # noqa: E402
from ledger_properties.hunt import run_verify_hunt  # noqa: E402
from ledger_properties.profiles import PROFILES  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parent.parent


def _commit() -> str:
    done = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True, check=False)
    return done.stdout.strip() or "unknown"


def series(workers: int, runs: int, seed: int) -> dict[str, object]:
    from distributed import LocalCluster

    load_before = os.getloadavg()
    with LocalCluster(n_workers=workers, threads_per_worker=1, processes=True, host="127.0.0.1", dashboard_address=None) as cluster:
        with tempfile.TemporaryDirectory(prefix="ledger-dask-bench-") as database:
            report = run_verify_hunt(
                attrs.evolve(PROFILES["ci"], hunt_examples=runs), seed, workers=None, scheduler=cluster.scheduler_address, database=database,
            )
    return {
        "dask_workers": workers,
        "runs": report.examples,
        "steps": report.steps,
        "seconds": round(report.seconds, 2),
        "steps_per_second": round(report.steps_per_second, 1),
        "violations": [doc["property"] for doc in report.counterexamples],
        "load_average_before": [round(value, 2) for value in load_before],
        "load_average_after": [round(value, 2) for value in os.getloadavg()],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=8)
    parser.add_argument("--seed", type=int, default=11)
    parser.add_argument("--out", type=pathlib.Path, default=ROOT / "benchmarks" / "results" / "dask-hunt.json")
    args = parser.parse_args()
    rows = [series(workers, args.runs, args.seed) for workers in (1, 2)]
    document = {
        "benchmark": "dask-hunt",
        "what": "ledger verify's safety hunt (default detector, full grammar, ci profile, 25 steps per run) "
        "on a distributed.LocalCluster of N worker processes (1 thread each), via --scheduler",
        "command": f"python benchmarks/dask_hunt.py --runs {args.runs} --seed {args.seed}",
        "commit": _commit(),
        "machine": {"cores": os.cpu_count(), "python": platform.python_version(), "system": platform.platform()},
        "load": record.load_text(rows[0]["load_average_before"][0], rows[-1]["load_average_after"][0]),  # type: ignore[index]
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "measured_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "series": rows,
        "ratio_steps_per_second_2_over_1": round(rows[1]["steps_per_second"] / rows[0]["steps_per_second"], 2)  # type: ignore[operator]
        if rows[0]["steps_per_second"] else None,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(document, indent=2) + "\n")
    print(json.dumps(document, indent=2))


if __name__ == "__main__":
    main()
