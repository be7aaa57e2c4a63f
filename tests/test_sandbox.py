"""The bubblewrap sandbox: writes land only in the writable paths, no network, own PIDs."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from ledger_properties import sandbox

needs_bwrap = pytest.mark.skipif(
    not sandbox.available(),
    reason="bubblewrap (bwrap) is not installed or cannot create namespaces here; .ci/run installs it",
)


def run_sandboxed(script: str, workdir: Path, **kwargs: object) -> subprocess.CompletedProcess[str]:
    argv = sandbox.wrap(["/bin/sh", "-c", script], writable=[workdir], workdir=workdir, **kwargs)
    return subprocess.run(argv, capture_output=True, text=True, timeout=30, check=False)


@needs_bwrap
def test_writes_reach_the_workspace_but_nothing_outside(tmp_path: Path) -> None:
    # `outside` is a host file the sandbox can see but not write (read-only `/`, or hidden by
    # the private /tmp when tmp_path lives under /tmp).
    work = tmp_path / "work"
    work.mkdir()
    outside = tmp_path / "outside.txt"
    outside.write_text("mine\n")
    done = run_sandboxed(f"echo inside > made; echo x > /tmp/private; echo evil > {outside}", work)
    assert (work / "made").read_text() == "inside\n"
    assert outside.read_text() == "mine\n"
    assert done.returncode == 0  # the write went to the sandbox's private /tmp copy of the path


@needs_bwrap
def test_the_root_filesystem_is_read_only(tmp_path: Path) -> None:
    target = Path("/var/tmp/ledger-sandbox-must-not-exist")
    try:
        done = run_sandboxed(f"echo evil > {target}", tmp_path)
        assert "Read-only file system" in done.stderr
        assert not target.exists()
    finally:
        target.unlink(missing_ok=True)
    assert not Path("/tmp/private").exists()


@needs_bwrap
def test_no_network_and_own_pid_namespace(tmp_path: Path) -> None:
    done = run_sandboxed("echo $$; tail -n +3 /proc/net/dev | cut -d: -f1", tmp_path)
    pid, interfaces = done.stdout.split("\n", 1)
    assert int(pid) < 10
    assert interfaces.split() == ["lo"]


@needs_bwrap
def test_network_can_be_allowed(tmp_path: Path) -> None:
    done = run_sandboxed("tail -n +3 /proc/net/dev | cut -d: -f1", tmp_path, network=True)
    host = [line.split(":")[0] for line in Path("/proc/net/dev").read_text().splitlines()[2:]]
    assert sorted(done.stdout.split()) == sorted(name.strip() for name in host)


def test_missing_bwrap_raises(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(sandbox, "bwrap_path", lambda: None)
    with pytest.raises(sandbox.SandboxUnavailable):
        sandbox.wrap(["true"], writable=[tmp_path], workdir=tmp_path)


def test_writable_paths_are_bound_after_the_private_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sandbox, "bwrap_path", lambda: "/usr/bin/bwrap")
    argv = sandbox.wrap(["true"], writable=[tmp_path], workdir=tmp_path)
    assert argv.index("--tmpfs") < argv.index("--bind")
    assert "--unshare-net" in argv and "--unshare-pid" in argv and "--die-with-parent" in argv
    assert argv[-2:] == ["--", "true"]
