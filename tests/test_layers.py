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


# --- agents are plugins: no code outside an agent's module tests for its name -------------------

#: The packages that must not branch on an agent's name (every layer, and the thin client).
AGENT_BLIND = (*LAYERS, "ledger_client")


def agent_name_tests(root: pathlib.Path, names: frozenset[str]) -> list[str]:
    """Every comparison with an agent's name (`agent == "claude"`, `harness != "codex"`,
    `x in ("claude", ...)`, `case "claude":`) outside that agent's own plugin module
    `ledger_impl/agents/NAME.py`, as "path:line compares with 'NAME'"."""
    found = []
    for package in AGENT_BLIND:
        for path in sorted((root / package_layout.folder(package)).rglob("*.py")):
            relative = path.relative_to(root)
            tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
            for node in ast.walk(tree):
                for name in sorted(_compared_names(node) & names):
                    if relative != pathlib.Path("ledger_impl", "agents", f"{name}.py"):
                        found.append(f"{relative}:{node.lineno} compares with {name!r}")
    return found


def _compared_names(node: ast.AST) -> set[str]:
    """The string constants `node` compares something with (==, !=, in, not in, case)."""
    if isinstance(node, ast.MatchValue):
        return _strings([node.value])
    if not isinstance(node, ast.Compare):
        return set()
    compared = set()
    for left, op, right in zip([node.left, *node.comparators], node.ops, node.comparators):
        if isinstance(op, (ast.Eq, ast.NotEq)):
            compared |= _strings([left, right])
        elif isinstance(op, (ast.In, ast.NotIn)) and isinstance(right, (ast.Tuple, ast.List, ast.Set)):
            compared |= _strings(right.elts)
    return compared


def _strings(nodes: list[ast.expr]) -> set[str]:
    return {n.value for n in nodes if isinstance(n, ast.Constant) and isinstance(n.value, str)}


def test_no_agent_name_is_tested_outside_its_plugin() -> None:
    from ledger_impl.agents import AGENTS

    assert agent_name_tests(ROOT, frozenset(AGENTS)) == []


def test_an_agent_name_test_is_reported(tmp_path: pathlib.Path) -> None:
    """The check itself can fail: each spelling of a branch on an agent's name is found outside
    the agent's module, and the same comparison inside it is not."""
    for package in AGENT_BLIND:
        (tmp_path / package_layout.folder(package)).mkdir()
    (tmp_path / "ledger_impl" / "agents").mkdir()
    (tmp_path / "ledger_cli" / "sneaky.py").write_text(
        'def f(agent, harness, x):\n'
        '    if agent == "claude":\n'
        '        return "codex" != harness\n'
        '    match x:\n'
        '        case "codex":\n'
        '            return x in ("other", "claude")\n'
        '    return agent == "bash"\n')
    (tmp_path / "ledger_impl" / "agents" / "claude.py").write_text('def f(agent):\n    return agent == "claude"\n')
    (tmp_path / "ledger_impl" / "agents" / "codex.py").write_text('def f(agent):\n    return agent == "claude"\n')
    assert sorted(agent_name_tests(tmp_path, frozenset({"claude", "codex"}))) == [
        "ledger_cli/sneaky.py:2 compares with 'claude'",
        "ledger_cli/sneaky.py:3 compares with 'codex'",
        "ledger_cli/sneaky.py:5 compares with 'codex'",
        "ledger_cli/sneaky.py:6 compares with 'claude'",
        "ledger_impl/agents/codex.py:2 compares with 'claude'",
    ]
