"""Line semantics of range reuse: when a stored range can serve a requested one, and how.

A "line" is a run of characters ending in "\\n", or the final run without one when the file
does not end in a newline. Only "\\n" ends a line: "\\r", form feeds and the Unicode line
separators that `str.splitlines` honours are ordinary characters to sed, head and cat.

A stored output of lines `s..e` that exited 0 also tells where the file ends when it shows
fewer lines than it asked for, or its last line has no newline, or it asked for `s..` to the
end: then it covers every line from `s` onward, and a request past the end is served by the
empty string, exactly as `sed -n '900,950p'` prints nothing for a 20-line file.
"""

from __future__ import annotations

from .values import LineRange


def split_lines(text: str) -> list[str]:
    r"""Split `text` into lines that keep their "\n".

    A raw docstring, so that CrossHair (which reads contracts from the source text) and
    `help()` both see the newline escape rather than a backslash followed by "n".

    post: "".join(__return__) == text
    post: all(line.endswith("\n") for line in __return__[:-1])
    post: all(line.count("\n") <= 1 for line in __return__)
    post: all(line for line in __return__)
    """
    parts = text.split("\n")
    lines = [part + "\n" for part in parts[:-1]]
    if parts[-1]:
        lines.append(parts[-1])
    return lines


def consistent(stored: LineRange, output: str) -> bool:
    """Whether `output` could be the result of reading `stored`: no more lines than it asks for.

    post: implies(stored.end is None, __return__)
    """
    if stored.end is None:
        return True
    return len(split_lines(output)) <= max(0, stored.end - stored.start + 1)


def reaches_end_of_file(stored: LineRange, output: str) -> bool:
    """Whether `output`, the full result of reading `stored`, shows where the file ends.

    post: implies(stored.end is None, __return__)
    """
    if stored.end is None:
        return True
    if stored.is_empty:
        return False
    lines = split_lines(output)
    if len(lines) < stored.end - stored.start + 1:
        return True
    return bool(lines) and not lines[-1].endswith("\n")


def can_serve(stored: LineRange, output: str, requested: LineRange) -> bool:
    """Whether slicing `output` (the result of reading `stored`) answers `requested` exactly.

    post: implies(stored.covers(requested), __return__)
    post: implies(requested.is_empty, __return__)
    """
    if stored.covers(requested):
        return True
    if requested.is_empty:
        return True
    if requested.start < stored.start:
        return False
    return reaches_end_of_file(stored, output)


def serve(stored: LineRange, output: str, requested: LineRange) -> str:
    """The lines of `requested`, cut from `output`, the result of reading `stored`.

    pre: consistent(stored, output) and can_serve(stored, output, requested)
    post: __return__ == "" or __return__ in output
    post: implies(requested == stored, __return__ == output)
    post: implies(requested.is_empty, __return__ == "")
    post: implies(requested.end is not None, len(split_lines(__return__)) <= max(0, requested.end - requested.start + 1))
    """
    if not consistent(stored, output):
        raise ValueError(f"{len(split_lines(output))} lines cannot be the result of reading {stored}")
    if not can_serve(stored, output, requested):
        raise ValueError(f"lines {requested} cannot be served from a read of {stored}")
    if requested.is_empty:
        return ""
    lines = split_lines(output)
    first = requested.start - stored.start
    last = None if requested.end is None else requested.end - stored.start + 1
    return "".join(lines[first:last])
