"""What the controller sees of a task: its shell steps, and the facts read off them.

A trajectory is the agent's tool calls in order, each with the output the agent saw and its
exit status (mini-swe-agent, Claude Code and Codex all expose these). One step is one turn:
the paper's |xi| = T + 1 counts the agent's actions a_0..a_T, and each action is one step here.

Everything below is a pure, total function of the text: no file system, no clock. The
functions are shared by the spec and the implementation on purpose; the differential test
checks the controller logic built on them, and these functions have their own examples.

Failure signature (paper, Appendix F): the first error line of a failing output, with numbers,
memory addresses and file paths removed, so two outputs that fail the same way match.

  >>> failure_signature("Traceback (most recent call last):\\n  File \\"/testbed/a.py\\", line 3\\nValueError: bad 17", 1)
  'ValueError: bad <n>'
  >>> failure_signature("ok", 0) is None
  True

Choices (the paper leaves them open):
* a step *fails* when its exit status is non-zero or its output contains an error line
  (`ERROR_LINE`); a zero exit with a traceback printed is a failure the agent must read;
* "Traceback (most recent call last):" is not an error line (it names no error), so a
  traceback's signature is its exception line, not the header every Python failure shares;
* a failing step with no recognisable error line takes its first non-empty line, and an
  empty failing output has the signature "<empty>";
* paths are tokens containing "/" or ending in a source-file suffix; numbers are maximal
  digit runs (after addresses and paths, so "0x7f3a" is an address, not a number).
"""

from __future__ import annotations

import re
import shlex

import attrs

ERROR_LINE = re.compile(
    r"^[ \t]*(?:.*?\b[A-Za-z_][\w.]*(?:Error|Exception|Exit)\b|FAILED\b|FAIL:|ERROR\b|.*?\berror:|fatal:|"
    r".*?command not found|.*?No such file or directory|E {2,}\S|Segmentation fault)",
    re.MULTILINE,
)
"""A line that reports an error: an exception name, a failed test, a shell or git error.
Searched over the whole output at once (multi-line), which is what makes the guard cheap."""

_ADDRESS = re.compile(r"0x[0-9a-fA-F]+")
_PATH = re.compile(r"""(?:[\w.~-]*/[\w./~-]*|[\w-][\w.-]*\.(?:py|pyx|c|h|js|ts|txt|cfg|toml|ini|rst|json|yaml|yml)(?![\w.]))""")
_NUMBER = re.compile(r"\d+")
_SPACE = re.compile(r"\s+")
SIGNATURE_LIMIT = 200
"""Characters kept of a signature; past that, two lines differ only in data, not in kind."""


@attrs.frozen
class Step:
    """One turn: the command (or tool call) the agent made and what it saw."""

    command: str
    output: str = ""
    returncode: int = 0
    tool: str = "bash"
    """The tool called. mini-swe-agent has one tool; Claude Code names each call's tool."""


@attrs.frozen
class Trajectory:
    """A finished (or, for the guard, partial) task: its id, steps and success label."""

    task_id: str
    steps: tuple[Step, ...] = attrs.field(converter=tuple)
    passed: bool = False

    @property
    def turns(self) -> int:
        return len(self.steps)


def error_line(output: str) -> str | None:
    """The first line of `output` that reports an error, stripped; None if there is none."""
    match = ERROR_LINE.search(output)
    if match is None:
        return None
    start = output.rfind("\n", 0, match.start()) + 1
    end = output.find("\n", match.start())
    return output[start : len(output) if end < 0 else end].strip()


def is_failing(step: Step) -> bool:
    """A failing output: non-zero exit, or an error line printed under a zero exit."""
    return step.returncode != 0 or error_line(step.output) is not None


def normalize_error(line: str) -> str:
    text = _ADDRESS.sub("<addr>", line)
    text = _PATH.sub("<path>", text)
    text = _NUMBER.sub("<n>", text)
    return _SPACE.sub(" ", text).strip()[:SIGNATURE_LIMIT]


def failure_signature(output: str, returncode: int) -> str | None:
    """The signature of a failing output, or None if the output does not fail."""
    line = error_line(output)
    if line is None:
        if returncode == 0:
            return None
        line = next((candidate.strip() for candidate in output.splitlines() if candidate.strip()), "")
        if not line:
            return "<empty>"
    return normalize_error(line)


def step_signature(step: Step) -> str | None:
    return failure_signature(step.output, step.returncode)


# --- edits ----------------------------------------------------------------------------------

_REDIRECT = re.compile(r"(?<![<>&0-9])(?:>>?|1>>?)\s*([^\s;&|<>()]+)")
_HEREDOC_CAT = re.compile(r"\bcat\s+(?:<<-?\s*['\"]?\w+['\"]?\s*)?>>?\s*([^\s;&|<>()]+)")
_TEE = re.compile(r"\btee\s+(?:-a\s+)?([^\s;&|<>()]+)")
_SED_INPLACE = re.compile(r"\b(?:sed|perl)\s+(?:-[a-zA-Z]*i[a-zA-Z]*\S*|-pi\S*)\b")
_NOT_FILES = {"/dev/null", "/dev/stderr", "/dev/stdout", "&1", "&2"}


def _last_file_argument(segment: str) -> str | None:
    try:
        words = shlex.split(segment, comments=False, posix=True)
    except ValueError:
        words = segment.split()
    for word in reversed(words):
        if word and not word.startswith("-") and not word.startswith("s/") and ("/" in word or "." in word[-5:]):
            return word
    return None


def edited_files(command: str) -> tuple[str, ...]:
    """Files a shell command writes, as the agent named them (not resolved), sorted.

    Covers the idioms agents use to edit: output redirection (`>`, `>>`, `cat <<EOF > f`),
    `tee`, and in-place `sed -i` / `perl -pi` (whose file is the last argument of its
    segment). The guard only needs churn and breadth, so an edit it misses (a Python script
    that writes a file) makes it less eager to stop, never more.
    """
    found: set[str] = set()
    first_line = command.split("\n", 1)[0]
    for pattern in (_REDIRECT, _HEREDOC_CAT, _TEE):
        for match in pattern.finditer(first_line):
            found.add(match.group(1))
    for segment in re.split(r"&&|\|\||;|\n", command):
        if _SED_INPLACE.search(segment):
            target = _last_file_argument(segment)
            if target:
                found.add(target)
    return tuple(sorted(name.strip("'\"") for name in found if name.strip("'\"") not in _NOT_FILES and name))


# --- built-in predicates (the paper's repro_written, importerror, badarg, ran_tests) --------

TEST_COMMAND = re.compile(
    r"(?:^|[;&|(]\s*)(?:[A-Za-z_]\w*=\S*\s+)?(?:timeout\s+\d+\s+)?(?:python[\d.]*\s+(?:-[A-Za-z]+\s+)?)?(?:\S*/)?"
    r"(?:pytest|py\.test|runtests\.py|nosetests|tox)\b|python[\d.]*\s+(?:-[A-Za-z]+\s+)?-m\s+(?:pytest|unittest)\b|"
    r"manage\.py\s+test\b",
    re.MULTILINE,
)
"""A command that runs a test runner: the runner is invoked (first word of a command, possibly
after one VAR=value, `timeout N` or `python`), not merely named (`ls tests/runtests.py`)."""
_REPRO_NAME = re.compile(r"(repro|reproduce|reproduction)\w*\.py")
_IMPORT_ERROR = re.compile(r"\b(ModuleNotFoundError|ImportError)\b|No module named")
_BAD_ARGUMENT = re.compile(r"unrecognized arguments|error: argument|invalid option|illegal option|Usage:|usage:")


def is_test_run(step: Step) -> bool:
    return TEST_COMMAND.search(step.command) is not None


def repro_written(steps: tuple[Step, ...]) -> bool:
    """The agent wrote a reproduction script (a file named repro*/reproduce*.py)."""
    return any(_REPRO_NAME.search(name) for step in steps for name in edited_files(step.command))


def importerror(steps: tuple[Step, ...]) -> bool:
    return any(_IMPORT_ERROR.search(step.output) for step in steps)


def badarg(steps: tuple[Step, ...]) -> bool:
    """A command was rejected for its arguments (a usage message under a non-zero exit)."""
    return any(step.returncode != 0 and _BAD_ARGUMENT.search(step.output) for step in steps)


def ran_tests(steps: tuple[Step, ...]) -> bool:
    return any(is_test_run(step) for step in steps)


BUILTINS = {
    "repro_written": repro_written,
    "importerror": importerror,
    "badarg": badarg,
    "ran_tests": ran_tests,
}
"""The named predicates a proposer may use as a detector instead of a regex."""
