"""Concurrency stress for DurableSession: hook processes at once, kill -9 at random moments.

Theory of operation. `run_stress` starts `workers` worker processes on one workspace and one
state directory. Each worker loops: pick a command (mostly reads, some writes), open a session,
`decide`; unless reused, run the command and `record` it in a freshly opened session, as a
Claude Code PreToolUse/PostToolUse pair would. Meanwhile the parent SIGKILLs random workers
(their whole process group, commands included) and starts replacements until two thirds of
`pairs` have completed; the last third runs without kills once the killed calls have expired
(see `run_stress`). Then it checks:

- **no stale Reuse**: a worker re-runs every Reuse and compares output and exit status. The
  comparison is exact only if no write ran in between, so writers announce themselves in a
  world file (outside the workspace) and a check overlapping a write counts as inconclusive.
  The session refuses Reuse while a writer is in flight, so inconclusive checks are rare.
- **no lost update**: every call a worker logged as done (its result recorded, or a Reuse
  decided) is in the ledger's history. The history holds at least the completed calls and at
  most those plus the calls that were cut short by a kill inside a ledger call (begun but not
  logged as returned); per command text, it holds at least as many entries as were logged done.
- the database passes SQLite's integrity check and the session reopens and renders its view.

Each worker logs one line per event to its own file, flushed at once: a kill can only cut the
last line, which the reader ignores.
"""

from __future__ import annotations

import collections
import fcntl
import json
import os
import random
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import attrs

from ledger_impl import DurableSession, Policy
from ledger_impl.detectors.stat_index import StatIndex

READS = (
    "cat f{n}",
    "sed -n '1,3p' f{n}",
    "head -n 2 f{n}",
    "wc -l f{n}",
    "ls sub",
    "grep -rn b .",
    "cat sub/g{n}",
)
WRITES = (
    "echo {token} >> f{n}",
    "sed -i 's/a/b/' f{n}",
    "printf 'a%s\\n' {n} > f{n}",
    "touch sub/new{n}",
    "rm -f sub/new{n}",
    "cp f{n} sub/g{n}",
)
FILES = 4
WRITE_SHARE = 0.12
ABANDON_AFTER_S = 5.0  # killed calls block reuse until expired; keep the test moving
CALM_SHARE = 3  # one pair in this many runs after the kills, once the killed calls have expired
POLICY = Policy(intervention_cap=10**9)  # every Reuse the ledger allows, not just the first 200


@attrs.frozen
class StressReport:
    pairs: int
    reuses: int
    conclusive_reuse_checks: int
    stale_reuses: tuple[str, ...]
    kills: int
    history: int
    completed: int
    cut_short: int
    missing_commands: tuple[str, ...]
    integrity: str
    seconds: float

    @property
    def lost_update(self) -> bool:
        return bool(self.missing_commands) or not (self.completed <= self.history <= self.completed + self.cut_short)

    @property
    def ok(self) -> bool:
        return not self.stale_reuses and not self.lost_update and self.integrity == "ok"


def make_workspace(root: Path) -> None:
    (root / "sub").mkdir(parents=True)
    for n in range(FILES):
        (root / f"f{n}").write_text(f"a{n}\nb{n}\nc{n}\n")
        (root / "sub" / f"g{n}").write_text(f"g{n}\n")


def run_stress(
    base: Path, *, workers: int = 8, pairs: int = 1000, kills: int = 20, seed: int = 0, timeout_s: float = 600.0
) -> StressReport:
    """Run the stress in `base` (a fresh directory); the workspace is `base/root`.

    Two phases. In the first, `pairs - pairs // CALM_SHARE` pairs run while the parent kills. A
    killed writer stays pending, and so blocks every Reuse, until it expires `ABANDON_AFTER_S`
    after it started; on a fast machine the whole first phase can fit in that window (CI once saw
    3 reuses in 240 pairs). So the rest run after the last killed call has expired, with the same
    workers at once and no kills: there only live writers block a Reuse (seeds 0-11: 32 or more)."""
    root, state, logs, world = base / "root", base / "state", base / "logs", base / "world"
    make_workspace(root)
    for directory in (state, logs, world):
        directory.mkdir()
    rng = random.Random(seed)
    started = time.monotonic()
    calm = pairs // CALM_SHARE
    quota = _shares(pairs - calm, workers)
    generation = [0] * workers
    processes: dict[int, subprocess.Popen[bytes]] = {}

    def spawn(slot: int) -> None:
        done = _count_done(logs, slot)
        remaining = quota[slot] - done
        if remaining <= 0:
            processes.pop(slot, None)
            return
        generation[slot] += 1
        processes[slot] = subprocess.Popen(
            [sys.executable, "-m", "ledger_properties.session_stress", "worker", str(root), str(state), str(logs),
             str(world), str(slot), str(generation[slot]), str(remaining), str(seed)],
            start_new_session=True,
        )

    def run_until_done(kills: int) -> tuple[int, float | None]:
        """Run every slot to its quota, killing up to `kills` times: (kills made, time of the last)."""
        killed, last_kill = 0, None
        for slot in range(workers):
            spawn(slot)
        while processes:
            if time.monotonic() - started > timeout_s:
                for process in processes.values():
                    _kill_group(process)
                raise TimeoutError(f"stress did not finish in {timeout_s} s")
            time.sleep(rng.uniform(0.02, 0.25))
            for slot, process in list(processes.items()):
                if process.poll() is not None:
                    if process.returncode != 0:
                        raise RuntimeError(f"worker {slot} failed with exit {process.returncode}")
                    processes.pop(slot)
            if killed < kills and processes:
                slot = rng.choice(sorted(processes))
                _kill_group(processes[slot])
                last_kill = time.monotonic()
                (world / f"active-{slot}").unlink(missing_ok=True)  # its write, if any, is over
                killed += 1
                spawn(slot)
        return killed, last_kill

    killed, last_kill = run_until_done(kills)
    if last_kill is not None:
        time.sleep(max(0.0, last_kill + ABANDON_AFTER_S - time.monotonic()))
    quota = [stormy + more for stormy, more in zip(quota, _shares(calm, workers))]
    run_until_done(0)
    return _report(root, state, logs, killed, pairs, time.monotonic() - started)


def _shares(total: int, workers: int) -> list[int]:
    return [total // workers + (1 if slot < total % workers else 0) for slot in range(workers)]


def _kill_group(process: subprocess.Popen[bytes]) -> None:
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    process.wait()


def _events(logs: Path, slot: int | None = None) -> list[dict[str, str]]:
    events = []
    pattern = f"w{slot}-*.log" if slot is not None else "w*.log"
    for path in sorted(logs.glob(pattern)):
        for line in path.read_text().splitlines():
            try:
                events.append(json.loads(line))
            except json.JSONDecodeError:
                pass  # the line a kill cut short
    return events


def _done(event: dict[str, str]) -> bool:
    """Whether the ledger's side of a call is over: its result recorded, or a Reuse decided (the
    Reuse is in the history from then on; the worker's check that follows it is the oracle's, and
    a kill during it cuts short no ledger call)."""
    return event["event"] == "recorded" or (event["event"] == "decided" and event.get("verdict") == "reuse")


def _count_done(logs: Path, slot: int) -> int:
    return sum(1 for event in _events(logs, slot) if _done(event))


def _report(root: Path, state: Path, logs: Path, kills: int, pairs: int, seconds: float) -> StressReport:
    from ledger_impl.store import database_path

    events = _events(logs)
    done = [e for e in events if _done(e)]
    begun = collections.Counter(e["call"] for e in events if e["event"] in ("decide", "record"))
    finished = collections.Counter(e["call"] for e in events if e["event"] in ("decided", "recorded"))
    cut_short = sum(1 for call, n in begun.items() if finished[call] < n)
    reuse_checks = [e for e in events if e["event"] == "reused"]
    stale = tuple(e["command"] for e in reuse_checks if e["check"] == "stale")
    with sqlite3.connect(database_path(root, state)) as db:
        integrity = db.execute("PRAGMA integrity_check").fetchone()[0]
    # The stat index, whatever is on PATH: a Watchman server started here would outlive the run.
    with DurableSession.open(root, state_dir=state, policy=POLICY, abandon_after=ABANDON_AFTER_S, detector=StatIndex(),
                             probe=False) as session:
        session.abandon(reason="left pending by a killed worker")
        session.view()
        history = session.snapshot().history
    in_history = collections.Counter(record.command.text for record in history)
    logged = collections.Counter(e["command"] for e in done)
    missing = tuple(sorted(command for command, n in logged.items() if in_history[command] < n))
    return StressReport(
        pairs=len(done),
        reuses=len(reuse_checks),
        conclusive_reuse_checks=sum(1 for e in reuse_checks if e["check"] != "inconclusive"),
        stale_reuses=stale,
        kills=kills,
        history=len(history),
        completed=len(done),
        cut_short=cut_short,
        missing_commands=missing,
        integrity=integrity,
        seconds=seconds,
    )


# --- the worker ------------------------------------------------------------------------------


class _World:
    """Who is writing now, and how many writes ever started: files outside the workspace,
    updated under an exclusive lock."""

    def __init__(self, directory: Path, slot: int) -> None:
        self.directory = directory
        self.flag = directory / f"active-{slot}"
        self.counter = directory / "started"

    def _locked(self):  # type: ignore[no-untyped-def]
        handle = open(self.directory / "lock", "a")
        fcntl.flock(handle, fcntl.LOCK_EX)
        return handle

    def begin_write(self) -> None:
        with self._locked():
            count = int(self.counter.read_text() or 0) if self.counter.exists() else 0
            self.counter.write_text(str(count + 1))
            self.flag.touch()

    def end_write(self) -> None:
        with self._locked():
            self.flag.unlink(missing_ok=True)

    def quiet(self) -> tuple[int, bool]:
        """(writes started so far, whether no write is running)."""
        with self._locked():
            count = int(self.counter.read_text() or 0) if self.counter.exists() else 0
            return count, not any(self.directory.glob("active-*"))


def _run(root: Path, command: str) -> tuple[str, int]:
    completed = subprocess.run(
        ["bash", "-c", command], cwd=root, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT
    )
    return completed.stdout.decode("utf-8", "surrogateescape"), completed.returncode


def worker(root: Path, state: Path, logs: Path, world_dir: Path, slot: int, generation: int, count: int, seed: int) -> None:
    rng = random.Random(f"{seed}-{slot}-{generation}")
    world = _World(world_dir, slot)
    log = open(logs / f"w{slot}-{generation}.log", "a", buffering=1)

    def emit(**event: object) -> None:
        log.write(json.dumps(event) + "\n")
        log.flush()

    def session() -> DurableSession:
        # Probe off: the stress measures the counters and the store under kill -9, not the probe.
        return DurableSession.open(root, state_dir=state, policy=POLICY, abandon_after=ABANDON_AFTER_S, detector=StatIndex(),
                                   probe=False)

    for index in range(count):
        writes = rng.random() < WRITE_SHARE
        template = rng.choice(WRITES if writes else READS)
        command = template.format(n=rng.randrange(FILES), token=f"{slot}x{generation}x{index}")
        call = f"{slot}-{generation}-{index}"
        before = world.quiet()
        emit(event="decide", call=call, command=command)
        with session() as hook:
            decision = hook.decide(command, call_id=call)
        emit(event="decided", call=call, command=command, verdict=decision.verdict)
        if decision.verdict == "reuse":
            output, exit_code = _run(root, command)
            after = world.quiet()
            if not (before == after and before[1]):
                check = "inconclusive"
            elif (output, exit_code) == (decision.output, decision.exit_code):
                check = "fresh"
            else:
                check = "stale"
            emit(event="reused", call=call, command=command, check=check)
            continue
        if writes:
            world.begin_write()
        output, exit_code = _run(root, command)
        if writes:
            world.end_write()
        emit(event="record", call=call, command=command)
        with session() as hook:
            hook.record(call, output, exit_code)
        emit(event="recorded", call=call, command=command)


if __name__ == "__main__":
    if sys.argv[1:2] == ["worker"]:
        root_, state_, logs_, world_, slot_, generation_, count_, seed_ = sys.argv[2:10]
        worker(Path(root_), Path(state_), Path(logs_), Path(world_), int(slot_), int(generation_), int(count_), int(seed_))
    else:
        import argparse
        import tempfile

        parser = argparse.ArgumentParser(description="DurableSession concurrency stress with kill -9")
        parser.add_argument("--workers", type=int, default=8)
        parser.add_argument("--pairs", type=int, default=1000)
        parser.add_argument("--kills", type=int, default=20)
        parser.add_argument("--seed", type=int, default=0)
        args = parser.parse_args()
        with tempfile.TemporaryDirectory(prefix="ledger-stress-") as base:
            report = run_stress(Path(base), workers=args.workers, pairs=args.pairs, kills=args.kills, seed=args.seed)
        print(json.dumps(attrs.asdict(report) | {"ok": report.ok, "lost_update": report.lost_update}, indent=1))
        sys.exit(0 if report.ok else 1)
