"""Break one controller rule at a time and check that a property catches it.

`python -m ledger_properties.economizer_mutations [NAME ...]` copies the project's packages and
tests into a temporary directory, applies one mutation (an exact source replacement that
must occur once), runs the test files named for it with `-x`, and reports the first
failing test. A mutation no test catches is a property missing: the run exits 1.
"""

from __future__ import annotations

import pathlib
import re
import shutil
import subprocess
import sys
import tempfile

import attrs

ROOT = pathlib.Path(__file__).resolve().parents[1]
PACKAGES = ("economizer_spec", "economizer", "properties", "ledger_spec", "ledger_impl", "ledger_cli", "tests")
SKILLS, GUARD, TOOLS, DIFF, Z3 = (
    "tests/test_economizer_skills.py",
    "tests/test_economizer_guard.py",
    "tests/test_economizer_tools_cost.py",
    "tests/test_economizer_differential.py",
    "tests/test_economizer_z3.py",
)
CONFORMAL, MODELS, RECORDING = (
    "tests/test_economizer_conformal.py",
    "tests/test_economizer_models.py",
    "tests/test_economizer_recording.py",
)


@attrs.frozen
class Mutation:
    name: str
    path: str
    old: str
    new: str
    tests: tuple[str, ...]


MUTATIONS: tuple[Mutation, ...] = (
    Mutation("confirmation checked before contradiction", "economizer_spec/skills.py",
             "    confirmed = exercised and not contradicted and matches(definition.confirm, steps)",
             "    confirmed = exercised and matches(definition.confirm, steps)", (SKILLS,)),
    Mutation("retire at support <= 0", "economizer_spec/skills.py",
             "        if support(after, task, params) < 0:", "        if support(after, task, params) <= 0:", (SKILLS,)),
    Mutation("high-stakes retires a candidate", "economizer_spec/skills.py",
             "    if state.status is Status.CONFIRMED:\n        if state.definition.high_stakes",
             "    if state.definition.high_stakes and evidence.contradicted:\n        return attrs.evolve(after, status=Status.RETIRED, retired_at=task, retired_reason=\"high-stakes skill contradicted\")\n    if state.status is Status.CONFIRMED:\n        if state.definition.high_stakes",
             (SKILLS,)),
    Mutation("retirement not permanent (re-proposal revives)", "economizer_spec/skills.py",
             "            if existing.status is Status.RETIRED:\n                rejections.append(Rejection(task, name, \"retired skills are permanent\"))\n                continue",
             "            if existing.status is Status.RETIRED:\n                by_id[name] = attrs.evolve(existing, status=Status.CANDIDATE)\n                continue",
             (SKILLS,)),
    Mutation("no need detector counts as not needed", "economizer_spec/skills.py",
             "    needed = exercised and (definition.need is None or matches(definition.need, steps))",
             "    needed = exercised and (definition.need is not None and matches(definition.need, steps))", (SKILLS,)),
    Mutation("need gate strict", "economizer_spec/skills.py", "rate >= params.need_gate", "rate > params.need_gate", (SKILLS,)),
    Mutation("proposer called one task late", "economizer_spec/skills.py",
             "    return task >= params.proposer_first and (task - params.proposer_first) % params.proposer_period == 0",
             "    return task > params.proposer_first and (task - params.proposer_first - 1) % params.proposer_period == 0", (SKILLS,)),
    Mutation("citations trusted, not verified", "economizer_spec/skills.py",
             "c in window_ids and matches(definition.confirm, window_ids[c])", "c in window_ids", (SKILLS,)),
    Mutation("five proposals per call", "economizer_spec/skills.py",
             "    if position >= params.max_proposals:", "    if position > params.max_proposals:", (SKILLS,)),
    Mutation("revision may change the injection", "economizer_spec/skills.py",
             "            old = attrs.evolve(existing.definition, contradict=None, citations=())\n            new = attrs.evolve(definition, contradict=None, citations=())",
             "            old = attrs.evolve(existing.definition, contradict=None, citations=(), injection=\"\")\n            new = attrs.evolve(definition, contradict=None, citations=(), injection=\"\")",
             (SKILLS,)),
    Mutation("nested quantifiers admitted", "economizer_spec/detectors.py",
             "        if op in (sre_constants.MAX_REPEAT, sre_constants.MIN_REPEAT):\n            return True\n        if op == sre_constants.BRANCH",
             "        if op in (sre_constants.MAX_REPEAT, sre_constants.MIN_REPEAT):\n            return False\n        if op == sre_constants.BRANCH",
             (SKILLS,)),
    Mutation("manual ignores its header in the budget", "economizer_spec/skills.py",
             "    length = len(header)\n", "    length = 0\n", (SKILLS,)),
    Mutation("core tool masked by the streak rule", "economizer_spec/tools.py",
             "    return tool.name not in core and not tool.ever_called and tool.streak >= params.unused_streak",
             "    return not tool.ever_called and tool.streak >= params.unused_streak", (TOOLS,)),
    Mutation("a call does not reset the streak", "economizer_spec/tools.py",
             "            known.append(ToolState(tool.name, True, 0))", "            known.append(ToolState(tool.name, True, tool.streak + 1))", (TOOLS,)),
    Mutation("re-audit ignored", "economizer_spec/tools.py",
             "    return task % params.reaudit_period == 0", "    return False", (TOOLS,)),
    Mutation("judge failure masks the candidates", "economizer_spec/tools.py",
             "    if judge_answer is not None:\n        candidates = set(judge_candidates(tools, core, task, params))\n        masked |=",
             "    if judge_answer is None:\n        masked |= set(judge_candidates(tools, core, task, params))\n    else:\n        candidates = set(judge_candidates(tools, core, task, params))\n        masked |=",
             (TOOLS,)),
    Mutation("stall needs more than 6 errors", "economizer_spec/guard.py",
             "    dense = c.error_outputs >= params.stall_error_outputs", "    dense = c.error_outputs > params.stall_error_outputs", (GUARD,)),
    Mutation("stall needs 4 files", "economizer_spec/guard.py",
             "c.distinct_edited_files >= params.stall_distinct_files", "c.distinct_edited_files > params.stall_distinct_files", (GUARD,)),
    Mutation("judge asked before the forced rule", "economizer_spec/guard.py",
             "    if forced(c, b, params):\n        if state.redirect_turn is None:",
             "    if forced(c, b, params) and not (trigger_open(c, params) and (state.last_judged is None or t - state.last_judged >= state.interval)):\n        if state.redirect_turn is None:",
             (GUARD,)),
    Mutation("forced stop without a redirect", "economizer_spec/guard.py",
             "    if forced(c, b, params):\n        if state.redirect_turn is None:", "    if forced(c, b, params):\n        if False:", (GUARD,)),
    Mutation("judge interval not capped at 20", "economizer_spec/guard.py",
             "interval=min(state.interval + params.judge_interval_step, params.judge_interval_max)",
             "interval=state.interval + params.judge_interval_step", (GUARD,)),
    Mutation("budget from the maximum, not a percentile", "economizer_spec/guard.py",
             "    return math.ceil(percentile(passed_turns, params.budget_percentile) * (1 + params.beta))",
             "    return math.ceil(max(passed_turns) * (1 + params.beta))", (GUARD,)),
    Mutation("signature keeps numbers", "economizer_spec/trajectory.py",
             '    text = _NUMBER.sub("<n>", text)\n', "", (GUARD,)),
    Mutation("cache writes priced as cache reads", "economizer_spec/cost.py",
             "        + usage.cache_write * prices.cache_write", "        + usage.cache_write * prices.cache_read", (TOOLS,)),
    Mutation("impl: confirmation weight not decayed", "economizer/controller.py",
             "            self.decayed = self.decayed * params.decay ** (task - self.decayed_at) + 1",
             "            self.decayed = self.decayed + 1", (DIFF,)),
    Mutation("impl: first failure counted as a repeat", "economizer/guard.py",
             "            if signature in self._signatures:\n                self.repeated_failures += 1",
             "            if signature in self._signatures or not self._signatures:\n                self.repeated_failures += 1", (GUARD,)),
    Mutation("conformal stop point at L_(k), not L_(k)+1", "economizer_spec/conformal.py",
             "    return sorted(passed_turns)[k - 1] + 1", "    return sorted(passed_turns)[k - 1]", (CONFORMAL,)),
    Mutation("conformal rank rounded down", "economizer_spec/conformal.py",
             "    k = math.ceil((n + 1) * (1 - Fraction(alpha)))", "    k = math.floor((n + 1) * (1 - Fraction(alpha)))", (CONFORMAL,)),
    Mutation("conformal: the judge stops before T", "economizer_spec/guard.py",
             "            if not may_stop(t, b, params):", "            if False:", (CONFORMAL,)),
    Mutation("impl: conformal judge stops before T", "economizer/guard.py",
             'if p.guard_rule == "conformal" and (self.budget is None or t < self.budget):', "if False:", (CONFORMAL,)),
    Mutation("model: truncated answer accepted", "economizer/model_client.py",
             '    if message.stop_reason == "max_tokens":\n        raise Truncated(usage)',
             '    if False:\n        raise Truncated(usage)', (MODELS,)),
    Mutation("model: a malformed 200 body raises", "economizer/model_client.py",
             "    except (TypeError, AttributeError, KeyError, IndexError) as error:\n        raise MalformedAnswer(",
             "    except (KeyError, IndexError) as error:\n        raise MalformedAnswer(", (MODELS,)),
    Mutation("model: an overloaded event mid-stream not retried", "economizer/model_client.py",
             "    if _error_kinds(error) & TRANSIENT_ERROR_TYPES:", "    if False:", (MODELS,)),
    Mutation("model: 429 not retried", "economizer/model_client.py",
             "        return status in (408, 409, 429) or status >= 500", "        return status >= 500", (MODELS,)),
    Mutation("replay: requests not compared", "economizer/model_recording.py",
             '        if line["request"] != wanted:', "        if False:", (RECORDING,)),
    Mutation("impl: judge drops a called tool", "economizer/controller.py",
             "        return [name for name, (called, _) in self.tools.items() if name not in self.core and not called]",
             "        return [name for name, (called, _) in self.tools.items() if name not in self.core]", (TOOLS,)),
)


def run(mutation: Mutation, timeout: int = 600) -> tuple[bool, str]:
    """(caught, first failing test or the reason it was not caught)."""
    with tempfile.TemporaryDirectory() as tmp:
        copy = pathlib.Path(tmp)
        for package in PACKAGES:
            shutil.copytree(ROOT / package, copy / package, ignore=shutil.ignore_patterns("__pycache__"))
        target = copy / mutation.path
        source = target.read_text()
        if source.count(mutation.old) != 1:
            return False, f"mutation does not apply ({source.count(mutation.old)} matches)"
        target.write_text(source.replace(mutation.old, mutation.new))
        result = subprocess.run(
            [sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider", "--no-header", *mutation.tests],
            cwd=copy, capture_output=True, text=True, timeout=timeout, env={"PYTHONPATH": str(copy), "PATH": "/usr/bin:/bin"},
        )
        if result.returncode == 0:
            return False, "no test failed"
        failed = re.findall(r"^FAILED (\S+)", result.stdout, re.MULTILINE)
        return True, failed[0] if failed else result.stdout.strip().splitlines()[-1]


def main(names: list[str]) -> int:
    chosen = [m for m in MUTATIONS if not names or m.name in names]
    missed = 0
    for mutation in chosen:
        caught, detail = run(mutation)
        missed += not caught
        print(f"{'caught' if caught else 'MISSED'}  {mutation.name:<48} {detail}", flush=True)
    print(f"{len(chosen) - missed}/{len(chosen)} mutations caught")
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
