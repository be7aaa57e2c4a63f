"""Defense in depth: which line of defense catches which change, alone and together.

Each scenario reads, changes something, and reads again through a checked session (the hunt's
oracle runs the read for real and compares). It runs under four configurations:

  counters only      the default detector, fingerprint and probe off
  fingerprint only   a detector that reports nothing (counters never move), fingerprint on
  traced set only    a detector that reports nothing, fingerprint off, probe on (issue 19)
  all                the default detector, the fingerprint and the probe, as shipped

and the table says, per configuration, whether a stale Reuse was served. Run:

    python benchmarks/defense_in_depth.py [--scenario NAME ...] [--record]

`--record` stores the table as `benchmarks/results/defense-in-depth.json`, with the machine,
load, date and commit; `--scenario` runs only the named scenarios (repeat it for more).

Scenarios, not a hunt: each class of change appears once, so the counts say which classes a
line covers, not how often a random session hits them (docs/safety/claim.md reports short hunts too).
"""

from __future__ import annotations

import argparse
import pathlib
import sys
import time
from collections.abc import Sequence

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))

from benchmarks import record  # noqa: E402
from ledger_impl.detectors import default_detector  # noqa: E402
from ledger_impl.detectors.unsound import blind  # noqa: E402
from ledger_properties.oracle import (  # noqa: E402
    REUSE_IS_FRESH, fingerprint_line, hunt_environment, probe_line, run_checked,
)
from ledger_properties.shell_strategies import WorkspaceSetup  # noqa: E402

SETUP = WorkspaceSetup(
    files={"a.txt": "alpha 1\nbeta 2\ngamma 3\n", "src/b.py": "print('alpha')\n"},
    outside={"ext.txt": "outside\n"},
)
SHADOW_CAT = "printf '#!/bin/sh\\necho shadowed\\n' > @OUTSIDE@/bin/cat && chmod +x @OUTSIDE@/bin/cat"
SAME_SIZE = (
    "python3 -S -c \"import os; st = os.stat('a.txt'); open('a.txt', 'w').write('ALPHA 1\\nbeta 2\\ngamma 3\\n'); "
    "os.utime('a.txt', ns=(st.st_atime_ns, st.st_mtime_ns))\""
)

SCENARIOS: dict[str, list[str]] = {
    "sed -i, then cat": ["cat a.txt", "sed -i 's/alpha/ALPHA/' a.txt", "cat a.txt"],
    "append, then a range": ["sed -n '1,3p' a.txt", "echo delta 4 >> a.txt", "sed -n '1,4p' a.txt"],
    "python writes, then cat -n": ["cat -n a.txt", "python3 -S -c \"open('a.txt', 'a').write('x\\n')\"", "cat -n a.txt"],
    "same size, old mtime back": ["cat a.txt", SAME_SIZE, "cat a.txt"],
    "new file, then ls": ["ls", "touch new.txt", "ls"],
    "edit, then grep -rn": ["grep -rn alpha .", "sed -i 's/alpha/ALPHA/' src/b.py", "grep -rn alpha ."],
    "edit, then git status": ["git status --short", "echo x >> a.txt", "git status --short"],
    "root recreated, then cat": ["cat a.txt", "cp -a @ROOT@ @ROOT@.new && rm -rf @ROOT@ && mv @ROOT@.new @ROOT@ && echo x >> @ROOT@/a.txt", "cat a.txt"],
    "program shadowed on PATH": ["cat a.txt", SHADOW_CAT, "cat a.txt"],
    "git global config in HOME": ["git log --oneline", "git config --global core.abbrev 9", "git log --oneline"],
    "outside hard link, then cat": ["cat a.txt", "ln -f @ROOT@/a.txt @OUTSIDE@/hl && echo x >> @OUTSIDE@/hl", "cat a.txt"],
    "outside hard link, then grep -rn": ["grep -rn alpha .", "ln -f @ROOT@/a.txt @OUTSIDE@/hl && echo alpha >> @OUTSIDE@/hl", "grep -rn alpha ."],
    "outside hard link, then git diff": ["git diff", "ln -f @ROOT@/a.txt @OUTSIDE@/hl && echo x >> @OUTSIDE@/hl", "git diff"],
    # issue 19's clock classes (counterexamples/probe-*.json): nothing changes, time passes
    "file time near now, then ls -l": [
        "touch -d @$(( $(date +%s) - 15778476 + 2 )) a.txt", "ls -l a.txt | grep -c :", "sleep 3", "ls -l a.txt | grep -c :",
    ],
    "relative git date configured": [
        "git config log.date relative && GIT_COMMITTER_DATE=@$(( $(date +%s) - 88 )) git commit -q --allow-empty -m t",
        "git log -1 --format=%cd | grep -c seconds", "sleep 3", "git log -1 --format=%cd | grep -c seconds",
    ],
}

CONFIGURATIONS = {  # detector, fingerprint, probe
    "counters only": (default_detector, False, False),
    "fingerprint only": (blind, True, False),
    "traced set only": (blind, False, True),
    "all": (default_detector, True, True),
}


def stale(commands: list[str], detector_factory, fingerprint: bool, probe: bool) -> bool:
    with fingerprint_line(fingerprint), probe_line(probe):
        records = run_checked(SETUP, commands, detector_factory())
    return any(step.violation is not None and step.violation.property == REUSE_IS_FRESH for step in records)


def main(argv: Sequence[str] | None = None, results: pathlib.Path = record.RESULTS) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scenario", action="append", choices=sorted(SCENARIOS), help="run only this scenario")
    parser.add_argument("--record", action="store_true", help="store the table as benchmarks/results/defense-in-depth.json")
    args = parser.parse_args(argv)
    chosen = {name: commands for name, commands in SCENARIOS.items() if not args.scenario or name in args.scenario}
    load_before = record.load_average()
    started = time.monotonic()
    names = list(CONFIGURATIONS)
    print(f"| scenario | {' | '.join(names)} |")
    print("|---|" + "---|" * len(names))
    caught = {name: 0 for name in names}
    columns = [{"name": name, "align": "left"} for name in ("scenario", *names)]
    rows = []
    with hunt_environment():
        for scenario, commands in chosen.items():
            cells = []
            for name, (factory, fingerprint, probe) in CONFIGURATIONS.items():
                was_stale = stale(commands, factory, fingerprint, probe)
                caught[name] += not was_stale
                cells.append("**stale**" if was_stale else "caught")
            print(f"| {scenario} | {' | '.join(cells)} |")
            rows.append(record.row(columns, scenario, *cells))
    rows.append(record.row(columns, f"caught (of {len(chosen)})", *(str(caught[name]) for name in names)))
    print(f"| {' | '.join(rows[-1].values())} |")
    print(f"\n{time.monotonic() - started:.1f} s")
    if args.record:
        record.keep(
            "defense-in-depth", "Which line of defense catches which change", "defense_in_depth.py", argv,
            columns, rows, load_before=load_before, notes="each scenario read, changed, read again through a checked session", results=results,
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
