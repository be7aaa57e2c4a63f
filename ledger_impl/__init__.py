"""Ledger's optimized implementation: classifier, edit detectors, indexed ledger, Runtime, CLI."""

from ledger_spec import Changes, Policy

from .classifier import classify
from .detectors import EventDetector, RulesDetector, SnapshotDetector, default_detector
from .runtime import Runtime, Step
from .session import Decision, DurableSession

__all__ = [
    "Changes",
    "Decision",
    "DurableSession",
    "EventDetector",
    "Policy",
    "RulesDetector",
    "Runtime",
    "SnapshotDetector",
    "Step",
    "classify",
    "default_detector",
]
