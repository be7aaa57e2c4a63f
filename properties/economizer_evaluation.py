"""Replay a corpus of finished runs as per-repository streams through the controller.

`evaluate_corpus(path)` sorts each repository's runs by the number in their instance id
(SWE-bench ids grow with pull-request numbers, so this is roughly chronological), feeds them
through `economizer.Controller` with the no-model defaults (digest-mining proposer, a trace
judge that never says stuck, the template redirect, no tool judge) and reports:

* guard: on failed runs, the turns and estimated cost after the first intervention
  (redirect or stop) and after a stop; on passed runs, false stops and redirects;
* micro-skills, per repository: each skill proposed with its verified citations, whether it
  was confirmed, injected, retired (why) and contradicted; and for each skill with a need
  detector, the share of later tasks that show the waste it targets, before it was first
  injected and while it was;
* a sensitivity grid: guard figures over kappa x beta, skill figures over c x lambda (the
  guard does not read c or lambda and the skills do not read kappa or beta, so the two
  grids are the full product grid, factored).

What offline replay can and cannot show: the recorded agent never saw a manual, a mask or a
redirect, so every figure is an exposure, an upper bound on what the controller could act
on, not a measured saving. A redirect might have rescued a failed run or not; a stop ends
it for sure, so "after a stop" is the spend a stop would really have cut. The cost after a
turn is estimated two ways because the corpus gives only each run's total: spread evenly
over turns (understates late spend) and weighted by the context each turn re-bills
(prefix of `PROMPT_CHARS` plus all earlier commands and outputs).
"""

from __future__ import annotations

import itertools
import pathlib
import time
from fractions import Fraction
from typing import Any, Callable, Iterator, Sequence

import attrs

from economizer.codec import read_jsonl
from economizer.controller import Controller
from economizer.guard import Guard
from economizer.protocols import default_controllers
from economizer_spec.detectors import Detector, matches
from economizer_spec.guard import budget as budget_of
from economizer_spec.params import Params
from economizer_spec.trajectory import Step, Trajectory

PROMPT_CHARS = 10_000
"""Characters billed on every turn before any history: mini-swe-agent's system prompt and
instance template with the issue text, about 2,500 tokens. Only the context-weighted cost
estimate uses it."""

KAPPAS = (Fraction(3, 2), Fraction(2), Fraction(5, 2), Fraction(3))
BETAS = (Fraction(0), Fraction(1, 5), Fraction(1, 2))
CONFIRMATIONS = (2, 3, 4)
LAMBDAS = (Fraction(1), Fraction(5), Fraction(10))


def instance_number(task_id: str) -> int:
    tail = task_id.rsplit("-", 1)[-1]
    return int(tail) if tail.isdigit() else 0


def load_streams(path: pathlib.Path) -> dict[str, list[tuple[Trajectory, float]]]:
    streams: dict[str, list[tuple[Trajectory, float]]] = {}
    for repository, trajectory, cost in read_jsonl(path.read_text(encoding="utf-8"), str(path)):
        streams.setdefault(repository, []).append((trajectory, cost or 0.0))
    for runs in streams.values():
        runs.sort(key=lambda item: (instance_number(item[0].task_id), item[0].task_id))
    return dict(sorted(streams.items(), key=lambda item: (-len(item[1]), item[0])))


def context_weights(steps: Sequence[Step]) -> list[int]:
    """The characters each turn re-bills: `PROMPT_CHARS` and every earlier command and output
    (so a step's command and output count once for each later turn)."""
    weights, context = [], PROMPT_CHARS
    for step in steps:
        weights.append(context)
        context += len(step.command) + len(step.output)
    return weights


def cost_after(trajectory: Trajectory, cost: float, turn: int) -> tuple[float, float]:
    """(even, context-weighted) estimate of the cost spent after `turn` (1-based)."""
    n = trajectory.turns
    if n == 0 or turn >= n:
        return 0.0, 0.0
    even = cost * (n - turn) / n
    weights = context_weights(trajectory.steps)
    weighted = cost * sum(weights[turn:]) / sum(weights)
    return even, weighted


class CachedController(Controller):
    """Memoizes detector outcomes per (detector, trajectory) across grid runs."""

    cache: dict[tuple[Detector, int], bool] = {}
    """Shared by every controller of one evaluation (reset by `evaluate_corpus`); keyed by the
    identity of a trajectory's steps, which the evaluation keeps alive for its whole run."""

    def _evaluate(self, detectors: Sequence[Detector | None], steps: tuple[Step, ...]) -> list[bool]:
        out = []
        for detector in detectors:
            if detector is None:
                out.append(False)
                continue
            key = (detector, id(steps))
            if key not in self.cache:
                self.cache[key] = matches(detector, steps)
            out.append(self.cache[key])
        return out


# --- guard -------------------------------------------------------------------------------------


def replay_stream(
    runs: Sequence[tuple[Trajectory, float]], params: Params, outcome: Callable[[Trajectory, int | None], tuple[int | None, int | None]]
) -> Iterator[tuple[Trajectory, float, int | None, int | None, int | None]]:
    """(run, cost, B, first intervention, stop) for each run of one repository's stream in
    order, B from the passed runs before it (the guard may not look ahead)."""
    passed_turns: list[int] = []
    for trajectory, cost in runs:
        b = budget_of(passed_turns, params)
        first, stop = outcome(trajectory, b)
        yield trajectory, cost, b, first, stop
        if trajectory.passed:
            passed_turns.append(trajectory.turns)


def guard_outcome(guard: Guard, steps: Sequence[Step]) -> tuple[int | None, int | None]:
    """(turn of the first intervention, turn of the stop) as the guard replays a run's steps."""
    first = None
    for step in steps:
        decision = guard.observe(step)
        if decision.action != "continue" and first is None:
            first = decision.turn
        if decision.action == "stop":
            return first, decision.turn
    return first, None


def guard_figures(streams: dict[str, list[tuple[Trajectory, float]]], params: Params, detail: bool = False) -> dict[str, Any]:
    controllers = default_controllers()
    figures: dict[str, Any] = {
        "failed_runs": 0, "failed_cost": 0.0, "failed_with_intervention": 0, "failed_stopped": 0,
        "turns_after_intervention": 0, "cost_after_intervention_even": 0.0, "cost_after_intervention_weighted": 0.0,
        "turns_after_stop": 0, "cost_after_stop_even": 0.0, "cost_after_stop_weighted": 0.0,
        "passed_runs": 0, "passed_redirected": 0, "false_stops": 0, "total_cost": 0.0,
    }
    events = []
    def outcome(trajectory: Trajectory, b: int | None) -> tuple[int | None, int | None]:
        return guard_outcome(Guard(params, b, controllers.trace_judge, controllers.redirect_writer), trajectory.steps)

    for repository, runs in streams.items():
        for trajectory, cost, b, first, stop in replay_stream(runs, params, outcome):
            figures["total_cost"] += cost
            if trajectory.passed:
                figures["passed_runs"] += 1
                figures["passed_redirected"] += first is not None
                figures["false_stops"] += stop is not None
            else:
                figures["failed_runs"] += 1
                figures["failed_cost"] += cost
                # What a failed run spent after the guard first spoke, and after it stopped.
                for turn, counted, suffix in ((first, "failed_with_intervention", "intervention"), (stop, "failed_stopped", "stop")):
                    if turn is None:
                        continue
                    figures[counted] += 1
                    figures[f"turns_after_{suffix}"] += trajectory.turns - turn
                    even, weighted = cost_after(trajectory, cost, turn)
                    figures[f"cost_after_{suffix}_even"] += even
                    figures[f"cost_after_{suffix}_weighted"] += weighted
            if detail and first is not None:
                events.append({"repository": repository, "task_id": trajectory.task_id, "passed": trajectory.passed,
                               "turns": trajectory.turns, "budget": b, "first_intervention": first, "stop": stop})
    for key in list(figures):
        if isinstance(figures[key], float):
            figures[key] = round(figures[key], 4)
    if detail:
        figures["interventions"] = events
    return figures


# --- micro-skills -------------------------------------------------------------------------------


def skill_figures(streams: dict[str, list[tuple[Trajectory, float]]], params: Params, detail: bool = False) -> dict[str, Any]:
    controllers = default_controllers()
    totals = {"proposed": 0, "rejected": 0, "confirmed": 0, "injected": 0, "injected_tasks": 0, "retired": 0, "contradicted": 0}
    per_repository: dict[str, Any] = {}
    for repository, runs in streams.items():
        controller = CachedController(repository, params=params)
        for trajectory, _ in runs:
            controller.feed(trajectory, controllers)
        skills = []
        for skill in controller.skills.values():
            injected = skill.injected_tasks
            entry = {
                "id": skill.definition.id,
                "injection": skill.definition.injection,
                "status": skill.status.value,
                "proposed_after_task": skill.proposed_at,
                "citations": list(skill.verified_citations),
                "confirmations": skill.confirmations,
                "contradictions": skill.contradictions,
                "exercised": skill.exercised,
                "needed": skill.needed,
                "confirmed_at": skill.confirmed_at,
                "retired_at": skill.retired_at,
                "retired_reason": skill.retired_reason,
                "injected_tasks": len(injected),
                "first_injected": injected[0] if injected else None,
            }
            definition = skill.definition
            window_start = max(1, skill.proposed_at - params.proposer_window + 1)
            entry["contradicted_in"] = [
                t.task_id
                for i, (t, _) in enumerate(runs, 1)
                if i >= window_start and definition.contradict is not None
                and matches(definition.scope, t.steps) and matches(definition.contradict, t.steps)
            ][:5]
            if skill.definition.need is not None:
                later = [(i, t) for i, (t, _) in enumerate(runs, 1) if i > skill.proposed_at]
                waste = [i for i, t in later if matches(skill.definition.need, t.steps)]
                first = injected[0] if injected else None
                entry["waste"] = {
                    "later_tasks": len(later),
                    "tasks_with_waste": len(waste),
                    "share": round(len(waste) / len(later), 4) if later else None,
                    "before_first_injection": sum(1 for i in waste if first is None or i < first),
                    "while_injected": sum(1 for i in waste if i in set(injected)),
                    "example_tasks": [runs[i - 1][0].task_id for i in waste[:3]],
                }
            skills.append(entry)
            totals["proposed"] += 1
            totals["confirmed"] += skill.confirmed_at is not None
            totals["injected"] += bool(injected)
            totals["injected_tasks"] += len(injected)
            totals["retired"] += skill.status.value == "retired"
            totals["contradicted"] += skill.contradictions > 0
        totals["rejected"] += len(controller.rejections)
        per_repository[repository] = {
            "tasks": len(runs),
            "skills": skills,
            "rejections": sorted({(r.skill_id, r.reason) for r in controller.rejections}),
        }
    return {"totals": totals, "per_repository": per_repository} if detail else {"totals": totals}


def evaluate_corpus(path: pathlib.Path, grid: bool = True, params: Params = Params()) -> dict[str, Any]:
    start = time.perf_counter()
    streams = load_streams(path)
    CachedController.cache = {}
    report: dict[str, Any] = {
        "corpus": str(path),
        "repositories": {r: {"tasks": len(runs), "passed": sum(t.passed for t, _ in runs),
                             "cost": round(sum(c for _, c in runs), 4)} for r, runs in streams.items()},
        "params": {"kappa": str(params.kappa), "beta": str(params.beta), "confirmations": params.confirmations,
                   "lambda": str(params.contradiction_weight), "percentile": params.budget_percentile,
                   "need_gate": str(params.need_gate), "decay": str(params.decay)},
        "guard": guard_figures(streams, params, detail=True),
        "skills": skill_figures(streams, params, detail=True),
    }
    if grid:
        report["grid_guard"] = [
            {"kappa": str(k), "beta": str(b), **guard_figures(streams, attrs.evolve(params, kappa=k, beta=b))}
            for k, b in itertools.product(KAPPAS, BETAS)
        ]
        report["grid_skills"] = [
            {"c": c, "lambda": str(lam), **skill_figures(streams, attrs.evolve(params, confirmations=c, contradiction_weight=lam))["totals"]}
            for c, lam in itertools.product(CONFIRMATIONS, LAMBDAS)
        ]
    report["seconds"] = round(time.perf_counter() - start, 2)
    return report


def render_table(report: dict[str, Any]) -> str:
    g = report["guard"]
    lines = [
        f"corpus {report['corpus']}: " + ", ".join(f"{r} {v['tasks']} ({v['passed']} passed)" for r, v in report["repositories"].items()),
        "",
        "guard (defaults: kappa 5/2, beta 1/5, p90; judge = never stuck)",
        f"  failed runs {g['failed_runs']} (cost ${g['failed_cost']:.2f} of ${g['total_cost']:.2f}); "
        f"with an intervention {g['failed_with_intervention']}, stopped {g['failed_stopped']}",
        f"  after the first intervention: {g['turns_after_intervention']} turns, ${g['cost_after_intervention_even']:.2f} even / "
        f"${g['cost_after_intervention_weighted']:.2f} context-weighted",
        f"  after a stop: {g['turns_after_stop']} turns, ${g['cost_after_stop_even']:.2f} even / ${g['cost_after_stop_weighted']:.2f} weighted",
        f"  passed runs {g['passed_runs']}: redirected {g['passed_redirected']}, FALSE STOPS {g['false_stops']}",
        "",
        "micro-skills (digest-mining proposer)",
    ]
    for repository, entry in report["skills"]["per_repository"].items():
        for s in entry["skills"]:
            waste = s.get("waste") or {}
            lines.append(
                f"  {repository:<26} {s['id']:<40} {s['status']:<9} conf {s['confirmations']:>3} contra {s['contradictions']:>2} "
                f"need {s['needed']:>3}/{s['exercised']:<3} injected {s['injected_tasks']:>3} "
                f"waste {waste.get('tasks_with_waste', '-')}/{waste.get('later_tasks', '-')}"
                + (f" retired@{s['retired_at']} ({s['retired_reason']})" if s["retired_at"] else "")
            )
    totals = report["skills"]["totals"]
    lines.append("  totals: " + ", ".join(f"{k} {v}" for k, v in totals.items()))
    if "grid_guard" in report:
        lines += ["", "sensitivity: guard over kappa x beta",
                  f"  {'kappa':>5} {'beta':>5} {'failed w/ int.':>14} {'stopped':>7} {'turns after':>11} {'$ after (w)':>11} {'passed redir.':>13} {'false stops':>11}"]
        for row in report["grid_guard"]:
            lines.append(f"  {row['kappa']:>5} {row['beta']:>5} {row['failed_with_intervention']:>14} {row['failed_stopped']:>7} "
                         f"{row['turns_after_intervention']:>11} {row['cost_after_intervention_weighted']:>11.2f} "
                         f"{row['passed_redirected']:>13} {row['false_stops']:>11}")
        lines += ["", "sensitivity: micro-skills over c x lambda",
                  f"  {'c':>3} {'lambda':>6} {'proposed':>8} {'confirmed':>9} {'injected':>8} {'inj. tasks':>10} {'retired':>7} {'contradicted':>12}"]
        for row in report["grid_skills"]:
            lines.append(f"  {row['c']:>3} {row['lambda']:>6} {row['proposed']:>8} {row['confirmed']:>9} {row['injected']:>8} "
                         f"{row['injected_tasks']:>10} {row['retired']:>7} {row['contradicted']:>12}")
    lines.append(f"\n({report['seconds']}s)")
    return "\n".join(lines)

