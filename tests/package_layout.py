"""Which import name each project folder is installed under, read from pyproject.toml.

The folders are the layout's names; the install maps `properties/` to `ledger_properties`
(`[tool.setuptools] package-dir`). Tests that walk the source tree and turn files into module
names ask here, so the mapping is written once, where the build reads it.
"""

from __future__ import annotations

import pathlib
import tomllib

ROOT = pathlib.Path(__file__).resolve().parent.parent
_SETUPTOOLS = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"]

#: Import name -> the folder (relative to the repository) it is installed from, for renamed ones.
RENAMED: dict[str, str] = dict(_SETUPTOOLS.get("package-dir", {}))

#: Every package the distribution installs, by import name.
INSTALLED: tuple[str, ...] = tuple(_SETUPTOOLS["packages"])


def folder(package: str) -> str:
    """The repository folder of a top-level package given by its import name."""
    return RENAMED.get(package, package)


def import_name(folder_name: str) -> str:
    """The import name of a top-level folder of the repository."""
    return {source: name for name, source in RENAMED.items()}.get(folder_name, folder_name)


def module_name(path: pathlib.Path, root: pathlib.Path = ROOT) -> str:
    """The dotted name a source file is imported under once installed."""
    top, *rest = path.relative_to(root).with_suffix("").parts
    return ".".join([import_name(top), *rest]).removesuffix(".__init__")
