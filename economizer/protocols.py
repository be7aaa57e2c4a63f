"""The four model calls, as typed protocols with contracts, and defaults that call no model.

Contracts (what any implementation, model-backed or not, must honour):

* **Proposer** `(repository, existing_ids, digests) -> ProposerAnswer`. Reads only the digests
  (no solution text, no file contents). May return any number of `SkillDefinition`s; the
  controller keeps the first `max_proposals`, verifies every citation against the window
  itself, rejects inadmissible detectors with a reason, and treats a re-used id as a
  revision that may change only `contradict`. It must be a function of its input (the
  differential test relies on it) and must not raise: the controller does not catch an
  exception, so the feed fails and its transaction writes nothing (the task can be fed
  again). A model adapter turns its own failed call into an empty answer.
* **ToolJudge** `(task_text, candidate_names) -> ToolJudgeAnswer`. `answer=None` means the call
  failed, and every candidate stays loaded. A tool absent from the answer stays loaded.
* **TraceJudge** `(GuardDigest) -> Verdict`. Reads counters, the budget and the last 24
  actions only. `stuck` counts only at confidence >= Params.judge_confidence. It is never
  consulted when the forced stop applies, so it cannot veto it.
* **RedirectWriter** `(GuardDigest) -> RedirectText`. Two to four sentences naming the
  repetitive pattern and proposing a materially different next step; never "stop".

Every answer carries the `Usage` of its call, which the controller charges to the task that
triggered it.

Defaults (no model call, so no usage):
* `DigestMiningProposer`: recurring successful command templates. A test runner whose
  command exited 0 in at least 2 window tasks becomes "Tests run with `<runner>`" (confirm:
  the runner exits 0; contradict: it fails to start; need: the agent searched for the
  runner or a runner failed to start). A setup step (`pip install -e`, `setup.py develop`)
  seen in 2 or more window tasks that passed becomes "the checkout is importable without a
  reinstall" (need: a reinstall was attempted).
* no tool judge (`Controllers.tool_judge` is None), so nothing is masked without
  unused-history evidence.
* `not_stuck`: always "not stuck", so only the forced rule intervenes.
* `template_redirect`: a redirect built from the agent's own recent actions.
"""

from __future__ import annotations

import collections
import re
from typing import Protocol

from economizer_spec.detectors import Builtin, CommandResult, Regex
from economizer_spec.guard import GuardDigest, RedirectText, Verdict
from economizer_spec.skills import SkillDefinition
from economizer_spec.stream import Controllers, Digest, ProposerAnswer, ToolJudgeAnswer
from economizer_spec.trajectory import TEST_COMMAND


class Proposer(Protocol):
    def __call__(self, repository: str, existing_ids: tuple[str, ...], digests: tuple[Digest, ...]) -> ProposerAnswer: ...


class ToolJudge(Protocol):
    def __call__(self, task_text: str, candidates: tuple[str, ...]) -> ToolJudgeAnswer: ...


class TraceJudge(Protocol):
    def __call__(self, digest: GuardDigest) -> Verdict: ...


class RedirectWriter(Protocol):
    def __call__(self, digest: GuardDigest) -> RedirectText: ...


RUNNER_FAILED_TO_START = r"No module named '?pytest|command not found|can't open file|unrecognized arguments"
"""The runner itself did not start (not: the tests it ran failed, which is the agent's work)."""
RUNNER_SEARCH = (
    r"No module named '?pytest|pip3? install[^|;&]*pytest|unrecognized arguments|runtests\.py --help|"
    r"^(ls|find|cat|head)\b[^|;&]*(runtests|tox\.ini|setup\.cfg|pytest\.ini|conftest\.py|CONTRIBUTING)"
)
"""Commands spent finding out how to run the tests: looking for the runner or its
configuration, asking for its usage, installing one, or a runner that failed to start."""
SETUP_STEP = re.compile(r"(pip3? install -e|setup\.py (develop|install|build_ext))")


def runner_of(template: str) -> str | None:
    """The test runner a command template invokes, up to and including the runner word."""
    match = TEST_COMMAND.search(template)
    if match is None:
        return None
    prefix = template[match.start() : match.end()].strip(" ;&|(")
    return re.sub(r"^(?:\S+=\S+\s+)+", "", prefix)  # drop a leading VAR=value assignment


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")[:40] or "x"


class DigestMiningProposer:
    """Mines recurring successful command templates from the window's digests."""

    min_tasks = 2

    def __call__(self, repository: str, existing_ids: tuple[str, ...], digests: tuple[Digest, ...]) -> ProposerAnswer:
        passing: dict[str, list[str]] = collections.defaultdict(list)
        for digest in digests:
            for runner in dict.fromkeys(runner_of(t) for t, ok in digest.test_invocations if ok):
                if runner:
                    passing[runner].append(digest.task_id)
        skills: list[SkillDefinition] = []
        for runner, tasks in sorted(passing.items(), key=lambda item: (-len(item[1]), item[0])):
            if len(tasks) < self.min_tasks:
                continue
            pattern = re.escape(runner)
            skills.append(
                SkillDefinition(
                    id=f"test-runner-{_slug(runner)}",
                    claim=f"`{runner}` runs this repository's tests.",
                    injection=f"This repository's tests run with `{runner} <tests>`.",
                    scope=Builtin("ran_tests"),
                    confirm=CommandResult(pattern, exit_zero=True),
                    contradict=CommandResult(pattern, exit_zero=False, output=RUNNER_FAILED_TO_START),
                    need=Regex(RUNNER_SEARCH, "all"),
                    high_stakes=True,
                    citations=tuple(tasks),
                )
            )
        setup_tasks = [d.task_id for d in digests if d.passed and any(SETUP_STEP.search(t) for t in d.templates)]
        if len(setup_tasks) >= self.min_tasks:
            package = repository.rsplit("/", 1)[-1].replace("-", "_")
            skills.append(
                SkillDefinition(
                    id="no-reinstall-needed",
                    claim="The checkout is importable in place; no reinstall is needed.",
                    injection=f"`{package}` is already installed in development mode from this checkout; no reinstall is needed.",
                    scope=Regex(r"\bpython3?\b|\bpytest\b", "commands"),
                    confirm=Builtin("ran_tests"),
                    contradict=Regex(rf"No module named '?{re.escape(package)}\b", "outputs"),
                    need=Regex(SETUP_STEP.pattern, "commands"),
                    citations=tuple(setup_tasks),
                )
            )
        return ProposerAnswer(tuple(skills[:4]))


def not_stuck(digest: GuardDigest) -> Verdict:
    return Verdict(False, 1, "no model judge configured")


def template_redirect(digest: GuardDigest) -> RedirectText:
    c = digest.counters
    hot = max(c.edits, key=lambda item: (item[1], item[0]), default=None)
    last = next((a for a in reversed(digest.recent) if a), "")
    pattern = (
        f"You have edited {hot[0]} {hot[1]} times" if hot and hot[1] > 1 else f"You have edited {c.distinct_edited_files} files"
    )
    return RedirectText(
        f"{pattern} and seen {c.repeated_failures} repeated failures out of {c.error_outputs} errors; "
        f"your latest action was `{last[:80]}`. Re-read the failing test's expectation and test one new "
        f"hypothesis about the root cause before editing again."
    )


def default_controllers() -> Controllers:
    return Controllers(DigestMiningProposer(), not_stuck, template_redirect, None)
