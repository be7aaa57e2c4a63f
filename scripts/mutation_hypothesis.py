"""pytest plugin loaded by `scripts/mutation.py` for every mutant's test run (`-p`).

A mutant's verdict must not depend on luck or on what earlier mutants left behind, so Hypothesis
runs without its example database, from a fixed seed (`--hypothesis-seed=0`, passed by
`scripts/mutation.py`; not `derandomize`, which would override the seeds some tests choose
themselves and make them search elsewhere than they were written for), and without its timing
checks: on a shared machine a slow run is not a failing run, and a deadline or
`too_slow` error would count a mutant as killed by the clock rather than by a test.

cosmic-ray's exception operator rewrites `except OSError:` as `except CosmicRayTestingException:`
and leaves the name for the test run to define. Undefined, the clause raised NameError whenever
an exception reached it, so the mutant "failed" for a reason other than the handler no longer
catching what it should; it is defined here, as an exception no code raises. Processes a test
starts do not load this plugin: in them the name is still undefined.
"""

from __future__ import annotations

import builtins

from hypothesis import HealthCheck, settings


class CosmicRayTestingException(Exception):
    """What a mutated `except` clause catches instead: never raised."""


builtins.CosmicRayTestingException = CosmicRayTestingException  # type: ignore[attr-defined]

settings.register_profile(
    "mutation",
    database=None,
    deadline=None,
    print_blob=False,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.load_profile("mutation")
