"""The overlap theorems: start stamps are fresh under any interleaving; end stamps are not."""

from __future__ import annotations

import pytest

from ledger_spec.z3_overlap import (
    check_overlap_file,
    check_overlap_induction,
    check_overlap_tree,
    run_overlap_induction,
    run_overlap_theorems,
)


def test_every_overlap_theorem_comes_out_as_expected() -> None:
    results = run_overlap_theorems()
    assert [(r.name, r.status) for r in results] == [
        ("overlap-freshness-file", "proved"),
        ("overlap-freshness-tree", "proved"),
        ("stale-if-stamped-at-end", "counterexample"),
    ]
    assert all(r.as_expected for r in results)


def test_the_end_stamp_counterexample_is_a_write_between_the_read_and_its_end() -> None:
    lines = dict(line.strip().split(" = ") for line in check_overlap_file("e").model_text.splitlines())
    assert lines["V(t)"] != lines["V(D)"]
    assert (lines["L(e)"], lines["W(e)"]) == (lines["L(D)"], lines["W(D)"])  # looks current at D


def test_without_a_complete_detector_the_start_stamp_proves_nothing() -> None:
    assert check_overlap_file("s", complete_detector=False).status == "counterexample"


def test_the_tree_theorem_holds_for_the_same_world() -> None:
    assert check_overlap_tree().status == "proved"


def test_stamped_at_the_end_the_tree_theorem_fails() -> None:
    result = check_overlap_tree("e")
    assert result.status == "counterexample" and not result.as_expected and result.model_text


def test_ledger_prove_lists_the_overlap_theorems() -> None:
    from ledger_spec.z3_theorems import THEOREMS_BY_NAME

    for name in (
        "overlap-freshness-file", "overlap-freshness-tree", "overlap-induction-file", "overlap-induction-tree",
        "stale-if-stamped-at-end",
    ):
        assert THEOREMS_BY_NAME[name].check().as_expected


def test_the_induction_proves_the_start_stamp_for_file_and_tree() -> None:
    assert [(r.name, r.status) for r in run_overlap_induction()] == [
        ("overlap-induction-file", "proved"),
        ("overlap-induction-tree", "proved"),
    ]


@pytest.mark.parametrize("target", ["file", "tree"])
def test_stamped_at_the_end_the_inductive_step_fails_at_the_finish(target: str) -> None:
    result = check_overlap_induction(target, stamp="e")
    assert result.status == "counterexample" and not result.as_expected
    lines = dict(line.strip().split(" = ") for line in result.model_text.splitlines())
    assert lines["kind"] == "2"  # the finish event breaks the invariant
    assert lines["oV_post"] != lines["V_post"]  # a current observation of content no longer there
