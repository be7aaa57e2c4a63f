"""Markdown tables rendered from the measurement series in `benchmarks/results/`.

Each series is one JSON file: what was measured and how (`command`), where (`machine`, `load`),
when (`date`, `commit`), where the figures come from (`source`), what the command needs that a
fresh clone does not have (`needs`, optional), and the table itself as
`columns` (name, alignment, and a number format for numeric columns) and `rows` (one object per
row, keyed by column name; a number where the column has a format, else the cell's text, None
for an empty cell). A page asks for a table with a marker pair, and `fill` rewrites what lies
between the markers:

    <!-- table: hunt-profiles -->
    (generated)
    <!-- /table -->
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

RESULTS = Path(__file__).resolve().parent.parent / "benchmarks" / "results"
MARKER = re.compile(r"(<!-- table: (?P<id>[A-Za-z0-9_./:-]+) -->\n)(?P<body>.*?)(<!-- /table -->)", re.DOTALL)


class UnknownTable(KeyError):
    """A page asks for a table nobody generates (a series with no file in `benchmarks/results/`)."""


def load_series(results: Path = RESULTS) -> dict[str, dict[str, Any]]:
    """Every table series (a result file with `columns` and `rows`), by the file name it is
    stored under (without `.json`). Other result files are measurements with a page generator
    of their own (the economizer's guard evaluation, for one)."""
    loaded = {path.stem: json.loads(path.read_text(encoding="utf-8")) for path in sorted(results.glob("*.json"))}
    return {name: series for name, series in loaded.items() if is_series(series)}


def is_series(document: Mapping[str, Any]) -> bool:
    return "columns" in document and "rows" in document


def _cell(value: Any, column: Mapping[str, Any]) -> str:
    if value is None:
        return ""
    number_format = column.get("format")
    return number_format.format(value) if number_format else str(value)


def _row(texts: Iterable[str]) -> str:
    return "|" + "|".join(f" {text} " if text else " " for text in texts) + "|"


def render_table(series: Mapping[str, Any]) -> str:
    """The series' table as Markdown, one line per row, no trailing newline."""
    columns = series["columns"]
    lines = [_row(column["name"] for column in columns)]
    lines.append("|" + "|".join("---:" if column["align"] == "right" else "---" for column in columns) + "|")
    for row in series["rows"]:
        lines.append(_row(_cell(row[column["name"]], column) for column in columns))
    return "\n".join(lines)


def _provenance(series: Mapping[str, Any]) -> str:
    """One line under each table, so a figure never travels without where and when it was taken."""
    stated = [field for field in ("machine", "load", "date", "commit") if not str(series[field]).startswith("not stated")]
    parts = [f"`{series['command']}`"] + [f"{field}: {series[field]}" for field in stated]
    if "needs" in series:  # an input a fresh clone does not have: say so beside the command
        parts.insert(1, f"needs {series['needs']}")
    return f"<small>Data: `benchmarks/results/{series['id']}.json` ({series['source']}). " + "; ".join(parts) + ".</small>"


def series_tables(series: Mapping[str, Mapping[str, Any]]) -> dict[str, str]:
    """Each series' table with the line saying where its data come from, by series name."""
    return {name: f"{render_table(one)}\n\n{_provenance(one)}" for name, one in series.items()}


def fill(text: str, tables: Mapping[str, str]) -> str:
    """`text` with every marked table replaced by the one `tables` has under its name."""

    def replace(match: re.Match[str]) -> str:
        if match["id"] not in tables:
            raise UnknownTable(f"a page asks for the table {match['id']!r}, which nothing generates")
        return f"{match[1]}{tables[match['id']]}\n{match[4]}"

    return MARKER.sub(replace, text)
