"""One module's mutation run as the published record: its survivors' table and its score row.

Theory of operation. A run (`scripts/mutation.py run MODULE`) leaves a cosmic-ray session; its
survivors are then settled one by one: `check --verdicts FILE` writes `killed by `test`` for each
survivor a named test kills, and a person adds the rest to the same file by hand (`equivalent:`
with the reason, `alive:` with why it is judged harmless, `miss` for a killed mutant that would
have served a stale answer). `record` turns the session and that file into

- the module's table in `scripts/mutation_survivors.json` (rows grouped by verdict, each naming
  its lines and its mutants as "`a` -> `b` in `line`"), and
- its row `"`MODULE` (measured)"` in `benchmarks/results/mutation-score.json`,

replacing what an earlier record of the module wrote. It refuses while a survivor has no verdict
or a verdict names no survivor of the session, so a record always accounts for every mutant.

The verdicts file is JSON: `{"JOB_ID": {"kind": "killed" | "equivalent" | "alive",
"verdict": "killed by `test_x`", "miss": true}}` (`miss` optional, only with `killed`).
"""

from __future__ import annotations

import io
import json
import tokenize
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any, Final

import docs_mutation  # beside this file: how a score row's label names its module

#: How many mutants a row names before it says how many more it groups.
NAMED_PER_ROW: Final = 4
KINDS: Final = ("killed", "equivalent", "alive")


class RecordError(Exception):
    """The session and the verdicts do not account for each other; nothing was written."""


def _tokens(line: str) -> list[str]:
    try:
        return [token.string for token in tokenize.generate_tokens(io.StringIO(line.strip() + "\n").readline)
                if token.type not in (tokenize.NEWLINE, tokenize.NL, tokenize.ENDMARKER, tokenize.INDENT, tokenize.DEDENT)]
    except (tokenize.TokenError, IndentationError):
        return line.split()


def describe(diff: str) -> str:
    """"`a` -> `b` in `line`": the tokens one mutant's diff replaced, and the original line."""
    body = diff.split("\n")
    removed = [line[1:] for line in body if line.startswith("-") and not line.startswith("---")]
    added = [line[1:] for line in body if line.startswith("+") and not line.startswith("+++")]
    if not removed:
        raise RecordError(f"a mutant's diff removes no line:\n{diff}")
    before, after = _tokens(" ".join(removed)), _tokens(" ".join(added))
    start = 0
    while start < min(len(before), len(after)) and before[start] == after[start]:
        start += 1
    end = 0
    while end < min(len(before), len(after)) - start and before[-1 - end] == after[-1 - end]:
        end += 1
    if end and (start == len(before) - end or start == len(after) - end):
        end -= 1  # a token added or dropped (`x` -> `not x`): show it with the token it went with
    old, new = " ".join(before[start:len(before) - end]), " ".join(after[start:len(after) - end])
    # The text goes into a Markdown table, where a bare `|` would end the cell.
    return f"`{old}` -> `{new}` in `{' '.join(line.strip() for line in removed)}`".replace("|", "\\|")


def rows(survivors: Iterable[tuple[str, int, str]], verdicts: Mapping[str, Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The table's rows: survivors (job id, line, diff) with one verdict grouped, by first line."""
    survivors = list(survivors)
    missing = [job for job, _, _ in survivors if job not in verdicts]
    unknown = sorted(set(verdicts) - {job for job, _, _ in survivors})
    if missing or unknown:
        raise RecordError(f"survivors without a verdict: {missing or 'none'}; verdicts of no survivor: {unknown or 'none'}")
    groups: dict[tuple[str, str, bool], list[tuple[int, str]]] = {}
    for job, line, diff in sorted(survivors, key=lambda survivor: (survivor[1], survivor[0])):
        verdict = verdicts[job]
        if verdict.get("kind") not in KINDS or not str(verdict.get("verdict", "")).strip():
            raise RecordError(f"{job}: a verdict needs a kind ({', '.join(KINDS)}) and its text, not {dict(verdict)}")
        if verdict.get("miss") and verdict["kind"] != "killed":
            raise RecordError(f"{job}: only a killed mutant is recorded as a miss (it is caught now)")
        groups.setdefault((verdict["kind"], verdict["verdict"], bool(verdict.get("miss"))), []).append((line, describe(diff)))
    table = []
    for (kind, verdict, miss), members in groups.items():
        named = [text for _, text in members[:NAMED_PER_ROW]]
        more = f" (and {len(members) - NAMED_PER_ROW} more)" if len(members) > NAMED_PER_ROW else ""
        row = {"line": ", ".join(str(line) for line in sorted({line for line, _ in members})),
               "mutant": "; ".join(named) + more, "verdict": verdict, "kind": kind}
        table.append(row | ({"miss": True} if miss else {}))
    return table


def _percent(part: int, whole: int) -> str:
    return "100%" if part == whole else f"{100 * part / whole:.1f}%"


def score_row(module: str, counts: Mapping[str, int], verdicts: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    """The module's row of the mutation-score series, from cosmic-ray's counts and the verdicts."""
    by_kind = {kind: sum(1 for verdict in verdicts.values() if verdict["kind"] == kind) for kind in KINDS}
    mutants = counts["mutants"] - counts["incompetent"]  # a mutant cosmic-ray could not apply is no mutant
    killed = counts["killed"] + counts["timeout"]
    non_equivalent = mutants - by_kind["equivalent"] - counts["pending"]
    caught = killed + by_kind["killed"]
    score = _percent(caught, non_equivalent) if non_equivalent else "-"
    if caught != non_equivalent:
        score += f": {caught} of {non_equivalent}, {by_kind['alive']} alive"
    return {
        "module": f"`{module}` (measured)", "mutants": mutants, "killed by the module's tests": killed,
        "survivors killed by a new test": by_kind["killed"], "equivalent": by_kind["equivalent"],
        "not run yet": counts["pending"], "score (non-equivalent)": f"{score} (raw {100 * killed / mutants:.1f}%)",
    }


def _replace(entries: list[dict[str, Any]], same: Callable[[dict[str, Any]], bool], entry: dict[str, Any]) -> None:
    """`entry` in place of the first entry `same` picks out, or appended if none does."""
    for index, existing in enumerate(entries):
        if same(existing):
            entries[index] = entry
            return
    entries.append(entry)


def write(module: str, source: str, table: list[dict[str, Any]], row: dict[str, Any], survivors_file: Path,
          score_file: Path) -> None:
    """Put the module's table and score row in place of any earlier ones, in both files."""
    survivors = json.loads(survivors_file.read_text(encoding="utf-8"))
    entry = {"module": module, "table": 1, "section": None, "source": source, "columns": ["line", "mutant", "verdict"],
             "rows": table}
    _replace(survivors["tables"], lambda table: table["module"] == module and table["table"] == 1, entry)
    score = json.loads(score_file.read_text(encoding="utf-8"))
    # By the module its label names: an earlier row may carry another note ("(measured, on X)").
    _replace(score["rows"], lambda existing: docs_mutation.row_module(existing) == module, row)
    # Each file keeps the indentation it was written with, so a record's diff is its own rows.
    for path, data, indent in ((survivors_file, survivors, 1), (score_file, score, 2)):
        path.write_text(json.dumps(data, indent=indent, ensure_ascii=False) + "\n", encoding="utf-8")
