"""`ledger verify` exits 0 only if every check holds; a failing or crashing check fails it.

The real checks run in CI through their own tests and in the Quick start; here they are
replaced so that the summary logic itself is what is tested.
"""

from __future__ import annotations

import pytest

from ledger_cli import main as cli
from ledger_cli.commands import verify
from ledger_properties.profiles import Profile


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


def test_on_a_non_terminal_each_stage_prints_its_line_and_time_as_it_finishes(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    seen_before_second: list[str] = []

    def second(profile: Profile, seed: int | None) -> list[verify.CheckResult]:
        seen_before_second.append(capsys.readouterr().out)  # what a CI log shows while stage 2 runs
        return [verify.CheckResult("b", True, "fine", 2.5)]

    monkeypatch.setattr(verify, "CHECKS", (("first stage", holds), ("second stage", second)))
    assert cli.main(["verify"]) == 0
    first_line = seen_before_second[0].strip().splitlines()
    assert len(first_line) == 1 and first_line[0].startswith("[1/2] first stage (ci): 1 held, 0 failed in "), first_line
    rest = capsys.readouterr().out
    assert rest.startswith("[2/2] second stage (ci): 1 held, 0 failed in "), rest


def test_each_z3_row_shows_its_real_time(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(verify, "CHECKS", (("Z3 proofs", verify._proofs),))
    monkeypatch.setenv("COLUMNS", "160")  # one row per line, to read them back
    assert cli.main(["verify"]) == 0
    rows = [line for line in capsys.readouterr().out.splitlines() if "z3: " in line]
    assert len(rows) >= 10
    # A theorem over a second (on a loaded machine) shows seconds: each row still has one time.
    scale = {"ms": 1e-3, "s": 1.0}
    times = [float(cell.split()[0]) * scale[cell.split()[1]] for row in rows for cell in row.split("│")
             if len(cell.split()) == 2 and cell.split()[1] in scale and cell.split()[0].replace(".", "").isdigit()]
    assert len(times) == len(rows) and all(t > 0 for t in times), rows
    assert len(set(times)) > 1  # measured per theorem, not one share of the stage's time


def test_a_time_is_shown_in_milliseconds_below_a_second() -> None:
    assert [verify.shown_seconds(s) for s in (0.0004, 0.034, 0.9994, 1.0, 12.345)] == ["0.4 ms", "34 ms", "999 ms", "1.0 s", "12.3 s"]


def test_stage_runs_only_the_named_stages_and_says_so(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(verify, "CHECKS", (("safety hunt", holds), ("hook-path hunt", fails)))
    assert cli.main(["verify", "--stage", "hunt"]) == 0
    out = capsys.readouterr().out
    assert "[1/1] safety hunt" in out and "hook-path hunt" not in out and "only hunt" in out
    assert cli.main(["verify", "--stage", "hunt", "--stage", "hook"]) == 1
    assert cli.main(["verify"]) == 1  # no --stage: every stage
    with pytest.raises(SystemExit):
        cli.main(["verify", "--stage", "nonsense"])


def test_every_stage_name_names_a_check() -> None:
    assert set(verify.STAGES.values()) == {title for title, _ in verify.CHECKS}
