"""Run CrossHair over the PEP 316 contracts (`pre:` / `post:` / `raises:` docstrings) of the spec.

CrossHair runs in a child process: it patches builtins while it searches, which must not leak
into the caller (a pytest session, or `ledger verify` about to run other checks).
"""

from __future__ import annotations

import subprocess
import sys
from typing import Sequence

# Modules and functions whose contracts CrossHair can explore symbolically within seconds.
# The transition functions in `state` and `view.render` take whole States; their contracts
# are checked by the Hypothesis properties instead, where generated sessions reach them.
# `policy` is named by function: CrossHair cannot build a Policy (its `Literal` field type).
CONTRACT_TARGETS: tuple[str, ...] = (
    "ledger_spec.lines",
    "ledger_spec.values",
    "ledger_spec.policy.matches_transient",
)


def check_contracts(
    per_condition_timeout: float = 2.0, targets: Sequence[str] = CONTRACT_TARGETS
) -> list[str]:
    """Every contract violation CrossHair finds in `targets`, one message each; empty if all hold.

    A CrossHair run that fails without naming a violation (it crashed, or a target does not
    import) is reported as a failure too, so a broken checker never reads as "all hold".
    """
    if per_condition_timeout <= 0:
        raise ValueError(f"per_condition_timeout must be positive, got {per_condition_timeout!r}")
    if not targets:
        raise ValueError("check_contracts needs at least one target")
    completed = subprocess.run(
        [
            sys.executable,
            "-m",
            "crosshair",
            "check",
            "--analysis_kind=PEP316",
            f"--per_condition_timeout={per_condition_timeout}",
            *targets,
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    failures = [line for line in completed.stdout.splitlines() if line.strip()]
    if completed.returncode != 0 and not failures:
        detail = completed.stderr.strip().splitlines()[-1:] or ["no output"]
        failures.append(f"crosshair exited with status {completed.returncode}: {detail[0]}")
    return failures
