"""The four controller calls asked of a real model: prompts, answer schemas, failure rules.

Each call sends a system prompt (the role and the answer's JSON schema) and one user
message (the call's input as JSON, keys sorted, so a recording replays byte for byte). The
answer must be one JSON object that satisfies the schema (`model_schema`); otherwise, or if
the call failed (timeout, retries exhausted, refused, cut at the token limit), the call is a
**failed call** and the rule for it applies:

* proposer   -> no proposals this time (the window is proposed on again at the next due call);
* tool judge -> `answer=None`: every candidate stays loaded (the pruning rule's failed judge);
* trace judge -> not stuck, confidence 0: a failed judge never redirects or stops, so only the
  forced rule can act (the conservative reading: the judge only ever spares the agent);
* redirect writer -> the template redirect built from the agent's own actions, so a forced
  redirect still says something concrete.

The tokens of every call, failed or not, are charged to the task that triggered it (the
controller records each answer's `usage`). `ModelCalls.tally` counts the calls and the failed
ones, with the first error, so that a run whose calls all fail (a bad model name, a model
that refuses the request's settings) says so instead of passing for a run without a model.
"""

from __future__ import annotations

import json
from fractions import Fraction
from typing import Any, Mapping

import attrs

from economizer_spec.guard import GuardDigest, RedirectText, Verdict
from economizer_spec.stream import Controllers, Digest, ProposerAnswer, ToolJudgeAnswer
from economizer_spec.trajectory import BUILTINS

from . import model_schema
from .codec import BadInput, definition_from_json
from .model_client import ModelClient, Reply, Request
from .protocols import template_redirect

_JSON_RULE = (
    "Reply with exactly one JSON object and nothing else (no prose, no code fence), satisfying this JSON Schema:\n"
)

PROPOSER_SYSTEM = (
    "You watch a coding agent solve a stream of tasks in one software repository. From summaries of its recent "
    "tasks, find operational facts about this repository that the agent keeps rediscovering at a cost: how its "
    "tests are run, which setup step is unnecessary, which command fails here and what works instead. For each "
    "fact, propose a micro-skill: a one-line `injection` (at most 200 characters) that will be put in front of "
    "the agent on later tasks, and detectors the controller checks on each finished task without you: `scope` "
    "(the task exercised the fact), `confirm` (the fact held), `contradict` (the fact was wrong) and `need` "
    "(the agent wasted effort the injection would have saved). A detector is a regex (searched line by line in "
    "commands, outputs or both), a built-in predicate name (" + ", ".join(sorted(BUILTINS)) + "), or a command "
    "pattern with its exit status. Cite in `cite` at least two task ids from the summaries where `confirm` "
    "matches; the controller verifies every citation and drops those it cannot. Propose at most four skills, "
    "only facts the summaries show, never a solution to a task. Keep regexes simple: no back-references, no "
    "nested repetition. Reusing an existing id revises that skill (only its contradict detector may change).\n"
)

TOOL_JUDGE_SYSTEM = (
    "You decide which optional tools a coding agent needs for one task. You get the task text and the names of "
    "candidate tools the agent has not used for a while. Put each candidate in `load` if the task may plausibly "
    "need it and in `drop` only if it clearly will not. When unsure, load it: dropping a needed tool costs far "
    "more than loading an unused one.\n"
)

TRACE_JUDGE_SYSTEM = (
    "You judge whether a coding agent is stuck in an unproductive loop. You get its running counters (turns, "
    "error outputs, repeated failures, edits per file, turns since the last edit, test runs) and its most recent "
    "actions (the first line of each command). Say `stuck: true` only when the actions show the same failure "
    "recurring while the agent keeps editing without a new idea; an agent that is exploring, narrowing a bug or "
    "making steady progress is not stuck. `confidence` is your probability that the judgement is right: give "
    "0.7 or more only for a clear dead end. `reason` names the pattern in one sentence.\n"
)

REDIRECT_SYSTEM = (
    "A coding agent is looping: the same failure keeps coming back while it edits. Write the note it will read "
    "next, two to four sentences: name the repetitive pattern you see in its recent actions, and propose one "
    "materially different next step (a different hypothesis, a different place to look, a smaller experiment). "
    "Do not tell it to stop or give up, and do not claim to know the fix.\n"
)


def _digest_json(digest: Digest) -> dict[str, Any]:
    return {
        "task": digest.task_id, "passed": digest.passed, "turns": digest.turns, "edited_files": list(digest.edited_files),
        "commands": list(digest.templates), "test_runs": [{"command": t, "exit_zero": ok} for t, ok in digest.test_invocations],
        "error_signatures": list(digest.error_signatures), "flags": dict(digest.flags),
    }


def _guard_json(digest: GuardDigest) -> dict[str, Any]:
    counters = attrs.asdict(digest.counters)
    counters["edits"] = dict(digest.counters.edits)
    return {"counters": counters, "budget": digest.budget, "recent_actions": list(digest.recent)}


def _dumps(value: Any) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False)


@attrs.define
class Tally:
    """The calls asked so far, how many failed, and the first failure (`kind: error`)."""

    asked: int = 0
    failed: int = 0
    first_error: str = ""

    def count(self, kind: str, error: str | None) -> None:
        self.asked += 1
        if error is not None:
            self.failed += 1
            self.first_error = self.first_error or f"{kind}: {error}"

    def warning(self, model: str) -> str | None:
        """One line for a run with failed calls, or None."""
        if not self.failed:
            return None
        share = f"all {self.asked}" if self.failed == self.asked else f"{self.failed} of {self.asked}"
        first = " ".join(self.first_error.split())[:300]
        return f"{share} model calls to {model} failed; the failed-call rules applied (first: {first})"


@attrs.frozen
class ModelCalls:
    """The four calls through one client. `max_tokens` per call kind bounds each answer."""

    client: ModelClient
    max_tokens: Mapping[str, int] = attrs.field(factory=lambda: {"proposer": 2000, "tool_judge": 400, "trace_judge": 300, "redirect_writer": 400})
    tally: Tally = attrs.field(factory=Tally)

    def _ask(self, kind: str, system: str, schema: Mapping[str, Any], payload: Any) -> tuple[Any, Reply, str | None]:
        request = Request(kind, system + _JSON_RULE + _dumps(schema), _dumps(payload), self.max_tokens[kind])  # type: ignore[arg-type]
        reply = self.client.complete(request)
        if reply.text is None:
            value, error = None, reply.error or "the call failed"
        else:
            value, error = model_schema.parse_answer(reply.text, schema)
        if kind != "proposer":  # the proposer's answer can still fail as skills (counted there)
            self.tally.count(kind, error)
        return value, reply, error

    def propose(self, repository: str, existing_ids: tuple[str, ...], digests: tuple[Digest, ...]) -> ProposerAnswer:
        payload = {"repository": repository, "existing_skill_ids": list(existing_ids), "tasks": [_digest_json(d) for d in digests]}
        value, reply, error = self._ask("proposer", PROPOSER_SYSTEM, model_schema.PROPOSER, payload)
        skills: tuple = ()
        if error is None:
            try:  # not strict: an inadmissible regex is the controller's to reject, with its reason
                skills = tuple(definition_from_json(item, "proposer answer", strict=False) for item in value["skills"])
            except BadInput as bad:
                error = str(bad)
        self.tally.count("proposer", error)
        return ProposerAnswer(skills, reply.usage)

    def judge_tools(self, task_text: str, candidates: tuple[str, ...]) -> ToolJudgeAnswer:
        value, reply, error = self._ask("tool_judge", TOOL_JUDGE_SYSTEM, model_schema.TOOL_JUDGE, {"task": task_text, "candidates": list(candidates)})
        if error is not None:
            return ToolJudgeAnswer(None, reply.usage)
        dropped = set(value["drop"]) - set(value["load"])  # named both ways: loaded
        return ToolJudgeAnswer({name: name not in dropped for name in candidates}, reply.usage)

    def judge_trace(self, digest: GuardDigest) -> Verdict:
        value, reply, error = self._ask("trace_judge", TRACE_JUDGE_SYSTEM, model_schema.TRACE_JUDGE, _guard_json(digest))
        if error is not None:
            return Verdict(False, 0, f"judge call failed: {error}", reply.usage)
        confidence = Fraction(str(value["confidence"])).limit_denominator(1000)
        return Verdict(value["stuck"], confidence, value["reason"], reply.usage)

    def write_redirect(self, digest: GuardDigest) -> RedirectText:
        value, reply, error = self._ask("redirect_writer", REDIRECT_SYSTEM, model_schema.REDIRECT_WRITER, _guard_json(digest))
        if error is not None:
            return RedirectText(template_redirect(digest).text, reply.usage)
        return RedirectText(value["redirect"].strip(), reply.usage)

    def controllers(self, tool_judge: bool = True) -> Controllers:
        return Controllers(self.propose, self.judge_trace, self.write_redirect, self.judge_tools if tool_judge else None)
