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


#: Tables keyed by agent names that are allowed outside the agents' modules, by file and name.
#: The hook hunt's `SIMULATED` is a deliberately independent judge: it plays each agent from
#: what the agent's documentation and the real CLI showed, not from the plugin records, so that
#: a plugin's mistake is not repeated by the test that should catch it.
NAME_KEYED_TABLES_ALLOWED: dict[pathlib.Path, frozenset[str]] = {
    pathlib.Path("properties", "hook_hunt.py"): frozenset({"SIMULATED"}),
}


def agent_name_tests(root: pathlib.Path, names: frozenset[str]) -> list[str]:
    """Every comparison with an agent's name (`agent == "claude"`, `harness != "codex"`,
    `x in ("claude", ...)`, `case "claude":`), as "path:line compares with 'NAME'", and every
    dict or set literal holding one (`{"claude": ...}[agent]`, the same branch spelled as a
    table), as "path:line keys a table with 'NAME'", outside that agent's own plugin module
    `ledger_impl/agents/NAME.py` (tables: and outside `NAME_KEYED_TABLES_ALLOWED`)."""
    found = []
    for package in AGENT_BLIND:
        for path in sorted((root / package_layout.folder(package)).rglob("*.py")):
            relative = path.relative_to(root)
            tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
            allowed = _allowed_tables(tree, NAME_KEYED_TABLES_ALLOWED.get(relative, frozenset()))
            for node in ast.walk(tree):
                own = pathlib.Path("ledger_impl", "agents")
                for name in sorted(_compared_names(node) & names):
                    if relative != own / f"{name}.py":
                        found.append(f"{relative}:{node.lineno} compares with {name!r}")
                for name in sorted(set() if node in allowed else _table_keys(node) & names):
                    if relative != own / f"{name}.py":
                        found.append(f"{relative}:{node.lineno} keys a table with {name!r}")
    return found


def _table_keys(node: ast.AST) -> set[str]:
    """The string constants a dict literal has as keys, or a set literal as members."""
    if isinstance(node, ast.Dict):
        return _strings([key for key in node.keys if key is not None])
    return _strings(node.elts) if isinstance(node, ast.Set) else set()


def _allowed_tables(tree: ast.Module, targets: frozenset[str]) -> set[ast.AST]:
    """The values assigned to the module-level names `targets`."""
    allowed: set[ast.AST] = set()
    for statement in tree.body:
        if isinstance(statement, ast.Assign):
            named = {target.id for target in statement.targets if isinstance(target, ast.Name)}
        elif isinstance(statement, ast.AnnAssign) and isinstance(statement.target, ast.Name):
            named = {statement.target.id}
        else:
            continue
        if named & targets and statement.value is not None:
            allowed.add(statement.value)
    return allowed


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


def planted_tree(root: pathlib.Path) -> None:
    """Empty folders of the agent-blind packages, and the agents' package, under `root`."""
    for package in AGENT_BLIND:
        (root / package_layout.folder(package)).mkdir()
    (root / "ledger_impl" / "agents").mkdir()


def test_an_agent_name_test_is_reported(tmp_path: pathlib.Path) -> None:
    """The check itself can fail: each spelling of a branch on an agent's name is found outside
    the agent's module, and the same comparison inside it is not."""
    planted_tree(tmp_path)
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


def test_a_table_keyed_by_agent_names_is_reported(tmp_path: pathlib.Path) -> None:
    """The check itself can fail: a dict or set literal holding agent names outside their
    modules is a per-agent branch in another spelling (`{"claude": ...}[agent]`), and is found;
    only the hook hunt's `SIMULATED`, by that name and in that file, is exempt."""
    planted_tree(tmp_path)
    (tmp_path / "ledger_cli" / "tables.py").write_text(
        'PATHS = {"claude": ".claude", "other": "x"}\n'
        'QUIET = frozenset({"codex"})\n'
        'def f(agent):\n'
        '    return {"codex": 1}.get(agent)\n')
    (tmp_path / "properties" / "hook_hunt.py").write_text(
        'SIMULATED: dict = {"claude": 1, "codex": 2}\n'
        'OTHER = {"claude": 1}\n')
    (tmp_path / "ledger_impl" / "agents" / "claude.py").write_text('OWN = {"claude": 1}\nTHEIRS = {"codex"}\n')
    found = agent_name_tests(tmp_path, frozenset({"claude", "codex"}))
    assert sorted(found) == [
        "ledger_cli/tables.py:1 keys a table with 'claude'",
        "ledger_cli/tables.py:2 keys a table with 'codex'",
        "ledger_cli/tables.py:4 keys a table with 'codex'",
        "ledger_impl/agents/claude.py:2 keys a table with 'codex'",
        "properties/hook_hunt.py:2 keys a table with 'claude'",
    ]
