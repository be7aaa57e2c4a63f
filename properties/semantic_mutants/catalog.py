"""The catalog: one entry per mutant in `catalog/catalog.toml`, its patch beside it."""

from __future__ import annotations

import ast
import hashlib
import subprocess
import tomllib
from pathlib import Path
from typing import Final

import attrs

CATALOG_DIR: Final = Path(__file__).resolve().parent / "catalog"
CATALOG_FILE: Final = CATALOG_DIR / "catalog.toml"
#: The kinds of bug the catalog draws from (issue 23); each entry names one.
KINDS: Final = frozenset(
    {
        "input dropped",  # something the answer depends on left out of a fingerprint or a list
        "field dropped",  # one field fewer compared or recorded
        "cache too coarse",  # a cache keyed by less than what its value depends on
        "rule widened",  # a read-only or reusable rule that admits one case too many
        "hook field",  # one field of an agent's hook payload mis-read
        "off by one",  # a boundary of a line range or a count moved by one
        "wrong source",  # a value read from the wrong place (environment, file, case)
        "check skipped",  # one guard or comparison left out
    }
)


@attrs.frozen
class Mutant:
    """One plausible bug: its patch (unified diff against the tree's root) and its killers."""

    id: str
    name: str
    kind: str
    description: str
    patch: Path
    tests: tuple[str, ...]
    equivalent: str | None = None
    """Why no test can tell the mutant from the code, when that is the catalog's claim."""

    @property
    def target(self) -> str:
        """The file the patch changes (its `+++ b/` line)."""
        for line in self.patch.read_text(encoding="utf-8").splitlines():
            if line.startswith("+++ b/"):
                return line[len("+++ b/") :]
        raise ValueError(f"{self.patch.name} names no file")


def load(path: Path = CATALOG_FILE) -> tuple[Mutant, ...]:
    """Every mutant in the catalog, in catalog order."""
    data = tomllib.loads(path.read_text(encoding="utf-8"))
    mutants = []
    for entry in data["mutant"]:
        mutants.append(
            Mutant(
                id=entry["id"],
                name=entry["name"],
                kind=entry["kind"],
                description=entry["description"],
                patch=path.parent / f"{entry['id']}-{entry['name']}.patch",
                tests=tuple(entry.get("tests", ())),
                equivalent=entry.get("equivalent"),
            )
        )
    return tuple(mutants)


def applies(mutant: Mutant, tree: Path, *, reverse: bool = False) -> str | None:
    """None if the patch applies cleanly to `tree` (checked only, nothing written), else
    git's complaint."""
    command = ["git", "apply", "--check", *(["-R"] if reverse else []), str(mutant.patch)]
    result = subprocess.run(command, cwd=tree, capture_output=True, text=True)
    return None if result.returncode == 0 else (result.stderr.strip() or f"git apply exited {result.returncode}")


def patch_digest(mutant: Mutant) -> str:
    """SHA-256 of the patch's bytes: a rewritten patch is another mutant, whatever its id."""
    return hashlib.sha256(mutant.patch.read_bytes()).hexdigest()


def tests_digest(mutant: Mutant, tree: Path) -> str:
    """SHA-256 of the source of every test the mutant names (with its decorators, so a changed
    parametrization counts), or of the whole file when a test names a file. Only the named
    tests: an edit elsewhere in a busy test file does not make the verdict stale."""
    digest = hashlib.sha256()
    for test in mutant.tests:
        file, _, name = test.partition("::")
        digest.update(test.encode() + b"\0")
        digest.update(_test_source(tree / file, name.split("[")[0]).encode() + b"\0")
    return digest.hexdigest()


def _test_source(path: Path, name: str) -> str:
    text = path.read_text(encoding="utf-8")
    if not name:
        return text
    for node in ast.parse(text).body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == name:
            first = min([node.lineno, *(decorator.lineno for decorator in node.decorator_list)])
            return "\n".join(text.splitlines()[first - 1 : node.end_lineno])
    raise LookupError(f"no test {name} in {path}")
