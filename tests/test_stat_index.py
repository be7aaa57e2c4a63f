"""The persisted stat index: byte round trip, a damaged index never trusted, detection across
separate detector instances (as separate processes would be), and the ci hunt."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from ledger_impl.detectors.stat_index import StatIndexDetector, changes_since, decode, encode, make
from ledger_impl.tree_snapshot import take_snapshot
from properties.hunt import run_hunt


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    root = tmp_path / "root"
    (root / "d" / "e").mkdir(parents=True)
    (root / "a.txt").write_text("alpha\n")
    (root / "d" / "e" / "b.txt").write_text("beta\n")
    os.symlink("a.txt", root / "link")
    return root


def test_encode_decode_round_trips_every_field(tree: Path) -> None:
    snapshot = take_snapshot(tree)
    assert decode(encode(snapshot)) == snapshot


@pytest.mark.parametrize("damage", [lambda b: b[:-1], lambda b: b[:40] + bytes([b[40] ^ 1]) + b[41:], lambda b: b""])
def test_a_damaged_index_gives_unknown_scope_and_a_reason(tree: Path, damage: object) -> None:
    _, blob, _ = changes_since(tree, None)
    changes, fresh_blob, problem = changes_since(tree, damage(blob))  # type: ignore[operator]
    assert changes.unknown and problem is not None
    assert changes_since(tree, fresh_blob)[0].empty  # the new index is sound again


def test_an_index_of_another_root_is_not_used(tree: Path, tmp_path: Path) -> None:
    other = tmp_path / "other"
    other.mkdir()
    _, blob, _ = changes_since(other, None)
    changes, _, problem = changes_since(tree, blob)
    assert changes.unknown and "not" in (problem or "")


def test_separate_instances_bracket_a_command_through_the_state_dir(tree: Path, tmp_path: Path) -> None:
    state = tmp_path / "state"
    StatIndexDetector(state).before(tree, "sed -i s/alpha/ALPHA/ a.txt")
    (tree / "a.txt").write_text("ALPHA\n")  # same size, same tick: caught by the racy digest
    (tree / "d" / "e" / "new").write_text("")
    changes = StatIndexDetector(state).after(tree, "sed -i s/alpha/ALPHA/ a.txt", 0)
    assert changes.paths == frozenset({"a.txt", "d/e", "d/e/new"}) and not changes.unknown
    assert StatIndexDetector(state).after(tree, ":", 0).empty
    assert not any(path.name.endswith(".index") for path in tree.rglob("*"))


def test_the_state_dir_may_not_be_inside_the_root(tree: Path) -> None:
    detector = StatIndexDetector(tree / ".state")
    with pytest.raises(ValueError, match="inside the workspace"):
        detector.before(tree, ":")


def test_the_stat_index_detector_passes_the_ci_hunt(tmp_path: Path) -> None:
    report = run_hunt(make, "ci", seed=5, out_dir=tmp_path, detector="ledger_impl.detectors.stat_index:make")
    print(f"\nstat-index: {report.examples} runs, {report.steps} steps, {report.steps_per_second:.1f} steps/s")
    assert not report.found, report.counterexamples
    assert report.steps > 0
