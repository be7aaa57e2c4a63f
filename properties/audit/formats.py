"""Agent trajectories in the formats people have, read into one shape: a list of steps.

Formats, recognised from the content (never from the file name):

  mini-swe-agent-1     a mini-swe-agent 1.x `.traj.json`: the command is the one ```bash block
                       of an assistant message (a message with none or several was a format
                       error the agent never executed)
  mini-swe-agent-1.1   a 2.x `.traj.json`: `extra.actions` of each assistant message, or its
                       `tool_calls` to the `bash` tool
  ledger-corpus        JSONL, one trajectory per line with `instance_id` and `commands` (the
                       shape of `../shared/corpus/*.jsonl`)
  claude-code          a Claude Code session transcript (JSONL of `user`/`assistant` records):
                       Bash tool calls are commands; Read, Write, Edit and MultiEdit are file
                       operations; other tools are skipped. Claude's Bash keeps its working
                       directory between calls; audit starts each step at the root (as
                       mini-swe-agent does), so a bare `cd sub` then `ls` lists the root
  commands             JSONL of `{"command": ...}` lines

What a trajectory held but audit cannot replay is kept as a `Skipped` step with its reason.
Malformed input raises `InputError` with a one-line message naming the file and line.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any, Iterator, Union

import attrs
from ledger_spec.errors import InvalidInput

MINI_SWE_AGENT_1 = "mini-swe-agent-1"
MINI_SWE_AGENT_2 = "mini-swe-agent-1.1"
LEDGER_CORPUS = "ledger-corpus"
CLAUDE_CODE = "claude-code"
COMMANDS = "commands"
FORMATS: tuple[str, ...] = (MINI_SWE_AGENT_1, MINI_SWE_AGENT_2, LEDGER_CORPUS, CLAUDE_CODE, COMMANDS)

# SWE-bench images check the task's repository out here; mini-swe-agent runs every command there.
SWE_BENCH_ROOT = "/testbed"
# Claude Code's Read shows at most this many lines when no limit is given.
CLAUDE_READ_LIMIT = 2000

# 1.x: exactly one fenced bash block per response, else the response was a format error.
_BASH_BLOCK = re.compile(r"```(?:bash|mswea_bash_command)\s*\n(.*?)\n```", re.DOTALL)


class InputError(InvalidInput, ValueError):
    """A trajectory file that cannot be read; the message is one line, for the user."""


@attrs.frozen
class Shell:
    """A shell command, as the agent typed it."""

    index: int
    command: str


@attrs.frozen
class FileRead:
    """Claude Code's Read: lines `offset..offset+limit-1` of `path` (1-based)."""

    index: int
    path: str
    offset: int = 1
    limit: int = CLAUDE_READ_LIMIT


@attrs.frozen
class FileWrite:
    """Claude Code's Write: `path` gets exactly `content`."""

    index: int
    path: str
    content: str


@attrs.frozen
class FileEdit:
    """Claude Code's Edit: `old` replaced by `new` in `path` (once, or every occurrence)."""

    index: int
    path: str
    old: str
    new: str
    replace_all: bool = False


@attrs.frozen
class Skipped:
    """A step that is not replayed, and why."""

    index: int
    text: str
    reason: str


Item = Union[Shell, FileRead, FileWrite, FileEdit, Skipped]


@attrs.frozen
class Trajectory:
    """One agent run: its steps in order and the directory the agent worked in."""

    name: str  # file name, or `file#line` for a corpus line; unique within one audit
    instance_id: str | None
    format: str
    recorded_root: str  # the workspace's path when the agent ran (rewritten to the copy's)
    items: tuple[Item, ...]
    source: str  # the file it came from
    task_repo: str | None = None


def load(path: str | os.PathLike[str]) -> list[Trajectory]:
    """Every trajectory in `path`, whatever its format."""
    file = Path(path).absolute()
    try:
        text = file.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise InputError(f"{file}: cannot read ({error.__class__.__name__}: {error})") from None
    if not text.strip():
        raise InputError(f"{file}: empty file")
    document = _whole_json(text)
    if isinstance(document, dict) and isinstance(document.get("messages"), list):
        return [_mini_swe_agent(document, file)]
    if isinstance(document, list):
        # Early and test-data trajectories are the bare message list.
        if document and all(isinstance(m, dict) and "role" in m for m in document):
            return [_mini_swe_agent({"messages": document}, file)]
        raise InputError(f"{file}: unknown format (a JSON list that is not a list of chat messages)")
    records = list(_jsonl(text, file))
    first = records[0][1]
    if not isinstance(first, dict):
        raise InputError(f"{file}:{records[0][0]}: unknown format (a JSON line that is not an object)")
    if isinstance(first.get("commands"), list):
        return [_corpus_line(record, file, line) for line, record in records]
    if isinstance(first.get("command"), str):
        return [_commands(records, file)]
    if any(isinstance(r, dict) and r.get("type") in ("user", "assistant") and "message" in r for _, r in records):
        return [_claude_code(records, file)]
    raise InputError(f"{file}: unknown format (expected one of {', '.join(FORMATS)})")


def _whole_json(text: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return None  # maybe JSONL; a truncated document fails there with a line number


def _jsonl(text: str, file: Path) -> Iterator[tuple[int, Any]]:
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            yield number, json.loads(line)
        except json.JSONDecodeError as error:
            raise InputError(f"{file}:{number}: truncated or invalid JSON ({error.msg} at column {error.colno})") from None


def _text_of(content: Any) -> str:
    """Message content as text: a string, or the text parts of a multimodal list."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(str(part.get("text", "")) for part in content if isinstance(part, dict))
    return ""


def _mini_swe_agent(document: dict[str, Any], file: Path) -> Trajectory:
    declared = document.get("trajectory_format")
    items: list[Item] = []
    tool_calls_seen = False
    second_version_fence = False
    for message in document["messages"]:
        if not isinstance(message, dict) or message.get("role") != "assistant":
            continue
        extra = message.get("extra") if isinstance(message.get("extra"), dict) else {}
        actions = extra.get("actions")
        if isinstance(actions, list):
            for action in actions:
                command = action.get("command") if isinstance(action, dict) else None
                if isinstance(command, str):
                    items.append(Shell(len(items), command))
                else:
                    items.append(Skipped(len(items), json.dumps(action)[:200], "action without a command"))
            continue
        calls = message.get("tool_calls")
        if isinstance(calls, list) and calls:
            tool_calls_seen = True
            for call in calls:
                items.append(_tool_call(len(items), call))
            continue
        text = _text_of(message.get("content"))
        second_version_fence = second_version_fence or "```mswea_bash_command" in text
        blocks = _BASH_BLOCK.findall(text)
        if len(blocks) == 1:
            items.append(Shell(len(items), blocks[0].strip()))
        else:
            items.append(Skipped(len(items), _text_of(message.get("content"))[:200], f"format error: {len(blocks)} bash blocks, not executed"))
    if declared in (MINI_SWE_AGENT_1, MINI_SWE_AGENT_2):
        version = declared
    else:
        version = MINI_SWE_AGENT_2 if tool_calls_seen or second_version_fence else MINI_SWE_AGENT_1
    name = file.name
    instance = document.get("instance_id") or (document.get("info") or {}).get("instance_id")
    if not instance and name.endswith(".traj.json"):
        instance = name[: -len(".traj.json")]
    return Trajectory(name, str(instance) if instance else None, version, SWE_BENCH_ROOT, tuple(items), str(file))


def _tool_call(index: int, call: Any) -> Item:
    function = call.get("function") if isinstance(call, dict) else None
    if not isinstance(function, dict):
        return Skipped(index, str(call)[:200], "malformed tool call")
    if function.get("name") != "bash":
        return Skipped(index, str(function.get("name")), f"tool {function.get('name')!r} is not the bash tool")
    arguments = function.get("arguments")
    try:
        parsed = json.loads(arguments) if isinstance(arguments, str) else arguments
    except json.JSONDecodeError:
        return Skipped(index, str(arguments)[:200], "tool-call arguments are not JSON (not executed)")
    if not isinstance(parsed, dict) or not isinstance(parsed.get("command"), str):
        return Skipped(index, str(arguments)[:200], "tool call without a command (not executed)")
    return Shell(index, parsed["command"])


def _corpus_line(record: Any, file: Path, line: int) -> Trajectory:
    if not isinstance(record, dict) or not isinstance(record.get("commands"), list):
        raise InputError(f"{file}:{line}: a corpus line needs a `commands` list")
    items: list[Item] = []
    for index, command in enumerate(record["commands"]):
        items.append(Shell(index, command) if isinstance(command, str) else Skipped(index, repr(command)[:200], "not a string"))
    instance = record.get("instance_id")
    return Trajectory(
        f"{file.name}#{line}", str(instance) if instance else None, LEDGER_CORPUS, SWE_BENCH_ROOT, tuple(items), str(file),
        task_repo=record.get("task_repo"),
    )


def _commands(records: list[tuple[int, Any]], file: Path) -> Trajectory:
    items: list[Item] = []
    for line, record in records:
        if not isinstance(record, dict) or not isinstance(record.get("command"), str):
            raise InputError(f"{file}:{line}: expected {{\"command\": \"...\"}}")
        items.append(Shell(len(items), record["command"]))
    return Trajectory(file.name, None, COMMANDS, SWE_BENCH_ROOT, tuple(items), str(file))


def _claude_code(records: list[tuple[int, Any]], file: Path) -> Trajectory:
    items: list[Item] = []
    root: str | None = None
    session: str | None = None
    for _, record in records:
        if not isinstance(record, dict):
            continue
        root = root or record.get("cwd")
        session = session or record.get("sessionId")
        message = record.get("message")
        if record.get("type") != "assistant" or not isinstance(message, dict):
            continue
        content = message.get("content")
        for block in content if isinstance(content, list) else ():
            if isinstance(block, dict) and block.get("type") == "tool_use":
                items.extend(_claude_tool(len(items), block.get("name"), block.get("input") or {}))
    if root is None:
        raise InputError(f"{file}: a Claude Code transcript without a `cwd` (cannot tell its workspace)")
    return Trajectory(file.name, session, CLAUDE_CODE, root, tuple(items), str(file))


def _claude_tool(index: int, name: Any, given: Any) -> list[Item]:
    if not isinstance(given, dict):
        return [Skipped(index, str(name), "tool call without input")]
    try:
        if name == "Bash":
            if given.get("run_in_background"):
                return [Skipped(index, str(given.get("command"))[:200], "background Bash job")]
            return [Shell(index, str(given["command"]))]
        if name == "Read":
            offset = int(given.get("offset") or 1)
            return [FileRead(index, str(given["file_path"]), max(offset, 1), int(given.get("limit") or CLAUDE_READ_LIMIT))]
        if name == "Write":
            return [FileWrite(index, str(given["file_path"]), str(given["content"]))]
        if name == "Edit":
            return [FileEdit(index, str(given["file_path"]), str(given["old_string"]), str(given["new_string"]), bool(given.get("replace_all")))]
        if name == "MultiEdit":
            return [
                FileEdit(index + i, str(given["file_path"]), str(e["old_string"]), str(e["new_string"]), bool(e.get("replace_all")))
                for i, e in enumerate(given["edits"])
            ]
    except (KeyError, TypeError, ValueError) as error:
        return [Skipped(index, str(name), f"malformed {name} call ({error.__class__.__name__}: {error})")]
    return [Skipped(index, str(name), f"tool {name} is not replayed")]
