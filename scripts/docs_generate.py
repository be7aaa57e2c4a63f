"""Write every generated part of the documentation, or check that none is stale.

    python scripts/docs_generate.py          # rewrite what is stale
    python scripts/docs_generate.py --check  # exit 1, naming each stale file, if any is

Generated: the CLI reference (from the argparse parsers), the counterexample catalog (from
`counterexamples/`), `mutation-survivors.md`, the README's mutation figure, and every table between markers in the pages
under `docs/` (from `benchmarks/results/`, `scripts/mutation_survivors.json` and, for the
agent plugins, the registry `ledger_impl.agents`; for the error hierarchy, the exception classes
in the code; for the service latency and the probe's cost, their benchmarks' own renderers).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import docs_agents  # noqa: E402
import docs_catalog  # noqa: E402
import docs_errors  # noqa: E402
import docs_cli  # noqa: E402
import docs_mutation  # noqa: E402
import docs_tables  # noqa: E402
import mutation  # noqa: E402  (its module list: the modules a totals sentence says are not run yet)

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks import probe_cost, service_latency  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"


def mutation_sums() -> dict[str, object]:
    """The mutation score's totals, from its rows and the modules `scripts/mutation.py` lists."""
    score = json.loads(docs_mutation.SCORE.read_text(encoding="utf-8"))
    return docs_mutation.totals(score, list(mutation.MODULES))


def all_tables() -> dict[str, str]:
    """Every table a page may ask for with a marker, by its name."""
    survivors = docs_mutation.load()
    tables = docs_tables.series_tables(docs_tables.load_series()) | docs_mutation.survivor_tables(survivors)
    tables["mutation-totals"] = docs_mutation.render_totals(mutation_sums())
    tables["agent-plugins"] = docs_agents.render()
    tables["error-hierarchy"] = docs_errors.render()
    # Measurements whose benchmark renders its own tables (not in the series format).
    results = ROOT / "benchmarks" / "results"
    tables["service-latency"] = service_latency.render(json.loads((results / "service-latency.json").read_text()))
    tables["probe-cost"] = probe_cost.render(json.loads((results / "probe-cost.json").read_text()))
    return tables


def expected() -> dict[Path, str]:
    """Every generated file's text as it should be now, by path."""
    survivors = docs_mutation.load()
    tables = all_tables()
    pages = {
        DOCS / "reference" / "cli.md": docs_cli.render(),
        DOCS / "counterexamples" / "catalog.md": docs_catalog.render(),
        ROOT / "mutation-survivors.md": docs_mutation.render_root(tables["mutation-score"], survivors),
        ROOT / "README.md": docs_mutation.fill_readme((ROOT / "README.md").read_text(encoding="utf-8"), mutation_sums()),
    }
    for page in sorted(DOCS.rglob("*.md")):
        if page not in pages:
            text = page.read_text(encoding="utf-8")
            pages[page] = docs_tables.fill(text, tables)
    return pages


def stale() -> list[Path]:
    """The generated files whose text on disk differs from what they should be."""
    return [path for path, text in expected().items() if not path.is_file() or path.read_text(encoding="utf-8") != text]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="write nothing; exit 1 if a generated file is stale")
    args = parser.parse_args(argv)
    if args.check:
        found = stale()
        for path in found:
            print(f"stale: {path.relative_to(ROOT)} (run python scripts/docs_generate.py)", file=sys.stderr)
        return 1 if found else 0
    for path, text in expected().items():
        if not path.is_file() or path.read_text(encoding="utf-8") != text:
            path.write_text(text, encoding="utf-8")
            print(f"wrote {path.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
