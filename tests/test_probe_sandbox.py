"""The probe's sandbox and confinement, piece by piece (`ledger_impl.probe.sandbox`, `confine`).

The probe's end-to-end tests skip on a machine without its tools, and take Landlock as the
kernel says: a bug that made the probe think a tool or Landlock missing would only make them
skip. These tests tell that apart, and reach the sandbox's failures to start and to finish.
Written for the survivors of the modules' operator mutation (docs/mutation/survivors.md).
"""

from __future__ import annotations

import ctypes
import os
import shutil
import signal
import subprocess
import tempfile
from pathlib import Path

import pytest

from ledger_impl.execution import Completed
from ledger_impl.fingerprint import SYSTEM_PATH
from ledger_impl.probe import clock, confine, sandbox


@pytest.mark.parametrize(
    ("present", "faketime", "missing"),
    [
        ({"bwrap", "strace"}, True, None),
        ({"bwrap"}, True, "strace"),
        (set(), False, f"bwrap, strace, libfaketime ({clock.LIBFAKETIME})"),
    ],
)
def test_the_missing_tools_are_named(monkeypatch: pytest.MonkeyPatch, present: set[str], faketime: bool, missing: str | None) -> None:
    monkeypatch.setattr(sandbox, "tool", lambda name: f"/usr/bin/{name}" if name in present else None)
    monkeypatch.setattr(clock, "available", lambda: faketime)
    assert sandbox.missing_tools() == missing


@pytest.mark.parametrize(("root", "private_tmp"), [("/var/tmp/ws", True), ("/tmp/ws", False), ("/tmpfoo/ws", True)])
def test_the_private_tmp_is_writable_unless_the_workspace_is_beneath_it(root: str, private_tmp: bool) -> None:
    places = sandbox.writable(Path(root), Path("/var/tmp/trace"))
    assert places[:2] == ["/var/tmp/trace", "/dev"] and ("/tmp" in places) is private_tmp


@pytest.mark.skipif(sandbox.missing_tools() is not None, reason="the probe's tools are not installed")
def test_the_sandbox_and_the_tracer_are_the_system_s_whatever_the_command_s_path(tmp_path: Path) -> None:
    """The command's PATH may shadow any program; the probe's own are found on the system's.
    A real miss of the operator mutation (ledger_impl/probe/sandbox.py lines 71 and 76, `or`
    -> `and`): the bare names were looked up on the command's PATH, so a `bwrap` or `strace`
    in the workspace would have run in their place and told the probe whatever it liked."""
    line = sandbox.argv(tmp_path, "true", tmp_path / "trace", {"PATH": f"{tmp_path}:/usr/bin"})
    bwrap, strace = shutil.which("bwrap", path=SYSTEM_PATH), shutil.which("strace", path=SYSTEM_PATH)
    assert line[0] == bwrap and os.path.isabs(line[0])
    assert strace in line and os.path.isabs(strace or "")


def test_a_probe_that_cannot_start_says_so(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sandbox, "tool", lambda name: f"{tmp_path}/no-such-{name}")
    ran = sandbox.run(tmp_path, "true", tmp_path, dict(os.environ), 10, 1 << 20)
    assert ran == Completed(ran.output, 127, False, False, None, False)
    assert ran.output.startswith("probe could not start: ") and "no-such-bwrap" in ran.output


def test_an_environment_that_cannot_be_passed_is_a_probe_that_cannot_start(tmp_path: Path) -> None:
    ran = sandbox.run(tmp_path, "true", tmp_path, {"BAD": "nul\0inside"}, 10, 1 << 20)
    assert ran == Completed(ran.output, 127, False, False, None, False)
    assert "probe could not start" in ran.output


def test_a_probe_interrupted_while_it_runs_is_killed_before_the_interrupt_goes_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    started: list[subprocess.Popen[bytes]] = []

    def interrupted(process: subprocess.Popen[bytes], *args: object) -> Completed:
        started.append(process)
        raise KeyboardInterrupt

    monkeypatch.setattr(sandbox, "argv", lambda *args: ["/bin/sh", "-c", "sleep 300"])
    monkeypatch.setattr(sandbox, "collect_output", interrupted)
    with pytest.raises(KeyboardInterrupt):
        sandbox.run(tmp_path, "true", tmp_path, dict(os.environ), 10, 1 << 20)
    assert started and started[0].returncode == -signal.SIGKILL


def test_landlock_is_said_available_exactly_when_the_confinement_refuses_a_write() -> None:
    """The oracle is the confinement itself: a write outside the allowed places is refused
    only where the kernel has Landlock."""
    with tempfile.TemporaryDirectory(dir="/var/tmp") as allowed, tempfile.TemporaryDirectory(dir="/var/tmp") as other:
        target = os.path.join(other, "out")
        wrote = subprocess.run(
            [*confine.prefix([allowed]), "/bin/sh", "-c", f"echo x > {target}"], capture_output=True,
        ).returncode == 0 and os.path.exists(target)
    assert confine.available.__wrapped__() is not wrote


@pytest.mark.parametrize("error", [OSError("no libc"), AttributeError("no syscall")])
def test_without_a_libc_that_answers_landlock_is_unavailable(monkeypatch: pytest.MonkeyPatch, error: Exception) -> None:
    def failing(*args: object, **kwargs: object) -> object:
        raise error

    monkeypatch.setattr(ctypes, "CDLL", failing)
    assert confine.available.__wrapped__() is False


class _Kernel:
    """A libc whose `syscall` answers as a kernel with Landlock ABI `abi` does (0: none): only
    `landlock_create_ruleset(NULL, 0, LANDLOCK_CREATE_RULESET_VERSION)` gives the version, and
    anything else (the errata flag, unknown before 6.15) fails."""

    def __init__(self, abi: int) -> None:
        self.abi = abi

    def syscall(self, number: int, attributes: object, size: int, flags: int) -> int:
        if self.abi and (number, attributes, size, flags) == (444, None, 0, 1):
            return self.abi
        return -1


@pytest.mark.parametrize(("abi", "available"), [(0, False), (1, True), (4, True)])
def test_landlock_is_available_from_its_first_abi(monkeypatch: pytest.MonkeyPatch, abi: int, available: bool) -> None:
    """ABI 1 (kernels 5.13 to 5.18) already refuses a write outside the rules, all the probe asks."""
    monkeypatch.setattr(ctypes, "CDLL", lambda *args, **kwargs: _Kernel(abi))
    assert confine.available.__wrapped__() is available
