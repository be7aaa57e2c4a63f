"""Ledger's optimized implementation: classifier, edit detectors, indexed ledger, Runtime, CLI."""
