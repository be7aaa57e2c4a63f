"""Real commands on a real tree, checked against the independent ground truth.

Shared by the detector test modules: each runs `SCENARIOS` with its own detector. A detector
passes a step when every key the ground truth (`ledger_properties.ground_truth`: its own walk, lstat
and hash) says changed in anything but atime, link count, ctime and inode included, is in its
report, or its report says unknown. That is stricter than the hunt's oracle, which lets a
directory whose only change is its listing go unnamed (`ledger_properties.ground_truth.owed_by_key`).
"""

from __future__ import annotations

import os
import pathlib
import subprocess
import sys

from ledger_spec.values import Changes
from ledger_properties.ground_truth import Tree, changed, look

# No global or system git config, fixed identities: git commands behave the same everywhere
# and never need the network.
ENV = dict(
    os.environ,
    GIT_AUTHOR_NAME="Ledger Test",
    GIT_AUTHOR_EMAIL="ledger@example.invalid",
    GIT_COMMITTER_NAME="Ledger Test",
    GIT_COMMITTER_EMAIL="ledger@example.invalid",
    GIT_CONFIG_NOSYSTEM="1",
    GIT_CONFIG_GLOBAL="/dev/null",
    PY=sys.executable,
    LC_ALL="C.UTF-8",
)


def sh(root: pathlib.Path, command: str) -> int:
    """Run `command` with bash in `root`, as the agent's shell would."""
    done = subprocess.run(["bash", "-c", command], cwd=root, env=ENV, capture_output=True, timeout=60)
    return done.returncode


class Session:
    """A detector watching `root`, stepped through commands alongside the ground truth."""

    def __init__(self, detector, root: pathlib.Path) -> None:
        self.detector = detector
        self.root = root
        self.truth: Tree = look(root)
        self.started = False

    def step(self, command: str, *, run: bool = True) -> tuple[Changes, frozenset[str]]:
        """Run `command` between before() and after(); assert the report covers the truth."""
        self.detector.before(self.root, command)
        exit_code = sh(self.root, command) if run else 0
        changes = self.detector.after(self.root, command, exit_code)
        now = look(self.root)
        truth = changed(self.truth, now)
        missing = truth - changes.paths
        self.truth = now
        assert changes.unknown or not missing, (
            f"{self.detector.name} missed {sorted(missing)} after {command!r} (reported {changes})"
        )
        return changes, truth


GIT_REPO = (
    "git init -q repo && cd repo && printf 'one\\n' > a.txt && printf 'two\\n' > b.txt"
    " && git add . && git commit -qm init"
)

# (id, setup run before the detector starts, command, keys the command must change)
SCENARIOS: list[tuple[str, str, str, set[str]]] = [
    ("sed -i", "printf 'a\\nb\\n' > a.txt", "sed -i s/a/A/ a.txt", {"a.txt"}),
    ("perl -pi", "printf 'a\\nb\\n' > a.txt", "perl -pi -e 's/b/B/' a.txt", {"a.txt"}),
    ("truncate redirect", "echo old > a.txt", "echo new > a.txt", {"a.txt"}),
    ("append redirect", "echo old > a.txt", "echo more >> a.txt", {"a.txt"}),
    ("heredoc", "", "cat > h.txt <<'EOF'\nline one\nline two\nEOF", {"h.txt"}),
    ("python -c", "echo old > a.txt", "$PY -c \"open('a.txt','w').write('py')\"", {"a.txt"}),
    ("python heredoc", "echo old > a.txt", "$PY - <<'EOF'\nopen('a.txt', 'a').write('x')\nEOF", {"a.txt"}),
    ("tee", "", "echo t | tee t.txt > /dev/null", {"t.txt"}),
    ("cp", "echo a > a.txt", "cp a.txt c.txt", {"c.txt"}),
    ("mv", "echo a > a.txt", "mv a.txt moved.txt", {"a.txt", "moved.txt"}),
    ("mv over existing", "echo a > a.txt; echo b > b.txt", "mv a.txt b.txt", {"a.txt", "b.txt"}),
    ("rm", "echo a > a.txt", "rm a.txt", {"a.txt"}),
    ("rm -r", "mkdir -p d/e && echo f > d/e/f.txt", "rm -r d", {"d", "d/e", "d/e/f.txt"}),
    ("mkdir -p", "", "mkdir -p n/m", {"n", "n/m"}),
    ("mkdir and write at once", "", "mkdir -p x/y && echo a > x/y/f && echo b > x/g", {"x/y/f", "x/g"}),
    ("mv directory", "mkdir -p d/e && echo f > d/e/f.txt", "mv d d2", {"d", "d/e/f.txt", "d2/e/f.txt"}),
    ("cp -r", "mkdir -p d/e && echo f > d/e/f.txt", "cp -r d d3", {"d3/e/f.txt"}),
    ("ln -s", "echo a > a.txt", "ln -s a.txt link", {"link"}),
    ("symlink retarget", "echo a > a.txt; echo b > b.txt; ln -s a.txt link", "ln -sfn b.txt link", {"link"}),
    ("symlink loop", "", "ln -s loop1 loop2 && ln -s loop2 loop1 && ln -s . self", {"loop1", "loop2", "self"}),
    ("hard link then edit other name", "echo a > a.txt", "ln a.txt h.txt && echo x >> h.txt", {"a.txt", "h.txt"}),
    ("drop a hard link", "echo a > a.txt && ln a.txt b.txt", "rm b.txt", {"a.txt", "b.txt"}),
    ("drop a hard link by mv over it", "echo a > a.txt && ln a.txt b.txt && echo c > c.txt", "mv c.txt b.txt",
     {"a.txt", "b.txt", "c.txt"}),
    ("directory replaced by a file", "mkdir d && echo a > d/a.txt", "mv d e && echo x > d",
     {"d", "d/a.txt", "e", "e/a.txt"}),
    ("file replaced by a directory", "echo a > d", "rm d && mkdir d && echo b > d/b.txt", {"d", "d/b.txt"}),
    ("edit through existing hard link", "echo a > a.txt && ln a.txt h.txt", "echo x >> h.txt", {"a.txt", "h.txt"}),
    # A name made outside the root after the detector started: the write goes through a
    # directory no watch covers, and the link only changes the inode's link count (issue 8).
    ("hard link made outside, written through", "echo a > a.txt",
     "o=$(mktemp -d) && ln a.txt \"$o/hl\" && echo x >> \"$o/hl\" && rm -r \"$o\"", {"a.txt"}),
    ("touch mtime only", "echo a > a.txt", "touch -m -d @1000000000 a.txt", {"a.txt"}),
    ("chmod", "echo a > a.txt", "chmod 600 a.txt", {"a.txt"}),
    ("chmod directory", "mkdir d", "chmod 700 d", {"d"}),
    ("find -exec sed -i", "mkdir -p src/p && echo x > src/a.py && echo x > src/p/b.py",
     "find . -name '*.py' -exec sed -i s/x/z/ {} +", {"src/a.py", "src/p/b.py"}),
    ("same-size rewrite, mtime restored", "echo aaaa > a.txt",
     "$PY -c \"import os; s=os.stat('a.txt'); open('a.txt','w').write('bbbb\\n');"
     " os.utime('a.txt', ns=(s.st_atime_ns, s.st_mtime_ns))\"", {"a.txt"}),
    ("create then delete", "mkdir d", "echo x > d/tmp && rm d/tmp", set()),
    ("odd names", "",
     "echo x > 'with space.txt'; echo y > $'new\\nline.txt'; echo z > 'ünïcødé €.txt'; mkdir 'dir with space'",
     {"with space.txt", "new\nline.txt", "ünïcødé €.txt", "dir with space"}),
    ("binary file", "head -c 4096 /dev/urandom > bin.dat",
     "$PY -c \"f=open('bin.dat','r+b'); f.seek(100); f.write(bytes([0,255,7])); f.close()\"", {"bin.dat"}),
    ("git init", "", "git init -q fresh", {"fresh/.git/HEAD"}),
    ("git add", GIT_REPO + " && echo three > c.txt", "cd repo && git add c.txt", {"repo/.git/index"}),
    ("git commit", GIT_REPO + " && echo more >> a.txt", "cd repo && git commit -qam more", {"repo/.git/index"}),
    ("git checkout file", GIT_REPO + " && echo dirty > a.txt", "cd repo && git checkout -q -- a.txt", {"repo/a.txt"}),
    ("git checkout branch", GIT_REPO + " && git checkout -qb side && echo side > a.txt && git commit -qam side",
     "cd repo && git checkout -q master 2>/dev/null || git checkout -q main", {"repo/a.txt"}),
    ("git stash", GIT_REPO + " && echo dirty > a.txt", "cd repo && git stash -q", {"repo/a.txt"}),
]

# Commands that change nothing: a detector must report exactly nothing.
READ_ONLY_COMMANDS: list[str] = [
    "cat a.txt",
    "ls -laR",
    "grep -rn a .",
    "wc -l a.txt sub/b.txt",
    "find . -type f",
    "stat a.txt",
    "head -c 10 a.txt; tail -n 1 sub/b.txt",
    "true",
]


def deny_listing(monkeypatch, directory: pathlib.Path) -> None:
    """Make listing `directory` fail as an unreadable one would: as root, chmod cannot."""
    from ledger_impl import tree_snapshot

    real_scandir = os.scandir
    locked = str(directory)

    def scandir(path):
        if os.fspath(path) == locked:
            raise PermissionError(13, "Permission denied", path)
        return real_scandir(path)

    monkeypatch.setattr(tree_snapshot.os, "scandir", scandir)
