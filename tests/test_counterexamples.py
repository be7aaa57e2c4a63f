"""Every stored counterexample is a regression case.

Each file must reproduce against the detector it was recorded with (the failure mode it
documents is still real), and must not reproduce against the default detector (the sound one
does not have it). A file that stops reproducing against its own detector means the replay
lost its teeth; a file that reproduces against the default means a real bug is open.
"""

from __future__ import annotations

import pathlib

import pytest

from properties import counterexample
from properties.replay import load_document, load_factory, replay

COUNTEREXAMPLES = sorted((pathlib.Path(__file__).parent.parent / "counterexamples").glob("*.json"))
# A fault of Ledger itself that has been fixed has no detector left that shows it: its
# regression check is that the default detector does not.
REPRODUCIBLE = [path for path in COUNTEREXAMPLES if load_document(path).get("status") != "fixed"]
DEFAULT_DETECTOR = "ledger_impl.detectors:default_detector"


def test_there_are_counterexamples_to_replay() -> None:
    assert COUNTEREXAMPLES, "counterexamples/ holds no JSON file"


@pytest.mark.parametrize("path", COUNTEREXAMPLES, ids=lambda p: p.stem)
def test_file_follows_the_schema(path: pathlib.Path) -> None:
    loaded = counterexample.load(path)  # validates every field and names the wrong one
    document = load_document(path)
    assert loaded.id == path.stem == document["id"]
    assert "\n" not in loaded.explanation


@pytest.mark.parametrize("path", REPRODUCIBLE, ids=lambda p: p.stem)
def test_reproduces_against_its_recorded_detector(path: pathlib.Path) -> None:
    document = load_document(path)
    result = replay(document, load_factory(str(document["detector"])))
    assert result.reproduced, f"{path.name} no longer shows {document['property']} with {document['detector']}"


@pytest.mark.parametrize("path", COUNTEREXAMPLES, ids=lambda p: p.stem)
def test_does_not_reproduce_against_the_default_detector(path: pathlib.Path) -> None:
    document = load_document(path)
    # The default detector as shipped: with the observation fingerprint.
    result = replay(document, load_factory(DEFAULT_DETECTOR), fingerprint=True)
    if document.get("status") == "open":
        # A real fault of Ledger itself (not of the recorded detector), kept until fixed: when
        # this assertion fails, the fix landed; remove "status" from the file.
        assert result.reproduced, f"{path.name} is marked open but no longer reproduces: mark it fixed"
        return
    assert not result.reproduced, f"{path.name}: the default detector shows {result.violation}"
    assert all(record.violation is None for record in result.records), [r.violation for r in result.records if r.violation]
