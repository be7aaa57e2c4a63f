"""A hunt through the hook path: `ledger hook AGENT` run as separate processes, as an agent runs them.

Theory of operation. `make_hook_hunt()` builds a Hypothesis state machine that plays a coding
agent. Each run materializes a workspace (a git repository, or a linked worktree of one) and,
outside it, the configuration git reads (`~/.gitconfig` with a `core.excludesFile`, and an
include the grammar may add; the XDG config, the included file, the excludes file), the program
`GIT_EXTERNAL_DIFF` may name, and a directory of shadowed programs, one of them a symbolic link. Every tool call goes through hook processes
started exactly as `ledger hooks install` makes the agent start them (this interpreter, `-m
ledger_cli.main hook AGENT --state-dir DIR`), with the agent's payloads on stdin and the
agent's environment: PreToolUse, then, unless it was denied, the command run for real by the
harness (as the agent's shell tool would), then PostToolUse or PostToolUseFailure sharing the
call's `tool_use_id` (Gemini CLI: BeforeTool and AfterTool, which carry no call id).

The grammar: reads (the shell idioms of `shell_strategies`, and reads whose output depends on
the environment or on git's configuration), edits through the hooks, calls that fail,
interrupted calls, calls decided twice under one id, abandoned calls (decided, run, never
reported), calls whose command a second hook rewrote after Ledger's PreToolUse (the agent runs
and reports the rewritten one), calls during which another process switches a program's version
and back, edits by a process the hooks never see, one configuration file outside the root
edited at a time, a shadowed program rewritten in place behind its symbolic link, and
environment changes between steps (`TZ`, `LC_ALL`/`LANG`/`LC_COLLATE`, `PATH` with a
symlinked and a relative entry, `GIT_*`, `RIPGREP_CONFIG_PATH`).

The oracle: every Reuse (a deny whose reason is the header and the stored output) is run for
real at once, in the same environment, and rendered as the agent would have shown it (Claude:
merged output, leading blank lines and trailing whitespace stripped, a placeholder for no
output, "Exit code N" first on failure; Codex: the aggregated output and the exit status the
header names; Copilot CLI: trailing whitespace cut, one newline kept, the status the header
names; Gemini CLI and Qwen Code: the output with its surrounding whitespace trimmed, and the
status the header names). A difference is a stale reuse (`HookReuseIsStale`). A hook that answers with an
internal error, or with something that is not JSON, fails the run too (`HookFailed`): it is
safe for the agent (the call goes ahead) but it is a bug the hunt must show.
"""

from __future__ import annotations

import hashlib
import json
import os
import pathlib
import re
import shutil
import subprocess
import sys
import tempfile
import time
from typing import Any, Callable, Mapping

import attrs
import hypothesis
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, precondition, rule, run_state_machine_as_test

from ledger_impl.detectors.watchman import Daemon
from ledger_impl.session import DurableSession
from ledger_spec.errors import HarnessFailure, PropertyViolation

from .oracle import GIT_ENVIRONMENT, Placement, hunt_environment, materialize, session_environment, workspace_base
from .profiles import Profile, profile as named_profile
from .shell_strategies import (
    DETECTOR_READ_IDIOMS,
    EDIT_IDIOMS,
    WorkspaceSetup,
    edit_commands,
    read_commands,
    workspaces,
)

HOOK_REUSE_IS_FRESH = "hook-reuse-is-fresh"
HOOK_FAILED = "hook-failed"
# What Claude shows for a command that printed nothing. Spelled here, not imported from the
# adapter: the oracle states what the agent shows, independently of the code it judges.
NO_OUTPUT = "(Bash completed with no output)"
HOOK_TIMEOUT = 60.0
PROBE_WAIT_S = 60.0  # the probe's own bound is 30 s
COMMAND_TIMEOUT = 20.0
_HEADER = re.compile(r"^\[ledger\] Not run again: this is the unchanged result of .*?(?:, exit status (-?\d+))? \(")

# Reads whose output depends on what the grammar varies outside the files: the environment
# (TZ for times, the locale for how non-ASCII names are quoted), git's configuration outside
# the root (abbreviation length, untracked files shown, the excludes file) and PATH (`cat` is
# shadowed by a program in a directory put first on PATH).
ENVIRONMENT_READS: tuple[str, ...] = (
    "ls -l",
    "ls -l docs",
    "ls docs",
    "git status --short",
    "git status --short --untracked-files=all",
    "git log --oneline",
    "git log -1 --format='%h %ad' --date=local",
    "cat a.txt",
    "cat -n src/app.py",
    "tail -n 2 b.txt",
)

# One variable at a time, set to one of these (None: unset). PATH values are built per run.
ENVIRONMENT_CHOICES: dict[str, tuple[str | None, ...]] = {
    "TZ": ("UTC", "America/New_York", "Asia/Tokyo", None),
    "LC_ALL": ("C.UTF-8", "C", None),
    "LANG": (None, "C", "C.UTF-8"),
    "LC_COLLATE": (None, "C"),
    "GIT_CONFIG_PARAMETERS": (None, "'core.abbrev'='12'", "'status.showUntrackedFiles'='no'"),
    "GIT_CEILING_DIRECTORIES": (None, "/nonexistent"),
    "RIPGREP_CONFIG_PATH": (None, "@OUTSIDE@/ripgreprc"),
    "GIT_EXTERNAL_DIFF": (None, "@OUTSIDE@/extdiff"),
    "PATH": ("plain", "shadowed", "relative", "switchable"),
}

INITIAL_ENVIRONMENT: dict[str, str] = {"TZ": "UTC", "LANG": "C.UTF-8"}

# The configuration files outside the root, and the texts one edit may give each (@OUTSIDE@:
# the directory outside the root). The first is the one a run starts with. git's global
# config starts without an include: the classifier counts a git read under a config with an
# include (or any key that names a program) as a run that may run anything, never reused, so
# with one from the start no git read could be served and no class of git's inputs reached.
OUTSIDE_CONFIG: dict[str, tuple[str, ...]] = {
    "home": ("[core]\n\texcludesFile = @OUTSIDE@/excludes\n",
             "[include]\n\tpath = @OUTSIDE@/included.gitconfig\n[core]\n\texcludesFile = @OUTSIDE@/excludes\n"),
    "xdg": ("", "[core]\n\tabbrev = 9\n", "[status]\n\tshowUntrackedFiles = no\n"),
    "included": ("", "[core]\n\tabbrev = 11\n", "[core]\n\tquotePath = false\n"),
    "excludes": ("", "*.txt\n", "new.txt\nsrc/\n"),
    "ripgreprc": ("", "--hidden\n", "--heading\n"),
    "shadow-program": ('#!/bin/sh\nexec /bin/cat "$@"\n', '#!/bin/sh\necho shadowed\nexec /bin/cat "$@"\n'),
    # the program GIT_EXTERNAL_DIFF names: git runs it for each changed file, with the path first
    "extdiff": ('#!/bin/sh\necho "changed: $1"\n', '#!/bin/sh\necho "changed (second diff tool): $1"\n'),
}

# For each change the grammar makes outside the hooks, reads whose output it can alter.
SENSITIVE_READS: dict[tuple[str, str], tuple[str, ...]] = {
    ("environment", "TZ"): ("ls -l", "git log -1 --format='%h %ad' --date=local"),
    ("environment", "LC_ALL"): ("ls docs", "ls -l docs"),
    ("environment", "LANG"): ("ls docs",),
    ("environment", "LC_COLLATE"): ("ls docs",),
    ("environment", "PATH"): ("cat a.txt", "cat -n src/app.py"),
    ("environment", "GIT_CONFIG_PARAMETERS"): ("git log --oneline", "git status --short --untracked-files=all"),
    ("environment", "GIT_CEILING_DIRECTORIES"): ("git status --short",),
    ("environment", "RIPGREP_CONFIG_PATH"): ("rg -n --sort path alpha",),
    ("environment", "GIT_EXTERNAL_DIFF"): ("git diff",),
    ("outside-config", "home"): ("git log --oneline", "git status --short"),
    ("outside-config", "xdg"): ("git log --oneline", "git status --short --untracked-files=all"),
    ("outside-config", "included"): ("git log --oneline", "git status --short docs"),
    ("outside-config", "excludes"): ("git status --short --untracked-files=all", "git status --short"),
    ("outside-config", "shadow-program"): ("cat a.txt",),
    ("outside-config", "extdiff"): ("git diff",),
    ("outside-config", "ripgreprc"): ("rg -n --sort path alpha",),
    ("unseen-edit", "a.txt"): ("cat a.txt", "wc -l a.txt", "ls -l"),
    ("unseen-edit", "new.txt"): ("ls", "git status --short", "cat new.txt"),
}

# What an edit by a process the hooks never see writes: a file's length kept, changed, emptied.
UNSEEN_TEXTS: tuple[str, ...] = ("alpha 1 beta\n", "alpha 1 BETA\n", "", "omega\nomega\n")


class HookReuseIsStale(PropertyViolation, AssertionError):
    """A Reuse served through the hooks differs from what running the command now shows."""


class HookFailed(HarnessFailure, AssertionError):
    """A hook process crashed, answered with an internal error, or answered something unparsable."""


@attrs.frozen
class ReuseCheck:
    """A Reuse served through the hooks, and what running its command at once showed, each as
    the agent would show it: (text, exit status) for Codex, (text, None) for Claude."""

    command: str
    expected: tuple[str, int | None]
    served: tuple[str, int | None]

    @property
    def held(self) -> bool:
        return self.expected == self.served


@attrs.frozen
class HookViolation:
    """What a failing run showed: the property, the step (1-based), the command and both texts."""

    property: str
    step: int
    command: str
    expected: str
    served: str
    agent: str


@attrs.define
class HookLog:
    """The runs and steps a hunt made, and the violations it saw (each with the run's events)."""

    examples: int = 0
    steps: int = 0
    reuses: int = 0  # Reuses served and checked by a real run
    world: "HookWorld | None" = None  # the current run's
    found_by: dict[str, object] = attrs.field(factory=dict)
    violations: list[tuple[HookViolation, dict[str, Any]]] = attrs.field(factory=list)  # with its counterexample

    def record(self, violation: HookViolation) -> None:
        assert self.world is not None
        self.violations.append((violation, counterexample(self.world, violation, self.found_by)))


def render_claude(output: str, exit_code: int) -> str:
    """What Claude Code shows the model for a shell result."""
    text = re.sub(r"\A(?:[ \t]*\n)+", "", output).rstrip()
    if exit_code != 0:
        return f"Exit code {exit_code}" + (f"\n{text}" if text else "")
    return text or NO_OUTPUT


def trimmed(output: str) -> str:
    """The output as Gemini CLI and Qwen Code show it: surrounding whitespace trimmed, a
    placeholder for none."""
    return output.strip() or "(empty)"


class ClaudeShaped:
    """An agent whose hooks are Claude's: PreToolUse with `tool_use_id`, and a Reuse that is a
    `permissionDecision: "deny"` whose `permissionDecisionReason` the model reads."""

    tool_name = "Bash"
    pre_event = "PreToolUse"

    def deny_reason(self, reply: dict[str, Any] | None) -> str | None:
        output = (reply or {}).get("hookSpecificOutput", {})
        return str(output.get("permissionDecisionReason", "")) if output.get("permissionDecision") == "deny" else None


class SimulatedClaude(ClaudeShaped):
    """Claude Code as the hunt plays it: what it sends its hooks and what it shows the model.
    Written from the agent's observed behaviour, not from `ledger_impl.agents.claude`, which
    it judges."""

    project_dir_variable: str | None = "CLAUDE_PROJECT_DIR"

    def call_id(self, number: int) -> str:
        return f"toolu_{number:03d}"

    def payload_fields(self, world: "HookWorld", payload: dict[str, Any]) -> None:
        payload["tool_input"]["description"] = "hunt"
        payload["transcript_path"] = str(world.parent / "transcript.jsonl")

    def post(self, world: "HookWorld", call_id: str, command: str, output: str, exit_code: int,
             interrupted: bool) -> dict[str, Any]:
        if interrupted:
            return world.payload("PostToolUseFailure", call_id, command, error=render_claude(output, exit_code or 130),
                                 is_interrupt=True)
        if exit_code != 0:
            return world.payload("PostToolUseFailure", call_id, command, error=render_claude(output, exit_code),
                                 is_interrupt=False)
        text = render_claude(output, 0)
        stdout = "" if text == NO_OUTPUT else text
        return world.payload("PostToolUse", call_id, command, tool_response={
            "stdout": stdout, "stderr": "", "interrupted": False, "isImage": False, "noOutputExpected": False})

    def shown(self, output: str, exit_code: int) -> tuple[str, int | None]:
        return render_claude(output, exit_code), None


class SimulatedCodex(ClaudeShaped):
    """Codex CLI as the hunt plays it (its hook payloads carry the output, and the exit status
    unless the call was interrupted)."""

    project_dir_variable: str | None = None

    def call_id(self, number: int) -> str:
        return f"call_{number:03d}"

    def payload_fields(self, world: "HookWorld", payload: dict[str, Any]) -> None:
        payload.update(turn_id="turn-1", model="gpt-5-codex", transcript_path=None)

    def post(self, world: "HookWorld", call_id: str, command: str, output: str, exit_code: int,
             interrupted: bool) -> dict[str, Any]:
        response: dict[str, Any] = {"output": output}
        if not interrupted:
            response["exit_code"] = exit_code
        return world.payload("PostToolUse", call_id, command, tool_response=response)

    def shown(self, output: str, exit_code: int) -> tuple[str, int | None]:
        return output, exit_code


def render_copilot(output: str, exit_code: int) -> str:
    """What Copilot CLI's shell tool shows the model: trailing whitespace cut, one newline kept,
    then its status line (the shell's number does not matter to Ledger)."""
    return f"{output.rstrip()}\n<shellId: 0 completed with exit code {exit_code}>"


class SimulatedCopilot(ClaudeShaped):
    """GitHub Copilot CLI as the hunt plays it, with Ledger's PascalCase hook events: Claude's
    payload shape, but no call id in any payload, and the status at the end of the text."""

    project_dir_variable: str | None = "COPILOT_PROJECT_DIR"

    def call_id(self, number: int) -> str:
        return f"unused_{number:03d}"  # never sent: Copilot's payloads carry none

    def payload_fields(self, world: "HookWorld", payload: dict[str, Any]) -> None:
        del payload["tool_use_id"]
        payload["tool_input"]["description"] = "hunt"
        payload["timestamp"] = "2026-12-04T19:34:44.537Z"

    def post(self, world: "HookWorld", call_id: str, command: str, output: str, exit_code: int,
             interrupted: bool) -> dict[str, Any]:
        if interrupted:
            return world.payload("PostToolUseFailure", call_id, command, error="The operation was aborted.")
        return world.payload("PostToolUse", call_id, command, tool_result={
            "result_type": "success", "text_result_for_llm": render_copilot(output, exit_code)})

    def shown(self, output: str, exit_code: int) -> tuple[str, int | None]:
        return f"{output.rstrip()}\n", exit_code


class SimulatedQwen(ClaudeShaped):
    """Qwen Code 0.24 as the hunt plays it (seen with the real CLI): its shell result text names
    the command, the trimmed output and the exit status; a non-zero status arrives as
    PostToolUseFailure whose `error` is that text."""

    tool_name = "run_shell_command"
    project_dir_variable: str | None = "QWEN_PROJECT_DIR"

    def call_id(self, number: int) -> str:
        return f"toolu_{number:03d}_qwen"

    def payload_fields(self, world: "HookWorld", payload: dict[str, Any]) -> None:
        payload.update(permission_mode="yolo", tool_call_id=f"call_{payload['tool_use_id']}")

    def post(self, world: "HookWorld", call_id: str, command: str, output: str, exit_code: int,
             interrupted: bool) -> dict[str, Any]:
        text = (f"Command: {command}\nDirectory: (root)\nOutput: {trimmed(output)}\nError: (none)\n"
                f"Exit Code: {exit_code}\nSignal: (none)\nProcess Group PGID: (none)")
        if exit_code == 0 and not interrupted:
            return world.payload("PostToolUse", call_id, command, tool_response={"llmContent": text,
                                                                                  "returnDisplay": output})
        return world.payload("PostToolUseFailure", call_id, command, error=text, is_interrupt=interrupted)

    def shown(self, output: str, exit_code: int) -> tuple[str, int | None]:
        return trimmed(output), exit_code


class SimulatedGemini:
    """Gemini CLI 0.61 as the hunt plays it (seen with the real CLI): BeforeTool and AfterTool
    without a call id, the result as `<untrusted_context>`-wrapped sections, and a Reuse that is
    `decision: "deny"` whose `reason` the model reads."""

    tool_name = "run_shell_command"
    pre_event = "BeforeTool"
    project_dir_variable: str | None = "GEMINI_PROJECT_DIR"

    def call_id(self, number: int) -> str:
        return f"unsent_{number:03d}"  # Gemini sends none; the harness still pairs its calls

    def payload_fields(self, world: "HookWorld", payload: dict[str, Any]) -> None:
        payload.pop("tool_use_id")
        payload.update(transcript_path=str(world.parent / "session.jsonl"), timestamp="2026-12-04T00:00:00Z")

    def post(self, world: "HookWorld", call_id: str, command: str, output: str, exit_code: int,
             interrupted: bool) -> dict[str, Any]:
        if interrupted:
            text = "Command was cancelled by user before it could complete."
            shown = "Command cancelled by user."
        else:
            status = f"Exit Code: {exit_code}\n" if exit_code else ""
            text = f"Output: {trimmed(output)}\n{status}Process Group PGID: 4242"
            shown = output.strip() or (f"Command exited with code: {exit_code}" if exit_code else "")
        return world.payload("AfterTool", call_id, command, tool_response={
            "llmContent": f"<untrusted_context>\n{text}\n</untrusted_context>", "returnDisplay": shown})

    def shown(self, output: str, exit_code: int) -> tuple[str, int | None]:
        return trimmed(output), exit_code

    def deny_reason(self, reply: dict[str, Any] | None) -> str | None:
        return str((reply or {}).get("reason", "")) if (reply or {}).get("decision") == "deny" else None


Simulated = SimulatedClaude | SimulatedCodex | SimulatedCopilot | SimulatedQwen | SimulatedGemini
#: The agents the hunt plays, by the name `ledger hook` takes. A table keyed by agent names, which
#: tests/test_layers.py allows here by name only: the hunt is a deliberately independent judge
#: that plays each agent as its CLI behaves, not from the plugin records it checks.
SIMULATED: dict[str, Simulated] = {"claude": SimulatedClaude(), "codex": SimulatedCodex(), "copilot": SimulatedCopilot(),
                                   "gemini": SimulatedGemini(), "qwen": SimulatedQwen()}
AGENTS: tuple[str, ...] = tuple(SIMULATED)


class HookWorld:
    """One run's workspace, configuration outside it, environment and hook processes."""

    def __init__(
        self, agent: str, setup: Any, worktree: bool, hook_environment: Mapping[str, str] | None = None,
        probe: bool = False,
    ) -> None:
        self.agent, self.setup, self.worktree = agent, setup, worktree
        self.simulated = SIMULATED[agent]
        # With the probe (as shipped), a read serves only once the probe its PostToolUse hook
        # started has confirmed it: the agent's next call waits for that (as an agent slower
        # than the probe would). Without it, the hook path's own lines alone.
        self.probe = probe
        # Added to the hook processes' environment only (a test plants a bug through PYTHONPATH).
        self.hook_environment = dict(hook_environment or {})
        self.parent = pathlib.Path(tempfile.mkdtemp(prefix="ledger-hook-hunt-", dir=workspace_base()))
        placement = materialize(setup, self.parent)
        self.outside = placement.outside
        self.root = placement.root
        self.placement = placement  # renders the grammar's @ROOT@ and @OUTSIDE@ placeholders
        if worktree:
            linked = self.parent / "linked"
            subprocess.run(["git", "worktree", "add", "-q", str(linked)], cwd=self.root, check=True,
                           capture_output=True, env={**os.environ, **GIT_ENVIRONMENT})
            self.root = linked.resolve()
            self.placement = Placement(self.root, self.outside)
        self.state_dir = self.parent / "state"
        self.events: list[dict[str, Any]] = []
        self.calls = 0
        # Calls decided and left running (the "left-running" shape): (call id, command) of a
        # writer that may land at any moment until the agent reports it.
        self.in_flight: list[tuple[str, str]] = []
        self._write_outside_config()
        self.base_env = session_environment(Placement(self.root, self.outside))
        # Set as most agents' environments have them, so that a change is mostly a new value of
        # a variable already there (a fingerprint keyed by names alone misses only those).
        self.base_env.update(INITIAL_ENVIRONMENT)
        self.env = dict(self.base_env)
        # The drawn value of each variable (PATH's by name), as the environment starts.
        self.choices: dict[str, str | None] = {name: self.env.get(name) for name in ENVIRONMENT_CHOICES}
        self.choices["PATH"] = "plain"
        self.session_id = f"hunt-{os.getpid()}-{id(self)}"

    def _write_outside_config(self) -> None:
        home = self.outside / "home"
        (home / ".config" / "git").mkdir(parents=True, exist_ok=True)
        (self.outside / "shadow").mkdir(exist_ok=True)
        (self.outside / "tools").mkdir(exist_ok=True)
        for name in OUTSIDE_CONFIG:
            self.edit_config(name, OUTSIDE_CONFIG[name][0])
        program = self.outside / "tools" / "cat-impl"
        program.chmod(0o755)
        # `cat` as a version manager serves it: shims/cat -> versions/current/cat, `current` a link
        # to one version directory, replaced atomically to switch (what the `switched` call does).
        for version, first_line in (("a", ""), ("b", "echo 'cat version b'\n")):
            (self.outside / "versions" / version).mkdir(parents=True, exist_ok=True)
            (self.outside / "versions" / version / "cat").write_text(f'#!/bin/sh\n{first_line}exec /bin/cat "$@"\n')
            (self.outside / "versions" / version / "cat").chmod(0o755)
        self.switch_program("a")
        (self.outside / "shims").mkdir(exist_ok=True)
        (self.outside / "shims" / "cat").symlink_to(self.outside / "versions" / "current" / "cat")
        self.config_path("extdiff").chmod(0o755)
        (self.outside / "shadow" / "cat").symlink_to(program)

    def switch_program(self, version: str) -> None:
        """Make the switchable `cat` version "a" (the system's) or "b" (a line of its own first)."""
        staged = self.outside / "versions" / "staged"
        staged.unlink(missing_ok=True)
        staged.symlink_to(version)
        os.replace(staged, self.outside / "versions" / "current")

    def config_path(self, name: str) -> pathlib.Path:
        return {
            "home": self.outside / "home" / ".gitconfig",
            "xdg": self.outside / "home" / ".config" / "git" / "config",
            "included": self.outside / "included.gitconfig",
            "excludes": self.outside / "excludes",
            "ripgreprc": self.outside / "ripgreprc",
            "shadow-program": self.outside / "tools" / "cat-impl",
            "extdiff": self.outside / "extdiff",
        }[name]

    def edit_config(self, name: str, text: str) -> None:
        """Rewrite one file outside the root in place (same inode, as an editor saving in place)."""
        path = self.config_path(name)
        with open(path, "w") as handle:
            handle.write(text.replace("@OUTSIDE@", str(self.outside)))
        self.events.append({"event": "edit-outside", "file": name, "text": text})

    def set_environment(self, name: str, value: str | None) -> None:
        self.events.append({"event": "environment", "name": name, "choice": value})
        self.choices[name] = value
        if name == "PATH":
            base = self.base_env["PATH"]
            value = {
                "plain": base,
                "shadowed": f"{self.outside / 'shadow'}{os.pathsep}{base}",
                # A relative entry: resolved against each command's working directory.
                "relative": f"bin{os.pathsep}{base}",
                "switchable": f"{self.outside / 'shims'}{os.pathsep}{base}",
            }[value or "plain"]
        elif value is not None:
            value = value.replace("@OUTSIDE@", str(self.outside))
        if value is None:
            self.env.pop(name, None)
        else:
            self.env[name] = value

    def damage_store(self) -> None:
        """Overwrite the stat index each session database keeps (as a crash or another tool
        might): the detector's next report cannot be trusted and must cost reuse."""
        import sqlite3

        for database in sorted((self.state_dir / "sessions").glob("*.sqlite")):
            connection = sqlite3.connect(database)
            try:
                with connection:
                    connection.execute("UPDATE state SET stat_index = ?", (b"not a stat index",))
            finally:
                connection.close()
        self.events.append({"event": "damage-store"})

    def git_in_main(self, *args: str) -> None:
        """In a linked worktree: `git ARGS` run in the main checkout by a process the hooks never
        see (another terminal). A branch it makes or moves is a loose ref in the common
        directory, outside the root; nothing in the worktree changes."""
        subprocess.run(["git", *args], cwd=self.parent / "ws", check=True, capture_output=True,
                       env={**os.environ, **GIT_ENVIRONMENT})
        self.events.append({"event": "git-in-main", "args": list(args)})

    def edit_unseen(self, key: str, text: str) -> None:
        """An edit by a process the hooks never see (an editor, a build, another terminal)."""
        path = self.root / key
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        self.events.append({"event": "edit-unseen", "file": key, "text": text})

    # --- hook processes ---------------------------------------------------------------------

    def hook(self, payload: dict[str, Any]) -> dict[str, Any] | None:
        # The command line `ledger hooks install` writes into the agent's settings (the harness
        # may not import the CLI layer, so it is spelled here; tests/agents check the installed one).
        argv = [sys.executable, "-m", "ledger_cli.main", "hook", self.agent, "--state-dir", str(self.state_dir),
                *(() if self.probe else ("--no-probe",))]
        env = {**self.env, **self.hook_environment}
        if self.simulated.project_dir_variable is not None:
            env[self.simulated.project_dir_variable] = str(self.root)
        done = subprocess.run(argv, input=json.dumps(payload), capture_output=True, text=True, cwd=self.root,
                              env=env, timeout=HOOK_TIMEOUT, check=False)
        self.events.append({"event": payload["hook_event_name"], "id": payload.get("tool_use_id"),
                            "command": (payload.get("tool_input") or {}).get("command")})
        if done.returncode != 0 or "internal error" in done.stderr:
            raise HookFailed(f"ledger hook {self.agent} exited {done.returncode}: {done.stderr.strip()[-500:]}")
        try:
            reply = json.loads(done.stdout) if done.stdout.strip() else None
        except json.JSONDecodeError:
            raise HookFailed(f"ledger hook {self.agent} answered non-JSON: {done.stdout[:200]!r}") from None
        return reply

    def payload(self, event: str, call_id: str, command: str, **extra: Any) -> dict[str, Any]:
        common: dict[str, Any] = {"session_id": self.session_id, "cwd": str(self.root), "hook_event_name": event,
                                  "tool_name": self.simulated.tool_name, "tool_input": {"command": command},
                                  "tool_use_id": call_id}
        self.simulated.payload_fields(self, common)
        return {**common, **extra}

    def next_id(self) -> str:
        self.calls += 1
        return self.simulated.call_id(self.calls)

    def run(self, command: str) -> tuple[str, int]:
        """The command run as the agent's shell tool runs it: bash, stderr merged, the agent's environment."""
        try:
            done = subprocess.run(["bash", "-c", command], cwd=self.root, env=self.env, stdin=subprocess.DEVNULL,
                                  stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=COMMAND_TIMEOUT,
                                  check=False, start_new_session=True)
        except subprocess.TimeoutExpired as expired:
            return (expired.output or b"").decode("utf-8", "replace"), 124
        self.events.append({"event": "run", "command": command, "exit": done.returncode})
        return done.stdout.decode("utf-8", "replace"), done.returncode

    def post(self, call_id: str, command: str, output: str, exit_code: int, *, interrupted: bool = False) -> None:
        """The agent's report of a finished (or interrupted) call, under the id of its PreToolUse."""
        self.hook(self.simulated.post(self, call_id, command, output, exit_code, interrupted))
        if self.probe:
            with DurableSession.open(self.root, state_dir=self.state_dir) as session:
                if not session.wait_for_probes(PROBE_WAIT_S):
                    raise HookFailed(f"the probe of {command!r} stored no verdict within {PROBE_WAIT_S:g} s")

    def served(self, reply: dict[str, Any] | None) -> tuple[str, int | None] | None:
        """The output (and the exit status, where the header names it) a Reuse served; None if
        not a Reuse."""
        reason = self.simulated.deny_reason(reply)
        if reason is None:
            return None
        header, _, body = reason.partition("\n")
        match = _HEADER.match(header)
        if match is None:
            raise HookFailed(f"a deny that is not a Reuse: {header[:200]!r}")
        return body, int(match.group(1)) if match.group(1) is not None else None

    def expected(self, output: str, exit_code: int) -> tuple[str, int | None]:
        """What the agent would show for a fresh run, in the shape `served` returns."""
        return self.simulated.shown(output, exit_code)

    def close(self) -> None:
        # Where watchman is installed the hook processes started a daemon for the session; it
        # would outlive its removed directory (each `ledger verify` left four behind).
        if (self.state_dir / "watchman").is_dir():
            Daemon(self.state_dir / "watchman").shutdown()
        shutil.rmtree(self.parent, ignore_errors=True)


HOW: tuple[str, ...] = ("plain", "interrupted", "redecide", "abandon", "rewritten", "switched", "left-running")
# What a call of the "left-running" shape is decided again as, under the same id.
READ_UNDER_A_WRITER_ID = "cat a.txt"


def rewritten(command: str) -> str:
    """What a second PreToolUse hook (Claude Code's `updatedInput`) makes of `command` after
    Ledger decided it: the same read with a line of its own appended, so the output the agent
    reports is never the decided command's. Storing it under the decided command is stale."""
    return f"{command}; echo '(checked by another hook)'"


def tool_call(world: HookWorld, command: str, how: str = "plain") -> ReuseCheck | None:
    """One shell tool call through the hooks, as the agent makes it; a served Reuse is checked.

    `how`: "plain" (PreToolUse, run, PostToolUse or PostToolUseFailure), "interrupted" (the
    command ran but the agent reports it interrupted), "redecide" (PreToolUse sent twice under
    one id), "abandon" (decided and run, never reported), "rewritten" (decided as `command`,
    then run and reported as `rewritten(command)`), "switched" (the switchable `cat` is switched
    to its other version while the command runs, and back once it is reported: another process,
    a version manager, at work), "left-running" (decided, then decided again under the same id
    as `READ_UNDER_A_WRITER_ID`, and left running unreported: while it is, a Reuse served to any
    call is checked after it lands, since it may land before the agent uses the served output).
    Returns None when nothing was served, else the Reuse and what running the command at once
    showed.
    """
    if how not in HOW:
        raise ValueError(f"unknown call shape {how!r}")
    world.events.append({"event": "call", "command": command, "how": how})
    command = world.placement.render(command)
    call_id = world.next_id()
    reply = world.hook(world.payload(world.simulated.pre_event, call_id, command))
    if how == "redecide":
        reply = world.hook(world.payload(world.simulated.pre_event, call_id, command))
    if how == "left-running":
        world.hook(world.payload(world.simulated.pre_event, call_id, world.placement.render(READ_UNDER_A_WRITER_ID)))
        world.in_flight.append((call_id, command))
        return None
    served = world.served(reply)
    if served is not None:
        for running_id, running in world.in_flight:  # each lands now, then is reported
            landed_output, landed_code = world.run(running)
            world.post(running_id, running, landed_output, landed_code)
        world.in_flight.clear()
    if served is None and how == "rewritten":
        command = rewritten(command)
    if served is None and how == "switched":
        world.switch_program("b")
    output, code = world.run(command)  # the agent's run, or the oracle's run of a Reuse
    if served is not None:
        return ReuseCheck(command, world.expected(output, code), served)
    if how != "abandon":
        world.post(call_id, command, output, code, interrupted=how == "interrupted")
    if how == "switched":
        world.switch_program("a")
    return None


COUNTEREXAMPLE_FORMAT = "ledger-hook-counterexample/1"
# The events a replay applies, in order; the others (hook calls, runs) are the trace.
REPLAYED_EVENTS = frozenset({"call", "environment", "edit-outside", "edit-unseen", "damage-store", "git-in-main"})


def apply_event(world: HookWorld, step: Mapping[str, Any]) -> ReuseCheck | None:
    """Play one replayed event of a counterexample file (`REPLAYED_EVENTS`) in `world`; a tool
    call's served Reuse and what a run showed, else None."""
    kind = step["event"]
    if kind == "call":
        return tool_call(world, step["command"], step.get("how", "plain"))
    if kind == "environment":
        world.set_environment(step["name"], step["choice"])
    elif kind == "edit-outside":
        world.edit_config(step["file"], step["text"])
    elif kind == "edit-unseen":
        world.edit_unseen(step["file"], step["text"])
    elif kind == "damage-store":
        world.damage_store()
    elif kind == "git-in-main":
        world.git_in_main(*step["args"])
    else:
        raise ValueError(f"unknown step {step!r}")
    return None


def counterexample(world: HookWorld, violation: HookViolation, found_by: Mapping[str, object]) -> dict[str, Any]:
    """A failing run as a JSON document that `replay` plays again: the workspace, the agent,
    the steps (tool calls, environment changes, edits outside the hooks) and what was seen."""
    return {
        "format": COUNTEREXAMPLE_FORMAT,
        "property": violation.property,
        "agent": world.agent,
        "worktree": world.worktree,
        "setup": world.setup.to_json(),
        "steps": [event for event in world.events if event["event"] in REPLAYED_EVENTS],
        "violation": {key: world.placement.unrender(value) if isinstance(value, str) else value
                      for key, value in attrs.asdict(violation).items()},
        "found_by": dict(found_by),
    }


def write_counterexample(document: Mapping[str, Any], out_dir: pathlib.Path) -> pathlib.Path:
    digest = hashlib.sha256(json.dumps(document["steps"], sort_keys=True).encode()).hexdigest()[:10]
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / f"hook-{document['agent']}-{document['property']}-{digest}.json"
    path.write_text(json.dumps(document, indent=2, ensure_ascii=False) + "\n")
    return path


def replay(
    document: Mapping[str, Any], hook_environment: Mapping[str, str] | None = None, probe: bool = False
) -> list[ReuseCheck]:
    """Play a counterexample's steps again through fresh hook processes (`probe`: as shipped,
    each read served only after its probe); every Reuse served, checked against a real run (a
    stale one has `held` False)."""
    if document.get("format") != COUNTEREXAMPLE_FORMAT:
        raise ValueError(f"not a hook-path counterexample (format {document.get('format')!r})")
    world = HookWorld(str(document["agent"]), WorkspaceSetup.from_json(document["setup"]), bool(document["worktree"]),
                      hook_environment, probe)
    checks = []
    try:
        for step in document["steps"]:
            check = apply_event(world, step)
            if check is not None:
                checks.append(check)
    finally:
        world.close()
    return checks


def make_hook_hunt(
    log: HookLog, hook_environment: Mapping[str, str] | None = None, probe: bool = False
) -> type[RuleBasedStateMachine]:
    """The hook-path state machine; violations land in `log`."""
    reads = st.one_of(read_commands(idioms=DETECTOR_READ_IDIOMS, spellings=("relative",)), st.sampled_from(ENVIRONMENT_READS))
    edits = edit_commands(idioms=tuple(i for i in EDIT_IDIOMS if "&" not in i), spellings=("relative",))

    class HookPathHunt(RuleBasedStateMachine):
        world: HookWorld

        @initialize(agent=st.sampled_from(AGENTS), setup=workspaces(), worktree=st.booleans())
        def start(self, agent: str, setup: Any, worktree: bool) -> None:
            self.world = HookWorld(agent, setup, worktree, hook_environment, probe)
            log.world = self.world
            self.step_index = 0
            self.history: list[str] = []
            log.examples += 1

        def _call(self, command: str, how: str = "plain") -> None:
            self.step_index += 1
            log.steps += 1
            if command not in self.history:
                self.history.append(command)
            check = tool_call(self.world, command, how)
            if check is None:
                return
            log.reuses += 1
            if not check.held:
                violation = HookViolation(HOOK_REUSE_IS_FRESH, self.step_index, command, repr(check.expected),
                                          repr(check.served), self.world.agent)
                log.record(violation)
                raise HookReuseIsStale(f"{command!r} served {violation.served} through `ledger hook {self.world.agent}`; "
                                       f"running it now shows {violation.expected}")

        @rule(command=reads)
        def read_twice(self, command: str) -> None:
            self._call(command)
            self._call(command)

        @precondition(lambda self: bool(self.history))
        @rule(data=st.data(), how=st.sampled_from(HOW))
        def reread(self, data: st.DataObject, how: str) -> None:
            """A read made earlier in the run, again: after the steps since, a Reuse is the question."""
            self._call(data.draw(st.sampled_from(self.history)), how)

        @rule(command=edits)
        def edit(self, command: str) -> None:
            self._call(command)

        def _read_around(self, kind: str, data: st.DataObject) -> None:
            """A read whose output the drawn change alters, the change (unseen by the hooks), the
            same read: was the change noticed? Drawn from `SENSITIVE_READS`, since an unrelated
            change and re-read rarely meet in a short run."""
            target = data.draw(st.sampled_from(sorted(target for k, target in SENSITIVE_READS if k == kind)))
            command = data.draw(st.sampled_from(SENSITIVE_READS[(kind, target)]))
            if target == "shadow-program":
                self.world.set_environment("PATH", "shadowed")  # the program edited is the one run
            self._call(command)
            if kind == "environment":
                choices = [c for c in ENVIRONMENT_CHOICES[target] if c != self.world.choices.get(target)]
                self.world.set_environment(target, data.draw(st.sampled_from(choices)))
            elif kind == "outside-config":
                self.world.edit_config(target, data.draw(st.sampled_from(OUTSIDE_CONFIG[target])))
            else:
                self.world.edit_unseen(target, data.draw(st.sampled_from(UNSEEN_TEXTS)))
            self._call(command)

        # One rule per kind of change: Hypothesis turns a random subset of rules off in each run
        # (swarm testing), and three rules keep some read around a change in most runs.
        @rule(data=st.data())
        def read_around_an_environment_change(self, data: st.DataObject) -> None:
            self._read_around("environment", data)

        @rule(data=st.data())
        def read_around_an_outside_config_edit(self, data: st.DataObject) -> None:
            self._read_around("outside-config", data)

        @rule(data=st.data())
        def read_around_an_unseen_edit(self, data: st.DataObject) -> None:
            self._read_around("unseen-edit", data)

        @rule(command=st.one_of(reads, edits), how=st.sampled_from(("interrupted", "redecide", "abandon")))
        def odd_call(self, command: str, how: str) -> None:
            self._call(command, how)

        @rule(command=st.sampled_from(("cat missing.txt", "ls nothere", "git show nothere", "grep -n zzz a.txt")))
        def failing_read(self, command: str) -> None:
            self._call(command)

        @rule(name=st.sampled_from(sorted(ENVIRONMENT_CHOICES)), data=st.data())
        def change_environment(self, name: str, data: st.DataObject) -> None:
            self.world.set_environment(name, data.draw(st.sampled_from(ENVIRONMENT_CHOICES[name])))

        def teardown(self) -> None:
            if hasattr(self, "world"):
                self.world.close()

    HookPathHunt.__name__ = HookPathHunt.__qualname__ = "HookPathHunt"
    return HookPathHunt


# --- the class sweep ------------------------------------------------------------------------
# A random run of ten calls meets one class (a read, the change that alters it, the same read
# again) only now and then: with the `ci` budget, a bug in one input of the fingerprint or one
# field of a hook payload survived `ledger verify` (scripts/verify_under_mutants.py). The sweep
# plays each class once, in a world of its own, through the same hook processes and the same
# check of every Reuse; the random hunt still finds what no one listed. Steps: ("call",
# command[, shape]), ("environment", name, choice), ("outside-config", file, text),
# ("unseen-edit", key, text), ("damage-store",), ("git-in-main", *args). The classes whose names
# `IN_A_WORKTREE` holds run in a linked worktree of the repository.
SweepStep = tuple[str, ...]


def _read_change_read(read: str, change: SweepStep, before: tuple[SweepStep, ...] = (), *, settle: int = 0) -> tuple[SweepStep, ...]:
    """A read made servable (run, then served), a change that alters its output, the read again.
    `settle` more runs first: the agent's own `git diff` refreshes and rewrites `.git/index`
    (it runs without GIT_OPTIONAL_LOCKS=0), so its first result cannot be served."""
    return (*before, *(("call", read),) * settle, ("call", read), ("call", read), change, ("call", read))


SWEEP: dict[str, tuple[str, tuple[SweepStep, ...]]] = {
    "XDG git config": ("claude", _read_change_read(
        "git log --oneline", ("outside-config", "xdg", OUTSIDE_CONFIG["xdg"][1]))),
    "an include added to git's global config": ("codex", _read_change_read(
        "git log --oneline", ("outside-config", "home", OUTSIDE_CONFIG["home"][1]),
        before=(("outside-config", "included", OUTSIDE_CONFIG["included"][1]),))),
    "the excludes file alone": ("claude", _read_change_read(
        "git ls-files --others --exclude-standard", ("outside-config", "excludes", "*.txt\n"),
        before=(("call", "echo new > new.txt"),))),
    "a program behind a symbolic link, rewritten": ("codex", _read_change_read(
        "cat a.txt", ("outside-config", "shadow-program", OUTSIDE_CONFIG["shadow-program"][1]),
        before=(("environment", "PATH", "shadowed"),))),
    "the program GIT_EXTERNAL_DIFF names, rewritten": ("claude", _read_change_read(
        "git diff", ("outside-config", "extdiff", OUTSIDE_CONFIG["extdiff"][1]),
        before=(("environment", "GIT_EXTERNAL_DIFF", "@OUTSIDE@/extdiff"), ("call", "echo more >> a.txt")), settle=1)),
    **({"the file RIPGREP_CONFIG_PATH names": ("codex", _read_change_read(
        "rg -n --sort path alpha", ("outside-config", "ripgreprc", OUTSIDE_CONFIG["ripgreprc"][2]),
        before=(("environment", "RIPGREP_CONFIG_PATH", "@OUTSIDE@/ripgreprc"),)))} if shutil.which("rg") else {}),
    "a new value of TZ": ("codex", _read_change_read("ls -l", ("environment", "TZ", "Asia/Tokyo"))),
    "a file edited by a process the hooks never see": ("claude", _read_change_read(
        "cat a.txt", ("unseen-edit", "a.txt", UNSEEN_TEXTS[1]))),
    "an empty result": ("claude", (("call", "git ls-files --others --exclude-standard"),) * 2),
    "an interrupted call": ("claude", (("call", "cat a.txt", "interrupted"), ("call", "cat a.txt"))),
    "an interrupted failure": ("claude", (("call", "cat missing.txt", "interrupted"), ("call", "cat missing.txt"))),
    "a program switched while the read ran, and back": ("claude", (
        ("environment", "PATH", "switchable"), ("call", "cat b.txt", "switched"), ("call", "cat b.txt"))),
    # The stored stat index damaged: the report is unknown scope with the problem, and must not
    # be dropped (a listing shows the new file only through that report).
    "a change reported against a damaged stat index": ("codex", (
        ("environment", "LEDGER_SESSION_DETECTOR", "stat-index"), ("call", "ls"), ("call", "ls"),
        ("unseen-edit", "c.txt", "charlie\n"), ("damage-store",), ("call", "ls"))),
    "a branch made in the main checkout of a linked worktree": ("codex", _read_change_read(
        "git branch", ("git-in-main", "branch", "side"))),
    "a call id decided twice": ("codex", (("call", "echo changed > a.txt", "redecide"), ("call", "cat a.txt"),
                                          ("call", "cat a.txt"))),
    # A writer's id decided again for a read: the read inherits the writer's may-write, so no
    # read made while it may still run is stored, and none is served until it is reported.
    "a writer's id decided again for a read, the writer still running": ("claude", (
        ("call", "cat a.txt"), ("call", "echo written under the same id >> a.txt", "left-running"),
        ("call", "cat a.txt"), ("call", "cat a.txt"))),
}


IN_A_WORKTREE: frozenset[str] = frozenset({"a branch made in the main checkout of a linked worktree"})


# A sweep step as the event a counterexample file stores (what `apply_event` plays).
_SWEEP_EVENTS: dict[str, Callable[..., dict[str, Any]]] = {
    "call": lambda command, how="plain": {"event": "call", "command": command, "how": how},
    "environment": lambda name, choice: {"event": "environment", "name": name, "choice": choice},
    "outside-config": lambda file, text: {"event": "edit-outside", "file": file, "text": text},
    "unseen-edit": lambda file, text: {"event": "edit-unseen", "file": file, "text": text},
    "damage-store": lambda: {"event": "damage-store"},
    "git-in-main": lambda *args: {"event": "git-in-main", "args": list(args)},
}


def sweep_world(world: HookWorld, steps: tuple[SweepStep, ...]) -> HookViolation | None:
    """Play `steps` in `world`; the first stale Reuse, or None."""
    for index, step in enumerate(steps, 1):
        kind, *rest = step
        if kind not in _SWEEP_EVENTS:
            raise ValueError(f"unknown sweep step {step!r}")
        check = apply_event(world, _SWEEP_EVENTS[kind](*rest))
        if check is not None and not check.held:
            return HookViolation(HOOK_REUSE_IS_FRESH, index, rest[0], repr(check.expected), repr(check.served), world.agent)
    return None


SWEEP_SETUP = WorkspaceSetup(
    files={"a.txt": "alpha 1\n", "b.txt": "beta 1\nbeta 2\n", "src/app.py": "print('alpha')\n",
           "docs/notes.md": "# notes\n", "docs/naïve notes.txt": "gamma\n"},
    outside={"ext.txt": "outside\n"},
)


def run_class_sweep(hook_environment: Mapping[str, str] | None = None, probe: bool = False) -> tuple[int, list[tuple[str, HookViolation, dict[str, Any]]]]:
    """Every class of `SWEEP` once: (hook calls made, the stale ones with their counterexamples)."""
    found: list[tuple[str, HookViolation, dict[str, Any]]] = []
    calls = 0
    with hunt_environment():
        for name, (agent, steps) in SWEEP.items():
            world = HookWorld(agent, SWEEP_SETUP, name in IN_A_WORKTREE, hook_environment, probe)
            try:
                try:
                    violation = sweep_world(world, steps)
                except HookFailed as error:
                    violation = HookViolation(HOOK_FAILED, 0, "", str(error), "", agent)
                calls += world.calls
                if violation is not None:
                    found.append((name, violation, counterexample(world, violation, {"tool": "class sweep", "class": name})))
            finally:
                world.close()
    return calls, found


@attrs.frozen
class HookHuntReport:
    examples: int
    steps: int
    seconds: float
    seed: int
    reuses: int  # Reuses served and checked by a real run
    violations: tuple[tuple[HookViolation, dict[str, Any]], ...]  # each with its counterexample document
    files: tuple[pathlib.Path, ...] = ()

    @property
    def steps_per_second(self) -> float:
        return self.steps / self.seconds if self.seconds > 0 else 0.0


def _phases(profile: Profile) -> list[hypothesis.Phase]:
    """Shrinking replays a failing run hundreds of times, each step a few hook processes: only
    the `thorough` profile pays for it; the others keep the first failing run as found (its
    file replays it exactly)."""
    shrink = [hypothesis.Phase.shrink] if profile.name == "thorough" else []
    return [hypothesis.Phase.generate, *shrink]


def run_hook_hunt(
    profile: Profile | str | None = None, seed: int | None = None, *, max_examples: int | None = None,
    hook_environment: Mapping[str, str] | None = None,
    out_dir: str | pathlib.Path | None = None,
    probe: bool = False,
) -> HookHuntReport:
    """Run the hook-path machine under `profile`'s hook budget; return what it did and found.
    `hook_environment` is added to the hook processes' environment only; each violation's
    counterexample is written to `out_dir` when given. `probe`: the hooks as shipped, each read
    served only after its probe (`HookWorld`); off, the hook path's own lines alone.

    A crash of the harness is raised; a violation is reported (with the smallest run's events).
    """
    import random

    chosen = profile if isinstance(profile, Profile) else named_profile(profile)
    seed = seed if seed is not None else random.SystemRandom().randrange(2**32)
    log = HookLog(found_by={"tool": "hypothesis", "seed": seed, "profile": chosen.name})
    machine = hypothesis.seed(seed)(make_hook_hunt(log, hook_environment, probe))
    started = time.monotonic()
    with hunt_environment():
        try:
            run_state_machine_as_test(machine, settings=settings(
                max_examples=max_examples or chosen.hook_examples, stateful_step_count=chosen.hook_steps, deadline=None,
                database=None, suppress_health_check=list(HealthCheck), print_blob=False,
                verbosity=hypothesis.Verbosity.quiet, phases=_phases(chosen),
                report_multiple_bugs=False,
            ))
        except HookReuseIsStale:
            pass  # in the log, the last one the smallest
        except hypothesis.errors.Flaky:
            # Hypothesis replays a failing run once more at the end; a run whose served Reuses
            # depend on the clock (a racily clean file) can go otherwise then. What the oracle saw
            # is in the log; only a flaky run with nothing seen is a problem of the harness.
            if not log.violations:
                raise
        except HookFailed as error:  # a bug of the hook itself: reported with the run that showed it
            log.record(HookViolation(HOOK_FAILED, 0, "", str(error), "", log.world.agent if log.world else ""))
    kept = tuple(log.violations[-1:])  # after shrinking, Hypothesis replays the smallest failing run last
    files = tuple(write_counterexample(document, pathlib.Path(out_dir)) for _, document in kept) if out_dir else ()
    return HookHuntReport(log.examples, log.steps, time.monotonic() - started, seed, log.reuses, kept, files)


def main(argv: list[str] | None = None) -> int:  # pragma: no cover - a manual entry point
    """`python -m ledger_properties.hook_hunt [--seed S] [--out DIR]` hunts; `--replay FILE` replays."""
    import argparse

    parser = argparse.ArgumentParser(description="the hook-path hunt alone, or the replay of one of its files")
    parser.add_argument("--profile", default=None)
    parser.add_argument("--seed", type=int, default=None)
    parser.add_argument("--max-examples", type=int, default=None)
    parser.add_argument("--out", default=None, help="directory for counterexample files")
    parser.add_argument("--replay", default=None, metavar="FILE", help="replay a counterexample file; exit 1 if still stale")
    parser.add_argument("--probe", action="store_true", help="the hooks as shipped: each read served only after its probe")
    args = parser.parse_args(argv)
    if args.replay is not None:
        with hunt_environment():
            checks = replay(json.loads(pathlib.Path(args.replay).read_text()))
        for check in checks:
            print(("fresh " if check.held else "STALE ") + f"{check.command!r}: served {check.served!r}, a run shows {check.expected!r}")
        return 0 if all(check.held for check in checks) else 1
    report = run_hook_hunt(args.profile, args.seed, max_examples=args.max_examples, out_dir=args.out, probe=args.probe)
    print(f"{report.examples} runs, {report.steps} tool calls, {report.reuses} reuses checked, "
          f"{report.seconds:.1f} s, seed {report.seed}")
    for (violation, _), path in zip(report.violations, report.files or (None,) * len(report.violations)):
        print(f"{violation.property} at call {violation.step}: {violation.command!r} served {violation.served}, "
              f"a run shows {violation.expected}" + (f"; written to {path}" if path else ""))
    return 1 if report.violations else 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
