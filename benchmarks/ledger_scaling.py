"""Cost of one ledger step (govern + advance + render) as observations accumulate, spec vs impl.

For each n, a session with n observations over many files and line ranges, with edits and a
few unknown-scope changes interleaved, is recorded into an optimized `Ledger`; its snapshot is
the equal spec `State`. Then both sides run the same mix of commands (re-reads that are reused,
new ranges, searches, edits, test runs), each step govern + advance + render with the default
budget, and the mean time per step is printed. The spec rescans its logs on every query, so it
runs fewer steps at large n and is skipped where a single step would take minutes.

    python benchmarks/ledger_scaling.py                  # n = 10^2 .. 10^5
    python benchmarks/ledger_scaling.py --sizes 100 1000 --impl-steps 200
    python benchmarks/ledger_scaling.py --record         # also store benchmarks/results/ledger-scaling.json

Decisions of both sides are compared on the steps both ran, so a fast but wrong ledger shows up
as an error rather than as a good number.
"""

from __future__ import annotations

import argparse
import pathlib
import random
import sys
import time
from typing import Any, Callable, Sequence

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))

import ledger_spec  # noqa: E402
from benchmarks import record  # noqa: E402
from ledger_impl.ledger import Ledger  # noqa: E402
from ledger_spec import (  # noqa: E402
    NUMBERED,
    PLAIN,
    Allow,
    Category,
    Changes,
    Command,
    Decision,
    FileTarget,
    LineRange,
    Policy,
    Reuse,
    State,
    TreeTarget,
)

WINDOW = 40  # lines per ranged read, like an agent paging through a file
WINDOW_STARTS = (1, 41, 81, 121, 161)
FILES_PER_OBSERVATION = 1 / 20  # n observations spread over n/20 files
EDIT_EVERY = 10  # one edit per this many reads while building
UNKNOWN_EVERY = 2000  # one unknown-scope change (a background job) per this many reads
WORKING_SET = 8  # files the measured steps keep returning to
SPEC_STEP_BUDGET_SECONDS = 20.0  # rough time allowed to the spec per size
SPEC_SKIP_ABOVE = 10**4  # a spec step at 10^5 observations takes minutes
# The default cap (200 interventions per task) would turn govern off part way through the
# measured steps, and an allowed step costs less than a reused one; lift it so every step is
# ruled on.
BENCHMARK_POLICY = Policy(intervention_cap=10**9)

COLUMNS = (
    {"name": "n", "align": "right"},
    {"name": "spec us/step", "align": "right"},
    {"name": "impl us/step", "align": "right", "format": "{:,}"},
    {"name": "speedup", "align": "right"},
)


def file_key(index: int) -> str:
    return f"src/pkg{index // 50}/mod{index}.py"


def read(key: str, start: int, end: int | None, view: str) -> Command:
    shown = "$" if end is None else str(end)
    normalized = f"{'cat -n' if view == NUMBERED else 'sed -n'} {start},{shown} {key}"
    return Command(normalized, normalized, Category.READ, FileTarget(key, LineRange(start, end), view))


def edit(key: str) -> Command:
    return Command(f"sed -i s/a/b/ {key}", f"sed -i s/a/b/ {key}", Category.EDIT)


def search(pattern: str) -> Command:
    return Command(f"grep -rn {pattern} .", f"grep -rn {pattern} .", Category.SEARCH, TreeTarget("."))


TEST = Command("pytest -q", "pytest -q", Category.TEST)


def window_output(start: int) -> str:
    return "".join(f"{n:>6}\tcode line {n}\n" for n in range(start, start + WINDOW))


Step = tuple[Command, str, int, Changes]


def build(n: int, rng: random.Random, policy: Policy) -> Ledger:
    """A ledger holding n observations: windows of many files, with edits interleaved."""
    ledger = Ledger(policy)
    files = max(10, int(n * FILES_PER_OBSERVATION))
    observed = 0
    while observed < n:
        if observed % EDIT_EVERY == EDIT_EVERY - 1:
            key = file_key(rng.randrange(files))
            ledger.advance(edit(key), Allow(), "", 0, Changes({key}))
        if observed % UNKNOWN_EVERY == UNKNOWN_EVERY - 1:
            ledger.modify(Changes(unknown=True))
        if observed % 50 == 0:
            command, output = search(f"sym{observed}"), "src/x.py:1:sym\n"
        else:
            start = rng.choice(WINDOW_STARTS)
            command = read(file_key(rng.randrange(files)), start, start + WINDOW - 1, rng.choice((PLAIN, NUMBERED)))
            output = window_output(start)
        # Recorded as run even when it would have been reused, so that it is observed.
        ledger.advance(command, Allow(), output, 0, Changes())
        observed += 1
    return ledger


def workload(n: int, count: int, rng: random.Random) -> list[Step]:
    """The measured steps: mostly reads, some edits, tests and searches.

    Like an agent, it works on a few files at a time (the last ones the build read, then the
    ones it reads itself) and now and then opens another, so the share of reused steps stays
    about the same at every n and the columns compare the same mix.
    """
    files = max(10, int(n * FILES_PER_OBSERVATION))
    working_set = [file_key(rng.randrange(files)) for _ in range(WORKING_SET)]
    steps: list[Step] = []
    for index in range(count):
        if rng.random() < 0.1:
            working_set[rng.randrange(WORKING_SET)] = file_key(rng.randrange(files))
        key = rng.choice(working_set)
        kind = index % 10
        if kind < 5:
            start = rng.choice(WINDOW_STARTS) + rng.randrange(WINDOW // 2)
            steps.append((read(key, start, start + 9, PLAIN), window_output(start)[: 10 * 20], 0, Changes()))
        elif kind < 7:
            start = rng.choice(WINDOW_STARTS)
            steps.append((read(key, start, start + WINDOW - 1, NUMBERED), window_output(start), 0, Changes()))
        elif kind == 7:
            steps.append((edit(key), "", 0, Changes({key})))
        elif kind == 8:
            steps.append((TEST, "1 passed\n", 0, Changes({".pytest_cache/v/cache/lastfailed"})))
        else:
            steps.append((search("sym0"), "src/x.py:1:sym\n", 0, Changes()))
    return steps


def run_impl(ledger: Ledger, steps: Sequence[Step]) -> tuple[float, list[Decision]]:
    decisions = []
    began = time.perf_counter()
    for command, output, exit_status, changes in steps:
        decision = ledger.govern(command)
        ledger.advance(command, decision, output, exit_status, changes)
        ledger.render()
        decisions.append(decision)
    return time.perf_counter() - began, decisions


def run_spec(state: State, policy: Policy, steps: Sequence[Step]) -> tuple[float, list[Decision]]:
    decisions = []
    began = time.perf_counter()
    for command, output, exit_status, changes in steps:
        decision = ledger_spec.govern(state, command, policy)
        state = ledger_spec.advance(state, command, decision, output, exit_status, changes)
        ledger_spec.render(state, policy)
        decisions.append(decision)
    return time.perf_counter() - began, decisions


def measure(n: int, impl_steps: int, spec_steps: int | None, seed: int) -> dict[str, object]:
    policy = BENCHMARK_POLICY
    ledger = build(n, random.Random(seed), policy)
    steps = workload(n, impl_steps, random.Random(seed + 1))
    row: dict[str, object] = {"n": n, "spec": None, "spec_steps": 0}
    if spec_steps:
        state = ledger.snapshot()  # taken before the impl moves on
        spec_seconds, spec_decisions = run_spec(state, policy, steps[:spec_steps])
        row.update(spec=spec_seconds / spec_steps * 1e6, spec_steps=spec_steps)
    else:
        spec_decisions = []
    impl_seconds, impl_decisions = run_impl(ledger, steps)
    if impl_decisions[: len(spec_decisions)] != spec_decisions:
        raise SystemExit(f"n={n}: the impl's decisions differ from the spec's")
    reused = sum(isinstance(d, Reuse) for d in impl_decisions)
    row.update(impl=impl_seconds / len(steps) * 1e6, impl_steps=len(steps), reused=reused)
    return row


def spec_steps_for(n: int, probe: Callable[[int], float]) -> int | None:
    if n > SPEC_SKIP_ABOVE:
        return None
    seconds_per_step = probe(n)
    return max(2, min(200, int(SPEC_STEP_BUDGET_SECONDS / max(seconds_per_step, 1e-6))))


def size_text(n: int) -> str:
    """`10^3` for a power of ten, as the documentation's table writes sizes."""
    exponent = len(str(n)) - 1
    return f"10^{exponent}" if n == 10**exponent else f"{n:,}"


def table_row(row: dict[str, Any]) -> dict[str, Any]:
    """A measured row in the columns of the `ledger-scaling` series."""
    spec, impl = row["spec"], row["impl"]
    return {
        "n": size_text(row["n"]),
        "spec us/step": f"{spec:,.0f}" if spec is not None else "skipped (one spec step takes minutes)",
        "impl us/step": round(impl),
        "speedup": f"{spec / impl:,.0f}x" if spec is not None else None,
    }


def main(argv: Sequence[str] | None = None, results: pathlib.Path = record.RESULTS) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10**2, 10**3, 10**4, 10**5])
    parser.add_argument("--impl-steps", type=int, default=2000)
    parser.add_argument("--spec-steps", type=int, default=None, help="fixed spec step count (default: by time)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--record", action="store_true", help="store the table as benchmarks/results/ledger-scaling.json")
    args = parser.parse_args(argv)
    load_before = record.load_average()
    rows = []

    def probe(n: int) -> float:
        # One spec step on a fresh state, to size the measured run to the time budget.
        ledger = build(n, random.Random(args.seed), BENCHMARK_POLICY)
        seconds, _ = run_spec(ledger.snapshot(), BENCHMARK_POLICY, workload(n, 1, random.Random(args.seed + 1)))
        return seconds

    print(f"{'n':>8} {'spec µs/step':>14} {'(steps)':>8} {'impl µs/step':>13} {'(steps)':>8} {'speedup':>9} {'reused':>7}")
    for n in args.sizes:
        if args.spec_steps is not None:
            spec_steps = args.spec_steps if n <= SPEC_SKIP_ABOVE else None
        else:
            spec_steps = spec_steps_for(n, probe)
        row = measure(n, args.impl_steps, spec_steps, args.seed)
        rows.append(table_row(row))
        spec = row["spec"]
        spec_text = f"{spec:14.1f}" if spec is not None else f"{'skipped':>14}"
        speedup = f"{spec / row['impl']:8.0f}x" if spec is not None else f"{'-':>9}"  # type: ignore[operator]
        print(
            f"{n:>8} {spec_text} {row['spec_steps']:>8} {row['impl']:13.1f} {row['impl_steps']:>8} {speedup} {row['reused']:>7}",
            flush=True,
        )
    if any(n > SPEC_SKIP_ABOVE for n in args.sizes):
        print(f"spec skipped above n={SPEC_SKIP_ABOVE}: one step rescans every log and takes minutes there")
    if args.record:
        record.keep(
            "ledger-scaling", "Spec against implementation per step, n observations recorded",
            "ledger_scaling.py", argv, COLUMNS, rows,
            load_before=load_before,
            notes=f"govern + record + render per step, default view budget; {args.impl_steps:,} impl steps per size", results=results,
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
