"""A model file system for abstract safety properties: what a read would print right now.

The model is deliberately independent of `ledger_spec.lines`: it splits text character by
character and formats views the way GNU sed, cat -n and nl -ba do, so that a Reuse the spec
serves can be compared with what running the command against the model would print.
"""

from __future__ import annotations

from typing import Callable, Mapping, Sequence

import attrs
from hypothesis import strategies as st

from ledger_spec import (
    NL_NUMBERED,
    NUMBERED,
    PLAIN,
    Category,
    Changes,
    Command,
    Decision,
    FileTarget,
    LineRange,
    Reuse,
    TreeTarget,
)

from .strategies import Step, line_ranges

FileSystem = Mapping[str, str]  # key -> content; an absent key is a missing file
Detector = Callable[[FileSystem, FileSystem, "WorldStep"], Changes]

WORLD_KEYS: tuple[str, ...] = ("a.py", "src/c.py", "__pycache__/a.pyc")
SEARCH_WORD = "x"


@attrs.frozen
class WorldStep:
    """A command and its effect on the model: `writes` replaces (or, with None, deletes) files.

    `opaque` marks a command whose effect a detector cannot see from its text (a script run):
    an honest detector reports such a step as unknown scope.
    """

    command: Command
    writes: tuple[tuple[str, str | None], ...] = ()
    opaque: bool = False


def model_lines(text: str) -> list[tuple[str, bool]]:
    """(line without its newline, whether a newline ended it), walking the text character by
    character: only "\\n" ends a line."""
    result: list[tuple[str, bool]] = []
    current: list[str] = []
    for character in text:
        if character == "\n":
            result.append(("".join(current), True))
            current = []
        else:
            current.append(character)
    if current:
        result.append(("".join(current), False))
    return result


def model_view(text: str, lines: LineRange, view: str) -> str:
    """What `sed -n` (plain), `cat -n | sed -n` (numbered) or `nl -ba | sed -n` would print."""
    printed: list[str] = []
    for number, (line, terminated) in enumerate(model_lines(text), start=1):
        if number < lines.start or (lines.end is not None and number > lines.end):
            continue
        if view == PLAIN:
            printed.append(line + ("\n" if terminated else ""))
        elif view == NUMBERED:
            printed.append(f"{number:6d}\t{line}" + ("\n" if terminated else ""))
        elif view == NL_NUMBERED:
            printed.append(f"{number:6d}\t{line}\n")
        else:
            raise ValueError(f"the model has no view {view!r}")
    return "".join(printed)


def model_search(files: FileSystem) -> tuple[str, int]:
    """`grep -rn x .` over the model: every matching line, files in key order; exit 1 if none."""
    hits = [
        f"{key}:{number}:{line}\n"
        for key in sorted(files)
        for number, (line, _) in enumerate(model_lines(files[key]), start=1)
        if SEARCH_WORD in line
    ]
    return "".join(hits), 0 if hits else 1


def model_run(files: FileSystem, command: Command) -> tuple[str, int]:
    """What running read-only `command` against `files` prints, and its exit status."""
    target = command.target
    if isinstance(target, TreeTarget):
        return model_search(files)
    if isinstance(target, FileTarget):
        if target.key not in files:
            return f"{command.text}: {target.key}: No such file or directory\n", 2
        return model_view(files[target.key], target.lines, target.view), 0
    raise ValueError(f"the model runs only read-only commands with a target, got {command!r}")


def apply_writes(files: FileSystem, step: WorldStep) -> dict[str, str]:
    after = dict(files)
    for key, content in step.writes:
        if content is None:
            after.pop(key, None)
        else:
            after[key] = content
    return after


def changed_keys(before: FileSystem, after: FileSystem) -> frozenset[str]:
    return frozenset(key for key in set(before) | set(after) if before.get(key) != after.get(key))


def complete_detector(before: FileSystem, after: FileSystem, step: WorldStep) -> Changes:
    """Names exactly the keys whose content changed, and admits unknown scope for opaque steps."""
    return Changes(changed_keys(before, after), unknown=step.opaque)


def blind_to_scripts_detector(before: FileSystem, after: FileSystem, step: WorldStep) -> Changes:
    """A wrong detector: it trusts the command text, so a script's edits go unreported."""
    if step.opaque:
        return Changes()
    return Changes(changed_keys(before, after))


@attrs.define
class ModelWorld:
    """The model file system a world script runs in, as the session driver's `execute`:
    each step that runs applies its writes and reports what `detector` makes of them."""

    files: FileSystem
    detector: Detector

    def execute(self, step: WorldStep, decision: Decision) -> Step:
        if isinstance(decision, Reuse):
            # Nothing runs and the spec ignores a reused step's result; the step carries what
            # running the command now would print, for the caller to compare with the Reuse.
            output, status = model_run(self.files, step.command)
            return Step(step.command, output, status, Changes())
        after = apply_writes(self.files, step)
        output, status = model_run(after, step.command) if step.command.read_only else ("", 0)
        ran = Step(step.command, output, status, self.detector(self.files, after, step))
        self.files = after
        return ran


# --- generators ---------------------------------------------------------------------------


def _spell(target: FileTarget | TreeTarget) -> str:
    if isinstance(target, TreeTarget):
        return f"grep -rn {SEARCH_WORD} ."
    end = "$" if target.lines.end is None else str(target.lines.end)
    address = f"{target.lines.start},{end}p"
    if target.view == PLAIN:
        return f"sed -n '{address}' {target.key}"
    numbering = "cat -n" if target.view == NUMBERED else "nl -ba"
    return f"{numbering} {target.key} | sed -n '{address}'"


@st.composite
def file_contents(draw: st.DrawFn, *, max_lines: int = 6) -> str:
    """Text with "\\r", tabs and empty lines, with or without a final newline."""
    lines = draw(st.lists(st.sampled_from(("x", "y", "", "x\r", "a\tb")), max_size=max_lines))
    text = "\n".join(lines)
    if lines and draw(st.booleans()):
        text += "\n"
    return text


@st.composite
def file_systems(draw: st.DrawFn, *, keys: Sequence[str] = WORLD_KEYS) -> dict[str, str]:
    present = draw(st.lists(st.sampled_from(keys), unique=True))
    return {key: draw(file_contents()) for key in present}


@st.composite
def world_steps(draw: st.DrawFn, *, keys: Sequence[str] = WORLD_KEYS) -> WorldStep:
    kind = draw(st.sampled_from(("read", "read", "search", "edit", "script", "test")))
    if kind == "read":
        target = FileTarget(
            draw(st.sampled_from(keys)),
            draw(line_ranges(max_line=7)),
            draw(st.sampled_from((PLAIN, NUMBERED, NL_NUMBERED))),
        )
        text = _spell(target)
        return WorldStep(Command(text + " " * draw(st.integers(0, 1)), text, Category.READ, target))
    if kind == "search":
        text = _spell(TreeTarget())
        return WorldStep(Command(text, text, Category.SEARCH, TreeTarget()))
    key = draw(st.sampled_from(keys))
    content = draw(st.none() | file_contents())
    if kind == "edit":
        return WorldStep(Command(f"edit {key}", f"edit {key}", Category.EDIT), ((key, content),))
    if kind == "script":
        return WorldStep(Command("python fix.py", "python fix.py", Category.RUN), ((key, content),), opaque=True)
    # A test run that may rewrite a cache file, the way pytest writes __pycache__.
    writes = ((keys[-1], content),) if draw(st.booleans()) else ()
    return WorldStep(Command("pytest -q", "pytest -q", Category.TEST), writes)


@st.composite
def world_sessions(draw: st.DrawFn, *, max_steps: int = 30) -> tuple[dict[str, str], list[WorldStep]]:
    """An initial file system and a script; earlier reads are repeated often so Reuse happens."""
    files = draw(file_systems())
    script: list[WorldStep] = []
    for _ in range(draw(st.integers(0, max_steps))):
        earlier_reads = [step for step in script if step.command.read_only]
        choice = draw(st.integers(0, 5))
        if earlier_reads and choice <= 1:
            script.append(draw(st.sampled_from(earlier_reads)))
        elif earlier_reads and choice in (2, 3):
            earlier = draw(st.sampled_from(earlier_reads))
            script.append(_narrower(earlier, draw(line_ranges(max_line=7) | _inner_ranges(earlier))))
        else:
            script.append(draw(world_steps()))
    return files, script


def _inner_ranges(step: WorldStep) -> st.SearchStrategy[LineRange]:
    """Ranges starting inside an earlier read's range, the case range reuse mostly serves."""
    target = step.command.target
    first = target.lines.start if isinstance(target, FileTarget) else 1
    return st.builds(
        lambda start, length: LineRange(start, start + length - 1),
        st.integers(first, first + 3),
        st.integers(0, 3),
    )


def _narrower(step: WorldStep, lines: LineRange) -> WorldStep:
    """The same file and view as an earlier read, another range: what range reuse serves."""
    target = step.command.target
    if not isinstance(target, FileTarget):
        return step
    narrower = attrs.evolve(target, lines=lines)
    text = _spell(narrower)
    return WorldStep(Command(text, text, Category.READ, narrower))
