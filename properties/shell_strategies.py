"""Hypothesis generators of real shell commands that read and edit a small workspace.

The grammar is a set of `@st.composite` functions with keyword knobs: which files exist in the
pool, which edit idioms are drawn, how paths are spelled (relative, `./`, absolute, `cd sub &&`).
Commands are plain strings with two placeholders, replaced just before they run:

    @ROOT@      the workspace root (absolute), for absolute path spellings
    @OUTSIDE@   a directory next to the workspace, outside the root

so that a recorded command replays unchanged in a fresh temporary directory.

`workspaces()` draws the starting files: a few small text files in a couple of directories,
some without a final newline, one with a space and a non-ASCII letter in its name, a fixture
and the test script that rewrites it, and one file outside the root.
"""

from __future__ import annotations

import difflib
import os
import posixpath
import shlex
import shutil
import subprocess
from typing import Callable, Final, Mapping, Sequence

import attrs
from hypothesis import strategies as st

from ledger_impl import descendants

ROOT_PLACEHOLDER = "@ROOT@"
OUTSIDE_PLACEHOLDER = "@OUTSIDE@"

WORDS: tuple[str, ...] = ("alpha", "beta", "gamma", "delta", "omega")

TEXT_FILES: tuple[str, ...] = ("a.txt", "b.txt", "src/app.py", "src/util.py", "docs/notes.md", "docs/naïve notes.txt")
FIXTURE = "tests/fixture.txt"
TEST_SCRIPT = "run_tests.py"
TOOL_SCRIPT = "tool.py"
OUTSIDE_FILE = "ext.txt"
# Files outside the root a session's commands may read: with SESSION_FILES as its setup's
# environment, BASH_ENV names START_FILE, which sources START_MORE (issue 19's indirect start
# file); TZ names ZONE_FILE, a copy of a zone from ZONEINFO; and libnss_wrapper, preloaded,
# makes PASSWD_FILE and GROUP_FILE the user and group databases (system databases outside the
# root; a test may not edit /etc/passwd). `ledger_properties.oracle` writes them when it
# materializes a workspace; the `start-file`, `zone-file` and `passwd-name` idioms rewrite them,
# and `ledger verify`'s hunt gives every other run this environment.
START_FILE = "start.sh"
START_MORE = "start-more.sh"
ZONE_FILE = "zone"
ZONEINFO = "/usr/share/zoneinfo"
ZONES: tuple[str, ...] = ("UTC", "Asia/Tokyo", "America/New_York")  # the first is the one a session starts with
HAS_ZONES: Final = all(os.path.isfile(os.path.join(ZONEINFO, zone)) for zone in ZONES)
PASSWD_FILE = "passwd"
GROUP_FILE = "group"
NSS_WRAPPER = "libnss_wrapper.so"  # Debian's libnss-wrapper
OWNER_NAMES: tuple[str, ...] = ("builder", "reviewer")  # the first is the one a session starts with
GROUP_NAME = "staff"


def _preloadable(library: str) -> bool:
    """Whether the dynamic loader finds `library` to preload (it only warns when it does not)."""
    try:
        run = subprocess.run(["env", f"LD_PRELOAD={library}", "true"], capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return False
    return run.returncode == 0 and library not in run.stderr


HAS_NSS_WRAPPER: Final = _preloadable(NSS_WRAPPER)
SESSION_FILES: Mapping[str, str] = {
    "BASH_ENV": f"{OUTSIDE_PLACEHOLDER}/{START_FILE}",
    **({"TZ": f"{OUTSIDE_PLACEHOLDER}/{ZONE_FILE}"} if HAS_ZONES else {}),
    **(
        {
            "LD_PRELOAD": NSS_WRAPPER,
            "NSS_WRAPPER_PASSWD": f"{OUTSIDE_PLACEHOLDER}/{PASSWD_FILE}",
            "NSS_WRAPPER_GROUP": f"{OUTSIDE_PLACEHOLDER}/{GROUP_FILE}",
        }
        if HAS_NSS_WRAPPER
        else {}
    ),
}


def passwd_line(name: str, uid: str = "$(id -u)", gid: str = "$(id -g)") -> str:
    """The passwd entry that names the session's user `name` (shell words by default)."""
    return f"{name}:x:{uid}:{gid}::/:/bin/sh"


# Names that do not exist at the start but that edits create (copies, renames, links).
NEW_FILES: tuple[str, ...] = ("new.txt", "src/new.py", "link.txt", "hard.txt")
HARD_LINK = "hard.txt"
DEFAULT_POOL: tuple[str, ...] = TEXT_FILES + (FIXTURE,) + NEW_FILES
DIRECTORIES: tuple[str, ...] = (".", "src", "docs", "tests")

# A background writer's write lands after the step that started it has returned; the `sleep`
# idiom is a step in which nothing but such a write happens, so it outlasts the writer's delay.
# Both are short: a step takes 5-30 ms here, so the write still lands one to a few steps later,
# and until it has landed the oracle checks no coverage and the Runtime reuses nothing.
WRITER_DELAY = "0.05"
QUIET_SLEEP = "0.1"

SPELLINGS: tuple[str, ...] = ("relative", "dot", "absolute", "cd")

# A test that rewrites its fixture every time it runs, as snapshot-testing tools do: the test
# command's effects are not visible in its text, which is exactly what a detector must survive.
TEST_SCRIPT_TEXT = (
    "import pathlib\n"
    "fixture = pathlib.Path('tests/fixture.txt')\n"
    "runs = len(fixture.read_text().splitlines()) if fixture.exists() else 0\n"
    "fixture.write_text(''.join(f'snapshot {i}\\n' for i in range(runs + 1)))\n"
    "print(f'1 passed ({runs + 1} snapshots)')\n"
)

EDIT_IDIOMS: tuple[str, ...] = (
    "sed-i",
    "perl-pi",
    "redirect",
    "append",
    "heredoc",
    "python-c",
    "python-heredoc",
    "tee",
    "cp",
    "mv",
    "rm",
    "ln-s",
    "ln-hard",
    "toggle-hard-link",
    "toggle-dir-file",
    "touch",
    "chmod",
    "patch",
    "git-checkout",
    "git-stash",
    "git-apply",
    "find-exec",
    "test",
    "background",
    "utime-same-size",
    "outside-write",
    "parent-link",
    "sleep",
)

# Issue 8's classes: a program shadowed on PATH, the root deleted and recreated, git's global
# config in the session's HOME, a hard link made from outside the root and written through. The
# first and third are outside the root, where no detector can report them; the observation
# fingerprint covers them. The outside hard link is seen by the event detector's inode watches
# (a directory watch alone misses it: `unsound.events_by_directory`). `git-dir-outside` makes the
# workspace's `.git` a file, as in a linked worktree or a submodule: index, refs and objects then
# live outside the root, and later git writes change what git reads print with no change in the
# root; the fingerprint follows the `.git` file to them. `ledger verify`
# (fingerprint on, as shipped) draws all of them; hunts that judge a detector alone keep the
# grammar above, so their seeds still draw what they drew.
FINGERPRINT_CLASS_IDIOMS: tuple[str, ...] = (
    "path-shadow", "root-recreate", "git-config-home", "outside-hardlink", "git-dir-outside",
)

# Background writers that leave bash's process group (`set -m`: each job gets a group of its own)
# or its session (`setsid`): the Runtime follows every descendant (`ledger_impl.descendants`), and
# serves nothing while one lives. A new session escapes tracking where no cgroup can be made
# (the limit `tests/test_honest_limits.py` shows), so that idiom is drawn only where it is tracked.
DESCENDANT_IDIOMS: tuple[str, ...] = ("background-job-control",) + (
    ("background-setsid",) if descendants.available() == descendants.CGROUP else ()
)

# The `git-dir-outside` idiom's commands ({path}: a key of the pool): move the repository out of
# the root, then change its index or its refs where they now live.
GIT_DIR_OUTSIDE_COMMANDS: tuple[str, ...] = (
    f"git init -q --separate-git-dir={OUTSIDE_PLACEHOLDER}/git-dir .",
    "git rm -q --cached --ignore-unmatch -- {path}",
    "git add -A && git commit -q --allow-empty -m step",
)

# Programs the `path-shadow` idiom puts first on PATH (the session's @OUTSIDE@/bin).
SHADOWED_PROGRAMS: tuple[str, ...] = ("cat", "head", "grep", "ls", "git")

# Read idioms whose classification is known to be wrong (an open classifier fault, with the
# stored counterexample's id). Hunts aimed at a detector leave them out so that they report the
# detector's faults rather than the classifier's; `ledger verify`'s hunt keeps them. None is
# open now: `git diff` rewriting .git/index and `ls -la` showing the root's parent are fixed.
OPEN_CLASSIFIER_FAULTS: dict[str, str] = {}



@attrs.frozen
class WorkspaceSetup:
    """The starting state of a hunt: files in the root (a git repository) and outside it, and
    variables the session's commands run with besides the hunt's (`session_environment`)."""

    files: Mapping[str, str]
    outside: Mapping[str, str]
    git: bool = True
    environment: Mapping[str, str] = attrs.field(factory=dict)

    def to_json(self) -> dict[str, object]:
        document: dict[str, object] = {"files": dict(self.files), "outside": dict(self.outside), "git": self.git}
        if self.environment:  # absent when empty: the ids of hunt files made before it stay the same
            document["environment"] = dict(self.environment)
        return document

    @classmethod
    def from_json(cls, data: Mapping[str, object]) -> "WorkspaceSetup":
        return cls(
            files=dict(data.get("files", {})),  # type: ignore[arg-type]
            outside=dict(data.get("outside", {})),  # type: ignore[arg-type]
            git=bool(data.get("git", True)),
            environment=dict(data.get("environment", {})),  # type: ignore[arg-type]
        )


@st.composite
def file_texts(draw: st.DrawFn, *, max_lines: int = 8, words: Sequence[str] = WORDS) -> str:
    """A small text: numbered lines of a few words, sometimes without a final newline."""
    # One strategy for every word drawn: building (and validating) a new one per word was most
    # of the time a hunt run spent drawing its workspace. The draws are the same.
    word = st.sampled_from(words)
    count = draw(st.integers(0, max_lines))
    lines = [f"{draw(word)} {i + 1} {draw(word)}" for i in range(count)]
    text = "\n".join(lines)
    if lines and draw(st.integers(0, 3)) != 0:
        text += "\n"
    return text


@st.composite
def workspaces(draw: st.DrawFn, *, files: Sequence[str] = TEXT_FILES, max_lines: int = 8) -> WorkspaceSetup:
    """The initial workspace: every file of `files` with drawn text, the fixture and its test."""
    text = file_texts(max_lines=max_lines)
    contents = {name: draw(text) for name in files}
    contents[FIXTURE] = "snapshot 0\n"
    contents[TEST_SCRIPT] = TEST_SCRIPT_TEXT
    outside = {OUTSIDE_FILE: draw(file_texts(max_lines=4))}
    return WorkspaceSetup(contents, outside)


# --- paths ----------------------------------------------------------------------------------


def spell(key: str, spelling: str) -> tuple[str, str]:
    """(prefix, word): how a command names `key` under `spelling`; the prefix may be `cd D && `.

    `cd` spells a file in a subdirectory from inside it; a file in the root has no
    subdirectory to enter, so it is spelled relatively.
    """
    if spelling == "dot":
        return "", shlex.quote("./" + key)
    if spelling == "absolute":
        return "", ROOT_PLACEHOLDER + "/" + shlex.quote(key)
    directory, name = posixpath.split(key)
    if spelling == "cd" and directory:
        return f"cd {shlex.quote(directory)} && ", shlex.quote(name)
    return "", shlex.quote(key)


@st.composite
def paths(draw: st.DrawFn, *, pool: Sequence[str] = DEFAULT_POOL, spellings: Sequence[str] = SPELLINGS) -> tuple[str, str]:
    """(prefix, word) naming a file of `pool` in one of `spellings`."""
    return spell(draw(st.sampled_from(pool)), draw(st.sampled_from(spellings)))


def _plain(key: str) -> str:
    """A file named from the root without a cd: for edits, whose spelling matters less."""
    return shlex.quote(key)


# --- reads ----------------------------------------------------------------------------------


@st.composite
def line_numbers(draw: st.DrawFn, *, max_line: int = 10) -> tuple[int, int]:
    """Two line numbers from a small range, so that drawn ranges overlap and nest often."""
    first = draw(st.integers(1, max_line))
    return first, draw(st.integers(first, max_line))


@attrs.frozen
class ReadContext:
    """What every read idiom may use: a file (with the `cd` prefix its spelling needs), two
    ordered line numbers, a search word and a directory, all drawn before the idiom is built,
    and `draw` for the few idioms that need more."""

    prefix: str
    path: str
    first: int
    last: int
    word: str
    directory: str
    pool: Sequence[str]
    draw: st.DrawFn


def _other_file(ctx: ReadContext) -> str:
    return _plain(ctx.draw(st.sampled_from(ctx.pool)))


def _outside(ctx: ReadContext) -> str:
    shape = ctx.draw(st.sampled_from(("cat {}", "head -n 2 {}", "cat -n {}")))
    return shape.format(f"{OUTSIDE_PLACEHOLDER}/{OUTSIDE_FILE}")


# One entry per read idiom: name -> the command it builds. Adding an idiom means one parser in
# ledger_impl/classifier/table.py, one entry here and one test (CONTRIBUTING.md).
READ_IDIOM_TABLE: dict[str, Callable[[ReadContext], str]] = {
    "cat": lambda c: f"{c.prefix}cat {c.path}",
    "cat-n": lambda c: f"{c.prefix}cat -n {c.path}",
    "nl": lambda c: f"{c.prefix}nl -ba {c.path}",
    "head": lambda c: f"{c.prefix}head -n {c.last} {c.path}",
    "tail": lambda c: f"{c.prefix}tail -n {c.last} {c.path}",
    "tail-from": lambda c: f"{c.prefix}tail -n +{c.first} {c.path}",
    "sed-range": lambda c: f"{c.prefix}sed -n '{c.first},{c.last}p' {c.path}",
    "sed-line": lambda c: f"{c.prefix}sed -n '{c.first}p' {c.path}",
    "sed-plus": lambda c: f"{c.prefix}sed -n '{c.first},+{c.last - c.first}p' {c.path}",
    "awk-range": lambda c: f"{c.prefix}awk 'NR>={c.first} && NR<={c.last}' {c.path}",
    "awk-from": lambda c: f"{c.prefix}awk 'NR>{c.first}' {c.path}",
    "wc": lambda c: f"{c.prefix}wc -l {c.path}",
    "grep-file": lambda c: f"{c.prefix}grep -n {c.word} {c.path}",
    "pipe-head": lambda c: f"{c.prefix}cat {c.path} | head -n {c.last}",
    "pipe-sed": lambda c: f"{c.prefix}cat -n {c.path} | sed -n '{c.first},{c.last}p'",
    # hazards.py, header views: `==> FILE <==` first, so never a slice of `cat`
    "head-v": lambda c: f"{c.prefix}head -v -n {c.last} {c.path}",
    "tail-v": lambda c: f"{c.prefix}tail -v -n +{c.first} {c.path}",
    # hazards.py, tilde in a word: bash reads $HOME/..., outside the root
    "tilde-word": lambda c: f"{c.prefix}cat x=~/{OUTSIDE_FILE}",
    "od": lambda c: f"{c.prefix}od -c {c.path}",
    "grep-tree": lambda c: f"grep -rn {c.word} {shlex.quote(c.directory)}",
    "ls": lambda c: f"ls {shlex.quote(c.directory)}",
    "ls-long": lambda c: f"ls -l {shlex.quote(c.directory)}",
    # Always the root: its `..` line is the one entry that lies outside the workspace.
    "ls-all-long": lambda c: "ls -la",
    # hazards.py, link targets: the type of what a symlink points to
    "ls-long-classify": lambda c: f"ls -lF {shlex.quote(c.directory)}",
    "find": lambda c: f"find {shlex.quote(c.directory)} -name '*.txt'",
    "find-xtype": lambda c: f"find {shlex.quote(c.directory)} -xtype d",
    "git-status": lambda c: "git status --short",
    "git-diff": lambda c: "git diff",
    "git-log": lambda c: "git log --oneline",
    "diff": lambda c: f"diff {_other_file(c)} {_other_file(c)}",
    "sort": lambda c: f"{c.prefix}sort {c.path}",
    "outside": _outside,
}

READ_IDIOMS: tuple[str, ...] = tuple(READ_IDIOM_TABLE)

# --- issue 19's classes: what only the probe sees ------------------------------------------------
# Output that depends on the clock with no clock word in the command. `clock-edge` puts a file's
# mtime one second short of `ls -l`'s six-month cut-off (15778476 s), so a listing a second
# later prints the year instead of the time of day; `git-relative-date` configures relative
# dates and commits 89 s in the past, so `git log -1 --format=%cd` turns from seconds to
# minutes. A device node in the root (`device-node`: the kernel's urandom, or a link to it
# where mknod needs a privilege the hunt lacks) prints new bytes at every read while nothing
# that a detector sees moves. The reads are kept out of READ_IDIOMS (hunts that judge a
# detector alone draw what they drew); `FULL_GRAMMAR` (`ledger verify`) adds both lists. A
# relative PATH entry is drawn by the hook-path hunt (`ledger_properties.hook_hunt`), whose
# sessions vary PATH.
DEVICE_NODE = "random"
PROBE_CLASS_READS: dict[str, Callable[[ReadContext], str]] = {
    "git-log-date": lambda c: "git log -1 --format=%cd",
    "device-read": lambda c: f"od -An -N4 -tu4 {DEVICE_NODE}",
    # ctimes to the nanosecond: what an attribute change (`chattr`, below) alone moves
    "ls-ctime": lambda c: f"ls -lc --full-time {shlex.quote(c.directory)}",
}
READ_IDIOM_TABLE.update(PROBE_CLASS_READS)
PROBE_CLASS_READ_IDIOMS: tuple[str, ...] = tuple(PROBE_CLASS_READS)
# `start-file` rewrites the file the session's start file sources (a line every command then
# prints, or none); `zone-file` copies another zone over the session's TZ file, which moves the
# times `ls -l` prints; `passwd-name` renames the session's user in its passwd database, which
# changes the owner `ls -l` prints. Only the probe's trace names these files: the fingerprint
# sees the variables, not what the files hold. `chattr` sets or clears a file's no-dump flag,
# which moves only its ctime, through an ioctl that raises no attribute event (where the
# filesystem has no flags, it fails and changes nothing).
PROBE_CLASS_EDIT_IDIOMS: tuple[str, ...] = (
    ("clock-edge", "git-relative-date", "start-file", "device-node")
    + (("chattr",) if shutil.which("chattr") else ())
    + (("zone-file",) if HAS_ZONES else ())
    + (("passwd-name",) if HAS_NSS_WRAPPER else ())
)
SIX_MONTHS_SECONDS: Final = 15778476  # GNU ls: older than this, the year instead of the time


@st.composite
def read_commands(
    draw: st.DrawFn,
    *,
    pool: Sequence[str] = DEFAULT_POOL,
    idioms: Sequence[str] = READ_IDIOMS,
    spellings: Sequence[str] = SPELLINGS,
    max_line: int = 10,
) -> str:
    """A read or search, in one of the idioms the classifier knows (and a few it refuses)."""
    idiom = draw(st.sampled_from(idioms))
    if idiom not in READ_IDIOM_TABLE:
        raise ValueError(f"unknown read idiom {idiom!r}")
    prefix, path = draw(paths(pool=pool, spellings=spellings))
    first, last = draw(line_numbers(max_line=max_line))
    word = draw(st.sampled_from(WORDS))
    directory = draw(st.sampled_from(DIRECTORIES))
    return READ_IDIOM_TABLE[idiom](ReadContext(prefix, path, first, last, word, directory, pool, draw))


# --- edits ----------------------------------------------------------------------------------


def _python_string(text: str) -> str:
    return repr(text)


def _replace_program(key: str, word: str, replacement: str, *, missing: str) -> tuple[str, ...]:
    """The statements of a python program that replaces `word` in file `key`, or creates it
    holding `missing`: the `python-c` idiom and the tool script.

    It uses `open` and `os`, loaded with the interpreter: importing pathlib doubled the
    program's run (27 ms against 12 ms here), and a third of a hunt's steps start a Python.
    """
    return (
        "import os",
        f"p = {_python_string(key)}",
        f"t = open(p).read().replace({word!r}, {replacement!r}) if os.path.exists(p) else {missing!r}",
        "f = open(p, 'w')",
        "f.write(t)",
        "f.close()",
    )


def replace_one_line_patch(key: str, old_text: str, new_line: str, line: int) -> str | None:
    """A unified diff that replaces line `line` of `key`, as `patch` and `git apply` read it."""
    old_lines = old_text.splitlines(keepends=True)
    if not old_lines or not old_text.endswith("\n"):
        return None  # a diff of a file without a final newline needs a marker line; skip it
    index = min(line, len(old_lines)) - 1
    new_lines = list(old_lines)
    new_lines[index] = new_line + "\n"
    diff = "".join(difflib.unified_diff(old_lines, new_lines, f"a/{key}", f"b/{key}"))
    return diff or None


@st.composite
def edit_commands(
    draw: st.DrawFn,
    *,
    pool: Sequence[str] = DEFAULT_POOL,
    idioms: Sequence[str] = EDIT_IDIOMS,
    contents: Mapping[str, str] | None = None,
    spellings: Sequence[str] = SPELLINGS,
) -> str:
    """An edit, through one of the idioms agents use.

    `contents` (key -> current text), when given, lets `patch` and `git-apply` produce a diff
    that applies; without it they produce one against the drawn text, which may be rejected.
    """
    idiom = draw(st.sampled_from(idioms))
    key = draw(st.sampled_from(pool))
    other = draw(st.sampled_from(pool))
    path = _plain(key)
    word, replacement = draw(st.sampled_from(WORDS)), draw(st.sampled_from(WORDS + tuple(w.upper() for w in WORDS)))
    text = f"{draw(st.sampled_from(WORDS))} {draw(st.integers(0, 99))}"
    if idiom == "sed-i":
        prefix, spelled = draw(paths(pool=(key,), spellings=spellings))
        return f"{prefix}sed -i 's/{word}/{replacement}/' {spelled}"
    if idiom == "perl-pi":
        return f"perl -pi -e 's/{word}/{replacement}/' {path}"
    if idiom == "redirect":
        prefix, spelled = draw(paths(pool=(key,), spellings=spellings))
        return f"{prefix}echo {shlex.quote(text)} > {spelled}"
    if idiom == "append":
        prefix, spelled = draw(paths(pool=(key,), spellings=spellings))
        if draw(st.booleans()):
            return f"{prefix}echo {shlex.quote(text)} >> {spelled}"
        return f"{prefix}printf '%s' {shlex.quote(text)} >> {spelled}"
    if idiom == "heredoc":
        body = "\n".join(f"{w} {i}" for i, w in enumerate(draw(st.lists(st.sampled_from(WORDS), max_size=4))))
        return f"cat > {path} <<'EOF'\n{body}\nEOF"
    if idiom == "python-c":
        program = "; ".join(_replace_program(key, word, replacement, missing=text))
        return f"python3 -S -c {shlex.quote(program)}"
    if idiom == "python-heredoc":
        return (
            "python3 -S - <<'EOF'\n"
            f"with open({_python_string(key)}, 'a') as f:\n"
            f"    f.write({(text + chr(10))!r})\n"
            "EOF"
        )
    if idiom == "tee":
        flag = "-a " if draw(st.booleans()) else ""
        return f"echo {shlex.quote(text)} | tee {flag}{path}"
    if idiom == "cp":
        return f"cp {path} {_plain(other)}"
    if idiom == "mv":
        return f"mv {path} {_plain(other)}"
    if idiom == "rm":
        return f"rm -f {path}"
    if idiom == "ln-s":
        target = posixpath.relpath(other, posixpath.dirname(key) or ".")
        if draw(st.booleans()):
            target = f"{OUTSIDE_PLACEHOLDER}/{OUTSIDE_FILE}"
        return f"ln -sfn {shlex.quote(target)} {path}"
    if idiom == "ln-hard":
        return f"ln -f {_plain(other)} {path}"
    if idiom == "toggle-hard-link":
        # Each run flips it: link a second name to the file, or drop that name again. Dropping
        # it changes the link count and ctime of a file no command names.
        return f"if [ -e {HARD_LINK} ]; then rm {HARD_LINK}; else ln -f {path} {HARD_LINK}; fi"
    if idiom == "toggle-dir-file":
        # A directory replaced by a file of the same name (its entries are gone), and back.
        directory = shlex.quote(draw(st.sampled_from(DIRECTORIES[1:])))
        return (
            f"if [ -d {directory} ]; then mv {directory} {directory}.old && echo {shlex.quote(text)} > {directory}; "
            f"else rm -f {directory} && mv {directory}.old {directory}; fi"
        )
    if idiom == "touch":
        return f"touch {path}"
    if idiom == "chmod":
        return f"chmod {draw(st.sampled_from(('600', '644', '755', '+x')))} {path}"
    if idiom in ("patch", "git-apply"):
        old_text = (contents or {}).get(key, "")
        diff = replace_one_line_patch(key, old_text, text, draw(st.integers(1, 8)))
        if diff is None:
            diff = f"--- a/{key}\n+++ b/{key}\n@@ -1 +1 @@\n-{word}\n+{text}\n"
        if idiom == "patch":
            return f"patch -p1 <<'EOF'\n{diff}EOF"
        return f"git apply <<'EOF'\n{diff}EOF"
    if idiom == "git-checkout":
        return draw(st.sampled_from((f"git checkout -- {path}", "git checkout -- .")))
    if idiom == "git-stash":
        return draw(st.sampled_from(("git stash", "git stash pop", "git stash apply")))
    if idiom == "find-exec":
        pattern = draw(st.sampled_from(("*.txt", "*.py", "*.md")))
        return f"find . -name '{pattern}' -not -path './.git/*' -exec sed -i 's/{word}/{replacement}/' {{}} +"
    if idiom == "test":
        return f"python3 {TEST_SCRIPT}"
    if idiom == "background":
        return f"(sleep {WRITER_DELAY}; echo {shlex.quote(text)} >> {path}) &"
    if idiom == "background-job-control":
        return f"set -m; (sleep {WRITER_DELAY}; echo {shlex.quote(text)} >> {path}) &"
    if idiom == "background-setsid":
        writer = f"sleep {WRITER_DELAY}; echo {shlex.quote(text)} >> {path}"
        return f"setsid sh -c {shlex.quote(writer)} > /dev/null 2>&1 < /dev/null &"
    if idiom == "utime-same-size":
        # Same size, new bytes, and the old mtime put back: only ctime and content betray it.
        program = (
            "import os, sys; p = sys.argv[1]; st = os.stat(p); d = open(p, 'rb').read(); "
            "open(p, 'wb').write(d.swapcase() if d.swapcase() != d else d[::-1]); "
            "os.utime(p, ns=(st.st_atime_ns, st.st_mtime_ns))"
        )
        return f"python3 -S -c {shlex.quote(program)} {path}"
    if idiom == "outside-write":
        return f"echo {shlex.quote(text)} >> {OUTSIDE_PLACEHOLDER}/{OUTSIDE_FILE}"
    if idiom == "parent-link":
        # The root's parent is outside every detector's view, yet `ls -la` at the root shows its
        # link count, which a sibling directory made or removed next to the root changes.
        sibling = f"{ROOT_PLACEHOLDER}/../sibling"
        return f"mkdir {sibling} 2>/dev/null || rmdir {sibling}"
    if idiom == "sleep":
        return f"sleep {QUIET_SLEEP}"
    if idiom == "path-shadow":
        # A program put first on PATH (an activated virtualenv's bin, a shim), or taken away.
        program = draw(st.sampled_from(SHADOWED_PROGRAMS))
        shadow = f"{OUTSIDE_PLACEHOLDER}/bin/{program}"
        if draw(st.booleans()):
            return f"rm -f {shadow}"
        return f"printf '#!/bin/sh\\necho shadowed {program} {text}\\n' > {shadow} && chmod +x {shadow}"
    if idiom == "root-recreate":
        # The root deleted and made again with the same content, then one file edited.
        return (
            f"cp -a {ROOT_PLACEHOLDER} {ROOT_PLACEHOLDER}.new && rm -rf {ROOT_PLACEHOLDER} && "
            f"mv {ROOT_PLACEHOLDER}.new {ROOT_PLACEHOLDER} && echo {shlex.quote(text)} >> {ROOT_PLACEHOLDER}/{path}"
        )
    if idiom == "git-config-home":
        # The session's own HOME: global config that changes what git reads print.
        return draw(
            st.sampled_from(
                (
                    "git config --global core.abbrev 12",
                    "git config --global core.abbrev 9",
                    "git config --global color.status always",
                    "git config --global --unset color.status",
                    "git config --global status.showUntrackedFiles no",
                    f"git config --global core.excludesFile {OUTSIDE_PLACEHOLDER}/ignore && echo '*.txt' > {OUTSIDE_PLACEHOLDER}/ignore",
                )
            )
        )
    if idiom == "git-dir-outside":
        # Move the repository out of the root (`.git` becomes a `gitdir:` file, as in a linked
        # worktree or a submodule), or change it where it now lives: the index, or the refs.
        return draw(st.sampled_from(GIT_DIR_OUTSIDE_COMMANDS)).replace("{path}", path)
    if idiom == "clock-edge":
        return f"touch -d @$(( $(date +%s) - {SIX_MONTHS_SECONDS} + 1 )) {path}"
    if idiom == "git-relative-date":
        return "git config log.date relative && GIT_COMMITTER_DATE=@$(( $(date +%s) - 89 )) git commit -q --allow-empty -m step"
    if idiom == "start-file":
        more = f"{OUTSIDE_PLACEHOLDER}/{START_MORE}"
        if draw(st.booleans()):
            return f": > {more}"
        return f"echo {shlex.quote(f'echo {shlex.quote(text)}')} > {more}"
    if idiom == "zone-file":
        return f"cp {ZONEINFO}/{draw(st.sampled_from(ZONES))} {OUTSIDE_PLACEHOLDER}/{ZONE_FILE}"
    if idiom == "passwd-name":
        line = passwd_line(draw(st.sampled_from(OWNER_NAMES)))
        return f'echo "{line}" > {OUTSIDE_PLACEHOLDER}/{PASSWD_FILE}'
    if idiom == "chattr":
        return f"chattr {draw(st.sampled_from(('+d', '-d')))} {path}"
    if idiom == "device-node":
        # mknod needs CAP_MKNOD; without it a link to the same device is the next best thing,
        # and a node already there is replaced by the link (a change of type, which is seen).
        return f"mknod -m 644 {DEVICE_NODE} c 1 9 2>/dev/null || ln -sfn /dev/urandom {DEVICE_NODE}"
    if idiom == "outside-hardlink":
        return f"ln -f {ROOT_PLACEHOLDER}/{path} {OUTSIDE_PLACEHOLDER}/hl && echo {shlex.quote(text)} >> {OUTSIDE_PLACEHOLDER}/hl"
    raise ValueError(f"unknown edit idiom {idiom!r}")


@st.composite
def tool_scripts(draw: st.DrawFn, *, pool: Sequence[str] = DEFAULT_POOL) -> str:
    """A step that writes a python script which, run in a later step, edits a file of `pool`."""
    key = draw(st.sampled_from(pool))
    word, replacement = draw(st.sampled_from(WORDS)), draw(st.sampled_from(tuple(w.upper() for w in WORDS)))
    body = "".join(line + "\n" for line in _replace_program(key, word, replacement, missing="created\n"))
    return f"cat > {TOOL_SCRIPT} <<'EOF'\n{body}EOF"


RUN_TOOL_SCRIPT = f"python3 -S {TOOL_SCRIPT}"


DETECTOR_READ_IDIOMS: tuple[str, ...] = tuple(i for i in READ_IDIOMS if i not in OPEN_CLASSIFIER_FAULTS)
"""The read grammar for hunts aimed at a detector: every idiom without an open classifier fault."""
