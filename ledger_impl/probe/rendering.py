"""How an agent shows a command's output, applied to the probe's before it is compared.

A hook sees the output as the agent rendered it, not the command's bytes; the probe prints
bytes. Each rendering is named, and the name is stored with the probe (it may run in another
process): "exact" for an agent that passes the bytes through (Codex), "claude-bash" for
Claude Code's Bash tool, which strips leading blank lines and trailing whitespace and shows
`CLAUDE_NO_OUTPUT` for an empty result, and "claude-bash-failure" for its failed call, whose
text is "Exit code N" and the stripped output on the next line, and "copilot-bash" for Copilot
CLI's shell tool, which cuts trailing whitespace and keeps one newline (whatever the exit
status; the status is in a trailer the adapter takes off), and "trimmed" for Gemini CLI's and
Qwen Code's shell tools, which trim the surrounding whitespace and show `(empty)` for none. A
rendering that does not match what the agent did
only makes the outputs differ: the read is then not served, never served wrongly.
"""

from __future__ import annotations

import re
from typing import Callable, Final

CLAUDE_NO_OUTPUT: Final = "(Bash completed with no output)"
EXACT: Final = "exact"
CLAUDE_BASH: Final = "claude-bash"
CLAUDE_BASH_FAILURE: Final = "claude-bash-failure"
COPILOT_BASH: Final = "copilot-bash"
TRIMMED: Final = "trimmed"
_LEADING_BLANK_LINES: Final = re.compile(r"\A(?:[ \t]*\n)+")


def _stripped(output: str) -> str:
    return _LEADING_BLANK_LINES.sub("", output).rstrip()


def _claude_bash(output: str, exit_status: int) -> str:
    return _stripped(output) or CLAUDE_NO_OUTPUT


def _claude_bash_failure(output: str, exit_status: int) -> str:
    body = _stripped(output)
    return f"Exit code {exit_status}\n{body}" if body else f"Exit code {exit_status}"


def _copilot_bash(output: str, exit_status: int) -> str:
    return output.rstrip() + "\n"


def _trimmed(output: str, exit_status: int) -> str:
    return output.strip() or "(empty)"


# Each takes the probe's output and exit status (None: the agent saw the bytes themselves).
RENDERINGS: Final[dict[str, Callable[[str, int], str] | None]] = {
    EXACT: None, CLAUDE_BASH: _claude_bash, CLAUDE_BASH_FAILURE: _claude_bash_failure, COPILOT_BASH: _copilot_bash,
    TRIMMED: _trimmed,
}
