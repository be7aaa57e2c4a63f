"""The typed degraded reason: one rendering, every cause with its details, as the detector shows it."""

from __future__ import annotations

import pytest

from ledger_spec.degraded import Cause, Degraded, Effect


def test_the_text_names_the_cause_its_details_and_the_effect() -> None:
    assert Degraded(Cause.DIRECTORY_UNWATCHABLE, ("sub", "No space left on device")).text() == (
        "cannot watch sub (No space left on device; fs.inotify.max_user_watches?): every command runs a full snapshot diff")
    assert Degraded(Cause.QUEUE_OVERFLOW, effect=Effect.ONE_FULL_DIFF).text() == "the inotify queue overflowed: full snapshot diff"
    assert Degraded(Cause.ROOT_REPLACED, effect=Effect.UNKNOWN_SCOPE).text().endswith(": watches rebuilt, scope unknown")


@pytest.mark.parametrize("cause", list(Cause), ids=[c.name for c in Cause])
def test_a_cause_without_the_details_it_names_is_refused_when_made(cause: Cause) -> None:
    needed = cause.value.count("{")
    assert "{" not in Degraded(cause, ("x",) * needed).text()
    if needed:
        with pytest.raises(IndexError):
            Degraded(cause, ("x",) * (needed - 1))


def test_the_events_detector_reports_its_degraded_mode_in_that_wording(tmp_path, monkeypatch: pytest.MonkeyPatch) -> None:
    from ledger_impl.detectors import events

    monkeypatch.setattr(events, "INotify", None)
    detector = events.EventDetector()
    detector.before(tmp_path, "true")
    assert detector.degraded == Degraded(Cause.NO_INOTIFY).text() == "inotify is not available: every command runs a full snapshot diff"
    detector.close()
