"""Where each trajectory is replayed: a throwaway copy of a repository at the trajectory's base.

The copy is a `git clone --shared --no-checkout` (objects borrowed through git's alternates
file, nothing written to the source) followed by a detached checkout of the base commit, in a
directory of its own. The user's repository and checkout are only read.

`--workspaces FILE.jsonl` maps trajectories to bases, one JSON object a line:
`{"trajectory": "<instance id or file name>", "repo": "DIR", "commit": "SHA"}`; a relative
`repo` is relative to the mapping file.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tarfile
import zipfile
from pathlib import Path
from typing import Mapping

import attrs

from .formats import InputError, Trajectory

# Commits made inside a copy (agents run `git stash`, `git commit`) need an identity, and must
# not read the user's global configuration.
GIT_ENVIRONMENT: dict[str, str] = {
    "GIT_AUTHOR_NAME": "ledger-audit",
    "GIT_AUTHOR_EMAIL": "audit@localhost",
    "GIT_COMMITTER_NAME": "ledger-audit",
    "GIT_COMMITTER_EMAIL": "audit@localhost",
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_TERMINAL_PROMPT": "0",
}


@attrs.frozen
class Base:
    """A repository and the commit a trajectory started from."""

    repo: str = attrs.field(converter=str)
    commit: str = attrs.field(converter=str)


def _git(args: list[str], cwd: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["git", *args], cwd=cwd, capture_output=True, text=True, env={**os.environ, **GIT_ENVIRONMENT}, check=False,
    )


def resolve(base: Base) -> Base:
    """`base` with an absolute repository path and the full commit id; `InputError` if absent."""
    repo = Path(base.repo).expanduser()
    if not repo.is_dir():
        raise InputError(f"repository {base.repo} does not exist")
    # A checkout is named by its top level, a bare repository (a mirror, a server's copy) by its
    # git directory: either can be cloned from, which is all the audit does with it.
    top = _git(["rev-parse", "--show-toplevel"], repo)
    if top.returncode != 0:
        bare = _git(["rev-parse", "--is-bare-repository", "--absolute-git-dir"], repo)
        if bare.returncode != 0 or bare.stdout.split()[:1] != ["true"]:
            raise InputError(f"{base.repo} is not a git repository")
        top = subprocess.CompletedProcess(bare.args, 0, bare.stdout.split("\n", 1)[1], "")
    found = _git(["rev-parse", "--verify", "--quiet", f"{base.commit}^{{commit}}"], repo)
    if found.returncode != 0:
        raise InputError(f"commit {base.commit} is not in {base.repo}")
    return Base(str(Path(top.stdout.strip()).resolve()), found.stdout.strip())


def load_mapping(path: str | os.PathLike[str]) -> dict[str, Base]:
    """The `--workspaces` file: trajectory name or instance id -> base."""
    file = Path(path)
    try:
        lines = file.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as error:
        raise InputError(f"{file}: cannot read ({error.__class__.__name__})") from None
    mapping: dict[str, Base] = {}
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
            key = record.get("trajectory") or record.get("instance_id") or record.get("file")
            repo, commit = record["repo"], record["commit"]
        except (json.JSONDecodeError, AttributeError, KeyError, TypeError):
            raise InputError(f"{file}:{number}: expected {{\"trajectory\": ..., \"repo\": ..., \"commit\": ...}}") from None
        if not isinstance(key, str) or not isinstance(repo, str) or not isinstance(commit, str):
            raise InputError(f"{file}:{number}: trajectory, repo and commit must be strings")
        mapping[key] = Base(str((file.parent / repo).resolve()), commit)
    return mapping


def base_for(trajectory: Trajectory, mapping: Mapping[str, Base]) -> Base:
    """The base of `trajectory`: by instance id, then by its name, then by its file's name."""
    for key in (trajectory.instance_id, trajectory.name, Path(trajectory.source).name):
        if key and key in mapping:
            return mapping[key]
    raise InputError(f"no workspace for trajectory {trajectory.instance_id or trajectory.name} in the --workspaces file")


def materialize(base: Base, parent: Path) -> Path:
    """A throwaway copy of `base.repo` at `base.commit`, in `parent/workspace`."""
    workspace = parent / "workspace"
    cloned = _git(["clone", "-q", "--shared", "--no-checkout", base.repo, str(workspace)], parent)
    if cloned.returncode != 0:
        raise InputError(f"cannot clone {base.repo}: {cloned.stderr.strip().splitlines()[-1:]}")
    checked = _git(["checkout", "-q", "--detach", base.commit], workspace)
    if checked.returncode != 0:
        raise InputError(f"cannot check out {base.commit}: {checked.stderr.strip()[:200]}")
    _git(["remote", "remove", "origin"], workspace)  # nothing in a copy should talk to the source
    return workspace


def extract_data(archive: tarfile.TarFile, destination: Path) -> None:
    """Extract only plain files, directories and links that stay inside `destination`, owned by
    us (git refuses a repository owned by another user): the "data" filter of Python 3.11.4+,
    checked by hand on older 3.11 releases, which lack extraction filters."""
    if hasattr(tarfile, "data_filter"):
        archive.extractall(destination, filter="data")
        return
    root = destination.resolve()
    members = []
    for member in archive.getmembers():
        target = (root / member.name).resolve()
        if not target.is_relative_to(root) or not (member.isfile() or member.isdir() or member.issym() or member.islnk()):
            raise tarfile.TarError(f"refusing archive member {member.name!r}")
        if member.issym() or member.islnk():
            base = target.parent if member.issym() else root
            if os.path.isabs(member.linkname) or not (base / member.linkname).resolve().is_relative_to(root):
                raise tarfile.TarError(f"refusing link {member.name!r} -> {member.linkname!r}")
        member.uid, member.gid, member.uname, member.gname = os.getuid(), os.getgid(), "", ""
        member.mode = (member.mode & 0o755) | (0o600 if member.isfile() else 0o700)
        members.append(member)
    archive.extractall(destination, members=members, numeric_owner=True)


def repo_from_sdist(sdist: Path, destination: Path) -> Base:
    """A git repository with one commit holding the unpacked `sdist` (a stand-in for a task's
    repository when only a release is at hand, as for the shared corpus)."""
    unpack = destination.with_name(destination.name + ".unpack")
    shutil.rmtree(unpack, ignore_errors=True)
    unpack.mkdir(parents=True)
    if sdist.name.endswith(".zip"):
        with zipfile.ZipFile(sdist) as archive:
            archive.extractall(unpack)
    else:
        with tarfile.open(sdist) as archive:
            extract_data(archive, unpack)
    tops = list(unpack.iterdir())
    (tops[0] if len(tops) == 1 and tops[0].is_dir() else unpack).rename(destination)
    shutil.rmtree(unpack, ignore_errors=True)
    for args in (["init", "-q", "--template="], ["add", "-A", "-f"], ["-c", "commit.gpgsign=false", "commit", "-q", "-m", sdist.name]):
        done = _git(args, destination)
        if done.returncode != 0:
            raise RuntimeError(f"git {' '.join(args)} failed in {destination}: {done.stderr.strip()}")
    return resolve(Base(str(destination), "HEAD"))
