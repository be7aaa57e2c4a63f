"""Defense in depth: which line of defense catches which change, alone and together.

Each scenario reads, changes something, and reads again through a checked session (the hunt's
oracle runs the read for real and compares). It runs under four configurations:

  counters only      the default detector, fingerprint and probe off
  fingerprint only   a detector that reports nothing (counters never move), fingerprint on
  traced set only    a detector that reports nothing, fingerprint off, probe on (issue 19)
  all                the default detector, the fingerprint and the probe, as shipped

and the table says, per configuration, whether a stale Reuse was served. Run:

    python benchmarks/defense_in_depth.py

Scenarios, not a hunt: each class of change appears once, so the counts say which classes a
line covers, not how often a random session hits them (docs/safety/claim.md reports short hunts too).
"""

from __future__ import annotations

import time

from ledger_impl.detectors import default_detector
from ledger_impl.detectors.unsound import blind
from ledger_properties.oracle import REUSE_IS_FRESH, fingerprint_line, hunt_environment, probe_line, run_checked
from ledger_properties.shell_strategies import WorkspaceSetup

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
    return any(record.violation is not None and record.violation.property == REUSE_IS_FRESH for record in records)


def main() -> None:
    started = time.monotonic()
    names = list(CONFIGURATIONS)
    print(f"| scenario | {' | '.join(names)} |")
    print("|---|" + "---|" * len(names))
    caught = {name: 0 for name in names}
    with hunt_environment():
        for scenario, commands in SCENARIOS.items():
            cells = []
            for name, (factory, fingerprint, probe) in CONFIGURATIONS.items():
                was_stale = stale(commands, factory, fingerprint, probe)
                caught[name] += not was_stale
                cells.append("**stale**" if was_stale else "caught")
            print(f"| {scenario} | {' | '.join(cells)} |")
    print(f"| caught (of {len(SCENARIOS)}) | {' | '.join(str(caught[name]) for name in names)} |")
    print(f"\n{time.monotonic() - started:.1f} s")


if __name__ == "__main__":
    main()
