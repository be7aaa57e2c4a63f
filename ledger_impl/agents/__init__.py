"""The agents Ledger plugs into: one module per agent, each exporting one `spec.Agent` as `AGENT`.

`AGENTS` maps each agent's name to its record, in name order; `HOOKED` holds those whose tool
calls Ledger governs through hooks. The modules are found, not listed: a module of this package
that defines `AGENT` is an agent (its `name` must be the module's name), so adding one is
adding its module (see CONTRIBUTING.md). The protocol every record follows is `spec.py`.
"""

from __future__ import annotations

import importlib
import pkgutil
import types
from collections.abc import Mapping

from .spec import Agent, Hooks


def _discovered() -> dict[str, Agent]:
    found: dict[str, Agent] = {}
    for module in sorted(info.name for info in pkgutil.iter_modules(__path__)):
        agent = getattr(importlib.import_module(f"{__name__}.{module}"), "AGENT", None)
        if agent is None:
            continue
        if not isinstance(agent, Agent) or agent.name != module:
            raise TypeError(f"{__name__}.{module}.AGENT must be a spec.Agent named {module!r}")
        found[module] = agent
    return found


AGENTS: Mapping[str, Agent] = types.MappingProxyType(_discovered())
#: The agents with a hook protocol, name -> their hooks.
HOOKED: Mapping[str, Hooks] = types.MappingProxyType(
    {name: agent.hooks for name, agent in AGENTS.items() if agent.hooks is not None})
