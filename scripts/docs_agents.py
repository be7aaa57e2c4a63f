"""The table of registered agent plugins, rendered from `ledger_impl.agents` (so a new agent
module appears in the docs when `scripts/docs_generate.py` runs)."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from ledger_impl.agents import AGENTS  # noqa: E402
from ledger_impl.agents.spec import Hooks  # noqa: E402


def _code(names: tuple[str, ...] | list[str]) -> str:
    return ", ".join(f"`{name}`" for name in names)


def _matched(matcher: str | None, governed: tuple[str, ...]) -> str:
    if matcher is None:
        return ""
    alternatives = "|".join(governed)
    if matcher in (alternatives, f"^({alternatives})$"):  # as a list, or as an anchored regular expression
        return " (governed tools)"
    return " (matcher `{}`)".format(matcher.replace("|", "\\|"))  # a bare | would end the table cell


def _hook_cells(hooks: Hooks) -> list[str]:
    tools = hooks.tools
    roles = [f"{role}: {_code(names)}" for role, names in (
        ("shell", tools.shell), ("file read", tools.file_read), ("file write", tools.file_write),
        ("patch", tools.patch)) if names]
    events = [f"`{event}`" + _matched(matcher, tools.governed) + (" over HTTP" if event in hooks.http_events else "")
              for event, matcher in hooks.events.items()]
    settings = hooks.settings
    files = [f"project `{settings.project}`", f"user `{settings.user_shown}`"]
    if settings.local is not None:
        files.append(f"local `{settings.local}`")
    return ["; ".join(roles), ", ".join(events), ", ".join(files),
            f"`${hooks.project_dir_variable}`" if hooks.project_dir_variable else "the payload's `cwd`",
            f"{hooks.timeout_s} s" if hooks.timeout_s is not None else "the agent's default",
            _code(hooks.reuse_answers)]


def render() -> str:
    """The Markdown table, one row per registered agent, no trailing newline."""
    lines = ["| agent | governed tools | hook events | settings files | project directory | hook timeout "
             "| Reuse answers | tool mask |",
             "|---|---|---|---|---|---|---|---|"]
    for name, agent in AGENTS.items():
        cells = _hook_cells(agent.hooks) if agent.hooks is not None else ["no hooks yet", "", "", "", "", ""]
        mask = agent.tool_mask(["A", "B"]).replace("\n", " ")
        lines.append("| " + " | ".join([f"`{name}`", *cells, f"`{mask}`"]) + " |")
    return "\n".join(lines)
