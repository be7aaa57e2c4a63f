"""Classes of reads whose output depends on more than the target the classifier names.

A read may be reused only if its output is a function of its target. Each row below is one
class of ways that fails, written once: its rule, why, and the counterexample that shows it.
The data the rules need (option names, variables, config keys) is defined here too, and the
parsers and `command.py` consult it; nothing else in the classifier repeats it.

| class | rule | where it applies |
|---|---|---|
| header views | a view that prints a header or file name is its own view, never sliced | `header_view` (views) |
| tilde in a word | `~` after an unquoted `=` or `:` makes the word dynamic | `shell._unquoted` |
| clock readers | a command that prints the time or chance is `run` | `reads_the_clock`, `FIND_AGE_TESTS`, `git_reads_the_clock` |
| link targets | an option that inspects what a symlink points to counts as following links | `ls_inspects_targets`, `FIND_TARGET_TESTS` |
| git side effects | a git read that refreshes the index, or may run a configured program, is not read-only | `GIT_INDEX_REFRESH`, `git_config_runs_programs` |
| option values | an outside path inside `--opt=value` puts the read outside the root | `option_value_path` (command) |
"""

from __future__ import annotations

import os
import re
from typing import Mapping

import attrs

from .. import git_inputs


@attrs.frozen
class Hazard:
    name: str
    rule: str
    reason: str
    counterexample: str | None  # the files in counterexamples/ that show the class, if any


HAZARDS: tuple[Hazard, ...] = (
    Hazard("header views", "head/tail -v (and any view that names its file) get a view of their own",
           "`==> a.txt <==` is not in `cat a.txt`: slicing one into the other serves the wrong bytes",
           "classifier-head-v-sliced-across-spellings.json (hunt), classifier-head-v-served-from-cat.json"),
    Hazard("tilde in a word", "`~` right after an unquoted `=` or `:` makes the word dynamic",
           "bash expands `x=~/f` to `x=$HOME/f`, a path outside the root",
           "classifier-tilde-after-equals-is-expanded.json"),
    Hazard("clock readers", "printf's %(...)T, $SECONDS, $EPOCHSECONDS, $EPOCHREALTIME, $RANDOM, date, time, "
           "find's age tests, git's relative dates and date limits: run (awk's systime/rand and sort -R are "
           "refused by their parsers)",
           "the answer changes with nothing on disk changing, so no detector can report it",
           "classifier-find-mmin-reads-the-clock.json (the same class through find's age tests)"),
    Hazard("link targets", "ls -l with -F/-p/--classify/--file-type/--indicator-style; find -xtype, "
           "-executable, -readable, -writable, -printf %Y: run, like the options that follow links "
           "(find -L, ls -L, grep -R, rg -L, diff -r), which their parsers refuse",
           "they stat a symlink's target, which may lie outside the root where no detector looks",
           "classifier-find-xtype-follows-a-link-out-of-the-root.json"),
    Hazard("git side effects", "git describe --dirty/--broken is not read-only; no git read is reusable while "
           "a git config file sets an external diff, textconv, fsmonitor, pager or include",
           "describe --dirty writes .git/index even with GIT_OPTIONAL_LOCKS=0; configured programs can do "
           "anything and print anything",
           "classifier-git-describe-dirty-rewrites-index.json, classifier-git-diff-runs-a-configured-textconv.json"),
    Hazard("option values", "a path in `--opt=value` (absolute or with `..`) is checked like an operand",
           "`git ls-files --exclude-from=/x` reads a file outside the root", "classifier-exclude-from-outside-the-root.json"),
)


# -- header views ---------------------------------------------------------------------------

HEADER_FLAGS = frozenset({"v", "verbose"})  # head/tail: print `==> FILE <==` before the lines


# -- clock readers --------------------------------------------------------------------------

# $SECONDS, $EPOCHSECONDS, $EPOCHREALTIME, $RANDOM, $SRANDOM: any `$` makes a word dynamic
# (shell.py), and a command with a dynamic word is `run`; nothing more is needed for them.
CLOCK_PROGRAMS = frozenset({"date", "time", "uptime"})
_PRINTF_TIME = re.compile(r"%\([^)]*\)T")


# find's age tests: "changed in the last 5 minutes" changes answer as time passes.
FIND_AGE_TESTS = frozenset({"-mmin", "-mtime", "-cmin", "-ctime"})
# git: relative or human dates, and limits such as "yesterday".
_GIT_CLOCK_OPTIONS = ("--relative-date", "--date=relative", "--date=human", "--since", "--until", "--after",
                      "--before", "--max-age", "--min-age")
_GIT_CLOCK_PLACEHOLDERS = re.compile(r"%[ac][rh]")  # %ar %cr (relative), %ah %ch (human)


def git_reads_the_clock(text: str, previous: str) -> bool:
    """Whether a git argument makes its output move with the clock. `previous` is the argument
    before it, for options given as two words (`--date relative`)."""
    if text.startswith(_GIT_CLOCK_OPTIONS) or _GIT_CLOCK_PLACEHOLDERS.search(text) or "@{" in text:
        return True  # `HEAD@{5 minutes ago}` picks a commit by time
    if text.startswith("--date=") or previous == "--date":
        return any(word in text for word in ("relative", "human"))
    return False


def reads_the_clock(name: str, args: list[str]) -> bool:
    """Whether a command otherwise judged harmless prints the time (printf's `%(fmt)T`)."""
    if name in CLOCK_PROGRAMS:
        return True
    return name == "printf" and bool(args) and bool(_PRINTF_TIME.search(args[0]))


# -- link targets ---------------------------------------------------------------------------

_LS_LONG_FORMAT = frozenset({"l", "g", "n", "o"})
_LS_INDICATORS = frozenset({"F", "p", "classify", "file-type"})


def ls_inspects_targets(flags: list[tuple[str, str | None]]) -> bool:
    """`ls -l` with an indicator appends the target's type to `link -> target`."""
    long_format = any(name in _LS_LONG_FORMAT or (name == "format" and value in ("long", "verbose"))
                      for name, value in flags)
    indicator = any(name in _LS_INDICATORS or (name == "indicator-style" and value != "none")
                    for name, value in flags)
    return long_format and indicator


FIND_TARGET_TESTS = frozenset({"-xtype", "-executable", "-readable", "-writable"})
FIND_TARGET_FORMATS = re.compile(r"%Y")  # -printf: the type of what a symlink points to


# -- git side effects -----------------------------------------------------------------------

GIT_INDEX_REFRESH: dict[str, tuple[str, ...]] = {"describe": ("--dirty", "--broken")}
# Config keys that make a git read run a program, or pull in more config from elsewhere.
_GIT_PROGRAM_KEYS = re.compile(r"^\s*(external|textconv|command|fsmonitor|pager|path)\s*(=|$)|^\s*\[\s*include",
                               re.IGNORECASE | re.MULTILINE)


# A config file is searched up to this many characters; a longer one is not proven safe.
_CONFIG_READ_LIMIT = 1_000_000


def git_config_files(real_root: str, environment: Mapping[str, str]) -> list[str] | None:
    """The config files git reads for a repository in `real_root` run with `environment`, or
    None when they cannot be listed from here (no `.git` in the root, an unreadable `.git`
    file, config given through the environment). A linked worktree's `.git` file is followed
    as git follows it (`git_inputs.discover`): its own `config.worktree`, the main
    repository's `config`."""
    if any(name in environment for name in ("GIT_CONFIG_PARAMETERS", "GIT_CONFIG", "GIT_DIR")):
        return None
    if not os.path.lexists(os.path.join(real_root, ".git")):
        return None
    found = git_inputs.discover(real_root, environment)
    if found is None:
        return None
    git_dir, common = found
    return git_inputs.config_files(git_dir, common, environment)


def git_config_runs_programs(real_root: str | None, environment: Mapping[str, str]) -> bool:
    """Whether a git read in this repository, run with `environment` (what the command runs
    with, not this process's own), may run a configured program: unless every config file git
    reads is readable here and sets none of the keys that name one, assume it may.

    Config given through GIT_CONFIG_COUNT is allowed only as far as the Runtime sets it itself
    (diff.autoRefreshIndex), which runs nothing."""
    if real_root is None:
        return False  # lexical classification: nothing on disk to consult
    for index in range(int(environment.get("GIT_CONFIG_COUNT", "0") or 0)):
        if _GIT_PROGRAM_KEYS.search(environment.get(f"GIT_CONFIG_KEY_{index}", "").rpartition(".")[2] + "="):
            return True
    files = git_config_files(real_root, environment)
    if files is None:
        return True
    for path in files:
        try:
            with open(path, encoding="utf-8", errors="replace") as handle:
                text = handle.read(_CONFIG_READ_LIMIT + 1)
        except FileNotFoundError:
            continue
        except OSError:
            return True
        if len(text) > _CONFIG_READ_LIMIT or _GIT_PROGRAM_KEYS.search(text):
            return True  # a key past the part searched would go unseen: not proven
    return False


# -- option values --------------------------------------------------------------------------


def option_value_path(text: str) -> str | None:
    """The value of `--opt=value` (or `-o=value`) when it looks like a path that may leave the
    root: absolute, or with a `..` component. Other values are not paths the shell sees."""
    if not text.startswith("-") or "=" not in text:
        return None
    value = text.partition("=")[2]
    if value.startswith("/") or ".." in value.split("/"):
        return value
    return None
