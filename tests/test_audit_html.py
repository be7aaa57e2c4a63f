"""The HTML report opened in headless Chromium: its charts are in the DOM and paint pixels.

Chromium comes from `.ci/run` (Debian's `chromium`); without it these tests skip, saying so.
"""

from __future__ import annotations

import json
import re
import shutil
import struct
import subprocess
import zlib
from pathlib import Path

import pytest

from ledger_properties.audit import engine, formats, report_html, report_json

CHROMIUM = next((shutil.which(name) for name in ("chromium", "chromium-browser", "google-chrome") if shutil.which(name)), None)
pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (apt-get install -y chromium; .ci/run does)")


def _chromium(page: Path, profile: Path, *action: str) -> subprocess.CompletedProcess[str]:
    argv = [
        str(CHROMIUM), "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync", f"--user-data-dir={profile}",
        "--window-size=1200,1000", *action, page.as_uri(),
    ]
    return subprocess.run(argv, capture_output=True, text=True, timeout=120, check=False)


def _pixels(png: bytes) -> tuple[int, int, list[bytes]]:
    """Width, height and RGB rows of an 8-bit, non-interlaced RGB or RGBA PNG (what Chromium writes)."""
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    offset, idat, header = 8, b"", None
    while offset < len(png):
        length, kind = struct.unpack(">I4s", png[offset:offset + 8])
        data = png[offset + 8:offset + 8 + length]
        if kind == b"IHDR":
            header = struct.unpack(">IIBBBBB", data)
        elif kind == b"IDAT":
            idat += data
        offset += 12 + length
    assert header is not None
    width, height, depth, colour, _, _, interlace = header
    assert depth == 8 and colour in (2, 6) and interlace == 0
    channels = 3 if colour == 2 else 4
    raw, stride, rows, previous = zlib.decompress(idat), width * channels, [], bytearray(width * channels)
    for y in range(height):
        kind, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            left = line[i - channels] if i >= channels else 0
            up, corner = previous[i], previous[i - channels] if i >= channels else 0
            if kind == 1:
                line[i] = (line[i] + left) & 0xFF
            elif kind == 2:
                line[i] = (line[i] + up) & 0xFF
            elif kind == 3:
                line[i] = (line[i] + (left + up) // 2) & 0xFF
            elif kind == 4:
                p = left + up - corner
                pa, pb, pc = abs(p - left), abs(p - up), abs(p - corner)
                line[i] = (line[i] + (left if pa <= pb and pa <= pc else up if pb <= pc else corner)) & 0xFF
        rows.append(bytes(b for j in range(0, stride, channels) for b in line[j:j + 3]))
        previous = line
    return width, height, rows


def _count(rows: list[bytes], colour: str) -> int:
    target = bytes.fromhex(colour.lstrip("#"))
    return sum(sum(1 for j in range(0, len(row), 3) if row[j:j + 3] == target) for row in rows)


@pytest.fixture(scope="module")
def page(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A report with a reuse, a redundant re-read, a detector miss and a stale reuse (a repeated
    tree search: a repeated file read would be refused by the observation fingerprint)."""
    root = tmp_path_factory.mktemp("html")
    workspace = root / "ws"
    workspace.mkdir()
    (workspace / "notes.txt").write_text("before\n")
    search = "grep -rn before --include=*.txt ."
    # The search is repeated once fix.py exists, so the stale trap's observation postdates it.
    commands = [search, search, "printf 'open(\"notes.txt\", \"w\").write(\"after\\\\n\")\\n' > fix.py",
                search, "python3 fix.py", search, "pip install nothing"]
    source = root / "trap.jsonl"
    source.write_text("".join(json.dumps({"command": c}) + "\n" for c in commands))
    [trajectory] = formats.load(source)
    # The probe off: its lstat check of the edited file would refuse the stale reuse the page shows.
    result = engine.replay(trajectory, workspace, engine.Settings(detector="ledger_impl.detectors.unsound:optimistic_rules", probe=False))
    doc = report_json.document([result], {"detector": "ledger_impl.detectors.unsound:optimistic_rules", "sandboxed": False})
    path = root / "report.html"
    path.write_text(report_html.render(doc), encoding="utf-8")
    return path


def test_the_page_is_self_contained(page: Path) -> None:
    text = page.read_text()
    assert not re.search(r"""(src|href)=["']?(https?:)?//""", text)  # nothing fetched from anywhere
    assert "<script" not in text and "@import" not in text


def test_chromium_builds_the_charts(page: Path, tmp_path: Path) -> None:
    done = _chromium(page, tmp_path / "profile", "--dump-dom")
    assert done.returncode == 0, done.stderr[-500:]
    dom = done.stdout
    assert dom.count('class="bar redundant"') == 1 and dom.count('class="bar reused"') == 1
    assert len(re.findall(r'<rect class="step ', dom)) == 7  # one mark per step, skipped included
    assert 'class="mark reuse"' in dom and 'class="mark miss"' in dom and 'class="mark redundant"' in dom
    assert re.search(r'<table id="misses">.*python3 fix\.py.*notes\.txt', dom, re.S)
    assert "-./notes.txt:1:before" in dom  # the stale reuse's diff
    assert "<b>1</b>unknown scope: rules<" in dom  # the rules detector could not scope `python3 fix.py`


def test_chromium_paints_the_charts(page: Path, tmp_path: Path) -> None:
    shot = tmp_path / "shot.png"
    done = _chromium(page, tmp_path / "profile", f"--screenshot={shot}")
    assert done.returncode == 0 and shot.exists(), done.stderr[-500:]
    width, height, rows = _pixels(shot.read_bytes())
    assert (width, height) == (1200, 1000)
    # Each chart colour covers a visible area: the bars, the reuse dots, the miss triangle.
    assert _count(rows, report_html.REDUNDANT_COLOUR) > 500
    assert _count(rows, report_html.REUSED_COLOUR) > 500
    assert _count(rows, report_html.MISS_COLOUR) > 30


def test_chromium_shows_every_steps_command_verdict_exit_status_and_output(page: Path, tmp_path: Path) -> None:
    done = _chromium(page, tmp_path / "profile", "--dump-dom")
    assert done.returncode == 0, done.stderr[-500:]
    rows = re.findall(r'<tr class="step-row[^"]*">(.*?)</tr>', done.stdout, re.S)
    assert len(rows) == 7, rows  # one row per step, the skipped one included
    cells = [re.findall(r"<td[^>]*>(.*?)</td>", row, re.S) for row in rows]
    assert [c[1] for c in cells[:2]] == ["<code>grep -rn before --include=*.txt .</code>"] * 2
    assert [c[2].split()[0] for c in cells[:2]] == ["allow", "reuse"] and [c[3] for c in cells[:2]] == ["0", "0"]
    assert cells[1][2] == "reuse (redundant re-read)"  # what a perfect ledger would also have served
    assert "notes.txt:1:before" in cells[0][4] and "notes.txt:1:before" in cells[1][4]  # the output excerpt
    assert cells[4][1] == "<code>python3 fix.py</code>" and cells[4][3] == "0"
    assert "skipped" in cells[6][2]  # pip install: not replayed, says why


def test_every_figure_says_what_it_means(page: Path) -> None:
    text = page.read_text()
    tiles = re.findall(r'<div class="tile[^"]*">(.*?)</div>', text, re.S)
    assert len(tiles) >= 10
    for tile in tiles:
        why = re.search(r'<small class="why">(.+?)</small>', tile, re.S)
        assert why and len(why.group(1).split()) >= 5, tile
    unknown = next(t for t in tiles if "unknown scope: rules" in t)
    assert "could not name" in unknown and "costs reuse" in unknown
    perfect = next(t for t in tiles if "of a perfect ledger" in t)
    assert "n/a" in perfect or "%" in perfect
    assert "perfect ledger" in re.search(r'<small class="why">(.+?)</small>', perfect, re.S).group(1)
