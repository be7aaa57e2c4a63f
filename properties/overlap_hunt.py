"""Hunt for stale Reuse with overlapping commands: a read and a write in flight at once.

Theory of operation. Each round builds a small workspace in a temporary directory, opens a
`DurableSession` on it (state kept outside the workspace) and, in some rounds, runs a warm-up
read so that an observation exists that may be served midway. Then it takes one read R and one
write W (mostly one that changes what R prints) and plays their six events, decide, run and
record of each, in a random order that keeps each command's own events in that order: so R may run before W lands or after, and either may be recorded first, exactly the
orders parallel tool calls produce (PreToolUse, the command, PostToolUse, for two calls at
once). Finally R and one other read are decided again. Every Reuse, whenever it is answered
(midway or at the end), is checked at once by the oracle: the command is run for real in the
workspace and its output and exit status must equal the reused ones. A mismatch is a stale
Reuse, reported with the order that produced it.

Commands run in a fresh `bash` in the workspace; nothing else runs there while a check runs,
so a check is exact.
"""

from __future__ import annotations

import random
import subprocess
import tempfile
from pathlib import Path

import attrs

from ledger_impl import DurableSession
from ledger_impl.detectors.stat_index import StatIndex

# Each read, with the writes that change what it prints: the hunt mostly pairs a read with one
# of these (an unrelated write is the easy case).
READS: dict[str, tuple[str, ...]] = {
    "cat a.txt": ("echo x >> a.txt", "sed -i s/one/ONE/ a.txt"),
    "head -n 1 a.txt": ("sed -i s/one/ONE/ a.txt",),
    "wc -l a.txt": ("echo x >> a.txt",),
    "cat b.txt": ("echo y > b.txt", "mv b.txt d/b.txt"),
    "ls d": ("touch d/new.txt", "rm -f d/c.txt", "mv b.txt d/b.txt"),
    "grep -rn x .": ("echo x >> a.txt", "rm -f d/c.txt", "echo y > b.txt"),
}
WRITES: tuple[str, ...] = tuple(sorted({write for writes in READS.values() for write in writes}))
FILES: dict[str, str] = {"a.txt": "one\ntwo\n", "b.txt": "bee\n", "d/c.txt": "x marks\n"}


@attrs.frozen
class StaleReuse:
    """A Reuse whose output differs from a real run at the moment it was answered."""

    order: tuple[str, ...]  # the events of the round up to the stale Reuse
    command: str
    reused: tuple[str, int]
    fresh: tuple[str, int]


@attrs.frozen
class OverlapHuntReport:
    rounds: int
    reuses_checked: int
    stale: tuple[StaleReuse, ...]

    @property
    def ok(self) -> bool:
        return not self.stale


def run_overlap_hunt(rounds: int, seed: int = 0) -> OverlapHuntReport:
    """Play `rounds` random rounds (see the module header); stop at the first stale Reuse."""
    rng = random.Random(seed)
    checked = 0
    for _ in range(rounds):
        with tempfile.TemporaryDirectory(prefix="ledger-overlap-") as scratch:
            found, count = _round(Path(scratch), rng)
        checked += count
        if found is not None:
            return OverlapHuntReport(rounds, checked, (found,))
    return OverlapHuntReport(rounds, checked, ())


def interleaving(rng: random.Random) -> list[tuple[str, str]]:
    """A random order of (command, event) for R and W, each command's own events in order."""
    remaining = {"R": ["decide", "run", "record"], "W": ["decide", "run", "record"]}
    order: list[tuple[str, str]] = []
    while any(remaining.values()):
        who = rng.choice([name for name, events in remaining.items() if events])
        order.append((who, remaining[who].pop(0)))
    return order


def _round(scratch: Path, rng: random.Random) -> tuple[StaleReuse | None, int]:
    root, state_dir = scratch / "ws", scratch / "state"
    for name, text in FILES.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    state_dir.mkdir()
    read = rng.choice(sorted(READS))
    commands = {"R": read, "W": rng.choice(READS[read] if rng.random() < 0.8 else WRITES)}
    log: list[str] = []
    checked = 0
    # The stat index, whatever is on PATH: a Watchman server started here would outlive the hunt.
    # Probe off: the hunt measures the counters' overlap rule (the probe's path: tests/test_probe_hook_path.py).
    with DurableSession.open(root, state_dir=state_dir, detector=StatIndex(), probe=False) as session:

        def decide(command: str, call_id: str) -> tuple[bool, StaleReuse | None]:
            """Decide; check a Reuse at once. True if the agent must run the command."""
            nonlocal checked
            decision = session.decide(command, call_id=call_id)
            log.append(f"decide {command!r} -> {decision.verdict}")
            if decision.verdict != "reuse":
                return True, None
            checked += 1
            reused, fresh = (decision.output or "", decision.exit_code or 0), _run(root, command)
            if reused != fresh:
                return False, StaleReuse(tuple(log), command, reused, fresh)
            return False, None

        if rng.random() < 0.3:  # an observation R may be served from midway (else R runs)
            must_run, stale = decide(read, "warm-up")
            if must_run:
                session.record("warm-up", *_run(root, read))
        outputs: dict[str, tuple[str, int]] = {}
        running = {"R": False, "W": False}
        for who, event in interleaving(rng):
            command, call_id = commands[who], f"call-{who}"
            if event == "decide":
                running[who], stale = decide(command, call_id)
                if stale is not None:
                    return stale, checked
            elif running[who] and event == "run":
                outputs[who] = _run(root, command)
                log.append(f"run {command!r}")
            elif running[who]:
                session.record(call_id, *outputs[who])
                log.append(f"record {command!r}")
        for index, command in enumerate((read, rng.choice(sorted(READS)))):
            must_run, stale = decide(command, f"after-{index}")
            if stale is not None:
                return stale, checked
            if must_run:
                session.record(f"after-{index}", *_run(root, command))
    return None, checked


def _run(root: Path, command: str) -> tuple[str, int]:
    done = subprocess.run(
        ["bash", "-c", command], cwd=root, capture_output=True, text=True, timeout=30, stdin=subprocess.DEVNULL
    )
    return done.stdout + done.stderr, done.returncode


def main(argv: list[str] | None = None) -> int:
    import argparse

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=100)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    report = run_overlap_hunt(args.rounds, args.seed)
    print(f"{report.rounds} rounds, {report.reuses_checked} reuses checked against a real run, {len(report.stale)} stale")
    for stale in report.stale:
        print("\n".join(stale.order))
        print(f"stale: {stale.command!r} reused {stale.reused!r}, a real run gives {stale.fresh!r}")
    return 0 if report.ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
