"""Ledger's optimized implementation: classifier, edit detectors, indexed ledger, Runtime, CLI.

The names below are loaded on first use (PEP 562), not when the package is imported: an agent
runs `ledger hook` as a fresh process around every tool call, and that path needs the session
but not the Runtime, the inotify detector or the rules detector (see `tests/test_hook_imports.py`).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # for type checkers and readers; at run time `__getattr__` loads them
    from ledger_spec import Changes, Policy

    from .classifier import classify
    from .detectors import EventDetector, RulesDetector, SnapshotDetector, default_detector
    from .runtime import Runtime, Step
    from .session import Decision, DurableSession

# Public name -> the module that defines it.
_EXPORTS: dict[str, str] = {
    "Changes": "ledger_spec",
    "Policy": "ledger_spec",
    "classify": "ledger_impl.classifier",
    "EventDetector": "ledger_impl.detectors",
    "RulesDetector": "ledger_impl.detectors",
    "SnapshotDetector": "ledger_impl.detectors",
    "default_detector": "ledger_impl.detectors",
    "Runtime": "ledger_impl.runtime",
    "Step": "ledger_impl.runtime",
    "Decision": "ledger_impl.session",
    "DurableSession": "ledger_impl.session",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'ledger_impl' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # later lookups skip this function
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS))
