"""Adapters that plug Ledger into an agent through its Python API (mini-swe-agent's environment).
Agents that call Ledger as a hook are plugins in `ledger_impl.agents`."""
