"""Hypothesis generators for abstract Ledger sessions, as composable `@st.composite` functions.

Each generator takes keyword knobs (the pool of keys, how often scope is unknown, ...) so a
property can narrow or widen the search without writing a new strategy. Real-filesystem
generators (shell commands that edit and read) live in `ledger_properties.shell_strategies`.
"""

from __future__ import annotations

from typing import Sequence

import attrs
from hypothesis import strategies as st

from ledger_spec import (
    NL_NUMBERED,
    NUMBERED,
    PLAIN,
    Category,
    Changes,
    Command,
    FileTarget,
    LineRange,
    Policy,
    TreeTarget,
)

DEFAULT_KEYS: tuple[str, ...] = ("a.py", "b.py", "src/c.py", "src/d.txt", "__pycache__/a.pyc")
DEFAULT_VIEWS: tuple[str, ...] = (PLAIN, NUMBERED, NL_NUMBERED, "wc")


@attrs.frozen
class Step:
    """One scripted step: the command proposed, and what running it would produce."""

    command: Command
    output: str
    exit_status: int
    changes: Changes


@st.composite
def line_ranges(draw: st.DrawFn, *, max_line: int = 12, whole_file_probability: float = 0.2) -> LineRange:
    """A line range within `max_line`, sometimes the whole file, sometimes empty or from sed."""
    if draw(st.floats(0, 1)) < whole_file_probability:
        return LineRange(1, None)
    start = draw(st.integers(1, max_line))
    shape = draw(st.sampled_from(("closed", "to-end", "empty", "sed-reversed")))
    if shape == "to-end":
        return LineRange(start, None)
    if shape == "empty":
        return LineRange(start, start - 1)
    if shape == "sed-reversed":
        return LineRange.from_sed(start, draw(st.integers(0, max_line)))
    return LineRange(start, draw(st.integers(start, max_line)))


@st.composite
def file_targets(
    draw: st.DrawFn, *, keys: Sequence[str] = DEFAULT_KEYS, views: Sequence[str] = DEFAULT_VIEWS, max_line: int = 12
) -> FileTarget:
    return FileTarget(draw(st.sampled_from(keys)), draw(line_ranges(max_line=max_line)), draw(st.sampled_from(views)))


def _render_target(target: FileTarget | TreeTarget) -> str:
    if isinstance(target, TreeTarget):
        return f"grep -rn x {target.scope}"
    lines = target.lines
    end = "$" if lines.end is None else str(lines.end)
    return f"{target.view} {lines.start},{end} {target.key}"


@st.composite
def commands(
    draw: st.DrawFn,
    *,
    keys: Sequence[str] = DEFAULT_KEYS,
    categories: Sequence[Category] = tuple(Category),
    spellings: int = 2,
    max_line: int = 12,
) -> Command:
    """An abstract command. Read-only ones get a target; `spellings` variants of the typed text
    share one normalized text, so the exit-status rule of exact reuse gets exercised."""
    category = draw(st.sampled_from(categories))
    spelling = draw(st.integers(0, max(0, spellings - 1)))
    if category in (Category.READ, Category.SEARCH):
        if draw(st.booleans()):
            target: FileTarget | TreeTarget | None = draw(file_targets(keys=keys, max_line=max_line))
        elif draw(st.integers(0, 9)) == 0:
            target = None
        else:
            target = TreeTarget(draw(st.sampled_from((".", "src"))))
        normalized = _render_target(target) if target is not None else "cat /etc/hostname"
        return Command(normalized + " " * spelling, normalized, category, target)
    name = draw(st.sampled_from(("x", "y")))
    normalized = f"{category.value} {name}"
    return Command(normalized + " " * spelling, normalized, category)


@st.composite
def changes(
    draw: st.DrawFn, *, keys: Sequence[str] = DEFAULT_KEYS, unknown_probability: float = 0.15, max_keys: int = 3
) -> Changes:
    """A detector report: a few keys, sometimes unknown scope, sometimes nothing."""
    paths = draw(st.frozensets(st.sampled_from(keys), max_size=max_keys))
    unknown = draw(st.floats(0, 1)) < unknown_probability
    return Changes(paths, unknown)


@st.composite
def outputs_for(draw: st.DrawFn, command: Command) -> str:
    """An output that a real run of `command` could print: never more lines than its range."""
    target = command.target
    limit = 6
    if isinstance(target, FileTarget) and target.lines.end is not None:
        limit = max(0, target.lines.end - target.lines.start + 1)
    count = draw(st.integers(0, limit))
    body = "".join(draw(st.sampled_from(("p\n", "q\n", "\n", "r\r\n"))) for _ in range(count))
    if body and draw(st.booleans()):
        body = body[:-1]  # a file without a final newline
    return body


@st.composite
def steps(
    draw: st.DrawFn,
    *,
    keys: Sequence[str] = DEFAULT_KEYS,
    unknown_probability: float = 0.15,
    read_only_changes: bool = False,
) -> Step:
    """One step. Read-only commands change nothing unless `read_only_changes` (a wrong
    classifier) is asked for; other commands report whatever `changes` draws."""
    command = draw(commands(keys=keys))
    output = draw(outputs_for(command))
    exit_status = draw(st.sampled_from((0, 0, 0, 1, 2)))
    if command.read_only and not read_only_changes:
        report = Changes()
    else:
        report = draw(changes(keys=keys, unknown_probability=unknown_probability))
    return Step(command, output, exit_status, report)


@st.composite
def sessions(draw: st.DrawFn, *, min_steps: int = 0, max_steps: int = 40, **step_knobs: object) -> list[Step]:
    """A scripted session. Repeats are drawn on purpose so that Reuse and Nudge get exercised."""
    script: list[Step] = []
    count = draw(st.integers(min_steps, max_steps))
    for _ in range(count):
        if script and draw(st.integers(0, 2)) == 0:
            earlier = draw(st.sampled_from(script))
            script.append(attrs.evolve(earlier, changes=draw(st.sampled_from((earlier.changes, Changes())))))
        else:
            script.append(draw(steps(**step_knobs)))
    return script


@st.composite
def policies(draw: st.DrawFn, *, vary_budget: bool = True) -> Policy:
    """A policy with every threshold drawn near its interesting boundaries."""
    return Policy(
        intervention_cap=draw(st.integers(0, 6) | st.just(200)),
        nudge_cooldown=draw(st.integers(0, 4)),
        short_loop_window=draw(st.integers(0, 5)),
        range_reuse=draw(st.booleans()),
        reuse_mode=draw(st.sampled_from(("full", "reference"))),
        view_budget=draw(st.integers(1, 600)) if vary_budget else 2000,
        view_recent_modifications=draw(st.integers(0, 4)),
        # Small limits make eviction happen within a few steps; the default keeps everything.
        stored_output_limit=draw(st.integers(0, 120) | st.just(Policy().stored_output_limit)),
    )
