"""Dependencies run one way: CLI -> verification harness -> implementation -> spec.

Every import in every module is read from its syntax tree, function-local imports included,
so a cycle cannot hide behind a late import. A package may import its own layer or any layer
below it; an import of a higher layer fails this test with the module and line that made it.
"""

from __future__ import annotations

import ast
import pathlib

import package_layout
import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent

#: Lower number = lower layer, by import name. A module may import packages whose layer is <= its own.
LAYERS: dict[str, int] = {
    "ledger_spec": 0,
    "economizer_spec": 0,
    "ledger_impl": 1,
    "economizer": 1,
    "ledger_properties": 2,
    "ledger_cli": 3,
}


def imported_packages(path: pathlib.Path, root: pathlib.Path = ROOT) -> list[tuple[int, str]]:
    """The project packages a module imports, with the line of each import."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    package = package_layout.import_name(path.relative_to(root).parts[0])
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.extend((node.lineno, alias.name.split(".")[0]) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:  # relative imports stay inside the module's own package
                found.append((node.lineno, package))
            elif node.module:
                found.append((node.lineno, node.module.split(".")[0]))
    return [(line, name) for line, name in found if name in LAYERS]


def upward_edges(root: pathlib.Path = ROOT) -> list[str]:
    edges = []
    for package, layer in LAYERS.items():
        for path in sorted((root / package_layout.folder(package)).rglob("*.py")):
            for line, target in imported_packages(path, root):
                if LAYERS[target] > layer:
                    edges.append(f"{path.relative_to(root)}:{line} imports {target} (layer {LAYERS[target]} > {layer})")
    return edges


def test_every_import_points_down_the_layers() -> None:
    assert upward_edges() == []


def test_an_upward_import_is_reported(tmp_path: pathlib.Path) -> None:
    """The check itself can fail: a spec module reaching the CLI is found, even inside a function."""
    for package in LAYERS:
        (tmp_path / package_layout.folder(package)).mkdir()
        (tmp_path / package_layout.folder(package) / "__init__.py").write_text("")
    (tmp_path / "ledger_spec" / "sneaky.py").write_text("def f():\n    from ledger_cli import main\n")
    (tmp_path / "ledger_impl" / "fine.py").write_text("import ledger_spec\nfrom . import x\n")
    assert upward_edges(tmp_path) == ["ledger_spec/sneaky.py:2 imports ledger_cli (layer 3 > 0)"]


@pytest.mark.parametrize("package", sorted(LAYERS))
def test_each_layer_exists(package: str) -> None:
    assert (ROOT / package_layout.folder(package) / "__init__.py").is_file()
