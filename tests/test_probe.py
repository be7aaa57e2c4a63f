"""The probe (`ledger_impl.probe`): a second run of a read, sandboxed, traced, clock moved.

Every test runs the real bubblewrap, strace and libfaketime on a temporary workspace; without
them the tests skip saying which is missing (`.ci/run` installs them).
"""

from __future__ import annotations

import os
import stat
import tempfile
import time
from pathlib import Path

import pytest
from probe_workspace import make_workspace

from ledger_impl.execution import command_environment, run_command
from ledger_impl.probe import ProbeResult, dependencies, probe, trace, unavailable
from ledger_impl.probe.clock import clock_unreachable

MISSING = unavailable()
needs_probe = pytest.mark.skipif(MISSING is not None, reason=f"{MISSING} (.ci/run installs them)")


@pytest.fixture
def root(tmp_path: Path) -> Path:
    return make_workspace(tmp_path)


def _probe(root: Path, command: str, environment: dict[str, str] | None = None, **options: object) -> ProbeResult:
    """Run `command` as the agent would, then probe it against that output."""
    env = command_environment(environment)
    started = time.time_ns()
    done = run_command(command, root, 30, 1 << 20, env)
    return probe(root, command, env, done.output, done.exit_code, started_ns=started, **options)  # type: ignore[arg-type]


@needs_probe
def test_a_plain_read_is_servable_and_depends_on_its_file_and_program(root: Path) -> None:
    result = _probe(root, "cat a.txt")
    assert result.servable, result.reason
    assert result.dependencies is not None
    assert "a.txt" in result.dependencies.inside
    outside = {dependency.path for dependency in result.dependencies.outside}
    assert os.path.realpath("/usr/bin/cat") in {os.path.realpath(path) for path in outside}


@needs_probe
def test_a_failed_lookup_is_a_dependency_resolved_in_the_process_working_directory(root: Path) -> None:
    # bash searches the relative PATH entry `tools` from `sub`, where the command changed to.
    result = _probe(root, "cd sub && cat a.txt", {**os.environ, "PATH": "tools:/usr/bin:/bin"})
    assert result.servable, result.reason
    assert result.dependencies is not None and "sub/tools/cat" in result.dependencies.inside


@needs_probe
def test_a_directory_listed_inside_the_root_depends_on_every_key_below_it(root: Path) -> None:
    # No per-key counter names a file that a listing would show once created: the listing
    # itself (getdents) must be traced, so that any change inside the root counts.
    result = _probe(root, "ls sub")
    assert result.servable, result.reason
    assert result.dependencies is not None and result.dependencies.listed_inside


@needs_probe
def test_output_that_depends_on_the_clock_is_not_servable(root: Path) -> None:
    # a.txt was written just now: `ls -l` prints its time of day; 400 days on, the year.
    result = _probe(root, "ls -l a.txt")
    assert not result.servable and "printed something else" in str(result.reason)
    assert result.output != run_command("ls -l a.txt", root, 30, 1 << 20, command_environment()).output


@needs_probe
def test_a_misclassified_writer_writes_nothing_anywhere(root: Path, tmp_path: Path) -> None:
    beside = tmp_path / "beside"
    beside.mkdir()
    command = f"echo x > made.txt; echo y > {beside}/made.txt; echo z > /tmp/ledger-probe-test-made; cat a.txt"
    env = command_environment()
    result = probe(root, command, env, "alpha\n", 0)
    assert not result.servable  # the writes failed inside the sandbox, so it printed errors
    assert not (root / "made.txt").exists() and not (beside / "made.txt").exists()
    assert not Path("/tmp/ledger-probe-test-made").exists()


@needs_probe
def test_a_probe_that_hangs_is_killed_at_its_bound(root: Path) -> None:
    started = time.monotonic()
    result = probe(root, "sleep 30; cat a.txt", command_environment(), "alpha\n", 0, timeout=0.5)
    assert time.monotonic() - started < 10
    assert not result.servable and "bound" in str(result.reason)


@needs_probe
def test_a_probe_that_cannot_start_is_degraded(root: Path) -> None:
    # No bash on this PATH: strace cannot start the command, nothing is traced.
    env = {**command_environment(), "PATH": str(root / "nowhere")}
    result = probe(root, "cat a.txt", env, "alpha\n", 0)
    assert not result.servable and result.degraded and "failed to start" in str(result.reason)


@needs_probe
def test_a_statically_linked_program_cannot_be_reached_by_the_clock(root: Path) -> None:
    static = "/sbin/ldconfig"
    if not os.path.exists(static) or clock_unreachable(static) is None:
        pytest.skip(f"{static} is not a statically linked executable here")
    result = _probe(root, f"{static} --version")
    assert not result.servable and result.degraded and "statically linked" in str(result.reason)
    assert clock_unreachable(os.path.realpath("/usr/bin/cat")) is None  # a dynamic one is reached


@needs_probe
@pytest.mark.parametrize("command", ["cat /proc/version", "head -c 4 /dev/zero | od -c"])
def test_a_pseudo_filesystem_read_is_never_reusable(root: Path, command: str) -> None:
    result = _probe(root, command)
    assert not result.servable and "pseudo-filesystem" in str(result.reason)


@needs_probe
def test_a_device_node_inside_the_root_is_never_reusable(root: Path) -> None:
    try:
        os.mknod(root / "zero", stat.S_IFCHR | 0o644, os.makedev(1, 5))
    except PermissionError:
        pytest.skip("mknod needs CAP_MKNOD")
    # The sandbox mounts the workspace without device access, so the probe's read fails and
    # prints something else; the dependency rule alone refuses it too.
    result = _probe(root, "head -c 4 zero | od -c")
    assert not result.servable
    found = dependencies.collect([trace.Access(str(root / "zero"), "openat", True)], str(root), time.time_ns())
    assert found.never is not None and "device" in found.never


@needs_probe
def test_an_outside_dependency_changed_after_the_start_is_never_reusable(root: Path) -> None:
    # Not under /tmp: the sandbox's /tmp is private, so the probe would not see the file at all.
    with tempfile.TemporaryDirectory(dir="/var/tmp") as directory:
        outside = Path(directory) / "conf.txt"
        outside.write_text("one\n")
        started = time.time_ns() - 10**9  # as if the agent's command had started a second ago
        result = probe(root, f"cat {outside}", command_environment(), "one\n", 0, started_ns=started)
        assert not result.servable and "changed while the command ran" in str(result.reason)
        result = _probe(root, f"cat {outside}")  # started after the write: servable
        assert result.servable, result.reason


@needs_probe
def test_what_the_private_tmp_hides_is_not_served(root: Path, tmp_path: Path) -> None:
    outside = tmp_path / "conf.txt"
    outside.write_text("one\n")
    result = _probe(root, f"cat {outside} 2>/dev/null; echo done")
    assert not result.servable  # the probe found no file and printed only "done"


def _hexed(text: str) -> str:
    return "".join(f"\\x{byte:02x}" for byte in text.encode())


def test_the_trace_parser_joins_resumed_calls_and_follows_the_working_directory() -> None:
    h = _hexed
    text = "\n".join([
        f'7 execve("{h("/usr/bin/bash")}", ["{h("bash")}"], 0x1 /* 3 vars */) = 0',
        f'7 chdir("{h("sub")}") = 0',
        "7 clone(child_stack=NULL, flags=SIGCHLD <unfinished ...>",
        f'8 stat("{h("tools/cat")}", 0x7ff) = -1 ENOENT (No such file or directory)',
        "7 <... clone resumed>) = 8",
        f'8 openat(AT_FDCWD<{h("/r/sub")}>, "{h("a.txt")}", O_RDONLY) = 3<{h("/r/sub/a.txt")}>',
        f'8 openat(AT_FDCWD<{h("/r/sub")}>, "{h("out")}", O_WRONLY|O_CREAT, 0666) = -1 EROFS (Read-only file system)',
        f"8 getdents64(3<{h('/r/sub')}>, 0x1 /* 2 entries */, 32768) = 48",
        f'8 newfstatat(3<{h("/r/sub/a.txt")}>, "", {{st_mode=S_IFREG|0644, ...}}, AT_EMPTY_PATH) = 0',
        f'8 symlink("{h("target")}", "{h("link")}") = -1 EROFS (Read-only file system)',
    ])
    parsed = trace.parse(text, "/r")
    found = [(a.path, a.ok, a.error, a.write_only, a.listing) for a in parsed.accesses]
    assert found == [
        ("/usr/bin/bash", True, None, False, False),
        ("/r/sub", True, None, False, False),
        ("/r/sub/tools/cat", False, "ENOENT", False, False),
        ("/r/sub/a.txt", True, None, False, False),
        ("/r/sub/out", False, "EROFS", True, False),
        ("/r/sub", True, None, False, True),
        ("/r/sub/link", False, "EROFS", False, False),
    ]
    assert parsed.executed == ("/usr/bin/bash",) and parsed.incomplete is None


def test_a_resumed_call_is_kept_when_strace_pads_its_result() -> None:
    """strace aligns a resumed call's result at column 40 (`<... openat resumed>)      = 4`).
    Such calls were dropped whole: a pipeline's `head -c 4 /dev/zero` lost its open of
    /dev/zero in about one probe of four, and the read was served (CI, 2026-12-04)."""
    h = _hexed
    text = "\n".join([
        f'7 execve("{h("/usr/bin/head")}", ["{h("head")}"], 0x1 /* 3 vars */) = 0',
        f'7 openat(AT_FDCWD<{h("/r")}>, "{h("/dev/zero")}", O_RDONLY <unfinished ...>',
        f'8 newfstatat(AT_FDCWD<{h("/r")}>, "{h(".")}",  <unfinished ...>',
        "7 <... openat resumed>)             = 4<" + h("/dev/zero") + ">",
        "8 <... newfstatat resumed>{st_mode=S_IFDIR|0700, st_size=4096, ...}, 0) = 0",
    ])
    parsed = trace.parse(text, "/r")
    assert [(a.path, a.ok) for a in parsed.accesses] == [
        ("/usr/bin/head", True), ("/dev/zero", True), ("/r/.", True),
    ]
    assert parsed.incomplete is None


def test_a_call_left_unfinished_when_its_process_died_keeps_its_path() -> None:
    h = _hexed
    text = f'7 openat(AT_FDCWD<{h("/r")}>, "{h("conf")}", O_RDONLY <unfinished ...>'
    assert [(a.path, a.ok, a.error) for a in trace.parse(text, "/r").accesses] == [("/r/conf", False, None)]


def test_a_call_whose_result_cannot_be_read_leaves_the_trace_incomplete() -> None:
    h = _hexed
    text = f'7 openat(AT_FDCWD<{h("/r")}>, "{h("a.txt")}", O_RDONLY) ~ garbled'
    assert trace.parse(text, "/r").incomplete is not None


def test_a_relative_lookup_whose_directory_cannot_be_known_leaves_the_trace_incomplete() -> None:
    h = _hexed
    text = "\n".join([
        f'7 chdir("{h("/r/a")}") = 0',
        f'9 chdir("{h("/r/b")}") = 0',
        f'10 stat("{h("x")}", 0x7ff) = -1 ENOENT (No such file or directory)',
    ])
    assert trace.parse(text, "/r").incomplete is not None


def test_an_outside_file_is_revalidated_by_identity_and_content(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    conf = tmp_path / "conf"
    conf.write_text("one\n")
    old = conf.stat()
    found = dependencies.collect([trace.Access(str(conf), "openat", True)], str(root), time.time_ns() + 10**9)
    assert found.never is None and dependencies.first_changed(found) is None
    conf.write_text("two\n")  # same size; the old times put back: only the content hash tells
    os.utime(conf, ns=(old.st_atime_ns, old.st_mtime_ns))
    assert dependencies.first_changed(found) == f"{conf} changed"
