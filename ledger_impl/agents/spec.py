"""The agent plugin protocol: what one agent module tells Ledger, written down in one place.

Each module of this package that is an agent (`claude.py`, `codex.py`, ...) exports one frozen
`Agent` named `AGENT`, whose `name` is the module's name. Everything Ledger does differently
per agent is a field of that record; the callers (`ledger hook`, `ledger hooks
install|uninstall`, the service, the economizer's harness) read the fields and never test an
agent's name (`tests/test_layers.py` fails if one does). The registry in `__init__.py` finds
the modules, so adding an agent is its module and its end-to-end test (CONTRIBUTING.md).

An agent that runs its own tools calls Ledger as a *hook*: a JSON payload on stdin before a
tool call (PreToolUse) and after it (PostToolUse, ...), a JSON reply on stdout. `Hooks`
describes that protocol; an agent Ledger does not govern yet has `hooks=None` and appears only
where its other fields are used (the economizer's tool mask).
"""

from __future__ import annotations

import os
import pathlib
import types
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Literal

import attrs

from .hook_session import HookSession, Verdict

#: A hook payload, as the agent sent it (already parsed from JSON).
Payload = dict[str, Any]
#: A hook reply, to be sent as JSON; None means "no opinion": the tool call goes ahead as usual.
Reply = dict[str, Any] | None
#: Which of an agent's settings files: the project's shared one, the user's, or the project's
#: per-user one that stays out of version control (where a secret may be written).
Scope = Literal["project", "user", "local"]


@attrs.frozen
class ToolRoles:
    """The agent's tool names that Ledger governs, by what each does. A tool in no role is not
    Ledger's business: its calls get no answer and run as usual."""

    #: Runs a shell command: decided, and its exact result stored for a later Reuse.
    shell: tuple[str, ...]
    #: Reads a file outside any shell: decided as the shell read of the same lines.
    file_read: tuple[str, ...] = ()
    #: Writes a file outside any shell: decided as a write of that file, so the detector
    #: brackets it and the next step sees the change.
    file_write: tuple[str, ...] = ()
    #: Applies a patch (files named inside its input): decided as an unknown write.
    patch: tuple[str, ...] = ()

    @property
    def governed(self) -> tuple[str, ...]:
        """Every governed tool: shell, then file read, file write and patch tools."""
        return (*self.shell, *self.file_read, *self.file_write, *self.patch)


@attrs.frozen
class SettingsFiles:
    """Where `ledger hooks install` writes the agent's hook settings, and in what format."""

    #: The project's settings file, relative to the project root.
    project: str
    #: The user's settings file (a function: it reads the home directory or the agent's own
    #: variable, such as `$CODEX_HOME`, when called).
    user: Callable[[], pathlib.Path]
    #: How `--help` names the user's file (`~/.claude/settings.json`).
    user_shown: str
    #: The project's per-user file, relative to the root, for settings that hold the service's
    #: secret; None: the agent has none, and `project` is used.
    local: str | None = None
    #: The file's format. "hooks-json": a JSON object whose `hooks` maps an event name to a
    #: list of matcher groups, `{"matcher": M, "hooks": [{"type": "command", "command": C}]}`
    #: (the matcher left out for an event without one). The only format so far.
    format: Literal["hooks-json"] = "hooks-json"

    def path(self, scope: Scope, root: str | os.PathLike[str]) -> pathlib.Path:
        if scope == "user":
            return self.user()
        return pathlib.Path(root) / (self.local if scope == "local" and self.local is not None else self.project)


@attrs.frozen
class Replies:
    """How each of Ledger's answers is spelled in the agent's hook format."""

    #: The PreToolUse `hookSpecificOutput` fields (without `hookEventName`) that serve a Reuse
    #: verdict: the call is not run, and the model receives the stored result instead.
    reuse: Callable[[Verdict], dict[str, Any]]
    #: The PreToolUse fields that deliver a Nudge verdict's note while the call runs.
    nudge: Callable[[Verdict], dict[str, Any]]
    #: `note(event, text)`: a note the model reads after this event. It carries the inform
    #: view (SessionStart, UserPromptSubmit) and the economizer guard's redirect.
    note: Callable[[str, str], dict[str, Any]]
    #: `stop(reason)`: "end the task now", answered to a finished call.
    stop: Callable[[str], dict[str, Any]]
    #: `stop_before(reason)`: the answer to a tool call made after the task was stopped.
    stop_before: Callable[[str], dict[str, Any]]


def tool_use_id(payload: Payload) -> str | None:
    """The payload's `tool_use_id`, Claude's name for one tool call, which most agents send."""
    call_id = payload.get("tool_use_id")
    return call_id if isinstance(call_id, str) else None


@attrs.frozen
class Hooks:
    """An agent's hook protocol, translated to a durable session's decide/record."""

    tools: ToolRoles
    #: The events Ledger's hooks are installed for, in install order, the event before a tool
    #: call first (PreToolUse, BeforeTool), each with its matcher (None: the event takes none,
    #: or it matches every tool).
    events: Mapping[str, str | None] = attrs.field(converter=lambda events: types.MappingProxyType(dict(events)))
    settings: SettingsFiles
    #: The events sent over HTTP to `ledger serve` by an install with `--transport service`;
    #: the other events run the thin client. Empty: the agent has command hooks only.
    http_events: frozenset[str]
    #: The environment variable the agent sets for its hooks to the project directory; the
    #: workspace root when `--root` is not given. None: the payload's `cwd` is the root.
    project_dir_variable: str | None
    #: The timeout (seconds) written into each installed hook entry; None: the agent's default.
    timeout_s: int | None
    #: `handle(payload, session)`: answer one hook call. It decides a tool call before it runs
    #: (`session.decide`, which opens the detector's bracket), records a finished one
    #: (`session.record`, which closes it; exact results only are stored), returns the inform
    #: view for session and prompt events, and None for anything Ledger has no opinion on.
    handle: Callable[[Payload, HookSession], Reply]
    #: `shell_turn(payload)`: (command, output the model saw, exit status) of a finished shell
    #: call, None for any other payload; the economizer's failure-loop guard reads these.
    shell_turn: Callable[[Payload], tuple[str, str, int] | None]
    #: `command_for(tool, tool_input)`: the shell command a governed tool call is decided as.
    command_for: Callable[[str, dict[str, Any]], str]
    replies: Replies
    #: `turn_id(payload)`: a name for this finished call, unique within the session (the
    #: economizer's guard counts turns by it; None: not a call it can count).
    turn_id: Callable[[Payload], str | None] = tool_use_id
    #: The answers to a Reuse this plugin can give (`--reuse-answer`, `hook_session.REUSE_ANSWERS`).
    #: "reference" needs a plugin that tracks what the model's context still holds
    #: (`ledger_spec.context`: the events that compact, clear or resume it, and whether a result
    #: reached the model in full); without that, a Reuse can only be answered verbatim.
    reuse_answers: tuple[str, ...] = ("verbatim",)

    def reuse_answer(self, requested: str) -> tuple[str, str | None]:
        """The answer a hook gives for `requested`, and a note for the user when this plugin
        cannot give it: the hook answers verbatim instead (it never fails a call over a
        setting), and says so."""
        if requested in self.reuse_answers:
            return requested, None
        return "verbatim", (f"ledger: --reuse-answer {requested} is not available for this agent (its plugin does not "
                            "track the model's context), so every Reuse is answered verbatim")

    @property
    def before_tool(self) -> str:
        """The event sent before a tool call runs (the first of `events`)."""
        return next(iter(self.events))


@attrs.frozen
class Agent:
    """One agent, as its plugin module describes it."""

    #: The name on the command line (`ledger hook NAME`), the service's URL and the registry's
    #: key; equal to the plugin module's name.
    name: str
    #: `tool_mask(names)`: the economizer's tool mask (sorted tool names to withhold from the
    #: model) in the agent's own option format; "" for an empty mask.
    tool_mask: Callable[[Sequence[str]], str]
    #: The hook protocol; None: Ledger does not govern this agent's tool calls yet.
    hooks: Hooks | None = None
