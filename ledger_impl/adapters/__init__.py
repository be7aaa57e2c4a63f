"""Adapters that plug Ledger into agents it does not run itself (hook protocols, environments)."""
