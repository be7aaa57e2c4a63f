"""The conformal guard against the paper's kappa rule, over random orderings of a corpus.

For each seeded ordering, each repository's runs are shuffled and replayed as that
repository's stream through the implementation's guard (no-model defaults: a judge that never
says stuck, the template redirect), each run's stop point or budget computed from the passed
runs before it in that ordering. Per setting, repository and ordering it counts:

* passed runs, and those the guard could act on (a stop point or budget existed);
* false stops: passed runs the guard stopped;
* failed runs stopped, and the spend after the stop (the context-weighted estimate of
  `economizer_evaluation.cost_after`; a stop ends a run, so this spend is what it cuts);
* failed runs redirected (any intervention).

Why random orderings: the conformal bound holds when the passed runs' lengths are
exchangeable, which a uniformly random order makes true by construction, so the pooled
false-stop rate over many orderings estimates the quantity the bound is about. A single
chronological order is one draw of it.

A run's guard outcome depends only on the run and its budget, so it is memoized across
orderings: the evaluation is cheap however many orderings it replays.
"""

from __future__ import annotations

import hashlib
import os
import pathlib
import platform
import random
import statistics
import subprocess
from fractions import Fraction
from typing import Any, Mapping, Sequence

import attrs

from economizer.guard import Guard
from economizer.protocols import default_controllers
from economizer_spec import conformal
from economizer_spec.params import Params
from economizer_spec.trajectory import Trajectory

from .economizer_evaluation import cost_after, guard_outcome, load_streams, replay_stream


@attrs.frozen
class Setting:
    name: str
    params: Params

    @property
    def alpha(self) -> Fraction | None:
        return self.params.alpha if self.params.guard_rule == "conformal" else None


SETTINGS = (
    Setting("conformal alpha=0.05", Params(guard_rule="conformal", alpha=Fraction(1, 20))),
    Setting("conformal alpha=0.10", Params(guard_rule="conformal", alpha=Fraction(1, 10))),
    Setting("kappa=2.5 beta=0.2 (paper)", Params()),
    Setting("kappa=1.5 beta=0", Params(kappa=Fraction(3, 2), beta=Fraction(0))),
)

COUNTS = ("passed", "passed_actable", "false_stops", "failed", "failed_redirected", "failed_stopped")


class Outcomes:
    """(first intervention, stop) of a run under a budget, memoized per (setting, run, budget)."""

    def __init__(self) -> None:
        self._seen: dict[tuple[str, str, str, int | None], tuple[int | None, int | None]] = {}
        self._controllers = default_controllers()

    def __call__(self, setting: Setting, repository: str, trajectory: Trajectory, b: int | None) -> tuple[int | None, int | None]:
        key = (setting.name, repository, trajectory.task_id, b)
        if key not in self._seen:
            guard = Guard(setting.params, b, self._controllers.trace_judge, self._controllers.redirect_writer)
            self._seen[key] = guard_outcome(guard, trajectory.steps)
        return self._seen[key]


def replay(setting: Setting, repository: str, runs: Sequence[tuple[Trajectory, float]], outcomes: Outcomes) -> dict[str, float]:
    """One ordering of one repository's stream: the counts and the spend after stops."""
    figures: dict[str, float] = {name: 0 for name in COUNTS}
    figures["cost_after_stop"] = 0.0
    def outcome(trajectory: Trajectory, b: int | None) -> tuple[int | None, int | None]:
        return outcomes(setting, repository, trajectory, b)

    for trajectory, cost, b, first, stop in replay_stream(runs, setting.params, outcome):
        if trajectory.passed:
            figures["passed"] += 1
            figures["passed_actable"] += b is not None
            figures["false_stops"] += stop is not None
        else:
            figures["failed"] += 1
            figures["failed_redirected"] += first is not None
            figures["failed_stopped"] += stop is not None
            if stop is not None:
                figures["cost_after_stop"] += cost_after(trajectory, cost, stop)[1]
    return figures


def _spread(values: Sequence[float]) -> dict[str, float]:
    ordered = sorted(values)

    def at(q: float) -> float:  # nearest rank
        return ordered[max(0, min(len(ordered) - 1, round(q * (len(ordered) - 1))))]

    return {"mean": round(statistics.fmean(ordered), 4), "min": round(ordered[0], 4), "p5": round(at(0.05), 4),
            "p95": round(at(0.95), 4), "max": round(ordered[-1], 4)}


def summarize(per_ordering: Sequence[Mapping[str, float]], alpha: Fraction | None) -> dict[str, Any]:
    """Pooled rates over all orderings and the spread of each per-ordering figure."""
    totals = {key: sum(o[key] for o in per_ordering) for key in per_ordering[0]}
    actable = totals["passed_actable"]
    rates = [o["false_stops"] / o["passed_actable"] for o in per_ordering if o["passed_actable"]]
    summary: dict[str, Any] = {
        "orderings": len(per_ordering),
        "passed": per_ordering[0]["passed"],
        "failed": per_ordering[0]["failed"],
        "pooled_false_stop_rate": round(totals["false_stops"] / actable, 5) if actable else None,
        "pooled_false_stop_rate_all_passed": round(totals["false_stops"] / totals["passed"], 5) if totals["passed"] else None,
        "orderings_with_rate_above_alpha": sum(r > alpha for r in rates) if alpha is not None else None,
    }
    for key in ("passed_actable", "false_stops", "failed_redirected", "failed_stopped", "cost_after_stop"):
        summary[key] = _spread([o[key] for o in per_ordering])
    summary["false_stop_rate"] = _spread(rates) if rates else None
    return summary


def evaluate(corpus: pathlib.Path, orderings: int, seed: int) -> dict[str, Any]:
    streams = load_streams(corpus)
    outcomes = Outcomes()
    per: dict[str, dict[str, list[dict[str, float]]]] = {s.name: {r: [] for r in streams} for s in SETTINGS}
    for index in range(orderings):
        rng = random.Random(f"{seed}:{index}")
        shuffled = {repository: rng.sample(runs, len(runs)) for repository, runs in streams.items()}
        for setting in SETTINGS:
            for repository, runs in shuffled.items():
                per[setting.name][repository].append(replay(setting, repository, runs, outcomes))
    results = {}
    for setting in SETTINGS:
        repositories = {r: summarize(per[setting.name][r], setting.alpha) for r in streams}
        whole = [
            {key: sum(per[setting.name][r][i][key] for r in streams) for key in per[setting.name][next(iter(streams))][i]}
            for i in range(orderings)
        ]
        results[setting.name] = {
            "rule": setting.params.guard_rule,
            "alpha": str(setting.alpha) if setting.alpha is not None else None,
            "min_passed": conformal.min_passed(setting.alpha) if setting.alpha is not None else setting.params.min_passed_for_budget,
            "corpus": summarize(whole, setting.alpha),
            "repositories": repositories,
        }
    return {
        "corpus": {"path": corpus.name, "sha256": hashlib.sha256(corpus.read_bytes()).hexdigest(),
                   "runs": sum(len(r) for r in streams.values()), "repositories": len(streams)},
        "seed": seed,
        "orderings": orderings,
        "machine": machine(),
        "settings": results,
    }


def machine() -> dict[str, Any]:
    root = pathlib.Path(__file__).resolve().parents[1]
    try:
        commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        commit = "unknown"
    return {"platform": platform.platform(), "python": platform.python_version(), "cpus": os.cpu_count(),
            "load_1min": round(os.getloadavg()[0], 2), "commit": commit}
