"""`python -m ledger_properties.semantic_mutants [--list] [--only ID ...] [--check] [--docs]`.

Without options: apply every mutant in a temporary copy of the tree, run its named tests,
print each verdict, record the JSON under benchmarks/results/ and exit 1 unless every mutant
applied and every non-equivalent one was killed. `--only` runs the given ids (nothing is
recorded); `--check` only checks that every patch applies; `--docs` regenerates the table in
docs/mutation/semantic.md from the recorded JSON.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

from . import report, runner
from .catalog import applies, load

TREE = Path(__file__).resolve().parents[2]
RESULT = TREE / "benchmarks" / "results" / "semantic-mutants.json"
PAGE = TREE / "docs" / "mutation" / "semantic.md"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m ledger_properties.semantic_mutants", description=__doc__.splitlines()[0])
    parser.add_argument("--list", action="store_true", help="list the catalog and exit")
    parser.add_argument("--only", action="append", metavar="ID", help="run only this mutant (repeatable)")
    parser.add_argument("--check", action="store_true", help="only check that every patch applies")
    parser.add_argument("--docs", action="store_true", help="regenerate the docs table from the recorded JSON")
    parser.add_argument("--no-baseline", action="store_true", help="skip the unmutated run of the named tests")
    args = parser.parse_args(argv)
    mutants = load()
    if args.list:
        for mutant in mutants:
            mark = " (equivalent)" if mutant.equivalent else ""
            print(f"{mutant.id}  {mutant.target:40} {mutant.kind:16} {mutant.description}{mark}")
        return 0
    if args.check:
        problems = [(mutant.id, applies(mutant, TREE)) for mutant in mutants]
        for mutant_id, problem in problems:
            if problem:
                print(f"{mutant_id}: {problem}", file=sys.stderr)
        return 1 if any(problem for _, problem in problems) else 0
    if args.docs:
        changed = report.update(PAGE, json.loads(RESULT.read_text(encoding="utf-8")), mutants)
        print(f"{PAGE.relative_to(TREE)} {'updated' if changed else 'already current'}")
        return 0
    if args.only:
        unknown = set(args.only) - {mutant.id for mutant in mutants}
        if unknown:
            parser.error(f"no such mutant: {', '.join(sorted(unknown))}")
        mutants = tuple(mutant for mutant in mutants if mutant.id in args.only)
    # Hashed before the run, with the tree state, since the copy the mutants run in is made then.
    state, hashed = runner.tree_state(TREE), runner.digests(mutants, TREE)
    load_before, started = os.getloadavg(), time.monotonic()
    verdicts = runner.run_mutants(mutants, TREE, baseline=not args.no_baseline)
    document = runner.result_document(verdicts, state, load_before, time.monotonic() - started, hashed)
    print(json.dumps(document["summary"]))
    if not args.only:
        runner.write_json(document, RESULT)
        print(f"recorded in {RESULT.relative_to(TREE)}")
    failing = {runner.SURVIVED, runner.NOT_APPLIED, runner.TEST_ERROR}
    return 1 if any(verdict.verdict in failing for verdict in verdicts) else 0


if __name__ == "__main__":
    sys.exit(main())
