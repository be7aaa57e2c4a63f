"""Run `ledger verify` with each of issue 23's semantic mutants applied: it must fail under every one.

The semantic catalog (`properties/semantic_mutants/`) names, for each mutant, the unit test that
kills it. This script asks a different question, the one a user of `ledger verify` cares about:
does the verification a user runs, with its random budget, notice the bug? It applies each
mutant in a temporary copy of the tree (`runner.copy_tree`; the working tree is never patched),
runs `ledger verify --profile P --seed S --stage hunt --stage hook` there (the stages that
run Ledger on real commands; verify fails when any stage fails), and records the exit status and the checks
that failed. A mutant under which verify exits 0 is a gap of the hunts' grammar.

The mutants are the seventeen kinds of bug issue 23 lists (`ISSUE_23_KINDS`): the ones a careful
adversary showed surviving the whole suite. `--only ID` runs one or more of them.

    python scripts/verify_under_mutants.py                  # all seventeen; records the JSON
    python scripts/verify_under_mutants.py --only 001       # one; records nothing
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Final

ROOT: Final = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from ledger_properties.semantic_mutants.catalog import load as load_catalog  # noqa: E402
from ledger_properties.semantic_mutants.runner import copy_tree, imports_from, tree_state  # noqa: E402

# Issue 23's list of surviving bugs, by module, as catalog ids.
ISSUE_23_KINDS: Final = (
    "001", "002", "003", "004",  # fingerprint: env cache by names, tail, lstat program, ripgrep config
    "017", "018", "019", "020", "021",  # git inputs: includeIf, key case, ref subdirs, XDG, GIT_EXTERNAL_DIFF
    "078", "079", "080",  # durable session: record's comparison, re-decided id, detector problem dropped
    "055", "056",  # Claude adapter: interrupted failure exact, empty result as ""
    "081", "082",  # Runtime: fingerprint from before the run, unknown scope after a job exits
    "042",  # classifier: cat -n with -E/-s/-T/-v/-A as the plain numbered view
)
# Only the stages that run Ledger's own code on real commands: the proofs, contracts, spec
# properties and differential check the spec and the optimized ledger, which no mutant here touches.
STAGES: Final = ("--stage", "hunt", "--stage", "hook")
RESULT: Final = ROOT / "benchmarks" / "results" / "verify-under-mutants.json"
VERIFY_TIMEOUT: Final = 1800.0


def verify(tree: Path, profile: str, seed: int, workers: int) -> tuple[int, str, float]:
    """(exit status, output, seconds) of `ledger verify` run from `tree`."""
    environment = dict(os.environ, PYTHONPATH=str(tree), PYTHONDONTWRITEBYTECODE="1", COLUMNS="1000")
    command = [
        sys.executable, "-c", "import sys; from ledger_cli.main import main; sys.exit(main())",
        "verify", "--profile", profile, "--seed", str(seed), "--workers", str(workers), *STAGES,
    ]
    started = time.monotonic()
    try:
        done = subprocess.run(command, cwd=tree, env=environment, capture_output=True, text=True, timeout=VERIFY_TIMEOUT)
    except subprocess.TimeoutExpired:
        return -1, f"timed out after {VERIFY_TIMEOUT:.0f} s", time.monotonic() - started
    return done.returncode, done.stdout + done.stderr, time.monotonic() - started


def failed_checks(output: str) -> list[str]:
    """The names of the stages verify reports with a check not held (its stage lines say how many)."""
    return [line.split("]", 1)[1].split("(", 1)[0].strip() for line in output.splitlines()
            if re.match(r"^\[\d+/\d+\]", line) and not re.search(r"\b0 failed\b", line)]


def failed_rows(output: str) -> list[str]:
    """The rows of verify's table that do not hold: the check's name, then its detail (the
    table is printed COLUMNS wide, so that a row with a short detail stays on one line)."""
    rows = []
    for line in output.splitlines():
        cells = [cell.strip() for cell in line.split("│")]
        if len(cells) >= 5 and cells[2] == "FAILS":
            rows.append(f"{cells[1]}: {cells[4]}")
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", action="append", metavar="ID", help="run only this mutant (repeatable); records nothing")
    parser.add_argument("--profile", default="ci")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args(argv)
    catalog = {mutant.id: mutant for mutant in load_catalog()}
    chosen = args.only or list(ISSUE_23_KINDS)
    unknown = [i for i in chosen if i not in catalog]
    if unknown:
        parser.error(f"no mutant {', '.join(unknown)} in the catalog")
    commit, dirty = tree_state(ROOT)
    load_before = os.getloadavg()[0]
    rows: list[dict[str, object]] = []
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="verify-under-mutants-") as scratch:
        tree = Path(scratch) / "tree"
        copy_tree(ROOT, tree)
        if not imports_from(tree).is_relative_to(tree):
            raise SystemExit("the copy's interpreter imports ledger_impl from elsewhere")
        for mutant_id in chosen:
            mutant = catalog[mutant_id]
            subprocess.run(["git", "apply", str(mutant.patch)], cwd=tree, check=True, capture_output=True)
            try:
                status, output, seconds = verify(tree, args.profile, args.seed, args.workers)
            finally:
                subprocess.run(["git", "apply", "-R", str(mutant.patch)], cwd=tree, check=True, capture_output=True)
            failed = failed_checks(output)
            failing = failed_rows(output)
            verdict = "verify failed" if status != 0 else "verify passed"
            rows.append({"id": mutant.id, "description": mutant.description, "exit_status": status,
                         "failed_stages": failed, "failed_checks": failing, "seconds": round(seconds, 1),
                         "verdict": verdict})
            print(f"{mutant.id} {verdict:>13} {seconds:6.0f}s  {', '.join(failed) or '-'}  {mutant.description}", flush=True)
            for row in failing:
                print(f"      {row[:300]}", flush=True)
            if status == 0 and args.only:
                print(output[-3000:])
    caught = sum(1 for row in rows if row["exit_status"] != 0)
    print(f"verify failed under {caught} of {len(rows)} mutants ({args.profile}, seed {args.seed}, {args.workers} workers)")
    if not args.only:
        document = {
            "what": "ledger verify run with each of issue 23's semantic mutants applied (scripts/verify_under_mutants.py)",
            "commit": commit, "dirty": dirty, "date": datetime.date.today().isoformat(),
            "profile": args.profile, "seed": args.seed, "workers": args.workers, "cpus": os.cpu_count(),
            "machine": f"{os.cpu_count()} cores, {platform.system()} {platform.release()}, Python {platform.python_version()}",
            "load": f"1-minute load average {load_before:.2f} before, {os.getloadavg()[0]:.2f} after",
            "seconds": round(time.monotonic() - started), "caught": caught, "mutants": rows,
        }
        RESULT.write_text(json.dumps(document, indent=2) + "\n")
        print(f"recorded {RESULT.relative_to(ROOT)}")
    return 0 if caught == len(rows) else 1


if __name__ == "__main__":
    raise SystemExit(main())
