"""pytest plugin loaded by `scripts/mutation.py` for every mutant's test run (`-p`).

A mutant's verdict must not depend on luck or on what earlier mutants left behind, so Hypothesis
runs without its example database, from a fixed seed (`--hypothesis-seed=0`, passed by
`scripts/mutation.py`; not `derandomize`, which would override the seeds some tests choose
themselves and make them search elsewhere than they were written for), and without its timing
checks: on a shared machine a slow run is not a failing run, and a deadline or
`too_slow` error would count a mutant as killed by the clock rather than by a test.
"""

from __future__ import annotations

from hypothesis import HealthCheck, settings

settings.register_profile(
    "mutation",
    database=None,
    deadline=None,
    print_blob=False,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.load_profile("mutation")
