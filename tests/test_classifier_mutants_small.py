"""Classifier cases that kill the surviving mutants of its small modules (issue 13).

Each test names the mutation it was written for in `mutation-survivors.md`: the streams, table,
programs, git, search, listing, awk and hazards modules. A mutant there that classifies a writer
or a clock reader as a read, or puts a read in the wrong view, would make a stale Reuse possible.
"""

from __future__ import annotations

import os
import pathlib
import subprocess

import pytest

from ledger_impl import classify
from ledger_spec import Category, FileTarget, TreeTarget

ROOT = "/testbed"  # lexical classification: the directory need not exist


def c(command: str, cwd: str = "."):
    return classify(command, cwd=cwd, root=ROOT)


def _tree(root: pathlib.Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() if p.is_file() else b"" for p in sorted(root.rglob("*"))}


def _run_changes_the_tree(command: str, root: pathlib.Path) -> bool:
    """Run `command` with bash in `root` (a temporary directory) and say whether any file changed."""
    (root / "a.py").write_text("b\na\na\nc\n")
    (root / "b.py").write_text("x\n")
    before = _tree(root)
    subprocess.run(["bash", "-c", command], cwd=root, capture_output=True, timeout=30,
                   env={**os.environ, "GIT_CONFIG_GLOBAL": "/dev/null", "GIT_CONFIG_NOSYSTEM": "1"})
    return _tree(root) != before


# --- streams.py ---------------------------------------------------------------------------------


@pytest.mark.parametrize("command", ["uniq -c a.py", "tac a.py", "cat a.py | tac", "cat a.py | tr a-z A-Z",
                                     "cat a.py | tr -d a"])
def test_stream_tools_on_one_input_are_reads_that_change_nothing(command, tmp_path):
    # Issue 13 (mutation run of streams.py): `uniq` with one operand, tac and tr were never
    # classified; the mutants made them `edit` or `run` (reuse lost).
    result = classify(command, root=tmp_path)
    assert result.read_only and result.target is not None, result
    assert not _run_changes_the_tree(command, tmp_path)


@pytest.mark.parametrize("command", ["uniq a.py out.txt", "uniq -c a.py out.txt"])
def test_uniq_with_an_output_operand_writes_and_is_an_edit(command, tmp_path):
    assert c(command).category is Category.EDIT
    assert _run_changes_the_tree(command, tmp_path)


@pytest.mark.parametrize("command", ["uniq a.py b.py c.py", "cat a.py | tr --no-such-option a b", "tac -s x a.py",
                                     "cat a.py | tac --separator=x"])
def test_stream_tool_forms_the_parsers_do_not_know_are_not_reads(command):
    # `uniq IN OUT EXTRA` is refused by uniq, but the classifier does not model the refusal: any
    # second operand keeps it an edit. tr and tac accept no option their parsers do not list.
    result = c(command)
    assert not result.read_only and result.target is None, result
