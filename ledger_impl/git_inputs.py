"""What a git read depends on outside the files the detector watches, found with `stat` alone.

A git query run in the root reads more than the work tree: the repository (which a `.git`
*file* may place outside the root, as `git worktree add` and submodules do), the object store
and refs of its common directory, and a chain of configuration, ignore and attributes files
(system, global, XDG, `include`/`includeIf` targets, `core.excludesFile`, `core.attributesFile`,
`info/exclude`, ...). Some configuration makes a read run a program (`diff.external`, a
textconv driver, a clean filter, `core.fsmonitor`, signature checks): such a read is never
reused, because its output is whatever that program prints.

`inputs(root, env, command_config)` returns either the identities of everything found, as a
tuple to compare for equality, or a string saying why the read must not be reused
(`RUNS_PROGRAM`, `UNRESOLVABLE`, `BEYOND_LIMITS`). Parsed configuration files are cached by
their stat identity, so a repeated call costs stat calls only.

Every walk is bounded (configuration files and their size, entries given through the
environment, ref directories, worktrees). Past a bound the inputs are not all known, so the
read is never reused: a bound costs reuse, never a missed input.
"""

from __future__ import annotations

import os
import re
from typing import Final, Iterable, Mapping

RUNS_PROGRAM: Final = "runs-a-configured-program"
UNRESOLVABLE: Final = "an include git resolves from the password database (~user)"
BEYOND_LIMITS: Final = "more configuration, refs or worktrees than are looked at"

_CONFIG_FILES_LIMIT: Final = 64  # configuration files, includes counted
_CONFIG_BYTES_LIMIT: Final = 1 << 20  # of one configuration file
_ENVIRONMENT_ENTRIES_LIMIT: Final = 1000  # GIT_CONFIG_COUNT
_REF_DIRECTORIES_LIMIT: Final = 1024
_WORKTREES_LIMIT: Final = 64

# Configuration keys (lower case, subsection elided as "*") whose value names a program that
# a read may run. A value of "false"/"" for the Boolean ones turns them off.
_PROGRAM_KEYS: Final = frozenset(
    {
        "diff.external",
        "diff.*.textconv",
        "diff.*.command",
        "filter.*.clean",
        "filter.*.smudge",
        "filter.*.process",
        "core.fsmonitor",
        "gpg.program",
        "gpg.*.program",
    }
)
_BOOLEAN_PROGRAM_KEYS: Final = frozenset({"log.showsignature", "core.fsmonitor"})
_FALSE: Final = frozenset({"", "false", "no", "off", "0"})
_PROGRAM_ENV: Final = ("GIT_EXTERNAL_DIFF",)

# Repository files outside the detector's view when the git dir is not under the root; stat
# alone tells whether they moved (a ref update renames a file into its directory).
_GIT_DIR_FILES: Final = ("HEAD", "index", "ORIG_HEAD", "FETCH_HEAD", "config.worktree", "logs/HEAD", "info/sparse-checkout")
_COMMON_DIR_FILES: Final = (
    "config",
    "packed-refs",
    "shallow",
    "info/exclude",
    "info/attributes",
    "objects",
    "objects/pack",
    "objects/info/alternates",
    "logs",
)

Identity = tuple[object, ...]

_config_cache: dict[str, tuple[Identity, list[tuple[str, str]] | None]] = {}
_CONFIG_CACHE_LIMIT: Final = 256


def identity(path: str | os.PathLike[str]) -> Identity:
    """The lstat identity of `path` (dev, ino, nlink, size, mtime, ctime, mode, uid, gid), or
    the error that prevents one: both are facts a changed file changes."""
    try:
        st = os.lstat(path)
    except OSError as error:
        return ("absent", error.errno)
    return (st.st_dev, st.st_ino, st.st_nlink, st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_mode, st.st_uid, st.st_gid)


def parse_config(text: str) -> list[tuple[str, str]]:
    """`git config` file syntax, leniently: (section.[subsection.]key, value) pairs in order.

    Section and key names are lower-cased; a subsection keeps its case. A key with no `=` is
    the Boolean true. A malformed line is skipped; the caller treats the file's identity, not
    its parse, as the dependency, so a lenient parse costs nothing in safety except for the
    keys it looks for, which are matched loosely on purpose.
    """
    entries: list[tuple[str, str]] = []
    section = ""
    logical: list[str] = []
    for raw in text.splitlines():
        if raw.endswith("\\") and not raw.endswith("\\\\"):
            logical.append(raw[:-1])
            continue
        line = "".join(logical) + raw
        logical = []
        stripped = line.strip()
        if not stripped or stripped[0] in "#;":
            continue
        if stripped.startswith("["):
            header, _, rest = stripped[1:].partition("]")
            match = re.match(r'\s*([A-Za-z0-9.-]+)\s*(?:"((?:[^"\\]|\\.)*)")?\s*$', header)
            if match is None:
                section = ""
                continue
            name, sub = match.group(1), match.group(2)
            if sub is not None:
                section = f"{name.lower()}.{sub}"
            elif "." in name:
                head, _, tail = name.partition(".")
                section = f"{head.lower()}.{tail.lower()}"
            else:
                section = name.lower()
            stripped = rest.strip()
            if not stripped or stripped[0] in "#;":
                continue
        key, eq, value = stripped.partition("=")
        key = key.strip().lower()
        if not section or not re.fullmatch(r"[a-z][a-z0-9-]*", key):
            continue
        entries.append((f"{section}.{key}", _unquote(value) if eq else "true"))
    return entries


def _unquote(value: str) -> str:
    out: list[str] = []
    quoted = False
    index = 0
    value = value.strip()
    while index < len(value):
        char = value[index]
        if char == '"':
            quoted = not quoted
        elif char == "\\" and index + 1 < len(value):
            index += 1
            out.append({"n": "\n", "t": "\t", "b": "\b"}.get(value[index], value[index]))
        elif char in "#;" and not quoted:
            break
        else:
            out.append(char)
        index += 1
    return "".join(out).strip()


def _read_config(path: str) -> tuple[Identity, list[tuple[str, str]] | None]:
    """The file's identity and its entries (None: larger than `_CONFIG_BYTES_LIMIT`), parsed
    again only when the identity moved. A file that cannot be read has none (git skips it)."""
    found = identity(path)
    cached = _config_cache.get(path)
    if cached is not None and cached[0] == found:
        return cached
    entries: list[tuple[str, str]] | None = []
    if found[0] != "absent":
        try:
            with open(path, "rb") as handle:
                data = handle.read(_CONFIG_BYTES_LIMIT + 1)
            entries = None if len(data) > _CONFIG_BYTES_LIMIT else parse_config(data.decode("utf-8", "replace"))
        except OSError:
            entries = []
    if len(_config_cache) >= _CONFIG_CACHE_LIMIT:
        _config_cache.clear()
    _config_cache[path] = (found, entries)
    return found, entries


def _pattern(key: str) -> str:
    """`diff.foo.textconv` -> `diff.*.textconv`: the subsection elided."""
    parts = key.split(".")
    return f"{parts[0]}.*.{parts[-1]}" if len(parts) > 2 else key


def runs_program(entries: Iterable[tuple[str, str]]) -> bool:
    """Whether configuration entries name a program a read may run."""
    for key, value in entries:
        lowered = key.lower()
        pattern = _pattern(lowered)
        if lowered in _BOOLEAN_PROGRAM_KEYS or pattern in _BOOLEAN_PROGRAM_KEYS:
            if value.strip().lower() not in _FALSE:
                return True
        elif (lowered in _PROGRAM_KEYS or pattern in _PROGRAM_KEYS) and value.strip():
            return True
    return False


def _expand(value: str, base: str, home: str | None) -> str | None:
    """A path-valued setting as git resolves it: `~/` from HOME, relative to the including
    file's directory. `:(optional)` is accepted."""
    if value.startswith(":(optional)"):
        value = value[len(":(optional)") :]
    if value.startswith("~/") or value == "~":
        if home is None:
            return None
        value = home + value[1:]
    elif value.startswith("~"):
        return None  # ~user: resolved from the password database; the caller refuses reuse
    return os.path.normpath(os.path.join(base, value))


def discover(root: str, env: Mapping[str, str]) -> tuple[str, str] | None:
    """(git dir, common dir) for a command run in `root`, following a `.git` file and a
    `commondir` file, or None when no repository is found (walking up, as git does)."""
    explicit = env.get("GIT_DIR")
    if explicit:
        git_dir = os.path.normpath(os.path.join(root, explicit))
    else:
        git_dir = None
        here = root
        while True:
            candidate = os.path.join(here, ".git")
            if os.path.isdir(candidate):
                git_dir = candidate
                break
            if os.path.isfile(candidate):
                try:
                    with open(candidate, "rb") as handle:
                        text = handle.read(4096).decode("utf-8", "replace")
                except OSError:
                    return None
                match = re.match(r"gitdir:\s*(.*?)\s*$", text, re.M)
                if match is None:
                    return None
                git_dir = os.path.normpath(os.path.join(here, match.group(1)))
                break
            parent = os.path.dirname(here)
            if parent == here:
                return None
            here = parent
    common = env.get("GIT_COMMON_DIR")
    if not common:
        common = git_dir
        try:
            with open(os.path.join(git_dir, "commondir"), "rb") as handle:
                common = os.path.normpath(os.path.join(git_dir, handle.read(4096).decode("utf-8", "replace").strip()))
        except OSError:
            pass
    return os.path.realpath(git_dir), os.path.realpath(common)


def config_files(git_dir: str, common: str, env: Mapping[str, str]) -> list[str]:
    """The configuration files git reads first for a repository, in git's order (includes
    are followed by the caller)."""
    home = env.get("HOME")
    xdg = env.get("XDG_CONFIG_HOME") or (os.path.join(home, ".config") if home else None)
    files: list[str] = []
    if not _env_true(env.get("GIT_CONFIG_NOSYSTEM")):
        files.append(env.get("GIT_CONFIG_SYSTEM") or "/etc/gitconfig")
    if env.get("GIT_CONFIG_GLOBAL") is not None:
        if env["GIT_CONFIG_GLOBAL"]:
            files.append(env["GIT_CONFIG_GLOBAL"])
    else:
        if xdg:
            files.append(os.path.join(xdg, "git", "config"))
        if home:
            files.append(os.path.join(home, ".gitconfig"))
    files.append(os.path.join(common, "config"))
    files.append(os.path.join(git_dir, "config.worktree"))
    if env.get("GIT_CONFIG"):
        files.append(env["GIT_CONFIG"])
    return files


def _env_true(value: str | None) -> bool:
    """A Boolean variable as git reads it, and true only when git would surely take it so
    (`0`, `false`, an unknown word: the file it turns off is read, and counted)."""
    if value is None:
        return False
    word = value.strip().lower()
    if word in ("true", "yes", "on"):
        return True
    try:
        return int(word) != 0
    except ValueError:
        return False


def _environment_entries(env: Mapping[str, str]) -> list[tuple[str, str]] | None:
    """Configuration given through the environment (GIT_CONFIG_COUNT/KEY/VALUE, and the
    quoted list in GIT_CONFIG_PARAMETERS, matched loosely); None if it counts more entries
    than are read. A count git cannot read as a number makes git fail, so it gives none."""
    entries: list[tuple[str, str]] = []
    try:
        count = int(env.get("GIT_CONFIG_COUNT", "0"))
    except ValueError:
        count = 0
    if count > _ENVIRONMENT_ENTRIES_LIMIT:
        return None
    for index in range(count):
        entries.append((env.get(f"GIT_CONFIG_KEY_{index}", ""), env.get(f"GIT_CONFIG_VALUE_{index}", "")))
    for key, value in re.findall(r"'([^'=]+)=([^']*)'", env.get("GIT_CONFIG_PARAMETERS", "")):
        entries.append((key, value))
    return entries


def inputs(root: str, env: Mapping[str, str], command_config: Iterable[tuple[str, str]] = ()) -> tuple[object, ...] | str:
    """Everything a git read in `root` depends on outside the detector's view, or
    `RUNS_PROGRAM` if the read may run a configured program. `command_config` holds the
    `-c key=value` pairs of the command line."""
    if any(env.get(name) for name in _PROGRAM_ENV):
        return RUNS_PROGRAM
    given = _environment_entries(env)
    if given is None:
        return BEYOND_LIMITS
    if runs_program(list(command_config) + given):
        return RUNS_PROGRAM
    found = discover(root, env)
    if found is None:
        return ("no-repository",)
    git_dir, common = found
    home = env.get("HOME")
    xdg = env.get("XDG_CONFIG_HOME") or (os.path.join(home, ".config") if home else None)
    seen: dict[str, Identity] = {}
    pending = config_files(git_dir, common, env)
    path_values: list[str] = []
    while pending:
        path = pending.pop(0)
        if path in seen:  # an include cycle, or a file included twice
            continue
        if len(seen) == _CONFIG_FILES_LIMIT:
            return BEYOND_LIMITS
        found_identity, entries = _read_config(path)
        seen[path] = found_identity
        if entries is None:
            return BEYOND_LIMITS
        if runs_program(entries):
            return RUNS_PROGRAM
        base = os.path.dirname(path)
        for key, value in entries:
            pattern = _pattern(key)
            if pattern in ("include.path", "includeif.*.path"):
                # Every includeIf target counts, whatever its condition: over-approximating
                # the files git reads only costs a Reuse when one of them changes.
                target = _expand(value, base, home)
                if target is None:
                    return UNRESOLVABLE
                pending.append(target)
            elif key.endswith("file") or key.endswith("path"):
                # core.excludesFile, core.attributesFile, mailmap.file, blame.ignoreRevsFile,
                # ...: any path-valued setting names a file the read may open.
                target = _expand(value, base, home)
                if target is not None:
                    path_values.append(target)
    stat_paths = list(path_values)
    if xdg:
        stat_paths += [os.path.join(xdg, "git", "ignore"), os.path.join(xdg, "git", "attributes")]
    stat_paths += ["/etc/gitattributes"]
    stat_paths += [os.path.join(git_dir, name) for name in _GIT_DIR_FILES]
    stat_paths += [os.path.join(common, name) for name in _COMMON_DIR_FILES]
    walked = [_ref_directories(common), _ref_directories(git_dir) if git_dir != common else [], _other_worktrees(common)]
    for found_paths in walked:
        if found_paths is None:
            return BEYOND_LIMITS
        stat_paths += found_paths
    return (
        git_dir,
        common,
        tuple(sorted(seen.items())),
        tuple((path, identity(path)) for path in stat_paths),
    )


_WORKTREE_FILES: Final = ("HEAD", "gitdir", "locked")


def _other_worktrees(common: str) -> list[str] | None:
    """Each worktree's HEAD and where it lives: `git branch` marks the branches checked out in
    other worktrees, `git worktree list` prints them, so a linked worktree's read depends on
    the main worktree's HEAD and its siblings', all outside its root. None past the limit."""
    worktrees = os.path.join(common, "worktrees")
    found = [os.path.join(common, "HEAD"), worktrees]
    try:
        with os.scandir(worktrees) as entries:
            names = sorted(entry.name for entry in entries)
    except OSError:
        return found  # none (the directory's own identity says so)
    if len(names) > _WORKTREES_LIMIT:
        return None
    for name in names:
        found += [os.path.join(common, "worktrees", name, file) for file in _WORKTREE_FILES]
    return found


def _ref_directories(git_dir: str) -> list[str] | None:
    """`refs/` and every directory below it: a loose ref update renames into one of them.
    None past the limit."""
    found: list[str] = []
    stack = [os.path.join(git_dir, "refs")]
    while stack:
        if len(found) == _REF_DIRECTORIES_LIMIT:
            return None
        directory = stack.pop()
        found.append(directory)
        try:
            with os.scandir(directory) as entries:
                stack.extend(entry.path for entry in entries if entry.is_dir(follow_symlinks=False))
        except OSError:
            continue
    return found

