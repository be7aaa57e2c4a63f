"""benchmarks/reuse_savings.py: what a Reuse sends the model in each answer mode, measured by
replaying commands through a real Runtime (in a temporary directory) and answering each step
with Claude's real hook module, and recorded as the series its documentation table is drawn from.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

from benchmarks import record, reuse_savings  # noqa: E402
from ledger_impl.agents import claude  # noqa: E402
from ledger_impl.agents.hook_session import reference_text  # noqa: E402
from ledger_properties.audit.formats import LEDGER_CORPUS, SWE_BENCH_ROOT, Shell, Trajectory  # noqa: E402
from ledger_properties.economizer_evaluation import PROMPT_CHARS, context_weights  # noqa: E402
from test_benchmark_record import assert_provenance, column_shape  # noqa: E402

LINE = "a line of the file that the agent reads twice, unchanged in between\n"


def replayed(tmp_path: Path, files: dict[str, str], commands: list[str]) -> dict[str, list[reuse_savings.Sent]]:
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    for name, text in files.items():
        (workspace / name).write_text(text)
    items = tuple(Shell(index, command) for index, command in enumerate(commands))
    trajectory = Trajectory("t#1", "t-1", LEDGER_CORPUS, SWE_BENCH_ROOT, items, "t.jsonl")
    return reuse_savings.replay(trajectory, workspace, tmp_path / "state", probe=False, max_steps=None)


def test_a_repeated_read_is_answered_by_reference_only_in_reference_mode(tmp_path: Path) -> None:
    sent = replayed(tmp_path, {"a.txt": LINE * 10}, ["cat a.txt", "cat a.txt"])
    verbatim, reference = sent["verbatim"][1], sent["reference"][1]
    assert verbatim.reused and not verbatim.referenced and verbatim.text.endswith(LINE.strip())
    assert reference.reused and reference.referenced and reference.text == reference_text(0)
    # The first read is the model's delivery in both modes: the same bytes.
    assert sent["verbatim"][0] == sent["reference"][0] and sent["verbatim"][0].text == (LINE * 10).strip()


def test_a_read_after_an_edit_is_run_again_in_both_modes(tmp_path: Path) -> None:
    sent = replayed(tmp_path, {"a.txt": LINE * 10}, ["cat a.txt", "echo more >> a.txt", "cat a.txt"])
    assert [item.reused for item in sent["reference"]] == [False, False, False]
    assert sent["reference"][2].text.endswith("more")


@pytest.mark.parametrize("text, why", [("ok\n", "the note is no shorter than the verbatim answer"),
                                        (LINE * 80, "the earlier result did not fit Claude's inline bound")])
def test_reference_mode_answers_verbatim_where_claudes_hook_does(tmp_path: Path, text: str, why: str) -> None:
    # The two cases are what they say.
    assert claude.fits_inline(text) == (len(reference_text(0)) >= len(claude.reuse_fields(
        reuse_savings.Decision("reuse", text.strip(), 0, None, 0))["permissionDecisionReason"]))
    sent = replayed(tmp_path, {"a.txt": text}, ["cat a.txt", "cat a.txt"])
    assert sent["reference"][1].reused and not sent["reference"][1].referenced, why
    assert sent["reference"][1] == sent["verbatim"][1]


def test_lines_cut_from_another_reads_output_are_run_as_claudes_hook_runs_them(tmp_path: Path) -> None:
    sent = replayed(tmp_path, {"a.txt": LINE * 10}, ["cat a.txt", "sed -n '2,3p' a.txt"])
    second = sent["reference"][1]
    assert second.sliced and not second.reused and second.text == (LINE * 2).strip()


def test_a_reuse_is_weighted_once_for_every_later_turn_as_the_economizer_weighs_it(tmp_path: Path) -> None:
    sent = replayed(tmp_path, {"a.txt": LINE * 10}, ["cat a.txt", "cat a.txt", "ls", "ls -a"])
    for mode, items in sent.items():
        figures = reuse_savings.figures(items)
        turns = [reuse_savings.Turn(item.command, item.text) for item in items]
        without = [reuse_savings.Turn(item.command, "" if item.reused else item.text) for item in items]
        # Taking the Reuse's text out of the run takes exactly its weighted share off the total.
        share = (sum(context_weights(turns)) - sum(context_weights(without))) / reuse_savings.CHARS_PER_TOKEN
        assert figures["weighted_tokens"] == share == len(items[1].text) * 2 / reuse_savings.CHARS_PER_TOKEN, mode
        assert figures["run_weighted_tokens"] * reuse_savings.CHARS_PER_TOKEN == sum(context_weights(turns))
        assert figures["bytes"] == len(items[1].text.encode())
    assert reuse_savings.figures(sent["reference"])["weighted_tokens"] < reuse_savings.figures(sent["verbatim"])["weighted_tokens"]
    assert sum(context_weights([])) == 0 and context_weights(turns)[0] == PROMPT_CHARS


@pytest.mark.skipif(not reuse_savings.CORPUS.is_file(), reason="the shared corpus (../shared/corpus) is not on this machine")
def test_a_tiny_run_records_the_series_its_documentation_table_is_drawn_from(tmp_path: Path) -> None:
    argv = ["--runs", "1", "--max-steps", "8", "--no-probe"]
    assert reuse_savings.main([*argv, "--record"], results=tmp_path) == 0
    series = json.loads((tmp_path / "reuse-savings.json").read_text(encoding="utf-8"))
    assert_provenance(series, record.command_line("reuse_savings.py", argv))
    assert series["rows"][-1]["run (instance)"] == "all 1 runs" and series["rows"][-1]["steps"] <= 8
    assert "probe off" in series["notes"]
    stored = record.RESULTS / "reuse-savings.json"
    if stored.exists():
        assert column_shape(series) == column_shape(json.loads(stored.read_text(encoding="utf-8")))
