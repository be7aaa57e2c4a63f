"""Subcommands of the `ledger` CLI, one module each."""
