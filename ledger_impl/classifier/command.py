"""Classify a whole command: lists, pipelines, working directories, targets, normalization."""

from __future__ import annotations

import os
from typing import Mapping

from ledger_spec import NL_NUMBERED, NUMBERED, PLAIN, WHOLE_FILE, Category, Command, FileTarget, LineRange, TreeTarget

from .. import shell
from ..shell import Redirect, Word
from ..workspace import Workspace
from .effect import EDIT, NEUTRAL, RUN, Effect, Kind
from .hazards import git_config_runs_programs, option_value_path
from .table import effect_of


# --- the whole command ---------------------------------------------------------------------

_PRIORITY = [Category.TEST, Category.RUN, Category.EDIT]


def _unknown(text: str) -> Command:
    return Command(text=text, normalized=text, category=Category.UNKNOWN)


def classify(
    command: str,
    cwd: str = ".",
    root: str | os.PathLike[str] | None = None,
    environment: Mapping[str, str] | None = None,
) -> Command:
    """Classify `command`, run in `cwd` (relative to `root`) with `environment` (this
    process's own by default), into a spec `Command`.

    Never raises: unparsable, unsupported or malformed input is `Category.UNKNOWN`.
    """
    if not isinstance(command, str):
        try:
            command = os.fsdecode(command)  # type: ignore[arg-type]
        except Exception:
            command = repr(command)
    try:
        return classify_strict(command, cwd, root, environment)
    except shell.ShellSyntaxError:
        return _unknown(command)
    except Exception:  # noqa: BLE001 - the layer must never crash on an agent's command
        return _unknown(command)


def _effective_redirect_kind(effect: Effect, redirects: list[Redirect]) -> Effect:
    if any(r.dynamic or (r.target is not None and (r.target.executes or r.target.dynamic)) for r in redirects):
        return RUN
    if any(r.writes_file for r in redirects):
        return effect if effect.kind in (Kind.TEST, Kind.RUN) else EDIT
    if effect.kind in (Kind.READS, Kind.FILTER) and any(r.moves_stdout for r in redirects):
        return RUN  # `cat f > /dev/null` prints nothing: that is not f's content
    inputs = [r.reads_file for r in redirects if r.reads_file is not None]
    if inputs:
        if effect.kind not in (Kind.FILTER, Kind.READS):
            return effect if effect.kind in (Kind.TEST, Kind.RUN, Kind.EDIT) else RUN
        return Effect(Kind.READS, search=effect.search, files=(*effect.files, *inputs), trees=effect.trees, tree=True)
    if any(r.op in ("<<", "<<-", "<<<") for r in redirects) and effect.kind is Kind.FILTER:
        return NEUTRAL  # reads only its here-document, which is part of the text
    return effect


def classify_strict(
    text: str,
    cwd: str = ".",
    root: str | os.PathLike[str] | None = None,
    environment: Mapping[str, str] | None = None,
) -> Command:
    """`classify`, but an internal error propagates (and unparsable text raises
    `shell.ShellSyntaxError`): for tools that count the classifier's own failures."""
    script = shell.parse(text)
    commands = script.commands()
    if not commands:
        return _unknown(text)
    workspace = Workspace(root)
    start_cwd: str | None = workspace.cd(".", cwd) if cwd not in ("", ".") else "."

    effects = [_effective_redirect_kind(effect_of(c), c.redirects) for c in commands]
    kinds = {e.kind for e in effects}
    background = any(s.background for s in script.statements)
    for category, kind in zip(_PRIORITY, (Kind.TEST, Kind.RUN, Kind.EDIT)):
        if kind in kinds:
            return Command(text=text, normalized=_canonical(script, start_cwd), category=category)
    if any(e.repository for e in effects) and git_config_runs_programs(
        workspace.real_root, os.environ if environment is None else environment
    ):
        # An external diff, textconv or fsmonitor program may write and print anything.
        return Command(text=text, normalized=_canonical(script, start_cwd), category=Category.RUN)
    if background or Kind.READS not in kinds:
        # Nothing read, or a job left running: nothing worth serving again.
        return Command(text=text, normalized=_canonical(script, start_cwd), category=Category.RUN)

    # Every command is read-only. Walk the lists to learn each command's working directory;
    # a `cd` is followed only when `&&` guards what comes after it.
    category = Category.SEARCH if any(e.search for e in effects) else Category.READ
    cwds: list[str | None] = []
    position = 0
    cwd_now = start_cwd
    only_and = len(script.statements) == 1 and all(op == "&&" for op in script.statements[0].connectors)
    for s_index, statement in enumerate(script.statements):
        for p_index, pipeline in enumerate(statement.pipelines):
            for command in pipeline.commands:
                effect = effects[position]
                cwds.append(cwd_now)
                if effect.kind is Kind.CD:
                    guarded = p_index + 1 < len(statement.pipelines) and statement.connectors[p_index] == "&&"
                    last = s_index == len(script.statements) - 1 and p_index == len(statement.pipelines) - 1
                    if len(pipeline.commands) != 1 or not (guarded or last):
                        return Command(text=text, normalized=_canonical(script, start_cwd), category=Category.RUN)
                    if len(effect.files) != 1 or effect.files[0].text in ("-", "-P", "-L", "-e", "-@"):
                        return Command(text=text, normalized=_canonical(script, start_cwd), category=Category.RUN)
                    cwd_now = workspace.cd_word(cwd_now, effect.files[0])
                position += 1

    inside = True
    for effect, cwd_here in zip(effects, cwds):
        for word in effect.files + effect.trees:
            if workspace.key(cwd_here, word) is None:
                inside = False
        if effect.kind in (Kind.READS, Kind.FILTER, Kind.NEUTRAL) and cwd_here is None:
            inside = False
        if effect.repository and not workspace.holds_repository():
            inside = False  # a .git above the root changes where no detector looks

    for command, cwd_here in zip(commands, cwds):
        for word in command.words:
            # The shell expands a glob against the directory; it must stay inside the root.
            if word.has_glob and workspace.key(cwd_here, word) is None:
                inside = False
            # A path inside `--opt=value` is read as surely as an operand (hazards.py).
            value = option_value_path(word.text)
            if value is not None and workspace.key(cwd_here, Word(((value, False),))) is None:
                inside = False

    single = _single_file(script, effects, cwds, workspace) if only_and and inside else None
    if single is not None:
        return Command(text=text, normalized=single[0], category=category, target=single[1])
    normalized = _canonical(script, start_cwd, cwds if only_and else None)
    if not inside:
        return Command(text=text, normalized=normalized, category=category)
    scope = "."
    reading = [(e, c) for e, c in zip(effects, cwds) if e.kind is Kind.READS]
    if len(reading) == 1:
        effect, cwd_here = reading[0]
        words = effect.trees + effect.files
        if len(words) == 1 and not words[0].has_glob:
            key = workspace.key(cwd_here, words[0])
            if key is not None and (effect.trees or key == "."):
                scope = key
    return Command(text=text, normalized=normalized, category=category, target=TreeTarget(scope))


def _single_file(
    script: shell.Script, effects: list[Effect], cwds: list[str | None], workspace: Workspace
) -> tuple[str, FileTarget] | None:
    """`[cd D &&]* READ FILE [| FILTER]*`: the normalized text and file target, or None."""
    statement = script.statements[0]
    position = 0
    for pipeline in statement.pipelines[:-1]:
        if effects[position].kind is not Kind.CD:
            return None
        position += len(pipeline.commands)
    pipeline = statement.pipelines[-1]
    first = effects[position]
    rest = effects[position + 1 : position + len(pipeline.commands)]
    if first.kind is not Kind.READS or first.tree or len(first.files) != 1 or first.view is None:
        return None
    if any(e.kind is not Kind.FILTER for e in rest):
        return None
    if any(w.has_glob for c in pipeline.commands for w in c.words):
        return None  # a glob expands against the directory, which a file target does not track
    cwd = cwds[position]
    assert cwd is not None
    word = first.files[0]
    key = workspace.key(cwd, word)
    if key is None or key == "." or not workspace.readable_file(cwd, word):
        return None
    view, lines = first.view, first.lines
    for effect in rest:
        if view in (PLAIN, NUMBERED, NL_NUMBERED) and effect.stream_slice is not None:
            lines = _compose(lines, effect.stream_slice)
        else:
            view, lines = "pipeline", WHOLE_FILE
    command = pipeline.commands[0]
    if first.path_free:
        # The output cannot show the path, so the key replaces it and the directory is moot.
        words = list(command.words)
        if first.operand_index is not None:
            words[first.operand_index + 1] = Word(((key, False),))
        head = " ".join([w.render() for w in words] + [r.render() for r in command.redirects])
        normalized = head + "".join(f" {op} {c.render()}" for op, c in zip(pipeline.operators, pipeline.commands[1:]))
    else:
        normalized = _prefix(cwd) + pipeline.render()
    return normalized, FileTarget(key, lines, view)


def _compose(lines: LineRange, stream: tuple[int, int | None]) -> LineRange:
    """Lines a..b of a stream that shows file lines `lines`, as file lines."""
    a, b = stream
    start = lines.start + a - 1
    ends = [e for e in (lines.end, None if b is None else lines.start + b - 1) if e is not None]
    end = min(ends) if ends else None
    if end is not None and end < start - 1:
        end = start - 1
    return LineRange(start, end)


def _prefix(cwd: str | None) -> str:
    return "" if cwd in (".", None) else f"cd {shell.shlex.quote(cwd)} && "


def _canonical(script: shell.Script, start_cwd: str | None, cwds: list[str | None] | None = None) -> str:
    """Canonical text. With `cwds` (an `&&` chain), each cd is folded into the next command's prefix."""
    if cwds is None or len(script.statements) != 1 or None in cwds:
        prefix = "" if start_cwd == "." else f"cd {shell.shlex.quote(str(start_cwd))} && "
        return prefix + script.render()
    parts: list[str] = []
    position = 0
    for pipeline in script.statements[0].pipelines:
        first = pipeline.commands[0]
        if len(pipeline.commands) == 1 and first.name == "cd" and not first.redirects:
            position += 1
            continue
        parts.append(_prefix(cwds[position]) + pipeline.render())
        position += len(pipeline.commands)
    return " && ".join(parts) if parts else script.render()
