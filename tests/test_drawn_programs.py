"""The python programs the hunt's grammar draws (the `python-c` idiom, the tool script) really
edit their file. One that no longer ran (a syntax error, a missing import) would turn those
idioms into silent no-ops: the hunt would go on passing, with fewer edits behind it."""

from __future__ import annotations

import pathlib
import subprocess

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ledger_properties.oracle import hunt_environment
from ledger_properties.shell_strategies import RUN_TOOL_SCRIPT, WORDS, edit_commands, tool_scripts

# Every word once, so that whichever word a program replaces is there to be replaced.
BEFORE = "".join(f"{word} {index}\n" for index, word in enumerate(WORDS))
REPLACED = {BEFORE.replace(word, new) for word in WORDS for new in WORDS + tuple(w.upper() for w in WORDS)}


def _run(command: str, cwd: pathlib.Path) -> None:
    with hunt_environment():  # this interpreter's python3 first, as in a hunt
        done = subprocess.run(["bash", "-c", command], cwd=cwd, capture_output=True, text=True)
    assert done.returncode == 0, (command, done.stderr)


def _workspace(tmp_path_factory: pytest.TempPathFactory, existing: bool) -> pathlib.Path:
    root = tmp_path_factory.mktemp("ws")
    if existing:
        (root / "a.txt").write_text(BEFORE)
    return root


@settings(max_examples=12, deadline=None, database=None)
@given(data=st.data(), existing=st.booleans())
def test_the_python_c_idiom_replaces_a_word_or_creates_the_file(
    tmp_path_factory: pytest.TempPathFactory, data: st.DataObject, existing: bool
) -> None:
    root = _workspace(tmp_path_factory, existing)
    command = data.draw(edit_commands(pool=("a.txt",), idioms=("python-c",)))
    _run(command, root)
    after = (root / "a.txt").read_text()
    if existing:
        assert after in REPLACED
    else:
        assert after.split()[0] in WORDS, after  # the drawn text, "word N"


@settings(max_examples=12, deadline=None, database=None)
@given(data=st.data(), existing=st.booleans())
def test_the_tool_script_replaces_a_word_or_creates_the_file(
    tmp_path_factory: pytest.TempPathFactory, data: st.DataObject, existing: bool
) -> None:
    root = _workspace(tmp_path_factory, existing)
    _run(data.draw(tool_scripts(pool=("a.txt",))), root)
    _run(RUN_TOOL_SCRIPT, root)
    after = (root / "a.txt").read_text()
    assert after in REPLACED if existing else after == "created\n"
