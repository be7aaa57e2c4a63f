"""The documentation site: generated pages are current, and `mkdocs build --strict` passes and
would fail on a broken link or a page left out of the navigation."""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))

import docs_generate  # noqa: E402
import docs_tables  # noqa: E402

needs_mkdocs = pytest.mark.skipif(
    importlib.util.find_spec("mkdocs") is None or importlib.util.find_spec("material") is None,
    reason="mkdocs-material is not installed (it is in the test extra: pip install -e '.[test]')",
)
PROVENANCE = ("id", "title", "command", "machine", "load", "date", "commit", "source", "columns", "rows")
#: What every results file states, series or not: a figure never travels without where and when
#: it was taken (an unknown stays, written as "not stated ...", but the key is always there).
WHERE_AND_WHEN = ("machine", "load", "date", "commit")


def test_every_generated_page_is_current() -> None:
    assert docs_generate.stale() == [], "run: python scripts/docs_generate.py"


def test_a_changed_measurement_makes_its_page_stale(tmp_path: Path) -> None:
    series = docs_tables.load_series()
    page = (ROOT / "docs" / "benchmarks.md").read_text(encoding="utf-8")
    tables = docs_tables.series_tables(series)
    assert docs_tables.fill(page, tables) == page
    series["memory"]["rows"][0]["RSS growth MB"] += 1
    assert docs_tables.fill(page, docs_tables.series_tables(series)) != page


def test_every_series_records_where_and_when_and_is_shown_on_a_page() -> None:
    pages = "\n".join(path.read_text(encoding="utf-8") for path in (ROOT / "docs").rglob("*.md"))
    for path in sorted((ROOT / "benchmarks" / "results").glob("*.json")):
        series = json.loads(path.read_text(encoding="utf-8"))
        if not docs_tables.is_series(series):
            # A measurement with a page generator of its own: it still says where it was taken,
            # and a page names the file it comes from.
            assert [field for field in WHERE_AND_WHEN if not series.get(field)] == [], path.name
            assert f"benchmarks/results/{path.name}" in pages, f"{path.name} is named on no page"
            continue
        assert [field for field in PROVENANCE if not series.get(field)] == [], path.name
        assert series["id"] == path.stem
        assert f"<!-- table: {path.stem} -->" in pages, f"{path.name} is shown on no page"
        names = [column["name"] for column in series["columns"]]
        assert all(list(row) == names for row in series["rows"]), path.name


def _build(config_dir: Path, site: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-f", str(config_dir / "mkdocs.yml"), "-d", str(site)],
        capture_output=True, text=True, timeout=300, env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
    )


@needs_mkdocs
def test_the_site_builds_strictly(tmp_path: Path) -> None:
    result = _build(ROOT, tmp_path / "site")
    assert result.returncode == 0, result.stderr


# Each breakage with what the strict build must say about it. The build reports every warning
# before it aborts, so one build shows that each setting of `validation:` catches its own case.
BREAKAGES = (
    ("orphan.md", "# Orphan\n", "not included in the \"nav\""),
    ("concepts.md", "\nSee [nothing](no-such-page.md).\n", "no-such-page.md"),
    ("concepts.md", "\nSee [nothing](safety/claim.md#no-such-anchor).\n", "no-such-anchor"),
)


@needs_mkdocs
def test_the_strict_build_fails_on_a_page_missing_from_the_nav_and_on_a_broken_link_or_anchor(tmp_path: Path) -> None:
    copy = tmp_path / "project"
    shutil.copytree(ROOT / "docs", copy / "docs")
    shutil.copy(ROOT / "mkdocs.yml", copy / "mkdocs.yml")
    for page, text, _ in BREAKAGES:
        target = copy / "docs" / page
        target.write_text((target.read_text(encoding="utf-8") if target.exists() else "") + text, encoding="utf-8")
    result = _build(copy, tmp_path / "site")
    assert result.returncode != 0
    warnings = [line for line in result.stderr.splitlines() if line.startswith("WARNING")]
    missed = [complaint for _, _, complaint in BREAKAGES if not any(complaint in line for line in warnings)]
    assert missed == [], result.stderr


README = ROOT / "README.md"


def test_the_readme_is_short_and_shows_the_claude_code_install_on_its_first_screen() -> None:
    lines = README.read_text(encoding="utf-8").splitlines()
    assert len(lines) <= 250, f"README.md has {len(lines)} lines; the front door keeps to 250 (details go under docs/)"
    install = [number for number, line in enumerate(lines, 1) if line.startswith("ledger hooks install claude")]
    assert install and install[0] <= 60, f"the Claude Code install line is at {install or 'no line'}; keep it in the first 60"


def test_the_readmes_verify_excerpt_shows_times_as_verify_prints_them() -> None:
    """The excerpt is a real run's output: its time cells carry a unit, as `ledger verify` prints
    them now (`shown_seconds`: ms below a second), not the unitless `0.0` of every Z3 row before."""
    text = README.read_text(encoding="utf-8")
    excerpt = text[text.index("## The main job: `ledger verify`"):text.index("## The safety claim")]
    cells = [row.split("│")[3].strip() for row in excerpt.splitlines() if row.startswith("│ ") and row.count("│") == 5]
    times = [cell for cell in cells if cell]
    assert times, "no time cells found in the README's ledger verify excerpt"
    assert [cell for cell in times if not re.fullmatch(r"\d+(\.\d)? (ms|s)", cell)] == []


def test_the_readmes_mutation_figure_is_made_from_the_published_rows() -> None:
    """The README's figure is rewritten by `docs_generate` from `benchmarks/results/mutation-
    score.json` (so `test_every_generated_page_is_current` fails on a stale one); a record that
    changes the rows changes it."""
    import docs_mutation

    sums = docs_generate.mutation_sums()
    readme = README.read_text(encoding="utf-8")
    assert docs_mutation.readme_figure(sums) in readme
    changed = docs_mutation.fill_readme(readme, {**sums, "killed": sums["killed"] - 1})
    assert changed != readme and f"{sums['killed'] - 1:,} of" in changed
    with pytest.raises(ValueError, match="no mutation figure"):
        docs_mutation.fill_readme("# A README without it\n", sums)


@pytest.mark.parametrize("page, table, results", [
    ("docs/safety/probe.md", "probe-cost", "probe-cost.json"),
    ("docs/agents/service.md", "service-latency", "service-latency.json"),
])
def test_a_benchmarks_own_table_is_drawn_from_its_json(page: str, table: str, results: str) -> None:
    """These measurements are not in the series format; their benchmark renders them, and the
    page's table changes with the JSON (so test_every_generated_page_is_current covers it)."""
    text = (ROOT / page).read_text(encoding="utf-8")
    assert f"<!-- table: {table} -->" in text
    document = json.loads((ROOT / "benchmarks" / "results" / results).read_text(encoding="utf-8"))
    tables = docs_generate.expected()
    assert tables[ROOT / page] == text
    document["commit"] = "0000000"
    renderer = docs_generate.probe_cost if table == "probe-cost" else docs_generate.service_latency
    assert docs_tables.fill(text, docs_generate.all_tables() | {table: renderer.render(document)}) != text
