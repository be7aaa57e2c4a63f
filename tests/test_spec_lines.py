"""Line semantics of range reuse, pinned to what sed, head, cat -n and nl -ba really print."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ledger_spec import WHOLE_FILE, LineRange, can_serve, consistent, reaches_end_of_file, serve_lines, split_lines


def sed_model(lines: list[str], final_newline: bool, first: int, last: int) -> str:
    """What `sed -n 'FIRST,LASTp'` prints for a file of `lines` (no newlines inside them),
    written without the spec: sed prints line FIRST alone when LAST < FIRST."""
    stop = max(first, last)
    printed = []
    for number, line in enumerate(lines, start=1):
        if first <= number <= stop:
            is_last_line = number == len(lines)
            printed.append(line + ("" if is_last_line and not final_newline else "\n"))
    return "".join(printed)


def determined_by(stored_first: int, stored_last: int, stored_output: str, first: int, last: int) -> bool:
    """Whether every file that gives `stored_output` for `sed -n 'SF,SLp'` gives the same output
    for `sed -n 'F,Lp'`, written without the spec: the output shows lines SF.. onwards, and
    that the file ends right after them when it has fewer lines than asked for or its last
    line has no newline (only a file's last line can lack one)."""
    unterminated = bool(stored_output) and not stored_output.endswith("\n")
    shown = stored_output.count("\n") + (1 if unterminated else 0)
    ends_inside = unterminated or shown < max(stored_first, stored_last) - stored_first + 1

    def known(number: int) -> bool:
        return stored_first <= number < stored_first + shown or (ends_inside and number >= stored_first + shown)

    return all(known(number) for number in range(first, max(first, last) + 1))


def file_text(lines: list[str], final_newline: bool) -> str:
    return "\n".join(lines) + ("\n" if final_newline and lines else "")


# --- split_lines ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("", []),
        ("\n", ["\n"]),
        ("a", ["a"]),
        ("a\n", ["a\n"]),
        ("a\nb", ["a\n", "b"]),
        ("a\n\nb\n", ["a\n", "\n", "b\n"]),
        ("a\r\nb\rc\n", ["a\r\n", "b\rc\n"]),
        ("a\x0bb\x0cc\x1cd\u2028e\u0085f\n", ["a\x0bb\x0cc\x1cd\u2028e\u0085f\n"]),
    ],
)
def test_split_lines_ends_lines_only_at_newline(text: str, expected: list[str]) -> None:
    assert split_lines(text) == expected


# --- LineRange --------------------------------------------------------------------------------


def test_reversed_sed_range_selects_the_first_line_alone() -> None:
    assert LineRange.from_sed(5, 3) == LineRange(5, 5)
    assert LineRange.from_sed(5, 0) == LineRange(5, 5)
    assert LineRange.from_sed(3, 5) == LineRange(3, 5)
    assert LineRange.from_sed(4, 4) == LineRange(4, 4)


def test_empty_range_is_one_before_start() -> None:
    assert LineRange(5, 4).is_empty
    assert LineRange(1, 0).is_empty
    assert not LineRange(5, 5).is_empty
    assert not LineRange(5, None).is_empty


@pytest.mark.parametrize(
    ("start", "end"), [(0, None), (-1, 3), (0, 0), (5, 3), (2, -1), (1, -5), (True, None), (1, True), ("1", None)]
)
def test_malformed_ranges_are_rejected_with_a_message(start: object, end: object) -> None:
    with pytest.raises(ValueError, match="line range"):
        LineRange(start, end)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("outer", "inner", "covered"),
    [
        (LineRange(3, 8), LineRange(3, 8), True),
        (LineRange(3, 8), LineRange(4, 7), True),
        (LineRange(3, 8), LineRange(2, 8), False),
        (LineRange(3, 8), LineRange(3, 9), False),
        (LineRange(3, 8), LineRange(4, None), False),
        (LineRange(3, None), LineRange(400, None), True),
        (LineRange(3, None), LineRange(2, 5), False),
        (LineRange(3, 8), LineRange(100, 99), True),
        (LineRange(3, 2), LineRange(1, 0), True),
        (LineRange(3, 2), LineRange(3, 3), False),
        (WHOLE_FILE, LineRange(1, 1), True),
    ],
)
def test_covers(outer: LineRange, inner: LineRange, covered: bool) -> None:
    assert outer.covers(inner) is covered


# --- consistent / reaches_end_of_file / can_serve / serve ------------------------------------


def test_consistent_rejects_more_lines_than_the_range_asks_for() -> None:
    assert consistent(LineRange(3, 4), "a\nb\n")
    assert consistent(LineRange(3, 4), "a\nb")
    assert consistent(LineRange(3, 4), "")
    assert not consistent(LineRange(3, 4), "a\nb\nc")
    assert not consistent(LineRange(3, 2), "a")
    assert consistent(LineRange(3, 2), "")
    assert consistent(WHOLE_FILE, "a\n" * 1000)


def test_end_of_file_is_known_from_a_short_read_a_missing_newline_or_an_open_range() -> None:
    assert reaches_end_of_file(LineRange(3, 5), "a\nb\n")  # asked for 3 lines, got 2
    assert reaches_end_of_file(LineRange(3, 4), "a\nb")  # last line has no newline
    assert not reaches_end_of_file(LineRange(3, 4), "a\nb\n")  # a line 5 may follow
    assert reaches_end_of_file(LineRange(3, None), "a\n")
    assert reaches_end_of_file(LineRange(3, 4), "")  # file has fewer than 3 lines
    assert not reaches_end_of_file(LineRange(3, 2), "")  # the empty range shows nothing


def test_a_range_past_the_end_is_served_empty_once_the_end_is_known() -> None:
    stored, output = LineRange(1, 40), "a\nb\n"
    assert can_serve(stored, output, LineRange(900, 950))
    assert serve_lines(stored, output, LineRange(900, 950)) == ""
    assert serve_lines(stored, output, LineRange(2, 60)) == "b\n"


def test_a_full_read_that_may_continue_cannot_serve_past_its_end() -> None:
    stored, output = LineRange(1, 2), "a\nb\n"
    assert not can_serve(stored, output, LineRange(2, 3))
    assert not can_serve(stored, output, LineRange(3, None))
    with pytest.raises(ValueError, match="cannot be served"):
        serve_lines(stored, output, LineRange(2, 3))


def test_a_range_starting_before_the_stored_one_is_never_served() -> None:
    assert not can_serve(LineRange(3, None), "c\n", LineRange(2, 3))


def test_whole_file_read_serves_any_range() -> None:
    output = "one\ntwo\nthree"
    assert serve_lines(WHOLE_FILE, output, LineRange(2, 2)) == "two\n"
    assert serve_lines(WHOLE_FILE, output, LineRange(2, None)) == "two\nthree"
    assert serve_lines(WHOLE_FILE, output, LineRange(3, 10)) == "three"
    assert serve_lines(WHOLE_FILE, output, LineRange(4, None)) == ""
    assert serve_lines(WHOLE_FILE, output, WHOLE_FILE) == output


def test_empty_file() -> None:
    assert serve_lines(WHOLE_FILE, "", LineRange(1, 5)) == ""
    assert serve_lines(WHOLE_FILE, "", LineRange.from_sed(5, 3)) == ""
    assert split_lines("") == []


def test_empty_range_is_served_from_anything_as_nothing() -> None:
    assert can_serve(LineRange(3, 4), "a\nb\n", LineRange(9, 8))
    assert serve_lines(LineRange(3, 4), "a\nb\n", LineRange(9, 8)) == ""


def test_carriage_return_is_an_ordinary_character_when_slicing() -> None:
    output = "a\r\nb\rc\nd\r"
    assert serve_lines(WHOLE_FILE, output, LineRange(2, 2)) == "b\rc\n"
    assert serve_lines(WHOLE_FILE, output, LineRange(3, 3)) == "d\r"


def test_serve_rejects_an_output_with_more_lines_than_the_stored_range() -> None:
    with pytest.raises(ValueError, match="cannot be the result"):
        serve_lines(LineRange(1, 1), "a\nb\n", LineRange(1, 1))


# --- serve against an independent sed model ----------------------------------------------------

file_lines = st.lists(st.sampled_from(["x", "", "y y", "\r", "a\rb", "\t", "\x0c"]), max_size=8)
addresses = st.integers(1, 11)


@settings(max_examples=300, database=None, deadline=None)
@given(file_lines, st.booleans(), addresses, st.integers(0, 11), addresses, st.integers(0, 11))
def test_serving_a_narrower_range_prints_what_sed_would(
    lines: list[str], final_newline: bool, stored_first: int, stored_last: int, first: int, last: int
) -> None:
    stored, requested = LineRange.from_sed(stored_first, stored_last), LineRange.from_sed(first, last)
    stored_output = sed_model(lines, final_newline, stored_first, stored_last)
    assert consistent(stored, stored_output)
    servable = determined_by(stored_first, stored_last, stored_output, first, last)
    assert can_serve(stored, stored_output, requested) == servable
    if servable:
        assert serve_lines(stored, stored_output, requested) == sed_model(lines, final_newline, first, last)


@settings(max_examples=300, database=None, deadline=None)
@given(file_lines, st.booleans(), addresses, st.integers(0, 11))
def test_whole_file_read_serves_every_sed_range(lines: list[str], final_newline: bool, first: int, last: int) -> None:
    whole = file_text(lines, final_newline)
    assert can_serve(WHOLE_FILE, whole, LineRange.from_sed(first, last))
    assert serve_lines(WHOLE_FILE, whole, LineRange.from_sed(first, last)) == sed_model(lines, final_newline, first, last)


@settings(max_examples=200, database=None, deadline=None)
@given(file_lines, st.booleans(), addresses, st.integers(0, 11))
def test_a_covered_range_is_always_servable(lines: list[str], final_newline: bool, first: int, last: int) -> None:
    stored = LineRange.from_sed(first, last)
    output = sed_model(lines, final_newline, first, last)
    for start in range(stored.start, (stored.end or first) + 1):
        for end in range(start - 1, (stored.end or first) + 1):
            assert can_serve(stored, output, LineRange(start, end))


# --- anchored to the real tools ---------------------------------------------------------------

REAL_FILES = {
    "with_newline.txt": "alpha\n\nbeta\r\ngamma\n",
    "without_newline.txt": "alpha\nbeta\ngamma",
    "empty.txt": "",
    "one_line.txt": "solo",
}
needs_tools = pytest.mark.skipif(
    any(shutil.which(tool) is None for tool in ("sed", "head", "cat", "nl")), reason="coreutils/sed not installed"
)


def _run(command: list[str], cwd: Path) -> str:
    completed = subprocess.run(command, cwd=cwd, capture_output=True, check=True)
    return completed.stdout.decode()


@pytest.fixture
def real_files(tmp_path: Path) -> Path:
    for name, content in REAL_FILES.items():
        (tmp_path / name).write_bytes(content.encode())
    return tmp_path


@needs_tools
@pytest.mark.parametrize("name", sorted(REAL_FILES))
@pytest.mark.parametrize(("first", "last"), [(1, 1), (2, 3), (3, 2), (1, 10), (4, 9), (9, 12)])
def test_sed_prints_what_the_spec_slices(real_files: Path, name: str, first: int, last: int) -> None:
    whole = REAL_FILES[name]
    printed = _run(["sed", "-n", f"{first},{last}p", name], real_files)
    assert printed == serve_lines(WHOLE_FILE, whole, LineRange.from_sed(first, last))


@needs_tools
@pytest.mark.parametrize("name", sorted(REAL_FILES))
@pytest.mark.parametrize("count", [1, 2, 3, 10])
def test_head_prints_what_the_spec_slices(real_files: Path, name: str, count: int) -> None:
    printed = _run(["head", "-n", str(count), name], real_files)
    assert printed == serve_lines(WHOLE_FILE, REAL_FILES[name], LineRange(1, count))


@needs_tools
@pytest.mark.parametrize("name", sorted(REAL_FILES))
def test_sed_range_reads_serve_narrower_ranges_like_sed(real_files: Path, name: str) -> None:
    stored = LineRange(2, 5)
    stored_output = _run(["sed", "-n", "2,5p", name], real_files)
    for first, last in [(2, 2), (3, 4), (5, 5), (3, 9), (6, 8), (1, 3)]:
        requested = LineRange.from_sed(first, last)
        servable = determined_by(2, 5, stored_output, first, last)
        assert can_serve(stored, stored_output, requested) == servable, (first, last)
        if servable:
            assert serve_lines(stored, stored_output, requested) == _run(["sed", "-n", f"{first},{last}p", name], real_files)


@needs_tools
@pytest.mark.parametrize("name", sorted(REAL_FILES))
@pytest.mark.parametrize("numbering", [["cat", "-n"], ["nl", "-ba"]])
def test_numbered_views_slice_like_sed_over_the_numbered_output(
    real_files: Path, name: str, numbering: list[str]
) -> None:
    numbered = _run([*numbering, name], real_files)
    assert len(split_lines(numbered)) == len(split_lines(REAL_FILES[name]))
    for first, last in [(1, 1), (2, 3), (3, 2), (2, 9)]:
        sliced = subprocess.run(
            ["sed", "-n", f"{first},{last}p"], input=numbered.encode(), capture_output=True, check=True
        ).stdout.decode()
        assert sliced == serve_lines(WHOLE_FILE, numbered, LineRange.from_sed(first, last))


@needs_tools
def test_cat_n_keeps_a_missing_final_newline_and_nl_ba_adds_one(real_files: Path) -> None:
    # Why cat -n and nl -ba are different views: their last lines differ.
    assert not _run(["cat", "-n", "without_newline.txt"], real_files).endswith("\n")
    assert _run(["nl", "-ba", "without_newline.txt"], real_files).endswith("\n")
