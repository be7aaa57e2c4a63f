"""Ledger's optimized implementation: classifier, edit detectors, indexed ledger, Runtime, CLI."""

from ledger_spec import Changes
from .classifier import classify
