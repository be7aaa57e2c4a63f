"""Reading trajectories: every supported format, auto-detected, with skipped steps and their reasons."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ledger_properties.audit import formats
from ledger_properties.audit.filter import certain_escape, skip_reason, to_command
from ledger_properties.audit.formats import FileEdit, FileRead, FileWrite, InputError, Shell, Skipped


def _write(path: Path, lines: list[object]) -> Path:
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


def test_mini_swe_agent_1x_text_blocks(tmp_path: Path) -> None:
    document = {
        "trajectory_format": "mini-swe-agent-1",
        "instance_id": "demo__demo-1",
        "messages": [
            {"role": "system", "content": "You are..."},
            {"role": "user", "content": "Fix the bug"},
            {"role": "assistant", "content": "THOUGHT: look\n\n```bash\ncat a.py\n```"},
            {"role": "user", "content": "<returncode>0</returncode>"},
            {"role": "assistant", "content": "two blocks\n```bash\nls\n```\n```bash\npwd\n```"},
            {"role": "assistant", "content": "```bash\ngrep -n x a.py | head\n```"},
        ],
    }
    path = tmp_path / "demo.traj.json"
    path.write_text(json.dumps(document))
    [trajectory] = formats.load(path)
    assert trajectory.format == formats.MINI_SWE_AGENT_1
    assert trajectory.instance_id == "demo__demo-1"
    assert trajectory.items == (
        Shell(0, "cat a.py"),
        Skipped(1, trajectory.items[1].text, "format error: 2 bash blocks, not executed"),  # type: ignore[union-attr]
        Shell(2, "grep -n x a.py | head"),
    )


def test_a_bare_message_list_is_read_by_its_fences(tmp_path: Path) -> None:
    messages = [
        {"role": "system", "content": "answer with one block"},
        {"role": "assistant", "content": "THOUGHT\n```mswea_bash_command\nls src\n```"},
        {"role": "user", "content": "<returncode>0</returncode>"},
    ]
    path = tmp_path / "run.traj.json"
    path.write_text(json.dumps(messages, indent=2))
    [trajectory] = formats.load(path)
    assert trajectory.format == formats.MINI_SWE_AGENT_2 and trajectory.items == (Shell(0, "ls src"),)
    messages[1]["content"] = "```bash\nls src\n```"
    path.write_text(json.dumps(messages, indent=2))
    assert formats.load(path)[0].format == formats.MINI_SWE_AGENT_1


def test_mini_swe_agent_2x_tool_calls_and_actions(tmp_path: Path) -> None:
    document = {
        "trajectory_format": "mini-swe-agent-1.1",
        "info": {"mini_version": "2.0.0"},
        "messages": [
            {"role": "assistant", "content": None, "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "bash", "arguments": json.dumps({"command": "ls -la"})}},
                {"id": "c2", "type": "function", "function": {"name": "python", "arguments": "{}"}},
                {"id": "c3", "type": "function", "function": {"name": "bash", "arguments": "{not json"}},
            ]},
            {"role": "tool", "tool_call_id": "c1", "content": "..."},
            {"role": "assistant", "content": "```mswea_bash_command\nignored\n```", "extra": {"actions": [{"command": "cat b.py"}]}},
        ],
    }
    path = tmp_path / "x__y-2.traj.json"
    path.write_text(json.dumps(document))
    [trajectory] = formats.load(path)
    assert trajectory.format == formats.MINI_SWE_AGENT_2
    assert trajectory.instance_id == "x__y-2"  # from the file name when the document has none
    kinds = [(type(i).__name__, getattr(i, "command", getattr(i, "reason", None))) for i in trajectory.items]
    assert kinds == [
        ("Shell", "ls -la"),
        ("Skipped", "tool 'python' is not the bash tool"),
        ("Skipped", "tool-call arguments are not JSON (not executed)"),
        ("Shell", "cat b.py"),
    ]


def test_claude_code_transcript(tmp_path: Path) -> None:
    def assistant(*blocks: dict) -> dict:
        return {"type": "assistant", "cwd": "/home/me/proj", "sessionId": "s-1", "message": {"role": "assistant", "content": list(blocks)}}

    path = _write(tmp_path / "session.jsonl", [
        {"type": "user", "cwd": "/home/me/proj", "sessionId": "s-1", "message": {"role": "user", "content": "hi"}},
        assistant({"type": "text", "text": "Let me look"}, {"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": "git status"}}),
        assistant({"type": "tool_use", "id": "t2", "name": "Read", "input": {"file_path": "/home/me/proj/a.py", "offset": 10, "limit": 5}}),
        assistant({"type": "tool_use", "id": "t3", "name": "Edit", "input": {"file_path": "/home/me/proj/a.py", "old_string": "x", "new_string": "y"}}),
        assistant({"type": "tool_use", "id": "t4", "name": "Write", "input": {"file_path": "/home/me/proj/b.py", "content": "z"}}),
        assistant({"type": "tool_use", "id": "t5", "name": "WebFetch", "input": {"url": "https://example.com"}}),
    ])
    [trajectory] = formats.load(path)
    assert trajectory.format == formats.CLAUDE_CODE
    assert trajectory.recorded_root == "/home/me/proj" and trajectory.instance_id == "s-1"
    assert trajectory.items == (
        Shell(0, "git status"),
        FileRead(1, "/home/me/proj/a.py", 10, 5),
        FileEdit(2, "/home/me/proj/a.py", "x", "y", False),
        FileWrite(3, "/home/me/proj/b.py", "z"),
        Skipped(4, "WebFetch", "tool WebFetch is not replayed"),
    )


def test_claude_file_tools_become_commands_that_do_the_same(tmp_path: Path) -> None:
    import subprocess

    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "a.py").write_text("".join(f"{i} x\n" for i in range(1, 21)))
    read = to_command(FileRead(0, "/home/me/proj/a.py", 3, 2), "/home/me/proj", workspace)
    assert subprocess.run(["bash", "-c", read], capture_output=True, text=True).stdout == "3 x\n4 x\n"
    edit = to_command(FileEdit(1, "/home/me/proj/a.py", "\n7 x", "\n7 y"), "/home/me/proj", workspace)
    assert subprocess.run(["bash", "-c", edit], capture_output=True).returncode == 0
    assert "7 y\n" in (workspace / "a.py").read_text()
    ambiguous = to_command(FileEdit(2, "a.py", " x", " z"), "/home/me/proj", workspace)
    assert subprocess.run(["bash", "-c", ambiguous], capture_output=True).returncode == 1  # refused, as the tool does
    write = to_command(FileWrite(3, "b.py", "it's\nno newline"), "/home/me/proj", workspace)
    subprocess.run(["bash", "-c", write], check=True)
    assert (workspace / "b.py").read_text() == "it's\nno newline"


def test_plain_commands_and_corpus_lines(tmp_path: Path) -> None:
    [plain] = formats.load(_write(tmp_path / "cmds.jsonl", [{"command": "ls"}, {"command": "cat a"}]))
    assert plain.format == formats.COMMANDS and plain.items == (Shell(0, "ls"), Shell(1, "cat a"))
    corpus = formats.load(_write(tmp_path / "corpus.jsonl", [
        {"instance_id": "a__a-1", "task_repo": "a/a", "commands": ["ls", "pwd"]},
        {"instance_id": "b__b-2", "task_repo": "b/b", "commands": ["cat x"]},
    ]))
    assert [(t.format, t.instance_id, t.name, len(t.items)) for t in corpus] == [
        (formats.LEDGER_CORPUS, "a__a-1", "corpus.jsonl#1", 2), (formats.LEDGER_CORPUS, "b__b-2", "corpus.jsonl#2", 1)
    ]


def test_the_shared_corpus_reads(tmp_path: Path) -> None:
    found = [p / "shared" / "corpus" / "mini-swe-agent-gemini3pro.jsonl" for p in Path(__file__).resolve().parents]
    corpus = next((p for p in found if p.exists()), None)
    if corpus is None:
        pytest.skip("the shared corpus (../shared/corpus) is not on this machine")
    trajectories = formats.load(corpus)
    assert len(trajectories) == 322 and sum(len(t.items) for t in trajectories) == 11452


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ('{"command": "ls"}\n{"command": "cat', "truncated or invalid JSON"),
        ('{"messages": [{"role": "assistant", "content": "```bash\\nls', "truncated or invalid JSON"),
        ('{"hello": "world"}\n', "unknown format"),
        ('{"hello": "world"}', "unknown format"),
        ("", "empty file"),
        ("[1, 2]\n", "unknown format"),
        ("[\n  1,\n  2\n]\n", "unknown format"),
    ],
)
def test_bad_input_is_one_line(tmp_path: Path, content: str, message: str) -> None:
    path = tmp_path / "bad.json"
    path.write_text(content)
    with pytest.raises(InputError, match=message) as caught:
        formats.load(path)
    assert "\n" not in str(caught.value)


@pytest.mark.parametrize(
    ("command", "reason"),
    [
        ("cd /testbed && pip install -e .", "package install"),
        ("python -m pip install pytest -q", "package install"),
        ("python setup.py develop", "package install"),
        ("apt-get install -y vim", "package install"),
        ("curl -s https://example.com > page.html", "network"),
        ("git fetch origin", "network"),
        ("pkill -f python", "process control"),
        ("python3 -c \"open('/root/x', 'w')\"", "may write outside workspace"),
        ("cd ../../.. && touch x", "may write outside workspace"),
        ("rm -rf /", "may write outside workspace"),
        ("cat /testbed/pkg/mod.py", None),
        ("cat /usr/lib/os-release", None),
        ("sed -i 's/a/b/' /testbed/pkg/mod.py", None),
        ("cat > /testbed/fix.py << 'EOF'\nprint(1)\nEOF", None),
        ("python3 /tmp/script.py", None),
        ("cd /testbed && python reproduce.py 2>/dev/null", None),
    ],
)
def test_skip_reasons(tmp_path: Path, command: str, reason: str | None) -> None:
    workspace = tmp_path / "testbed"
    (workspace / "pkg").mkdir(parents=True)
    (workspace / "pkg" / "mod.py").write_text("a\n")
    item = Shell(0, command)
    assert skip_reason(item, to_command(item, "/testbed", workspace), workspace) == reason


def test_certain_escapes_are_named() -> None:
    assert certain_escape(Shell(3, "echo x > /etc/motd"), "/testbed") is not None
    assert "outside the workspace" in str(certain_escape(FileWrite(4, "/etc/passwd", "x"), "/home/me/proj"))
    assert certain_escape(Shell(5, "echo x > /testbed/a.txt 2>/dev/null"), "/testbed") is None
    assert certain_escape(Shell(6, "echo x > /tmp/a.txt"), "/testbed") is None
    assert certain_escape(FileWrite(7, "/home/me/proj/b.py", "x"), "/home/me/proj") is None
