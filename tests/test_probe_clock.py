"""The probe's moved clock, piece by piece (`ledger_impl.probe.clock`): the environment that
moves it, the files libfaketime opens for itself, a script's interpreter, and which executables
the moved clock cannot reach, read from ELF headers written here byte by byte (32 and 64 bits,
either byte order, with and without a PT_INTERP entry). Written for the survivors of the
module's operator mutation (docs/mutation/survivors.md).
"""

from __future__ import annotations

import struct
from pathlib import Path

import pytest

from ledger_impl.probe import clock
from ledger_spec.degraded import Cause, Degraded, Effect

PT_LOAD, PT_INTERP = 1, 3


def elf(*, wide: bool, little: bool, segments: list[int], phoff: int | None = None, cut: int | None = None) -> bytes:
    """An ELF file with a program header table of `segments` (their types), as the loader reads it."""
    order = "<" if little else ">"
    header_size, entry_size = (64, 56) if wide else (52, 32)
    offset = header_size if phoff is None else phoff
    ident = b"\x7fELF" + bytes([2 if wide else 1, 1 if little else 2, 1]) + bytes(9)
    header = bytearray(ident + bytes(header_size - 16))
    if wide:
        struct.pack_into(order + "Q", header, 32, offset)
        struct.pack_into(order + "HH", header, 54, entry_size, len(segments))
    else:
        struct.pack_into(order + "I", header, 28, offset)
        struct.pack_into(order + "HH", header, 42, entry_size, len(segments))
    table = b"".join(struct.pack(order + "I", kind) + bytes(entry_size - 4) for kind in segments)
    body = bytes(header) + bytes(max(0, offset - header_size)) + table
    return body if cut is None else body[:cut]


@pytest.mark.parametrize("wide", [True, False], ids=["64-bit", "32-bit"])
@pytest.mark.parametrize("little", [True, False], ids=["little-endian", "big-endian"])
def test_an_executable_with_an_interpreter_is_reached_and_one_without_is_not(tmp_path: Path, wide: bool, little: bool) -> None:
    dynamic, static = tmp_path / "dynamic", tmp_path / "static"
    dynamic.write_bytes(elf(wide=wide, little=little, segments=[PT_LOAD, PT_LOAD, PT_INTERP]))
    static.write_bytes(elf(wide=wide, little=little, segments=[PT_LOAD, PT_LOAD]))
    assert clock.clock_unreachable(str(dynamic)) is None
    assert clock.clock_unreachable(str(static)) == Degraded(Cause.PROBE_STATIC_EXECUTABLE, (str(static),), Effect.NOT_SERVED)


def test_the_program_header_table_is_read_where_the_header_says(tmp_path: Path) -> None:
    far = tmp_path / "far"
    far.write_bytes(elf(wide=True, little=True, segments=[PT_INTERP], phoff=200))
    assert clock.clock_unreachable(str(far)) is None


def test_a_table_cut_short_holds_no_interpreter(tmp_path: Path) -> None:
    cut = tmp_path / "cut"
    cut.write_bytes(elf(wide=True, little=True, segments=[PT_LOAD, PT_INTERP], cut=64 + 56 + 2))
    assert clock.clock_unreachable(str(cut)) == Degraded(Cause.PROBE_STATIC_EXECUTABLE, (str(cut),), Effect.NOT_SERVED)


@pytest.mark.parametrize(
    "content",
    [b"#!/bin/sh\n" + b"echo a script longer than an ELF header, whose first bytes sort below it\n",
     b"\xef\xbb\xbf" + bytes(80), b"\x7fELF\x02\x01", b"\x7fELF" + bytes(47), b""],
    ids=["script", "sorting-above", "short", "51-bytes", "empty"],
)
def test_what_is_no_whole_elf_header_is_left_to_its_interpreter(tmp_path: Path, content: bytes) -> None:
    path = tmp_path / "program"
    path.write_bytes(content)
    assert clock.clock_unreachable(str(path)) is None


def test_a_header_of_exactly_52_bytes_is_read(tmp_path: Path) -> None:
    """The smallest ELF header, a 32-bit one, is 52 bytes: its table offset is past them."""
    path = tmp_path / "small"
    path.write_bytes(elf(wide=False, little=True, segments=[PT_LOAD])[:52])
    assert clock.clock_unreachable(str(path)) == Degraded(Cause.PROBE_STATIC_EXECUTABLE, (str(path),), Effect.NOT_SERVED)


def test_an_executable_that_cannot_be_read_is_unreadable(tmp_path: Path) -> None:
    missing = str(tmp_path / "missing")
    assert clock.clock_unreachable(missing) == Degraded(Cause.PROBE_EXECUTABLE_UNREADABLE, (missing,), Effect.NOT_SERVED)
    bad = tmp_path / "bad"
    bad.write_bytes(elf(wide=True, little=True, segments=[PT_LOAD])[:56])  # a 64-bit header cut before its table's size
    assert clock.clock_unreachable(str(bad)) == Degraded(Cause.PROBE_EXECUTABLE_UNREADABLE, (str(bad),), Effect.NOT_SERVED)


@pytest.mark.parametrize(
    ("first_line", "interpreter"),
    [(b"#!/bin/sh\n", "/bin/sh"), (b"#!  /usr/bin/env python3 -u\n", "/usr/bin/env"), (b"#!\n", None), (b"#!   \n", None),
     (b"echo no\n", None)],
)
def test_a_script_s_interpreter_is_the_first_word_of_its_first_line(tmp_path: Path, first_line: bytes, interpreter: str | None) -> None:
    path = tmp_path / "script"
    path.write_bytes(first_line + b"exit 0\n")
    assert clock.interpreter_of_script(str(path)) == interpreter


def test_a_script_that_cannot_be_read_has_no_interpreter(tmp_path: Path) -> None:
    assert clock.interpreter_of_script(str(tmp_path / "missing")) is None


@pytest.mark.parametrize(("preload", "expected"), [(None, clock.LIBFAKETIME), ("", clock.LIBFAKETIME), ("/x/own.so", f"{clock.LIBFAKETIME}:/x/own.so")])
def test_the_moved_clock_loads_first_and_keeps_the_command_s_own_preload(preload: str | None, expected: str) -> None:
    environment = {} if preload is None else {"LD_PRELOAD": preload}
    assert clock.shifted_environment(environment) == {
        "LD_PRELOAD": expected, "FAKETIME": "+400d", "FAKETIME_DONT_FAKE_MONOTONIC": "1",
    }


@pytest.mark.parametrize(
    ("path", "own"),
    [
        (clock.LIBFAKETIME, True), ("/dev/shm/sem.faketime_1", True), ("/dev/shm/faketime_shm_1", True),
        ("/etc/faketimerc", True), ("(null)", True), ("/root/.faketimerc", True), ("/x/(null)", True),
        ("/dev/shm/other", False), ("/etc/passwd", False), ("/root/faketimerc", False), (clock.LIBFAKETIME + ".2", False),
    ],
)
def test_libfaketime_s_own_files_are_never_dependencies(path: str, own: bool) -> None:
    assert clock.own_file(path) is own
