"""What a distribution carries besides code: the version the CLI reports, the licence, the changelog."""

from __future__ import annotations

import importlib.metadata
import pathlib
import re
import subprocess
import sys

REPO = pathlib.Path(__file__).resolve().parent.parent
DISTRIBUTION = "ledger-runtime"


def test_ledger_version_reports_the_installed_distribution() -> None:
    done = subprocess.run([sys.executable, "-m", "ledger_cli.main", "--version"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout == f"ledger {importlib.metadata.version(DISTRIBUTION)}\n"


def test_the_licence_is_the_one_pyproject_declares() -> None:
    declared = re.search(r'^license = \{ text = "(\w+)" \}', (REPO / "pyproject.toml").read_text(), re.M)
    assert declared and declared.group(1) == "MIT"
    text = (REPO / "LICENSE").read_text()
    assert text.startswith("MIT License\n") and "Copyright (c)" in text and "Ledger contributors" in text
    assert "WITHOUT WARRANTY OF ANY KIND" in text


def test_the_changelog_keeps_a_changelog_and_names_the_current_version() -> None:
    text = (REPO / "CHANGELOG.md").read_text()
    headings = re.findall(r"^## \[([^\]]+)\]", text, re.M)
    assert headings[0] == "Unreleased"
    assert importlib.metadata.version(DISTRIBUTION) in headings
    for section in re.split(r"^## ", text, flags=re.M)[1:]:
        kinds = re.findall(r"^### (\w+)", section, re.M)
        assert kinds and set(kinds) <= {"Added", "Changed", "Deprecated", "Removed", "Fixed", "Security"}, section[:60]
