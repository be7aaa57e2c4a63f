"""The mutation runner's mutations still apply to the code they break.

Each mutation is an exact source replacement; a refactor that moves or re-indents its line
makes it silently inapplicable, and the runner then reports a miss instead of a caught rule
(this happened to "five proposals per call" when the screening moved into its own function).
Running the mutations takes minutes; checking that each still applies takes milliseconds.
"""

from __future__ import annotations

import pytest

from ledger_properties.economizer_mutations import MUTATIONS, ROOT, Mutation


@pytest.mark.parametrize("mutation", MUTATIONS, ids=lambda m: m.name)
def test_every_mutation_applies_exactly_once(mutation: Mutation) -> None:
    source = (ROOT / mutation.path).read_text(encoding="utf-8")
    assert source.count(mutation.old) == 1
    assert mutation.new != mutation.old
    assert all((ROOT / test).is_file() for test in mutation.tests)
