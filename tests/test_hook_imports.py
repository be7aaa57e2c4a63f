"""`ledger hook` loads only what a hook call uses.

An agent starts a fresh `ledger hook` process around every tool call, so every module it imports
is paid for at every call. A whole PreToolUse and PostToolUse are run in a child interpreter
(the test's own imports would hide the answer) and the modules it ended up with are checked.
"""

from __future__ import annotations

import json
import pathlib
import subprocess
import sys

# Heavy, and not needed to decide or record a call: the proof and hunt machinery, the pretty
# printer, the inotify detector (ctypes) and the in-process Runtime.
FORBIDDEN = (
    "z3", "hypothesis", "rich", "crosshair", "ledger_properties", "inotify_simple", "ctypes",
    "ledger_impl.runtime", "ledger_impl.detectors.events", "ledger_impl.detectors.rules",
)

CHILD = """
import io, json, sys
from ledger_cli.main import main
root, state, out = sys.argv[1:4]
for payload in (
    {"hook_event_name": "PreToolUse", "tool_name": "Bash", "tool_input": {"command": "cat a.txt"},
     "tool_use_id": "t1", "cwd": root},
    {"hook_event_name": "PostToolUse", "tool_name": "Bash", "tool_input": {"command": "cat a.txt"},
     "tool_use_id": "t1", "cwd": root, "tool_response": {"stdout": "x", "stderr": "", "interrupted": False}},
):
    sys.stdin = io.StringIO(json.dumps(payload))
    main(["hook", "claude", "--root", root, "--state-dir", state])
with open(out, "w") as handle:
    json.dump(sorted(sys.modules), handle)
"""


def loaded_by_hook(tmp_path: pathlib.Path) -> set[str]:
    root, state, out = tmp_path / "work", tmp_path / "state", tmp_path / "modules.json"
    root.mkdir()
    (root / "a.txt").write_text("x\n")
    done = subprocess.run(
        [sys.executable, "-c", CHILD, str(root), str(state), str(out)], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert "internal error" not in done.stdout + done.stderr, done.stdout + done.stderr
    assert (state).exists(), "the hook never opened its session: the check would prove nothing"
    return set(json.loads(out.read_text()))


def test_a_hook_call_imports_nothing_heavy(tmp_path: pathlib.Path) -> None:
    modules = loaded_by_hook(tmp_path)
    assert "ledger_impl.session" in modules  # the path under test really ran
    heavy = sorted(m for m in modules if any(m == f or m.startswith(f + ".") for f in FORBIDDEN))
    assert heavy == []


def test_the_public_names_still_load_on_use() -> None:
    """The lazy package keeps `from ledger_impl import X` working for every exported name."""
    import ledger_impl
    import ledger_impl.detectors

    for name in ledger_impl.__all__:
        assert getattr(ledger_impl, name) is not None, name
    for name in ledger_impl.detectors.__all__:
        assert callable(getattr(ledger_impl.detectors, name)), name
