"""The one detector protocol (`ledger_impl.detectors.protocol`): its adapter for `before`/`after`
detectors, the deferred report just before a command, and every driver speaking it."""

from __future__ import annotations

from pathlib import Path

import pytest

from ledger_impl import Runtime
from ledger_impl.detectors.baseline import unusable
from ledger_impl.detectors.protocol import (
    After, Before, Bracketed, Detector, ReportFailed, Tokens, as_detector,
)
from ledger_impl.detectors.stat_index import StatIndex
from ledger_impl.session import DurableSession
from ledger_spec import Changes
from ledger_spec.degraded import Cause


class Scripted:
    """A `before`/`after` detector that reports what the test tells it to, and logs its calls."""

    name = "scripted"

    def __init__(self) -> None:
        self.calls: list[tuple[str, str]] = []
        self.next = Changes()
        self.fail_in: str | None = None

    def before(self, root: Path, command: str) -> None:
        self.calls.append(("before", command))
        if self.fail_in == "before":
            raise OSError("no watch")

    def after(self, root: Path, command: str, exit_code: int) -> Changes:
        self.calls.append(("after", command))
        if self.fail_in == "after":
            raise OSError("queue lost")
        if self.fail_in == "type":
            return None  # type: ignore[return-value]
        report, self.next = self.next, Changes()
        return report


@pytest.fixture
def root(tmp_path: Path) -> Path:
    path = tmp_path / "root"
    path.mkdir()
    (path / "a.txt").write_text("alpha\n")
    return path


def test_the_first_report_is_unknown_with_its_reason_and_takes_the_inner_baseline(root: Path) -> None:
    inner = Scripted()
    detector = Bracketed(inner)
    changes, token, problem = detector.changes_since(root, None)
    assert changes.unknown and token is not None
    assert problem == unusable(Cause.BASELINE_MISSING, "scripted baseline")
    assert inner.calls == [("before", ":")]


def test_a_command_is_bracketed_by_before_and_after_with_the_report_deferred_until_after(root: Path) -> None:
    inner = Scripted()
    detector = Bracketed(inner)
    _, token, _ = detector.changes_since(root, None)
    announced = detector.changes_since(root, token, Before("sed -i s/a/b/ a.txt"))
    assert announced == (Changes(), token, None), "deferred: same baseline, no report"
    inner.next = Changes(frozenset({"a.txt"}))
    changes, later, problem = detector.changes_since(root, token, After("sed -i s/a/b/ a.txt", 0))
    assert changes == Changes(frozenset({"a.txt"})) and problem is None and later != token
    assert inner.calls[1:] == [("before", "sed -i s/a/b/ a.txt"), ("after", "sed -i s/a/b/ a.txt")]


def test_a_poll_brackets_the_no_op(root: Path) -> None:
    inner = Scripted()
    detector = Bracketed(inner)
    _, token, _ = detector.changes_since(root, None)
    inner.next = Changes(frozenset({"a.txt"}))
    changes, _, problem = detector.changes_since(root, token)
    assert changes == Changes(frozenset({"a.txt"})) and problem is None
    assert inner.calls[1:] == [("before", ":"), ("after", ":")]


def test_a_baseline_that_is_not_the_latest_is_unknown_scope(root: Path) -> None:
    # The report in between went to another caller: what it held is not in this caller's state.
    detector = Bracketed(Scripted())
    _, first, _ = detector.changes_since(root, None)
    _, second, _ = detector.changes_since(root, first)
    changes, third, problem = detector.changes_since(root, first)
    assert changes.unknown and problem == unusable(Cause.WRITTEN_ELSEWHERE)
    assert third not in (first, second)
    announced, _, problem = detector.changes_since(root, second, Before("cat a.txt"))
    assert announced.unknown and problem == unusable(Cause.WRITTEN_ELSEWHERE), "no deferral from a stale baseline"


def test_an_after_with_no_bracket_open_is_unknown_scope(root: Path) -> None:
    detector = Bracketed(Scripted())
    _, token, _ = detector.changes_since(root, None)
    changes, _, _ = detector.changes_since(root, token, After("touch b.txt", 0))
    assert changes.unknown, "nothing bracketed what ran"


def test_a_bracket_left_open_makes_the_next_report_unknown(root: Path) -> None:
    # The command's run was interrupted after its Before: whatever it did is not attributable.
    inner = Scripted()
    detector = Bracketed(inner)
    _, token, _ = detector.changes_since(root, None)
    detector.changes_since(root, token, Before("touch b.txt"))
    changes, token, _ = detector.changes_since(root, token)
    assert changes.unknown and ("after", "touch b.txt") in inner.calls
    detector.changes_since(root, token, Before("touch c.txt"))
    announced, _, _ = detector.changes_since(root, token, Before("cat a.txt"))
    assert announced.unknown, "a Before over an open bracket cannot defer what that bracket saw"


@pytest.mark.parametrize("fail_in,call", [("before", "before"), ("after", "after"), ("type", "after")])
def test_what_the_inner_detector_raises_names_the_call(root: Path, fail_in: str, call: str) -> None:
    inner = Scripted()
    detector = Bracketed(inner)
    _, token, _ = detector.changes_since(root, None)
    inner.fail_in = fail_in
    with pytest.raises(ReportFailed) as failed:
        detector.changes_since(root, token)
    assert failed.value.call == call and str(failed.value).startswith(f"{call}: ")


def test_tokens_of_two_objects_never_match() -> None:
    one, two = Tokens(), Tokens()
    assert one.latest() != two.latest() and one.issue() != two.issue()


def test_as_detector_speaks_the_protocol_for_either_kind_and_refuses_neither() -> None:
    index = StatIndex()
    assert as_detector(index) is index and isinstance(index, Detector)
    adapted = as_detector(Scripted())
    assert isinstance(adapted, Bracketed) and adapted.name == "scripted"
    with pytest.raises(TypeError, match="neither"):
        as_detector(object())


def test_the_stat_index_defers_just_before_a_command_only_with_a_baseline(root: Path) -> None:
    index = StatIndex()
    first, blob, _ = index.changes_since(root, None, Before("cat a.txt"))
    assert first.unknown and blob is not None, "no baseline to defer to: it scans"
    (root / "a.txt").write_text("changed, longer\n")
    assert index.changes_since(root, blob, Before("cat a.txt")) == (Changes(), blob, None)
    changes, _, _ = index.changes_since(root, blob, After("cat a.txt", 0))
    assert "a.txt" in changes.paths, "the deferred interval is reported by the next call"


def test_the_runtime_drives_a_session_detector_directly(root: Path) -> None:
    # The detector a hook process uses, driven by the Runtime with no adapter between them:
    # an edit made between steps by another process is seen before a Reuse is served.
    with Runtime(root, detector=StatIndex(), probe=False) as runtime:
        assert runtime.step("cat a.txt").verdict == "allow"
        assert runtime.step("cat a.txt").verdict == "reuse"
        (root / "a.txt").write_text("edited elsewhere, longer\n")
        step = runtime.step("cat a.txt")
        assert step.verdict != "reuse" and step.output == "edited elsewhere, longer\n"


def test_the_runtime_shows_why_a_report_was_unknown(root: Path) -> None:
    class Forgetful(StatIndex):
        """Loses its baseline after the first command, as a damaged store would."""

        name = "forgetful"

        def changes_since(self, root, blob, moment=None):  # type: ignore[no-untyped-def]
            if isinstance(moment, After) and blob is not None and moment.command == "true":
                return super().changes_since(root, b"damaged", moment)
            return super().changes_since(root, blob, moment)

    with Runtime(root, detector=Forgetful(), probe=False) as runtime:
        runtime.step("cat a.txt")
        step = runtime.step("true")
        assert step.changes.unknown
        assert step.degraded is not None and step.degraded.cause is Cause.BASELINE_UNREADABLE
        assert runtime.step("cat a.txt").verdict != "reuse"


def test_a_session_speaks_the_protocol_to_a_bracketed_detector(root: Path, tmp_path: Path) -> None:
    # A before/after detector keeps its baseline in memory: it serves the session object that
    # holds it, and in a new one (another hook process) its first report is unknown scope,
    # which must cost reuse, never serve.
    state = tmp_path / "state"
    first = DurableSession.open(root, state_dir=state, detector=Scripted(), probe=False)
    try:
        first.decide("cat a.txt", call_id="1")
        first.record("1", "alpha\n", 0)
        assert first.decide("cat a.txt", call_id="2").verdict == "reuse"
    finally:
        first.close()
    second = DurableSession.open(root, state_dir=state, detector=Scripted(), probe=False)
    try:
        assert second.decide("cat a.txt", call_id="3").verdict != "reuse"
    finally:
        second.close()


def test_an_older_baseline_is_stale_however_its_count_sorts(root: Path) -> None:
    """Pins `ledger_impl/detectors/protocol.py` line 154 (`==` -> `>=` between a baseline and
    the latest token): an older baseline whose count sorts after the latest one's was taken
    as current, so the reports that went to another caller in between were lost."""
    # Counts are compared as the bytes of a token: the 9th must not pass for the 10th.
    detector = Bracketed(Scripted())
    _, token, _ = detector.changes_since(root, None)
    tokens = [token]
    for _ in range(9):  # the latest is the 10th
        _, token, _ = detector.changes_since(root, token)
        tokens.append(token)
    changes, _, problem = detector.changes_since(root, tokens[-2])
    assert changes.unknown and problem == unusable(Cause.WRITTEN_ELSEWHERE)


@pytest.mark.parametrize("other", ["touch a.txt", "touch c.txt"], ids=["sorts-before", "sorts-after"])
def test_an_after_of_another_command_closes_the_open_bracket_first(root: Path, other: str) -> None:
    inner = Scripted()
    detector = Bracketed(inner)
    _, token, _ = detector.changes_since(root, None)
    detector.changes_since(root, token, Before("touch b.txt"))
    changes, _, _ = detector.changes_since(root, token, After(other, 0))
    assert changes.unknown
    assert inner.calls[-3:] == [("after", "touch b.txt"), ("before", ":"), ("after", ":")]


def test_closing_the_adapter_closes_the_detector_behind_it() -> None:
    closed: list[bool] = []

    class Closable(Scripted):
        def close(self) -> None:
            closed.append(True)

    Bracketed(Closable()).close()
    assert closed == [True]


def test_a_detector_with_before_alone_is_refused() -> None:
    class Half:
        def before(self, root: Path, command: str) -> None: ...

    with pytest.raises(TypeError, match="neither"):
        as_detector(Half())
