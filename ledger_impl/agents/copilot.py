"""GitHub Copilot CLI: only the economizer's tool mask so far; Ledger has no hook adapter for it
yet (`hooks` is None), so `ledger hook` and `ledger hooks install` do not offer it."""

from __future__ import annotations

from collections.abc import Sequence

from .spec import Agent


def tool_mask(names: Sequence[str]) -> str:
    """`--excluded-tools A,B`: its deny option would still bill every tool's schema."""
    return f"--excluded-tools {','.join(names)}" if names else ""


AGENT = Agent(name="copilot", tool_mask=tool_mask)
