"""What a distribution carries: its packages under names of its own, the version the CLI reports,
the licence, the changelog.

The harness folder `properties/` is installed as `ledger_properties` (pyproject.toml says why:
PyPI has a distribution called `properties`). A wheel is built from a copy of the sources, so
the build's `build/` and `*.egg-info` never land in the checkout.
"""

from __future__ import annotations

import ast
import importlib.metadata
import pathlib
import re
import shutil
import subprocess
import sys
import zipfile
from collections.abc import Iterator

import package_layout
import pytest

REPO = pathlib.Path(__file__).resolve().parent.parent
DISTRIBUTION = "ledger-runtime"
#: The import name that belongs to someone else on PyPI (https://pypi.org/project/properties/).
FOREIGN = "properties"
#: Where project code lives that could import the harness: the packages, and what runs from the checkout.
CODE_FOLDERS = tuple(package_layout.folder(name) for name in package_layout.INSTALLED if "." not in name) + (
    "tests", "scripts", "benchmarks", "examples")


def build_wheel(sources: pathlib.Path, out: pathlib.Path) -> pathlib.Path:
    """The wheel pip builds from `sources` (a copy of the checkout)."""
    done = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--no-index", "-q", "-w", str(out), str(sources)],
        capture_output=True, text=True, timeout=600,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    (wheel,) = out.glob("*.whl")
    return wheel


def copy_sources(destination: pathlib.Path) -> pathlib.Path:
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        shutil.copy2(REPO / name, destination / name)
    for top in {package_layout.folder(name.split(".")[0]) for name in package_layout.INSTALLED}:
        shutil.copytree(REPO / top, destination / top, ignore=ignore)
    return destination


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Iterator[zipfile.ZipFile]:
    sources = copy_sources(tmp_path_factory.mktemp("sources"))
    with zipfile.ZipFile(build_wheel(sources, tmp_path_factory.mktemp("dist"))) as archive:
        yield archive


def top_level_names(wheel: zipfile.ZipFile) -> set[str]:
    """The importable names the wheel's files sit under."""
    return {name.split("/")[0].removesuffix(".py") for name in wheel.namelist() if ".dist-info/" not in name}


def test_the_wheel_installs_no_top_level_properties(wheel: zipfile.ZipFile) -> None:
    """Installing Ledger must neither overwrite nor be shadowed by PyPI's `properties`."""
    assert FOREIGN not in top_level_names(wheel)
    assert "ledger_properties/hunt.py" in wheel.namelist()
    (top_level,) = [name for name in wheel.namelist() if name.endswith(".dist-info/top_level.txt")]
    declared = set(wheel.read(top_level).decode().split())
    assert declared == top_level_names(wheel) == {name.split(".")[0] for name in package_layout.INSTALLED}


def test_every_source_file_of_a_package_is_in_the_wheel(wheel: zipfile.ZipFile) -> None:
    """`packages` in pyproject.toml is an explicit list: a package folder left out of it would
    work from the checkout and be missing from a regular install."""
    expected = set()
    for top in {package_layout.folder(name.split(".")[0]) for name in package_layout.INSTALLED}:
        for path in (REPO / top).rglob("*"):
            if path.is_file() and "__pycache__" not in path.parts and path.suffix in {".py", ".patch", ".toml"}:
                module = package_layout.module_name(path.with_suffix(""), REPO).replace(".", "/")
                expected.add(module.removesuffix("/__init__") + ("/__init__" if path.stem == "__init__" else "")
                             + path.suffix)
    assert expected - set(wheel.namelist()) == set()


def foreign_imports(path: pathlib.Path, root: pathlib.Path = REPO) -> list[str]:
    """Where a module imports the harness by its folder name, or starts `python -m properties...`."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            names = [node.module]
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            names = re.findall(r"(?:^|-m\s+|\bimport\s+)(properties(?:\.\w+)+)", node.value)
        found.extend(f"{path.relative_to(root)}:{node.lineno} {name}" for name in names
                     if name.split(".")[0] == FOREIGN)
    return sorted(found, key=lambda hit: int(hit.split(":")[1].split()[0]))


def test_no_code_imports_the_harness_by_its_folder_name() -> None:
    """From the checkout `import properties` works (the folder is on sys.path), and after a
    regular install it finds PyPI's package or nothing: the whole project uses `ledger_properties`.
    (This file is left out: it spells the forbidden names to test the check.)"""
    found = [hit for folder in CODE_FOLDERS for path in sorted((REPO / folder).rglob("*.py"))
             if ".venv" not in path.parts and path != pathlib.Path(__file__).resolve() for hit in foreign_imports(path)]
    assert found == []


def test_a_folder_name_import_is_found(tmp_path: pathlib.Path) -> None:
    module = tmp_path / "probe.py"
    module.write_text('import json\nfrom properties.hunt import run_hunt\nARGV = ["python", "-m", "properties.replay"]\n'
                      'CHILD = "import properties.audit.worker"\nSPEC = "properties.parallel:WorkerDied"\n'
                      'import ledger_properties.hunt\nSCHEMA = {"properties": {}}\n')
    assert foreign_imports(module, tmp_path) == [
        "probe.py:2 properties.hunt", "probe.py:3 properties.replay", "probe.py:4 properties.audit.worker",
        "probe.py:5 properties.parallel"]


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
        # Keep a Changelog's order within a release: Added before Changed before Fixed.
        order = ["Added", "Changed", "Deprecated", "Removed", "Fixed", "Security"]
        assert [order.index(kind) for kind in kinds] == sorted(order.index(kind) for kind in kinds), section[:60]
