"""`Workspace`, the one model of where a path word lands, asked directly: both readers of
command text (the classifier and the rules detector) trust its answers for keys and for what
lies outside the root, so each answer is checked on disk and lexically (no root on disk)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from ledger_impl.shell import Word
from ledger_impl.workspace import Workspace


def static(text: str) -> Word:
    return Word(segments=((text, False),))


def pattern(*parts: str) -> Word:
    """A word whose `*` are unquoted globs: `pattern("sub/", "*", ".txt")`."""
    return Word(segments=tuple((part, part == "*") for part in parts))


@pytest.fixture
def root(tmp_path: Path) -> Path:
    root = tmp_path / "root"
    (root / "sub").mkdir(parents=True)
    (root / "sub" / "a.txt").write_text("a\n")
    return root


def test_cd_needs_a_known_directory_and_a_target(root: Path) -> None:
    workspace = Workspace(root)
    assert workspace.cd(".", "sub") == "sub"
    assert workspace.cd(None, "sub") is None, "an unknown working directory stays unknown"
    assert workspace.cd("sub", "") is None, "`cd ''` is not followed"


def test_a_path_next_to_the_root_sharing_its_prefix_is_outside(root: Path) -> None:
    # `/x/root2` starts with `/x/root` as a string, and sorts after it, yet is outside.
    workspace = Workspace(root)
    sibling = str(root) + "2"
    assert workspace.relative(sibling) is None
    assert workspace.relative(os.path.join(sibling, "f")) is None
    assert workspace.relative(str(root)) == "."
    assert workspace.relative(str(root / "sub" / "a.txt")) == "sub/a.txt"


def test_relative_resolves_against_the_real_root_when_the_root_is_a_link(root: Path, tmp_path: Path) -> None:
    link = tmp_path / "link"
    link.symlink_to(root, target_is_directory=True)
    workspace = Workspace(link)
    # A resolved path names the real directory, not the link the session was opened with.
    assert workspace.relative(os.path.realpath(link / "sub" / "a.txt")) == "sub/a.txt"
    assert workspace.key(".", static("sub/a.txt")) == "sub/a.txt"


def test_relative_is_lexical_for_a_root_not_on_disk(tmp_path: Path) -> None:
    missing = tmp_path / "missing"
    workspace = Workspace(missing)
    assert workspace.real_root is None
    assert workspace.relative(str(missing / "sub" / "f")) == "sub/f"
    assert Workspace(None).relative(str(missing / "f")) is None


@pytest.mark.parametrize(
    "word",
    [
        Word(segments=(("a.txt", False),), dynamic=True, source="$F"),
        Word(segments=(("a.txt", False),), executes=True, source="$(f)"),
    ],
    ids=["dynamic", "executes"],
)
def test_a_word_whose_value_is_not_in_the_text_has_no_key(root: Path, word: Word) -> None:
    for workspace in (Workspace(root), Workspace(None)):
        assert workspace.key("sub", word) is None


def test_a_path_from_an_unknown_directory_has_no_key(root: Path) -> None:
    for workspace in (Workspace(root), Workspace(None)):
        assert workspace.key(None, static("a.txt")) is None
        assert workspace.key(".", static("")) is None


@pytest.mark.parametrize("on_disk", [True, False])
def test_a_pattern_is_keyed_by_its_literal_prefix(root: Path, on_disk: bool) -> None:
    workspace = Workspace(root if on_disk else None)
    assert workspace.key(".", pattern("sub/", "*", ".txt")) == "sub"
    assert workspace.key(".", pattern("sub/x", "*", "/deeper")) == "sub"
    # Everything after the first component holding a glob depends on the match.
    assert workspace.key(".", pattern("s", "*", "/a.txt")) == "."
    assert workspace.key("sub", pattern("*", ".txt")) == "sub"


def test_a_quoted_star_is_a_file_name_not_a_pattern(root: Path, tmp_path: Path) -> None:
    # `cat 'l*'` names the file `l*`; a link `lx` that leads outside does not matter to it.
    outside = tmp_path / "outside"
    outside.mkdir()
    (root / "lx").symlink_to(outside, target_is_directory=True)
    assert Workspace(root).key(".", static("l*")) == "l*"
    assert Workspace(root).key(".", pattern("l", "*")) is None, "an unquoted one can reach outside"
