"""How hard the checks search: one named profile, chosen by flag or by LEDGER_PROFILE.

`ci` fits the CI budget (15 minutes for the whole suite on 2 cores), `dev` is a longer local
run, `thorough` is the hunt to run before trusting a detector. The number of hunt runs is
fixed by the profile whatever the number of `workers` sharing them (the CLI's default is
`default_workers()`, one per core).
"""

from __future__ import annotations

import os

import attrs

PROFILE_VARIABLE = "LEDGER_PROFILE"


@attrs.frozen
class Profile:
    name: str
    spec_examples: int
    """Examples per abstract property of the specification."""
    differential_examples: int
    """Sessions driven through the spec and the optimized ledger side by side."""
    hunt_examples: int
    """State-machine runs of the real-filesystem safety hunt."""
    hunt_steps: int
    """Most steps in one run of the hunt."""
    contract_timeout: float
    """CrossHair's per-condition timeout, in seconds."""
    hook_examples: int = 4
    """Runs of the hook-path hunt (each tool call is one or two `ledger hook` processes)."""
    hook_steps: int = 10
    """Most steps in one run of the hook-path hunt."""
    workers: int | None = 1
    """Processes sharing the hunt's runs; the CLI sets it from --workers (default: every core;
    with a scheduler, None: one task per thread of the cluster)."""
    scheduler: str | None = None
    """A Dask scheduler's address: the hunt's workers run as tasks there (see `dask_hunt`)."""
    database: str | None = None
    """The example database directory the hunt's workers share (default: a temporary one
    locally, beside Ledger's state on a cluster)."""


PROFILES: dict[str, Profile] = {
    "ci": Profile("ci", spec_examples=150, differential_examples=150, hunt_examples=40, hunt_steps=25, contract_timeout=2.0),
    "dev": Profile("dev", spec_examples=600, differential_examples=600, hunt_examples=200, hunt_steps=40, contract_timeout=4.0,
                   hook_examples=15, hook_steps=20),
    "thorough": Profile(
        "thorough", spec_examples=3000, differential_examples=3000, hunt_examples=1500, hunt_steps=60, contract_timeout=10.0,
        hook_examples=80, hook_steps=30,
    ),
}


def profile(name: str | None = None) -> Profile:
    """The profile called `name`, else the one LEDGER_PROFILE names, else `ci`."""
    chosen = name or os.environ.get(PROFILE_VARIABLE) or "ci"
    try:
        return PROFILES[chosen]
    except KeyError:
        raise ValueError(f"unknown profile {chosen!r}; choose one of {', '.join(PROFILES)}") from None


def default_workers() -> int:
    """The number of cores this process may run on: the CLI's default number of hunt workers."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - not Linux
        return max(1, os.cpu_count() or 1)
