"""`ledger verify` exits 0 only if every check holds; a failing or crashing check fails it.

The real checks run in CI through their own tests and in the Quick start; here they are
replaced so that the summary logic itself is what is tested.
"""

from __future__ import annotations

import pytest

from ledger_cli import main as cli
from ledger_cli.commands import verify
from properties.profiles import Profile


def holds(profile: Profile, seed: int | None) -> list[verify.CheckResult]:
    return [verify.CheckResult("stand-in that holds", True, f"profile {profile.name}, seed {seed}")]


def fails(profile: Profile, seed: int | None) -> list[verify.CheckResult]:
    return [verify.CheckResult("stand-in that fails", False, "a violation")]


def crashes(profile: Profile, seed: int | None) -> list[verify.CheckResult]:
    raise RuntimeError("the check itself broke")


def test_every_check_holding_exits_zero(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(verify, "CHECKS", (("one", holds), ("two", holds)))
    assert cli.main(["verify", "--seed", "7"]) == 0
    out = capsys.readouterr().out
    assert "2 held, 0 failed" in out and "seed 7" in out


@pytest.mark.parametrize("bad", [fails, crashes])
def test_one_failing_or_crashing_check_exits_one(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], bad) -> None:
    monkeypatch.setattr(verify, "CHECKS", (("good", holds), ("bad", bad)))
    assert cli.main(["verify"]) == 1
    out = capsys.readouterr().out
    assert "1 held, 1 failed" in out
    if bad is crashes:
        assert "the check itself broke" in out


def test_the_profile_comes_from_the_flag_or_the_environment(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(verify, "CHECKS", (("one", holds),))
    monkeypatch.setenv("LEDGER_PROFILE", "dev")
    assert cli.main(["verify"]) == 0
    assert "profile dev" in capsys.readouterr().out
    assert cli.main(["verify", "--profile", "thorough"]) == 0
    assert "profile thorough" in capsys.readouterr().out


def test_an_unknown_profile_in_the_environment_is_a_usage_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LEDGER_PROFILE", "bogus")
    assert cli.main(["verify"]) == 2


def test_workers_below_one_is_a_usage_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(verify, "CHECKS", (("one", holds),))
    assert cli.main(["verify", "--workers", "0"]) == 2
    assert cli.main(["verify", "--workers", "1"]) == 0
