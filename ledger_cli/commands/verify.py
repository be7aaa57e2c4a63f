"""`ledger verify`: every check Ledger has, one summary table, exit 0 only if all hold.

Each check is a function returning `CheckResult`s; a check that raises is reported as failed
with its error, never swallowed, so a broken installation cannot look like a pass.

On a terminal a spinner shows the running stage. Anywhere else (a CI log, a pipe) nothing can
be redrawn, so each stage prints one line when it ends, with its results and its time, and the
output is flushed: a log shows progress as it goes instead of nothing until the table.
"""

from __future__ import annotations

import argparse
import contextlib
import time
import traceback
from typing import Callable

import attrs
from rich.console import Console
from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn
from rich.table import Table

from ledger_cli.errors import EXIT_OK, EXIT_USAGE, EXIT_VIOLATION
from ledger_properties.profiles import PROFILES, Profile, default_workers, profile as choose_profile

from .cluster import add_cluster_arguments, cluster_problem


@attrs.frozen
class CheckResult:
    name: str
    held: bool
    detail: str
    seconds: float = 0.0


Check = Callable[[Profile, int | None], list[CheckResult]]


def shown_seconds(seconds: float) -> str:
    """A duration as a row shows it: milliseconds below a second (a Z3 theorem takes tens)."""
    if seconds < 0.00995:
        return f"{seconds * 1000:.1f} ms"
    if seconds < 0.9995:
        return f"{seconds * 1000:.0f} ms"
    return f"{seconds:.1f} s"


def _proofs(profile: Profile, seed: int | None) -> list[CheckResult]:
    from ledger_spec.z3_theorems import run_all

    results = []
    for theorem in run_all():
        results.append(
            CheckResult(f"z3: {theorem.name}", theorem.as_expected, theorem.summary, theorem.seconds)
        )
    return results


def _contracts(profile: Profile, seed: int | None) -> list[CheckResult]:
    from ledger_spec.contracts import check_contracts

    failures = check_contracts(per_condition_timeout=profile.contract_timeout)
    detail = "all contracts hold" if not failures else "; ".join(failures)
    return [CheckResult("crosshair: ledger_spec contracts", not failures, detail)]


def _spec_properties(profile: Profile, seed: int | None) -> list[CheckResult]:
    from ledger_properties.spec_run import run_spec_properties

    return [
        CheckResult(f"spec property: {name}", held, message or f"{profile.spec_examples} examples")
        for name, held, message in run_spec_properties(profile.spec_examples, seed)
    ]


def _differential(profile: Profile, seed: int | None) -> list[CheckResult]:
    from ledger_properties.differential import run_differential

    held, message = run_differential(profile.differential_examples, seed)
    detail = message or f"{profile.differential_examples} sessions per shape agree"
    return [CheckResult("spec vs impl: verdicts, views, counters", held, detail)]


def _hunt(profile: Profile, seed: int | None) -> list[CheckResult]:
    from ledger_properties.hunt import run_verify_hunt

    report = run_verify_hunt(profile, seed, workers=profile.workers, scheduler=profile.scheduler, database=profile.database)
    workers = f"{profile.workers} worker(s)" if profile.workers else "one task per cluster thread"
    where = f" on {profile.scheduler}" if profile.scheduler else ""
    detail = (
        f"{report.examples} runs, {report.steps} steps, {report.steps_per_second:.0f} steps/s, "
        f"{workers}{where}, seed {report.seed}"
    )
    if report.found:
        found = "; ".join(f"{doc['property']}: {doc.get('explanation', '')}" for doc in report.counterexamples)
        detail += f"; violations: {found} (rerun with --seed {report.seed} and `ledger check-detector` to store them)"
    return [
        CheckResult("safety hunt: default detector", not report.found, detail, report.seconds),
        _traced_only_hunt(profile, seed),
        _overlap_hunt(profile, seed),
        _runtime_sweep(),
    ]


def _runtime_sweep() -> CheckResult:
    """Every class `runtime_sweep` lists, played once whatever the random budget drew."""
    from ledger_properties.runtime_sweep import CASES, run_runtime_sweep

    started = time.perf_counter()
    commands, found = run_runtime_sweep()
    detail = f"{len(CASES)} classes, {commands} commands, each Reuse re-run and compared"
    for name, violation in found:
        detail += f"; {name}: {violation.message}"
    return CheckResult("safety hunt: each listed class once (Runtime)", not found, detail, time.perf_counter() - started)


def _traced_only_hunt(profile: Profile, seed: int | None) -> CheckResult:
    """Issue 19's second configuration: the enumerated fingerprint off, Reuse on the probe's
    traced set alone; a quarter of the main hunt's budget, on one worker."""
    from ledger_properties.hunt import TRACED_ONLY, run_verify_hunt

    quarter = attrs.evolve(profile, hunt_examples=max(1, profile.hunt_examples // 4))
    report = run_verify_hunt(quarter, seed, configuration=TRACED_ONLY)
    detail = f"{report.examples} runs, {report.steps} steps, fingerprint off, seed {report.seed}"
    if report.found:
        detail += "; violations: " + "; ".join(f"{doc['property']}: {doc.get('explanation', '')}" for doc in report.counterexamples)
    return CheckResult("safety hunt: traced set alone", not report.found, detail, report.seconds)


def _overlap_hunt(profile: Profile, seed: int | None) -> CheckResult:
    from ledger_properties.overlap_hunt import run_overlap_hunt

    started, rounds = time.perf_counter(), max(1, profile.hunt_examples // 4)
    report = run_overlap_hunt(rounds, seed or 0)
    detail = f"{rounds} read/write pairs in flight at once, {report.reuses_checked} reuses checked by a real run"
    for stale in report.stale:
        detail += f"; STALE: {stale.command!r} after {' / '.join(stale.order)}"
    return CheckResult("safety hunt: overlapping commands", report.ok, detail, time.perf_counter() - started)


def _hook_path_hunt(profile: Profile, seed: int | None) -> list[CheckResult]:
    from ledger_properties.hook_hunt import AGENTS, run_hook_hunt

    report = run_hook_hunt(profile, seed)
    detail = (
        f"{report.examples} runs, {report.steps} tool calls through `ledger hook {'|'.join(AGENTS)}` processes, "
        f"{report.reuses} reuses re-run and compared, seed {report.seed}"
    )
    for violation, _ in report.violations:
        detail += (f"; {violation.property} at call {violation.step} ({violation.agent}): {violation.command!r} "
                   f"served {violation.served}, a run now shows {violation.expected} "
                   f"(store it with `python -m ledger_properties.hook_hunt --profile {profile.name} --seed {report.seed} --out DIR`)")
    return [CheckResult("safety hunt: the hook path", not report.violations, detail, report.seconds), _class_sweep()]


def _class_sweep() -> CheckResult:
    """Every class the hook-path grammar lists, played once whatever the random budget drew."""
    from ledger_properties.hook_hunt import SWEEP, run_class_sweep

    started = time.perf_counter()
    calls, found = run_class_sweep()
    detail = f"{len(SWEEP)} classes, {calls} tool calls, each Reuse re-run and compared"
    for name, violation, _ in found:
        detail += f"; {name}: {violation.property} at call {violation.step} ({violation.agent}): {violation.command!r} " \
                  f"served {violation.served}, a run now shows {violation.expected}"
    return CheckResult("safety hunt: each listed class once (hook path)", not found, detail, time.perf_counter() - started)


CHECKS: tuple[tuple[str, Check], ...] = (
    ("Z3 proofs", _proofs),
    ("CrossHair contracts", _contracts),
    ("spec properties", _spec_properties),
    ("spec vs impl differential", _differential),
    ("safety hunt", _hunt),
    ("hook-path hunt", _hook_path_hunt),
)
# `--stage` names: one short name per title of CHECKS.
STAGES: dict[str, str] = {
    "proofs": "Z3 proofs",
    "contracts": "CrossHair contracts",
    "spec": "spec properties",
    "differential": "spec vs impl differential",
    "hunt": "safety hunt",
    "hook": "hook-path hunt",
}


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "verify", help="run the proofs, the contract and property checks, and the safety hunt"
    )
    parser.add_argument("--profile", choices=sorted(PROFILES), default=None, help="search budget (default: $LEDGER_PROFILE or ci)")
    parser.add_argument("--seed", type=int, default=None, help="seed for the randomized checks")
    parser.add_argument(
        "--workers", type=int, default=None, metavar="N",
        help=f"processes sharing the safety hunt (default: the number of cores, {default_workers()} here; "
        "with --scheduler, one task per thread of the cluster)",
    )
    parser.add_argument(
        "--stage", action="append", choices=list(STAGES), metavar="STAGE",
        help=f"run only this stage (repeatable: {', '.join(STAGES)}); the summary says which ran",
    )
    add_cluster_arguments(parser)
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    console = Console()
    try:
        profile = choose_profile(args.profile)
    except ValueError as error:
        console.print(f"ledger verify: {error}")
        return EXIT_USAGE
    workers = args.workers if args.workers is not None or args.scheduler else default_workers()
    if workers is not None and workers < 1:
        console.print("ledger verify: --workers must be at least 1")
        return EXIT_USAGE
    if (problem := cluster_problem(args)) is not None:
        console.print(f"ledger verify: {problem}")
        return EXIT_USAGE
    profile = attrs.evolve(profile, workers=workers, scheduler=args.scheduler, database=args.database)
    titles = {STAGES[name] for name in args.stage or ()}
    checks = [(title, check) for title, check in CHECKS if not titles or title in titles]
    results: list[CheckResult] = []
    live = console.is_terminal
    spinner = Progress(SpinnerColumn(), TextColumn("{task.description}"), TimeElapsedColumn(), console=console)
    with spinner if live else contextlib.nullcontext(spinner) as progress:
        for number, (title, check) in enumerate(checks, 1):
            task = progress.add_task(f"{title} ({profile.name})", total=None)
            started = time.monotonic()
            try:
                produced = check(profile, args.seed)
            except Exception as error:  # a crash is a failure, with its cause shown
                produced = [CheckResult(title, False, f"crashed: {error!r}\n{traceback.format_exc(limit=3)}")]
            elapsed = time.monotonic() - started
            results.extend(attrs.evolve(r, seconds=r.seconds or elapsed / max(1, len(produced))) for r in produced)
            progress.update(task, total=1, completed=1)
            if not live:
                held = sum(r.held for r in produced)
                print(f"[{number}/{len(checks)}] {title} ({profile.name}): {held} held, {len(produced) - held} failed "
                      f"in {shown_seconds(elapsed)}", flush=True)
    only = f"; only {', '.join(args.stage)}" if args.stage else ""
    table = Table(title=f"ledger verify ({profile.name} profile{only})")
    table.add_column("check")
    table.add_column("result")
    table.add_column("time", justify="right", no_wrap=True)
    table.add_column("detail", overflow="fold")
    for result in results:
        table.add_row(result.name, "[green]holds[/]" if result.held else "[red]FAILS[/]", shown_seconds(result.seconds), result.detail)
    console.print(table)
    failed = [r for r in results if not r.held]
    console.print(f"{len(results) - len(failed)} held, {len(failed)} failed")
    return EXIT_OK if not failed else EXIT_VIOLATION
