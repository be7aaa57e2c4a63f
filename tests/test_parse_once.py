"""One step parses its command's text once (issue 20's one engine): the classifier, the
fingerprint before the decision and after the run, and the detector's reading of the text all
get the same Script, and a refused text is refused the same way every time."""

from __future__ import annotations

from pathlib import Path

import pytest

from ledger_impl import Runtime, shell
from ledger_impl.detectors import RulesDetector


@pytest.fixture
def parses(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    seen: list[str] = []
    parse = shell._parse

    def counted(text: str) -> shell.Script:
        seen.append(text)
        return parse(text)

    monkeypatch.setattr(shell, "_parse", counted)
    monkeypatch.setattr(shell, "_PARSED", {})
    return seen


@pytest.fixture
def root(tmp_path: Path) -> Path:
    (tmp_path / "a.txt").write_text("alpha\nbeta\n")
    return tmp_path


@pytest.mark.parametrize("command", ["sed -n '1,2p' a.txt", "X=1; wc -l a.txt", "echo more >> a.txt"])
def test_a_step_parses_its_text_once(root: Path, parses: list[str], command: str) -> None:
    # The rules detector parses the text too: it must be answered from the same parse.
    with Runtime(root, detector=RulesDetector(), probe=False) as runtime:
        runtime.step(command)
        runtime.step(command)
    assert parses.count(command) == 1, parses


def test_the_same_text_gives_the_same_script_and_a_refusal_is_kept(parses: list[str]) -> None:
    assert shell.parse("cat a.txt") is shell.parse("cat a.txt")
    for _ in range(2):
        with pytest.raises(shell.ShellSyntaxError, match="syntax error"):
            shell.parse("cat 'a.txt")
    assert parses == ["cat a.txt", "cat 'a.txt"]


def test_the_memory_of_parsed_texts_is_bounded(parses: list[str]) -> None:
    for index in range(shell._PARSED_LIMIT + 1):
        shell.parse(f"cat f{index}")
    assert len(shell._PARSED) <= shell._PARSED_LIMIT
    shell.parse("cat f0")
    assert parses.count("cat f0") == 2, "an old text is parsed again once forgotten"
