"""The conformal guard against the paper's kappa rule over random orderings of a corpus.

    python benchmarks/economizer_guard.py [--corpus PATH] [--orderings 200] [--seed 24]
    python benchmarks/economizer_guard.py --page-only     # re-render the page from the JSON

Writes benchmarks/results/economizer-guard.json (figures, seed, corpus digest, machine,
commit) and renders docs/economizer/evaluation.md from it. About 1 minute of one core for
200 orderings of the 322-run shared corpus (a run's guard outcome is memoized per budget).
"""

from __future__ import annotations

import argparse
import json
import pathlib
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from ledger_properties.economizer_guard_evaluation import evaluate  # noqa: E402
from ledger_properties.economizer_guard_page import render  # noqa: E402

RESULTS = ROOT / "benchmarks" / "results" / "economizer-guard.json"
PAGE = ROOT / "docs" / "economizer" / "evaluation.md"
CORPUS = ROOT.parent / "shared" / "corpus" / "mini-swe-agent-gemini3pro.jsonl"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus", type=pathlib.Path, default=CORPUS)
    parser.add_argument("--orderings", type=int, default=200)
    parser.add_argument("--seed", type=int, default=24)
    parser.add_argument("--page-only", action="store_true", help="only re-render the page from the stored JSON")
    args = parser.parse_args()
    if not args.page_only:
        report = evaluate(args.corpus, args.orderings, args.seed)
        # Every results file states its load, date and commit at the top level (tests/test_docs.py).
        machine = report["machine"]
        report = {**report, "load": f"1-minute load average {machine['load_1min']:.1f} at the start",
                  "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "commit": machine["commit"][:7]}
        RESULTS.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
        print(f"wrote {RESULTS}")
    PAGE.parent.mkdir(parents=True, exist_ok=True)
    PAGE.write_text(render(json.loads(RESULTS.read_text(encoding="utf-8"))), encoding="utf-8")
    print(f"wrote {PAGE}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
