"""Semantic mutants: plausible bugs written by hand, each a small patch, and the tests that kill them.

Operator mutation (`scripts/mutation.py`) flips one operator at a time; a semantic mutant is
the bug a developer could write: one input dropped from a fingerprint, one field fewer
compared, one hook field mis-read, one read-only rule widened, a cache keyed too coarsely. The
catalog (`catalog/catalog.toml` and one `NNN-name.patch` per mutant) is data; `runner` applies
each patch in a temporary copy of the tree and runs the tests the catalog names for it.
"""
