"""What a Reuse sends the model in each answer mode (`--reuse-answer verbatim|reference`), on
real agent commands, context-weighted the way the economizer's evaluation weighs cost.

    nice python benchmarks/reuse_savings.py [--runs 50] [--seconds 600] [--no-probe] [--record]

Runs of the shared corpus (`mini-swe-agent-deepseek.jsonl`) are replayed through the Runtime
in workspaces made from their projects' wheels, with `probe_corpus.py`'s machinery (its
projects, workspaces and command mapping), taking one run of each project in turn until
`--runs` runs are done or `--seconds` have passed. Each step the Runtime decided is then
answered as Claude Code's hooks answer it, by calling `ledger_impl.agents.claude.handle` with
the step's PreToolUse and PostToolUse payloads, once per mode, each mode with a real context
journal (`ledger_impl.context_journal`): so the inline bound (`fits_inline`), the context rule
(`ledger_spec.context`) and "a note no shorter than the verbatim answer is not sent" apply
exactly as in the hook. A corpus replay has no compaction, clear or resume: one session start,
one epoch per run.

What a step puts in the model's context: its command, and what the model reads back: a Reuse's
deny reason (`reuse_text` or `reference_text`, without the "PreToolUse:Bash hook error: " that
Claude puts before it), else the output as Claude renders it plus any Nudge note. Outputs are
counted whole (Claude would show the model only a preview of one over its inline limit, 30,000
characters by default). A Runtime Reuse cut from another command's output is run instead, as
Claude's session does (`serve_slices=False`). Each text is weighted by the turns that re-bill
it (`economizer_evaluation.context_weights`: the system prompt and every earlier command and
output on every turn); tokens are estimated as characters / 4, the ratio `PROMPT_CHARS` states.
"""

from __future__ import annotations

import argparse
import collections
import itertools
import pathlib
import shutil
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from typing import Any

import attrs

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))

from benchmarks import record  # noqa: E402
from benchmarks.probe_corpus import CORPUS, PROJECTS, mapped_command, wheel_template  # noqa: E402
from economizer_spec.trajectory import Step as Turn  # noqa: E402
from ledger_impl import Runtime  # noqa: E402
from ledger_impl.agents import claude  # noqa: E402
from ledger_impl.agents.hook_session import REUSE_ANSWERS  # noqa: E402
from ledger_impl.context_journal import ContextJournal  # noqa: E402
from ledger_impl.probe import rendering  # noqa: E402
from ledger_impl.runtime import Step  # noqa: E402
from ledger_impl.session import Decision, Recorded  # noqa: E402
from ledger_impl.store import Store  # noqa: E402
from ledger_properties.audit.formats import Trajectory, load  # noqa: E402
from ledger_properties.economizer_evaluation import PROMPT_CHARS, context_weights  # noqa: E402

#: Characters per token: `PROMPT_CHARS` (10,000 characters) is "about 2,500 tokens".
CHARS_PER_TOKEN = 4
COLUMNS = (
    {"name": "run (instance)", "align": "left"},
    {"name": "steps", "align": "right", "format": "{:,}"},
    {"name": "Runtime slices run", "align": "right", "format": "{:,}"},
    {"name": "Reuses", "align": "right", "format": "{:,}"},
    {"name": "by reference", "align": "right", "format": "{:,}"},
    {"name": "Reuse bytes, verbatim", "align": "right", "format": "{:,}"},
    {"name": "Reuse bytes, reference", "align": "right", "format": "{:,}"},
    {"name": "Reuse tokens weighted, verbatim", "align": "right", "format": "{:,.0f}"},
    {"name": "Reuse tokens weighted, reference", "align": "right", "format": "{:,.0f}"},
    {"name": "run tokens weighted, verbatim", "align": "right", "format": "{:,.0f}"},
    {"name": "saved by reference", "align": "right", "format": "{:.2%}"},
)


@attrs.frozen
class Sent:
    """What one step put in the model's context in one mode: its command and the text the model
    read back; `reused`: the text answers a Reuse; `referenced`: by reference; `sliced`: the
    Runtime served lines cut from another command's output, which Claude's hook runs instead."""

    command: str
    text: str
    reused: bool = False
    referenced: bool = False
    sliced: bool = False


@attrs.define
class ReplaySession:
    """What `claude.handle` talks to (`hook_session.HookSession`), answering with the verdict
    the Runtime already reached for the step being replayed, with a real context journal."""

    reuse_answer: str
    context: ContextJournal
    pending: Decision = Decision("allow")
    step: int = 0

    def decide(
        self, command: str, *, call_id: str, cwd: str | None = None, serve_slices: bool = True, withhold: bool = True
    ) -> Decision:
        return self.pending

    def record(self, call_id: str, output: str, exit_code: int, *, exact: bool = True, ran: str | None = None,
               rendering: str = "exact") -> Recorded:
        return Recorded(self.step)

    def view(self) -> str:
        return ""


def claude_decision(step: Step, runtime: Runtime) -> Decision:
    """The Runtime's verdict as Claude's session would give it: a Reuse only from an observation
    of the same command, its output as Claude recorded it (rendered)."""
    if step.verdict != "reuse":
        return Decision(step.verdict, note=step.note)
    served = runtime.ledger.snapshot().history[-1].served_from
    observation = runtime.ledger.retained(served) if served is not None else None
    if observation is None or observation.command.normalized != step.command.normalized:
        return Decision("allow")
    return Decision("reuse", shown(step.output, step.exit_code), step.exit_code, step.note, served)


def shown(output: str, exit_code: int) -> str:
    """The output as Claude Code shows (and its hook records) it."""
    how = rendering.CLAUDE_BASH if exit_code == 0 else rendering.CLAUDE_BASH_FAILURE
    render = rendering.RENDERINGS[how]
    assert render is not None
    return render(output, exit_code)


def answer(session: ReplaySession, owner: str, call: str, command: str, step: Step, decision: Decision) -> Sent:
    """Claude's hook answers one step in `session`'s mode; a call that runs is recorded."""
    session.pending, session.step = decision, step.index
    payload = {"session_id": owner, "tool_name": "Bash", "tool_use_id": call, "tool_input": {"command": command}}
    reply = claude.handle({**payload, "hook_event_name": "PreToolUse"}, session) or {}
    fields = reply.get("hookSpecificOutput", {})
    if fields.get("permissionDecision") == "deny":
        reason = fields["permissionDecisionReason"]
        return Sent(command, reason, True, reason != claude.reuse_fields(decision)["permissionDecisionReason"])
    text = shown(step.output, step.exit_code)
    if step.exit_code == 0:
        finished = {"hook_event_name": "PostToolUse", "tool_response": {"stdout": text}}
    else:
        finished = {"hook_event_name": "PostToolUseFailure", "error": text}
    claude.handle({**payload, **finished}, session)
    note = fields.get("additionalContext")
    return Sent(command, f"{text}\n{note}" if note else text)


def replay(trajectory: Trajectory, workspace: pathlib.Path, state: pathlib.Path, *, probe: bool,
           max_steps: int | None) -> dict[str, list[Sent]]:
    """The run replayed through a Runtime in `workspace`: what each step sent, by mode."""
    owner = f"replay-{trajectory.name}"
    sessions = {}
    for mode in REUSE_ANSWERS:
        store = Store.open(workspace, state / mode)
        sessions[mode] = (ReplaySession(mode, ContextJournal(store)), store)
        claude.handle({"hook_event_name": "SessionStart", "session_id": owner, "source": "startup"}, sessions[mode][0])
    sent: dict[str, list[Sent]] = {mode: [] for mode in REUSE_ANSWERS}
    runtime = Runtime(workspace, probe=probe, timeout=20)
    try:
        for item in trajectory.items[:max_steps]:
            command = mapped_command(item, trajectory.recorded_root, workspace)
            if command is None:
                continue
            step = runtime.step(command)
            decision = claude_decision(step, runtime)
            sliced = step.verdict == "reuse" and decision.verdict != "reuse"
            for mode, (session, _) in sessions.items():
                given = answer(session, owner, f"call-{step.index}", command, step, decision)
                sent[mode].append(attrs.evolve(given, sliced=sliced))
    finally:
        runtime.close()
        for _, store in sessions.values():
            store.close()
    return sent


def figures(sent: Sequence[Sent]) -> dict[str, float]:
    """One mode's figures for one run: the Reuses' texts, raw and context-weighted, and the run's
    weighted total (`context_weights`, which counts a text once for every later turn)."""
    turns = len(sent)
    reused = [(index, item) for index, item in enumerate(sent) if item.reused]
    weighted = sum(len(item.text) * (turns - 1 - index) for index, item in reused)
    return {
        "reuses": len(reused),
        "referenced": sum(item.referenced for _, item in reused),
        "sliced": sum(item.sliced for item in sent),
        "bytes": sum(len(item.text.encode("utf-8", "surrogateescape")) for _, item in reused),
        "weighted_tokens": weighted / CHARS_PER_TOKEN,
        "run_weighted_tokens": sum(context_weights([Turn(item.command, item.text) for item in sent])) / CHARS_PER_TOKEN,
    }


def table_row(name: str, steps: int, verbatim: dict[str, float], reference: dict[str, float]) -> dict[str, Any]:
    total = verbatim["run_weighted_tokens"]
    saved = (total - reference["run_weighted_tokens"]) / total if total else 0.0
    return record.row(
        COLUMNS, name, steps, verbatim["sliced"], verbatim["reuses"], reference["referenced"], verbatim["bytes"], reference["bytes"],
        verbatim["weighted_tokens"], reference["weighted_tokens"], total, saved,
    )


def run_name(trajectory: Trajectory) -> str:
    """The run's instance and its line in the corpus (an instance may have several runs)."""
    line = trajectory.name.rpartition("#")[2]
    return f"{trajectory.instance_id} (line {line})" if trajectory.instance_id else trajectory.name


def chosen_runs(trajectories: Sequence[Trajectory]) -> Iterator[Trajectory]:
    """The corpus's runs of `PROJECTS`, one of each project in turn, in corpus order."""
    by_repo: dict[str, list[Trajectory]] = collections.defaultdict(list)
    for trajectory in trajectories:
        if trajectory.task_repo in PROJECTS:
            by_repo[trajectory.task_repo].append(trajectory)
    for batch in itertools.zip_longest(*(by_repo[repo] for repo in PROJECTS)):
        yield from (trajectory for trajectory in batch if trajectory is not None)


def main(argv: Sequence[str] | None = None, results: pathlib.Path = record.RESULTS) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=50, help="most runs to replay")
    parser.add_argument("--seconds", type=float, default=600.0, help="start no run after this many seconds")
    parser.add_argument("--max-steps", type=int, default=None, help="replay only a run's first steps (tests)")
    parser.add_argument("--no-probe", action="store_true", help="the Runtime's probe off (faster; fewer Reuses)")
    parser.add_argument("--record", action="store_true", help="store the series under benchmarks/results/")
    args = parser.parse_args(argv)
    load_before, started = record.load_average(), time.monotonic()
    rows, totals, names = [], {mode: collections.Counter() for mode in REUSE_ANSWERS}, []
    steps_total = 0
    with tempfile.TemporaryDirectory(prefix="ledger-reuse-savings-") as scratch_name:
        scratch = pathlib.Path(scratch_name)
        templates = {repo: wheel_template(repo, scratch) for repo in PROJECTS}
        for number, trajectory in enumerate(chosen_runs(load(CORPUS))):
            if number >= args.runs or time.monotonic() - started > args.seconds:
                break
            template = templates[trajectory.task_repo or ""]
            if template is None:
                continue
            workspace = scratch / f"run-{number}"
            shutil.copytree(template, workspace, symlinks=True)
            sent = replay(trajectory, workspace, scratch / f"state-{number}", probe=not args.no_probe,
                          max_steps=args.max_steps)
            shutil.rmtree(workspace, ignore_errors=True)
            by_mode = {mode: figures(sent[mode]) for mode in REUSE_ANSWERS}
            name = run_name(trajectory)
            names.append(name)
            row = table_row(name, len(sent["verbatim"]), by_mode["verbatim"], by_mode["reference"])
            if by_mode["verbatim"]["reuses"] or by_mode["verbatim"]["sliced"]:
                rows.append(row)  # a run with neither shows only in the total
            steps_total += len(sent["verbatim"])
            for mode in REUSE_ANSWERS:
                totals[mode].update(by_mode[mode])
            print(row, f"{time.monotonic() - started:.0f}s", flush=True)
    rows.append(table_row(f"all {len(names)} runs", steps_total, totals["verbatim"], totals["reference"]))
    print(rows[-1])
    if args.record:
        probe = "off (--no-probe)" if args.no_probe else "on (as shipped)"
        record.keep(
            "reuse-savings", "What a Reuse sends the model, verbatim and by reference, on corpus runs",
            "reuse_savings.py", argv, COLUMNS, rows, load_before=load_before,
            notes=(f"{len(names)} runs of {CORPUS.name} ({', '.join(names)}), replayed through the Runtime "
                   f"(probe {probe}) in workspaces made from the projects' wheels, answered as Claude Code's "
                   f"hooks answer; one epoch per run. Tokens: characters / {CHARS_PER_TOKEN}; weighted: "
                   f"each text counted once for every later turn, on top of a {PROMPT_CHARS:,}-character "
                   f"prompt per turn (the economizer's estimate); {time.monotonic() - started:.0f} s."),
            results=results,
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
