"""The agents Ledger plugs into: one module per agent, each exporting one `spec.Agent` as `AGENT`.

`AGENTS` maps each agent's name to its record, in name order; `HOOKED` holds those whose tool
calls Ledger governs through hooks. The modules are found, not listed: a module of this package
that defines `AGENT` is an agent (its `name` must be the module's name), so adding one is
adding its module (see CONTRIBUTING.md). The protocol every record follows is `spec.py`.
"""

from __future__ import annotations

import importlib
import pathlib
import types
from collections.abc import Mapping

from .spec import Agent, Hooks


def discover(package: str, directory: pathlib.Path) -> dict[str, Agent]:
    """The `AGENT` of every module `package.NAME` (a `NAME.py` in `directory`) that defines
    one, by name, in name order; TypeError for a record that is not an `Agent` named NAME."""
    found: dict[str, Agent] = {}
    # A directory listing, not pkgutil: a hook process pays for every module it imports.
    for module in sorted(path.stem for path in directory.glob("*.py") if not path.stem.startswith("_")):
        agent = getattr(importlib.import_module(f"{package}.{module}"), "AGENT", None)
        if agent is None:
            continue
        if not isinstance(agent, Agent) or agent.name != module:
            raise TypeError(f"{package}.{module}.AGENT must be a spec.Agent named {module!r}")
        found[module] = agent
    return found


AGENTS: Mapping[str, Agent] = types.MappingProxyType(discover(__name__, pathlib.Path(__file__).parent))
#: The agents with a hook protocol, name -> their hooks.
HOOKED: Mapping[str, Hooks] = types.MappingProxyType(
    {name: agent.hooks for name, agent in AGENTS.items() if agent.hooks is not None})
#: The agents whose plugins can answer a Reuse by reference (`spec.Hooks.reuse_answers`).
BY_REFERENCE: tuple[str, ...] = tuple(name for name, hooks in HOOKED.items() if "reference" in hooks.reuse_answers)
