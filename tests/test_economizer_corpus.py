"""The evaluation on real trajectories (skipped when ../shared is absent, as on a bare clone)."""

from __future__ import annotations

import json
import pathlib

import pytest

from economizer.protocols import default_controllers
from ledger_properties.economizer_differential import compare
from ledger_properties.economizer_evaluation import evaluate_corpus, load_streams
from economizer_spec.params import Params

ROOT = pathlib.Path(__file__).resolve().parents[1]
CANDIDATES = [ROOT.parent / "shared", ROOT.parent.parent / "shared"]  # beside the clone, or beside a worktree's parent
SHARED = next((c for c in CANDIDATES if (c / "corpus").is_dir()), None)
CORPUS = SHARED / "corpus" / "mini-swe-agent-gemini3pro.jsonl" if SHARED else None

pytestmark = pytest.mark.skipif(CORPUS is None or not CORPUS.is_file(), reason="../shared/corpus is not present")

SMALL = ("astropy/astropy", "matplotlib/matplotlib")


@pytest.fixture(scope="module")
def small_corpus(tmp_path_factory) -> pathlib.Path:
    lines = [line for line in CORPUS.read_text().splitlines() if json.loads(line)["task_repo"] in SMALL]
    path = tmp_path_factory.mktemp("corpus") / "small.jsonl"
    path.write_text("\n".join(lines) + "\n")
    return path


def test_evaluation_on_two_real_streams(small_corpus: pathlib.Path) -> None:
    report = evaluate_corpus(small_corpus, grid=False)
    json.dumps(report, default=str)
    assert report["repositories"]["astropy/astropy"]["tasks"] == 22
    assert report["repositories"]["matplotlib/matplotlib"]["tasks"] == 34
    guard = report["guard"]
    assert guard["failed_runs"] + guard["passed_runs"] == 56
    assert guard["false_stops"] == 0  # the paper's design goal, at its own kappa
    for entry in report["skills"]["per_repository"].values():
        for skill in entry["skills"]:
            assert len(skill["citations"]) >= 2
            assert skill["status"] in ("candidate", "confirmed", "retired")
            assert (skill["retired_at"] is not None) == (skill["status"] == "retired")


def test_spec_and_implementation_agree_on_a_real_stream() -> None:
    streams = load_streams(CORPUS)
    runs = [t for t, _ in streams["matplotlib/matplotlib"][:9]]
    params = Params(kappa=1, beta=0, min_passed_for_budget=2)  # make the guard act on real runs
    assert compare(runs, params, default_controllers()) is None
