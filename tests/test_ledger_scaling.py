"""The scaling benchmark still runs and its spec and impl still agree (no timing is asserted)."""

from __future__ import annotations

import importlib.util
import pathlib

import pytest

BENCHMARK = pathlib.Path(__file__).resolve().parent.parent / "benchmarks" / "ledger_scaling.py"


def load_benchmark():
    spec = importlib.util.spec_from_file_location("ledger_scaling", BENCHMARK)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_benchmark_prints_one_row_per_size(capsys: pytest.CaptureFixture[str]) -> None:
    benchmark = load_benchmark()
    assert benchmark.main(["--sizes", "60", "300", "--impl-steps", "40", "--spec-steps", "40"]) == 0
    rows = capsys.readouterr().out.splitlines()[1:]
    assert [row.split()[0] for row in rows] == ["60", "300"]


def test_benchmark_sessions_hold_the_requested_observations_and_get_reused() -> None:
    benchmark = load_benchmark()
    row = benchmark.measure(200, impl_steps=100, spec_steps=100, seed=3)
    assert row["spec_steps"] == 100 and row["reused"] > 0
    ledger = benchmark.build(200, benchmark.random.Random(3), benchmark.Policy())
    assert len(ledger.snapshot().observations) == 200
