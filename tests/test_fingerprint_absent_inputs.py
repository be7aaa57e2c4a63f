"""What does not exist yet is an input of the fingerprint, not an error: a missing PATH entry and
a program named by a path not yet written. Each test names the operator mutant it kills."""

from __future__ import annotations

from pathlib import Path

from test_fingerprint import _moves, _write, env, root  # noqa: F401 - `env` and `root` are fixtures


def test_a_missing_directory_on_the_path_is_an_input_and_a_program_made_there_moves_it(
    root: Path, env: dict[str, str], tmp_path: Path  # noqa: F811
) -> None:
    """Mutation (ledger_impl/fingerprint.py:342, `except OSError` in `_directory_identity`
    caught nothing else): a PATH entry that does not exist is common (a tool's bin directory
    not yet made). Its absence is part of the fingerprint, not an error, and a program that
    appears there first moves it."""
    later = tmp_path / "later-bin"
    env["PATH"] = f"{later}:{env['PATH']}"
    _moves(root, env, "head -3 src/app.py", lambda: _write(later / "head", "#!/bin/sh\necho shadowed\n", 0o755))


def test_a_program_named_by_a_path_that_does_not_exist_yet_is_fingerprinted_and_moves_when_made(
    root: Path, env: dict[str, str]  # noqa: F811
) -> None:
    """Mutation (ledger_impl/fingerprint.py:350, `except OSError` in `_followed_identity`
    caught nothing else): `./tool` before the tool exists is a read like any other (it fails);
    the program's absence is an input, and writing it moves the fingerprint."""
    _moves(root, env, "./tool src/app.py", lambda: _write(root / "tool", "#!/bin/sh\ncat \"$@\"\n", 0o755))
