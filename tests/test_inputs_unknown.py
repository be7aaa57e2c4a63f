"""A git read whose inputs Ledger could not all find is never reused, and the user is told why.

`git_inputs` walks configuration files, environment entries, ref directories and worktrees up
to fixed bounds; past one (or at an include it cannot resolve) the inputs are not all known.
That costs the read its reuse, like a refusal by design (a configured diff program), but unlike
one it is a limit of Ledger's, so the Runtime's `Step.degraded` and the session's decision
name it. A real repository in a temporary directory; the bound is passed through the
environment (`GIT_CONFIG_COUNT` one past `_ENVIRONMENT_ENTRIES_LIMIT`), which git itself reads.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from ledger_impl import Runtime, git_inputs
from ledger_impl.classifier import classify
from ledger_impl.fingerprint import Fingerprint, take, take_or_refusal
from ledger_impl.session import DurableSession
from ledger_spec.degraded import Cause, Degraded, Effect
from test_fingerprint import env  # noqa: F401 - a fixture: a HOME of its own, no system git config


@pytest.fixture
def repo(tmp_path: Path, env: dict[str, str]) -> Path:
    root = tmp_path / "repo"
    root.mkdir()
    (root / "a.txt").write_text("one\n")
    subprocess.run(["git", "init", "-q"], cwd=root, env=env, check=True)
    return root


def _past_the_bound(env: dict[str, str]) -> dict[str, str]:
    count = git_inputs._ENVIRONMENT_ENTRIES_LIMIT + 1
    given = {**env, "GIT_CONFIG_COUNT": str(count)}
    for index in range(count):
        given[f"GIT_CONFIG_KEY_{index}"], given[f"GIT_CONFIG_VALUE_{index}"] = "core.quotePath", "false"
    return given


def _bound_named(degraded: object) -> bool:
    return git_inputs.BEYOND_LIMITS in str(degraded)


def test_a_read_past_a_bound_is_refused_with_its_reason_and_one_by_design_without(repo: Path, env: dict[str, str]) -> None:
    status = classify("git status --short a.txt", cwd=".", root=repo, environment=env)
    assert isinstance(take_or_refusal(repo, status, env), Fingerprint)
    refused = take_or_refusal(repo, status, _past_the_bound(env))
    assert refused == Degraded(Cause.INPUTS_UNKNOWN, (git_inputs.BEYOND_LIMITS,), Effect.NOT_SERVED)
    assert take(repo, status, _past_the_bound(env)) is None
    # A configured program is the command's nature, not a limit: no reason to show.
    assert take_or_refusal(repo, status, {**env, "GIT_EXTERNAL_DIFF": "/bin/false"}) is None


def test_an_include_that_cannot_be_resolved_is_named_too(repo: Path, env: dict[str, str]) -> None:
    (repo / ".git" / "config").write_text("[include]\n\tpath = ~nobody-here/x.inc\n")
    status = classify("git status --short a.txt", cwd=".", root=repo, environment=env)
    refused = take_or_refusal(repo, status, env)
    assert isinstance(refused, Degraded) and git_inputs.UNRESOLVABLE in refused.text()


def test_the_runtime_re_runs_the_read_and_its_step_says_why(repo: Path, env: dict[str, str]) -> None:
    runtime = Runtime(repo, environment=_past_the_bound(env), probe=False)
    first = runtime.step("git status --short")
    again = runtime.step("git status --short")
    assert again.verdict != "reuse"
    assert _bound_named(first.degraded) and _bound_named(again.degraded)
    # Within the bound, the same read is served and nothing is said.
    within = Runtime(repo, environment=env, probe=False)
    within.step("git status --short")
    served = within.step("git status --short")
    assert served.verdict == "reuse" and served.degraded is None


def test_the_session_s_decision_says_why(repo: Path, env: dict[str, str], tmp_path: Path) -> None:
    with DurableSession.open(repo, state_dir=tmp_path / "state", probe=False) as session:
        session.environment = _past_the_bound(env)
        for call in ("c1", "c2"):
            decision = session.decide("git status --short", call_id=call)
            assert decision.verdict != "reuse" and _bound_named(decision.degraded)
            session.record(call, "", 0)
        session.environment = env
        assert not _bound_named(session.decide("git status --short", call_id="c3").degraded)
