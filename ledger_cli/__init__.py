"""The `ledger` command line: the top layer, which may import the harness, the implementation and the spec."""
