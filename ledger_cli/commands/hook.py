"""`ledger hook AGENT`: the hook process an agent runs before and after each tool call.

It reads the agent's JSON from stdin, answers on stdout, and always exits 0: a hook failure
must never block the agent. On any internal error the tool call is allowed and a note goes to
stderr (and, as `systemMessage`, to the user's screen).

With `--economize owner/name`, TokenEconomizer's failure-loop guard watches the session too:
each finished shell call is the next turn of the task (the task is the hook session), the
guard's redirect comes back as the note Ledger's Nudges use, and its stop as the agent's
"stop now" answer (`{"continue": false, "stopReason": ...}`) and, because Claude Code 2.1 does
not act on that answer after a failed call (seen with the real CLI), as a deny with the same
reason of every later tool call of the session. The budget B comes from the
repository's history fed with `ledger economize feed` under the same `--state-dir`; before
any history the guard stays silent. Without the option the hook answers exactly as before.

The workspace root is `--root`, else the agent's project-directory variable
(`$CLAUDE_PROJECT_DIR`, which Claude Code sets for its hooks), else the payload's `cwd`. The
session's state lives outside the root (`--state-dir` overrides). What differs per agent is
its plugin record (`ledger_impl.agents`); this module never tests an agent's name.

A finished read whose output was stored is probed after the answer (`ledger_impl.session_probe`):
the hook starts a detached `ledger hook AGENT --run-probe ID` with the agent's environment and
returns; until that process has confirmed the output, it is not served.
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import subprocess
import sys
from typing import Any

from ledger_impl.agents import BY_REFERENCE, HOOKED
from ledger_impl.agents.hook_session import REUSE_ANSWERS, with_system_message
from ledger_impl.session import DurableSession


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "hook",
        help="the hook an agent calls around each tool call (JSON on stdin and stdout)",
        description="Answer one hook call of a coding agent: PreToolUse, PostToolUse, SessionStart, ...",
    )
    parser.add_argument("agent", choices=sorted(HOOKED))
    parser.add_argument("--root", default=None, help="workspace root (default: $CLAUDE_PROJECT_DIR, else the payload's cwd)")
    parser.add_argument("--state-dir", default=None, help="where the session database lives (default: outside the root)")
    parser.add_argument("--economize", metavar="OWNER/NAME", default=None,
                        help="also run TokenEconomizer's failure-loop guard with this repository's fed history")
    parser.add_argument("--no-probe", action="store_true",
                        help="no probe: Reuse rests on the counters and the fingerprint alone (to measure those lines)")
    parser.add_argument("--run-probe", metavar="ID", type=int, default=None,
                        help=argparse.SUPPRESS)  # the detached probe a finished read starts (no stdin)
    parser.add_argument("--reuse-answer", choices=REUSE_ANSWERS, default="verbatim",
                        help="how a Reuse is answered: the stored output (the default), or a note pointing at "
                             "the earlier result when the model provably still holds it in full (reference: "
                             f"{', '.join(BY_REFERENCE)} only; any other agent answers verbatim and says so)")
    parser.set_defaults(run=run)


class _LazySession:
    """Opens the session on first use, so that calls Ledger ignores cost no database work."""

    def __init__(self, root: str, state_dir: str | None, probe: bool, reuse_answer: str = "verbatim") -> None:
        self._root, self._state_dir, self._probe = root, state_dir, probe
        self._session: DurableSession | None = None
        self.reuse_answer = reuse_answer  # read without opening the database

    def __getattr__(self, name: str) -> Any:
        if self._session is None:
            self._session = DurableSession.open(self._root, state_dir=self._state_dir, probe=self._probe)
        return getattr(self._session, name)

    def queued_probes(self) -> list[int]:
        return [] if self._session is None else list(self._session.queued_probes)

    def close(self) -> None:
        if self._session is not None:
            self._session.close()


def run(args: argparse.Namespace) -> int:
    if args.run_probe is not None:
        return _run_probe(args)
    payload: Any = {}
    try:
        payload = json.loads(sys.stdin.read() or "{}")
        if not isinstance(payload, dict):
            raise ValueError(f"the hook payload is a JSON object, got {type(payload).__name__}")
        hooks = HOOKED[args.agent]
        project = os.environ.get(hooks.project_dir_variable) if hooks.project_dir_variable is not None else None
        root = args.root or project or payload.get("cwd") or os.getcwd()
        refusal = _refusal_after_stop(args, payload) if args.economize is not None else None
        if refusal is not None:
            sys.stdout.write(json.dumps(refusal))
            return 0
        # An answer the plugin cannot give (settings written by hand: install refuses it) is
        # not an error: the hook answers verbatim, and tells the user before each tool call.
        reuse_answer, unavailable = hooks.reuse_answer(args.reuse_answer)
        session = _LazySession(str(root), args.state_dir, not args.no_probe, reuse_answer)
        try:
            reply = hooks.handle(payload, session)
        finally:
            session.close()
        if unavailable is not None and payload.get("hook_event_name") == hooks.before_tool:
            reply = with_system_message(reply, unavailable)
        for probe_id in session.queued_probes():
            _start_probe(args, str(root), probe_id)
    except Exception as error:  # noqa: BLE001 - a hook never blocks the agent
        note = f"ledger hook {args.agent}: internal error, the tool call goes ahead unchanged: {error!r}"
        print(note, file=sys.stderr)
        reply = {"systemMessage": note}
    if args.economize is not None:
        reply = _with_guard(args, payload if isinstance(payload, dict) else {}, reply)
    if reply:
        sys.stdout.write(json.dumps(reply))
    return 0


def _start_probe(args: argparse.Namespace, root: str, probe_id: int) -> None:
    """Start the probe of a stored read in a detached process, which outlives this hook: the
    agent does not wait for it. It inherits the agent's environment, which the read ran with."""
    argv = [sys.executable, "-m", "ledger_cli.main", "hook", args.agent, "--run-probe", str(probe_id), "--root", root]
    if args.state_dir is not None:
        argv += ["--state-dir", args.state_dir]
    subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                     start_new_session=True, close_fds=True)


def _run_probe(args: argparse.Namespace) -> int:
    """The detached probe: its verdict goes to the store (a refusal also as a note)."""
    with DurableSession.open(args.root, state_dir=args.state_dir) as session:
        session.run_probe(args.run_probe)
    return 0


def _refusal_after_stop(args: argparse.Namespace, payload: Any) -> dict[str, Any] | None:
    """A tool call of a session whose task the guard stopped: refused before Ledger decides
    it (so no bracket is opened for a call that never runs). None: carry on as usual."""
    if not isinstance(payload, dict) or payload.get("hook_event_name") != HOOKED[args.agent].before_tool:
        return None
    session_id = payload.get("session_id")
    if not isinstance(session_id, str):
        return None
    try:
        from economizer.hook_guard import stopped

        reason = stopped(args.economize, session_id, pathlib.Path(args.state_dir) if args.state_dir is not None else None)
    except Exception as error:  # noqa: BLE001 - the guard's own failure is reported after the call
        print(f"ledger hook {args.agent} --economize: internal error reading the guard's state: {error!r}", file=sys.stderr)
        return None
    return HOOKED[args.agent].replies.stop_before(reason) if reason is not None else None


def _with_guard(args: argparse.Namespace, payload: dict[str, Any], reply: dict[str, Any] | None) -> dict[str, Any] | None:
    """Add the guard's verdict on this call to Ledger's reply. Ledger answers a finished call
    with a system message on an internal error, or (Gemini CLI, Qwen Code) with a Nudge's note
    as context, which the guard's note joins."""
    hooks = HOOKED[args.agent]
    try:
        # Imported here: a hook without --economize pays nothing for the economizer.
        from economizer.hook_guard import observe_turn
        from economizer_spec.trajectory import Step

        session_id, call_id = payload.get("session_id"), hooks.turn_id(payload)
        state_dir = pathlib.Path(args.state_dir) if args.state_dir is not None else None
        turn = hooks.shell_turn(payload)
        if turn is None or not isinstance(session_id, str) or not isinstance(call_id, str):
            return reply
        command, output, status = turn
        verdict = observe_turn(args.economize, session_id, call_id, Step(command, output, status), state_dir)
    except Exception as error:  # noqa: BLE001 - the guard never blocks the agent either
        note = f"ledger hook {args.agent} --economize: internal error, the guard skipped this call: {error!r}"
        print(note, file=sys.stderr)
        earlier = (reply or {}).get("systemMessage")
        return {**(reply or {}), "systemMessage": f"{earlier}\n{note}" if earlier else note}
    if verdict.action == "redirect":
        return _noted(reply, hooks.replies.note(payload["hook_event_name"], f"[ledger economize] {verdict.text}"))
    if verdict.action == "stop":
        from economizer.hook_guard import stop_text
        return {**(reply or {}), **hooks.replies.stop(stop_text(verdict.turn, verdict.reason))}
    return reply


def _noted(reply: dict[str, Any] | None, note: dict[str, Any]) -> dict[str, Any]:
    """`reply` with `note` added; when both carry `hookSpecificOutput.additionalContext`, the
    texts are joined, so neither note is lost."""
    merged = {**(reply or {}), **note}
    earlier = ((reply or {}).get("hookSpecificOutput") or {}).get("additionalContext")
    added = (note.get("hookSpecificOutput") or {}).get("additionalContext")
    if isinstance(earlier, str) and isinstance(added, str):
        merged["hookSpecificOutput"] = {**note["hookSpecificOutput"], "additionalContext": f"{earlier}\n\n{added}"}
    return merged
