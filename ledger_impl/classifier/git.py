"""git: one table of subcommands, read by the classifier and by the rules detector."""

from __future__ import annotations

from ..shell import Word
from .effect import DOT, EDIT, RUN, Effect, Kind
from .hazards import GIT_INDEX_REFRESH, git_reads_the_clock


# The subcommands whose output depends only on the repository and the work tree (with the
# options checked below), and those that change the work tree or .git. Any other subcommand is
# `run`. The rules detector reports unknown scope for every writer: it cannot list their keys.
GIT_READS = frozenset({"status", "diff", "log", "show", "blame", "ls-files", "rev-parse", "shortlog", "describe"})
GIT_WRITERS = frozenset({"apply", "checkout", "restore", "stash", "reset", "add", "commit", "mv", "rm", "clean",
                         "cherry-pick", "revert", "merge", "rebase", "am", "switch", "pull", "init", "clone",
                         "tag", "branch", "worktree"})
# Forms of writers that only list: `git branch -a`, `git stash list`.
_BRANCH_LISTING = frozenset({"-a", "-l", "--list", "-v", "-vv", "-r", "--all", "--show-current"})
_GLOBAL_FLAGS = frozenset({"--no-pager"})


def subcommand(args: list[Word]) -> int | None:
    """The index of the subcommand word in git's arguments, after the global flags known to
    change nothing (`--no-pager`); None when there is none. Any other global option (`-C`, `-c`)
    then stands where the subcommand is looked for, which no table names: such a git is `run`."""
    i = 0
    while i < len(args) and args[i].text in _GLOBAL_FLAGS:
        i += 1
    return i if i < len(args) else None


def _options_keep_it_a_read(sub: str, rest: list[Word]) -> bool:
    """Whether the arguments of a reading subcommand leave it read-only and a function of the
    repository: no file written, no program run, no clock read, no path outside the root.
    `sub` names the option grammar: `stash list` takes log's options, `stash show` diff's."""
    if any(w.text.startswith(GIT_INDEX_REFRESH.get(sub, ())) for w in rest):
        return False  # refreshes and writes .git/index, whatever GIT_OPTIONAL_LOCKS says
    previous = ""
    for word in rest:
        text = word.text
        # --output writes a file; external diff and textconv drivers run programs;
        # --no-index compares arbitrary paths outside the repository.
        if text.startswith(("--output", "--ext-diff", "--textconv", "--no-index", "-O", "--open-files")):
            return False
        if text.startswith("-o") and sub in ("diff", "log", "show"):
            return False
        if git_reads_the_clock(text, previous):
            return False
        if not text.startswith("-") and (text.startswith("/") or ".." in text.split("/")):
            return False  # a path outside the root: git falls back to --no-index
        previous = text
    return True


# `git stash list` passes its options to `git log`, `git stash show` to `git diff`: the same
# hazards (`--output`, `--date=relative`, `--ext-diff`) apply.
_STASH_READS = {"list": "log", "show": "diff"}


def git(args: list[Word]) -> Effect:
    i = subcommand(args)
    if i is None:
        return RUN
    sub = args[i].text
    rest = args[i + 1 :]
    if sub in GIT_READS:
        if not _options_keep_it_a_read(sub, rest):
            return RUN
        return Effect(Kind.READS, search=True, trees=[DOT], tree=True, repository=True)
    if sub == "branch" and all(w.text in _BRANCH_LISTING for w in rest):
        return Effect(Kind.READS, search=True, trees=[DOT], tree=True, repository=True)
    if sub == "stash" and rest and rest[0].text in _STASH_READS:
        if not _options_keep_it_a_read(_STASH_READS[rest[0].text], rest[1:]):
            return RUN
        return Effect(Kind.READS, search=True, trees=[DOT], tree=True, repository=True)
    if sub in GIT_WRITERS:
        return EDIT
    return RUN
