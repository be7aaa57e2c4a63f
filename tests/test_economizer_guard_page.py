"""The guard evaluation page is what its JSON renders to, and the JSON is of this corpus and
these settings (regenerate both with `python benchmarks/economizer_guard.py`)."""

from __future__ import annotations

import hashlib
import json
import pathlib
from fractions import Fraction

import pytest

from ledger_properties.economizer_guard_evaluation import SETTINGS, summarize
from ledger_properties.economizer_guard_page import render

ROOT = pathlib.Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results" / "economizer-guard.json"
PAGE = ROOT / "docs" / "economizer" / "evaluation.md"
CANDIDATES = [ROOT.parent / "shared", ROOT.parent.parent / "shared"]
CORPUS = next((c / "corpus" / "mini-swe-agent-gemini3pro.jsonl" for c in CANDIDATES if (c / "corpus").is_dir()), None)

REPORT = json.loads(RESULTS.read_text(encoding="utf-8"))


def test_the_page_is_what_the_json_renders_to() -> None:
    assert PAGE.read_text(encoding="utf-8") == render(REPORT), "stale: run python benchmarks/economizer_guard.py --page-only"


def test_the_json_covers_the_current_settings() -> None:
    assert list(REPORT["settings"]) == [s.name for s in SETTINGS]
    for setting in SETTINGS:
        stored = REPORT["settings"][setting.name]
        assert stored["rule"] == setting.params.guard_rule
        assert stored["alpha"] == (str(setting.alpha) if setting.alpha is not None else None)


@pytest.mark.skipif(CORPUS is None or not CORPUS.is_file(), reason="../shared/corpus is not present")
def test_the_json_is_of_the_current_corpus() -> None:
    assert REPORT["corpus"]["sha256"] == hashlib.sha256(CORPUS.read_bytes()).hexdigest()


def test_the_bound_held_on_the_shared_corpus() -> None:
    for setting in (s for s in SETTINGS if s.alpha is not None):
        stored = REPORT["settings"][setting.name]
        for figures in [stored["corpus"], *stored["repositories"].values()]:
            rate = figures["pooled_false_stop_rate"]
            assert rate is None or Fraction(str(rate)) <= setting.alpha


def test_pooled_rate_counts_only_runs_the_guard_could_act_on() -> None:
    orderings = [{"passed": 10, "passed_actable": 4, "false_stops": 1, "failed": 2, "failed_redirected": 1, "failed_stopped": 1, "cost_after_stop": 0.5},
                 {"passed": 10, "passed_actable": 4, "false_stops": 0, "failed": 2, "failed_redirected": 0, "failed_stopped": 0, "cost_after_stop": 0.0}]
    summary = summarize(orderings, Fraction(1, 10))
    assert summary["pooled_false_stop_rate"] == 0.125 and summary["pooled_false_stop_rate_all_passed"] == 0.05
    assert summary["orderings_with_rate_above_alpha"] == 1 and summary["false_stops"]["max"] == 1


def _section(page: str, heading: str) -> str:
    start = page.index(heading)
    end = page.find("\n#", start + len(heading))
    return page[start:end if end != -1 else len(page)]


def test_each_repository_shows_its_orderings_above_alpha() -> None:
    """The per-ordering spread of the bound, per repository: a conformal row says in how many of
    the orderings that repository's false-stop rate exceeded alpha; a kappa row has no alpha."""
    page = render(REPORT)
    for setting in SETTINGS:
        for repository, figures in REPORT["settings"][setting.name]["repositories"].items():
            row = next(line for line in _section(page, f"### {repository} ").splitlines() if line.startswith(f"| {setting.name} |"))
            last = row.rstrip(" |").rsplit("|", 1)[1].strip()
            above = figures["orderings_with_rate_above_alpha"]
            assert last == ("-" if above is None else f"{above} of {REPORT['orderings']}"), row


def test_the_page_says_what_was_not_evaluated() -> None:
    page = render(REPORT)
    assert "no live-provider recording" in page and "../shared/corpus" in page
