"""Each agent's rendering of a command's output, as the probe applies it before comparing.

A rendering that differs from what the agent showed makes the probe's output differ from the
hook's, so the read is not served: a wrong rendering costs every Reuse of that agent's tool,
silently. These tests pin each rendering to the text its agent shows (the adapters' tests and
the real-CLI tests show where those texts come from)."""

from __future__ import annotations

import pytest

from ledger_impl.probe.rendering import (CLAUDE_BASH, CLAUDE_BASH_FAILURE, CLAUDE_NO_OUTPUT, COPILOT_BASH, EXACT,
                                         RENDERINGS, TRIMMED)


def _render(name: str, output: str, exit_status: int = 0) -> str:
    rendering = RENDERINGS[name]
    return output if rendering is None else rendering(output, exit_status)


def test_the_exact_rendering_is_the_bytes_themselves() -> None:
    assert RENDERINGS[EXACT] is None


@pytest.mark.parametrize("output, shown", [
    ("\n  \nfirst\nsecond  \n\n", "first\nsecond"),
    ("", CLAUDE_NO_OUTPUT),
    (" \n\t\n", CLAUDE_NO_OUTPUT),
])
def test_claude_s_bash_tool_strips_leading_blank_lines_and_trailing_space(output: str, shown: str) -> None:
    assert _render(CLAUDE_BASH, output) == shown


def test_a_failed_claude_call_shows_its_exit_code_then_the_stripped_output() -> None:
    """ledger_impl/probe/rendering.py line 40: with the condition inverted, a failure with
    output rendered as the bare exit code and one without as "Exit code N" and a newline."""
    assert _render(CLAUDE_BASH_FAILURE, "\nno such file  \n", 2) == "Exit code 2\nno such file"
    assert _render(CLAUDE_BASH_FAILURE, "  \n", 1) == "Exit code 1"


@pytest.mark.parametrize("output", ["a\nb  \n\n\n", "a\nb", "a\nb\n"])
def test_copilot_s_shell_tool_keeps_one_trailing_newline(output: str) -> None:
    assert _render(COPILOT_BASH, output, 0) == "a\nb\n"
    assert _render(COPILOT_BASH, output, 3) == "a\nb\n"  # whatever the status: it is in a trailer


@pytest.mark.parametrize("output, shown", [("  a\nb \n", "a\nb"), ("", "(empty)"), ("\n \t\n", "(empty)")])
def test_gemini_s_and_qwen_s_shell_tools_trim_and_show_empty_for_nothing(output: str, shown: str) -> None:
    assert _render(TRIMMED, output) == shown
