"""Programs that are not inspection tools: file editors, `cd`, printers of their own arguments,
test runners and `timeout`."""

from __future__ import annotations

import posixpath
import re

from ..shell import Word
from .effect import EDIT, NEUTRAL, RUN, TEST, Effect, Kind

# Programs whose every run may change files, named by their operands.
EDIT_COMMANDS = frozenset(
    {"mv", "cp", "rm", "rmdir", "touch", "mkdir", "ln", "chmod", "chown", "chgrp", "truncate", "install",
     "patch", "tee", "dd", "unlink", "shred"}
)
# Programs that print their own arguments or the directory: nothing read from the tree.
NEUTRAL_COMMANDS = frozenset({"echo", "printf", "pwd", "true", ":"})
INTERPRETERS = re.compile(r"^(python[\d.]*|pypy[\d.]*)$")
TEST_RUNNERS = frozenset({"pytest", "py.test", "tox", "nox", "nosetests"})
TEST_MODULES = frozenset({"pytest", "unittest", "tox", "nose", "nox", "django"})
TEST_SCRIPTS = re.compile(r"(^|/)(runtests\.py|run_tests\.py|bin/test|manage\.py)$")


def is_test(name: str, args: list[Word]) -> bool:
    """Whether `name args` runs a test suite (pytest, `python -m unittest`, `./runtests.py`)."""
    base = posixpath.basename(name)
    if base in TEST_RUNNERS:
        return True
    texts = [w.text for w in args]
    if INTERPRETERS.match(base):
        if len(texts) >= 2 and texts[0] == "-m" and texts[1] in TEST_MODULES:
            return texts[1] != "django" or "test" in texts[2:3]
        if texts and TEST_SCRIPTS.search(texts[0]):
            return not texts[0].endswith("manage.py") or "test" in texts[1:2]
        return False
    return bool(TEST_SCRIPTS.search(name)) and not name.endswith("manage.py")


def cd(args: list[Word]) -> Effect:
    return Effect(Kind.CD, files=args)


def edits(args: list[Word]) -> Effect:
    return EDIT


def neutral(args: list[Word]) -> Effect:
    return NEUTRAL


def perl(args: list[Word]) -> Effect:
    if any(w.text.startswith("-i") or (w.text.startswith("-") and "i" in w.text[1:2]) for w in args):
        return EDIT
    return RUN


def timeout(args: list[Word]) -> Effect:
    """`timeout [options] DURATION COMMAND...`: a test run under a time limit is still a test."""
    rest = [w.text for w in args]
    while rest and rest[0].startswith("-"):
        rest = rest[2:] if rest[0] in ("-s", "-k", "--signal", "--kill-after") else rest[1:]
    if len(rest) >= 2 and is_test(rest[1], args[len(args) - len(rest) + 2 :]):
        return TEST
    return RUN
