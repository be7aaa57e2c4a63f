"""`ledger prove`: the table, `--json`, counterexample files, and the exit code."""

from __future__ import annotations

import json
import pathlib

import attrs
import pytest

from ledger_cli.main import main
from ledger_cli.commands import prove
from ledger_properties.counterexample import load
from ledger_spec import z3_theorems


def test_prove_json_lists_every_theorem_and_exits_zero(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["prove", "--json"]) == 0
    results = json.loads(capsys.readouterr().out)
    assert [result["name"] for result in results] == [theorem.name for theorem in z3_theorems.THEOREMS]
    for result in results:
        print(f"{result['name']:45} {result['status']:15} {result['seconds']:.2f}s")
        assert result["as_expected"]
        assert result["status"] == ("proved" if result["kind"] == "positive" else "counterexample")
    assert all(result["model"] for result in results if result["kind"] == "negative")


def test_prove_table_shows_results_and_models(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["prove"]) == 0
    out = capsys.readouterr().out
    assert "freshness-file" in out and "proved" in out
    assert "<- stale reuse" in out  # a negative theorem's model is shown
    assert "all theorems as expected" in out


def test_prove_writes_replayable_counterexamples(tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["prove", "--write-counterexamples", str(tmp_path)]) == 0
    written = sorted(tmp_path.glob("z3-*.json"))
    assert [load(path).found_by["theorem"] for path in written] == sorted(
        result.name for result in z3_theorems.run_all() if result.kind == "negative" and result.trace is not None
    )
    assert len(written) == 2  # the overlap theorem's timeline model has no shell trace to replay


@pytest.mark.parametrize(
    ("kind", "status"), [("positive", "counterexample"), ("positive", "unknown"), ("negative", "proved")]
)
def test_prove_exits_one_when_a_theorem_is_not_as_expected(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], kind: str, status: str
) -> None:
    real = z3_theorems.run_all()
    broken = attrs.evolve(next(r for r in real if r.kind == kind), status=status, model_text="a model")
    monkeypatch.setattr(prove, "run_all", lambda: [broken if r.name == broken.name else r for r in real])
    assert main(["prove", "--json"]) == 1
    assert main(["prove"]) == 1
    assert "SOME THEOREMS FAILED" in capsys.readouterr().out


def test_prove_refuses_a_file_as_counterexample_directory_before_proving(
    tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(prove, "run_all", lambda: pytest.fail("proving started"))
    taken = tmp_path / "taken"
    taken.write_text("mine\n")
    assert main(["prove", "--write-counterexamples", str(taken)]) == 2
    assert "not a directory" in capsys.readouterr().err
    assert taken.read_text() == "mine\n"
