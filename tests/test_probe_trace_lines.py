"""The strace parser on hand-written traces (`ledger_impl.probe.trace.parse`).

`tests/test_probe.py` parses what strace printed for real commands, and real commands rarely
split a call across processes, change directory by descriptor, or print a line the parser must
pass over. These traces are written the way strace prints with the probe's options (`-f -xx
-y`), one case each. Written for the survivors of the module's operator mutation
(docs/mutation/survivors.md).
"""

from __future__ import annotations

import pytest

from ledger_impl.probe.trace import UNIX_SOCKET, Access, parse

ROOT = "/r"


def x(text: str) -> str:
    """A string as `-xx` prints it."""
    return "".join(f"\\x{byte:02x}" for byte in text.encode())


def at(directory: str, path: str) -> str:
    return f'AT_FDCWD<{x(directory)}>, "{x(path)}"'


def paths(text: str) -> list[str]:
    return [access.path for access in parse(text, ROOT).accesses]


def test_calls_after_a_split_call_are_read_and_the_split_call_is_joined() -> None:
    """A real miss of the operator mutation (ledger_impl/probe/trace.py line 122, `continue` ->
    `break`): a line with no pid (strace's own message) ended the parse, and every later access
    went unrecorded."""
    trace = "\n".join([
        "strace: Process 11 attached",  # no pid first: not a call
        f"10 openat({at('/r', 'a')}, O_RDONLY <unfinished ...>",
        f"11 openat({at('/r', 'b')}, O_RDONLY) = 3<{x('/r/b')}>",
        f"10 <... openat resumed>) = 4<{x('/r/a')}>",
        f"10 openat({at('/r', 'c')}, O_RDONLY) = 5<{x('/r/c')}>",
    ])
    assert paths(trace) == ["/r/b", "/r/a", "/r/c"]


def test_a_resumed_call_whose_start_was_not_seen_or_that_is_malformed_is_passed_over() -> None:
    """A real miss (ledger_impl/probe/trace.py line 131, `continue` -> `break`): a resumed line
    with no start ended the parse, and every later access went unrecorded."""
    trace = "\n".join([
        "10 <... openat resumed>) = 3",  # its start was never printed
        f"11 openat({at('/r', 'a')}, O_RDONLY <unfinished ...>",
        "11 <... openat ended oddly) = 3",  # no `resumed>`: the call is dropped
        f"12 openat({at('/r', 'c')}, O_RDONLY) = 5<{x('/r/c')}>",
    ])
    result = parse(trace, ROOT)
    assert [access.path for access in result.accesses] == ["/r/c"] and result.incomplete is None


def test_the_rest_of_a_split_call_keeps_its_descriptors_with_their_paths() -> None:
    """A real miss (ledger_impl/probe/trace.py line 132, `+` -> `-`): the rest of a split call was
    joined with part of its `<... resumed>` marker, which parted a descriptor from its path, and
    the second path was recorded under the working directory."""
    trace = "\n".join([
        f'10 renameat2(3<{x("/r/x")}>, "{x("a")}", 4<{x("/r/y")}> <unfinished ...>',
        f'10 <... renameat2 resumed>, "{x("b")}", 0) = 0',
    ])
    assert paths(trace) == ["/r/x/a", "/r/y/b"]


def test_lines_that_are_no_calls_are_passed_over() -> None:
    """A real miss (ledger_impl/probe/trace.py line 150, `continue` -> `break`): a line that is no
    call ended the parse, and every later access went unrecorded."""
    trace = "\n".join([
        "10 --- SIGCHLD {si_signo=SIGCHLD, si_code=CLD_EXITED, si_pid=11} ---",
        "11 +++ killed by SIGKILL (core dumped) +++",
        f"10 openat({at('/r', 'a')}, O_RDONLY) = 3<{x('/r/a')}>",
    ])
    result = parse(trace, ROOT)
    assert [access.path for access in result.accesses] == ["/r/a"] and result.incomplete is None


def test_a_call_with_no_result_makes_the_trace_incomplete_and_the_rest_is_still_read() -> None:
    call = f"openat({at('/r', 'a' * 60)}, O_RDONLY"
    trace = f"10 {call}\n10 openat({at('/r', 'c')}, O_RDONLY) = 5<{x('/r/c')}>"
    result = parse(trace, ROOT)
    assert result.incomplete == f"a call of process 10 has no result to read: {call[:80]}"
    assert [access.path for access in result.accesses] == ["/r/c"]


def test_only_a_failed_call_has_an_error_name() -> None:
    trace = "\n".join([
        f'10 stat("{x("a")}", 0x7ffd) = -1 ENOENT (No such file or directory)',
        f'10 stat("{x("b")}", 0x7ffd) = ? ERESTARTSYS (To be restarted if SA_RESTART is set)',
    ])
    first, second = parse(trace, ROOT).accesses
    assert (first.ok, first.error) == (False, "ENOENT") and (second.ok, second.error) == (False, None)


def test_a_child_starts_in_the_directory_its_parent_cloned_it_from() -> None:
    trace = "\n".join([
        f'9 stat("{x("a")}", 0x7ffd) = 0',
        f'10 chdir("{x("sub")}") = 0',
        "10 clone(child_stack=NULL, flags=CLONE_CHILD_SETTID|SIGCHLD) = 11",
        f'11 stat("{x("x")}", 0x7ffd) = 0',
    ])
    result = parse(trace, ROOT)
    assert [access.path for access in result.accesses] == ["/r/a", "/r/sub", "/r/sub/x"]
    assert result.incomplete is None


@pytest.mark.parametrize("parent_moved_to", ["sub", "/"], ids=["deeper", "shallower"])
def test_a_child_seen_before_its_clone_returned_and_guessed_wrong_makes_the_trace_incomplete(parent_moved_to: str) -> None:
    """The child's first call came before the parent's `clone` returned, so it was given the
    one directory every process then shared; the parent had moved by the time it cloned. A
    real miss (ledger_impl/probe/trace.py line 170, `!=` -> `>` or `<`): a wrong guess that
    sorted one way was not noticed, and the child's relative paths were recorded under the
    wrong directory."""
    trace = "\n".join([
        f'10 stat("{x("a")}", 0x7ffd) = 0',
        f'11 stat("{x("x")}", 0x7ffd) = 0',  # guessed: /r
        f'10 chdir("{x(parent_moved_to)}") = 0',
        "10 clone(child_stack=NULL, flags=SIGCHLD) = 11",
    ])
    assert parse(trace, ROOT).incomplete == "process 11 may have started in another directory than guessed"


def test_fchdir_moves_the_working_directory_and_no_other_descriptor_call_does() -> None:
    """Real misses (ledger_impl/probe/trace.py line 191, the `fchdir` test turned into an order or
    an `or`; line 211, `==` -> `<=` for `chdir`): a directory change was lost, or another call
    (a `waitid` on a descriptor, an `access`) was taken for one, and later relative paths were
    recorded under the wrong directory."""
    trace = "\n".join([
        f"10 waitid(P_PIDFD, 3<{x('anon_inode:[pidfd]')}>, {{}}, WEXITED, NULL) = 0",
        f'10 stat("{x("a")}", 0x7ffd) = 0',
        f"10 fchdir(4<{x('/r/sub')}>) = 0",
        f'10 stat("{x("b")}", 0x7ffd) = 0',
        f'10 access("{x("other")}", F_OK) = 0',  # sorts before `chdir`: looks, does not move
        f'10 stat("{x("c")}", 0x7ffd) = 0',
    ])
    assert paths(trace) == ["/r/a", "/r/sub/b", "/r/sub/other", "/r/sub/c"]


def test_a_link_made_from_a_descriptor_records_its_new_name() -> None:
    trace = f'10 linkat(3<{x("/r/a")}>, "", {at("/r", "b")}, AT_EMPTY_PATH) = 0'
    assert paths(trace) == ["/r/b"]


def test_both_names_of_a_rename_are_recorded() -> None:
    assert paths(f'10 rename("{x("a")}", "{x("b")}") = 0') == ["/r/a", "/r/b"]


def test_a_connect_to_a_relative_socket_path_is_a_lookup_from_the_working_directory() -> None:
    """A real miss (ledger_impl/probe/trace.py line 223, the `not` dropped): a relative socket path
    was recorded as it was written, not under the working directory, so the lookup checked
    another place."""
    trace = f'10 connect(3<{x("socket:[1]")}>, {{sa_family=AF_UNIX, sun_path="{x("run/s")}"}}, 110) = -1 ENOENT (No such file or directory)'
    result = parse(trace, ROOT)
    assert result.accesses == (Access("/r/run/s", "connect", False, "ENOENT", socket=UNIX_SOCKET),)
    assert result.incomplete is None


def test_a_bind_to_a_socket_path_is_a_conversation_never_a_lookup() -> None:
    """A real miss (ledger_impl/probe/trace.py line 221, `==` -> `<=`): a `bind` (which sorts
    before `connect`) was recorded as a lookup of its path, which can be revalidated, instead of
    a conversation, which never can."""
    trace = f'10 bind(3<{x("socket:[1]")}>, {{sa_family=AF_UNIX, sun_path="{x("/r/s")}"}}, 110) = 0'
    assert parse(trace, ROOT).accesses == (Access("", "bind", True, None, socket="bind to AF_UNIX"),)


@pytest.mark.parametrize(
    ("address", "peer"),
    [("{sa_family=AF_INET, sin_port=htons(53), sin_addr=inet_addr(\"10.0.0.1\")}", "AF_INET"),
     ("{sa_family=AF_UNIX, sun_path=@\"\\x61\"}", "the abstract Unix namespace")],
)
def test_a_conversation_names_its_peer_s_family(address: str, peer: str) -> None:
    trace = f"10 sendto(3<{x('socket:[1]')}>, \"\\x00\", 1, 0, {address}, 16) = -1 ENOENT (No such file or directory)"
    assert parse(trace, ROOT).accesses[0].socket == f"sendto to {peer}"
