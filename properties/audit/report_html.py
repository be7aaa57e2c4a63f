"""The `--html` report: one self-contained page (inline CSS and SVG; no script, font or CDN).

Sections: headline tiles (stale reuses and classifier violations first, red when not zero),
each with a line saying what its figure counts, per-trajectory bars of redundant versus reused bytes, the timeline of one trajectory (the one
with the most to see: stale reuses, then misses, then reuses and re-reads) with reads, edits,
reuses, re-reads and misses marked step by step, the detector misses table, stale reuses with
their diffs, what was skipped, and every trajectory's steps (command, verdict, exit status and
the start of the output the agent got). Every chart is plain SVG, so the page renders the same
offline, printed, or in a browser with scripts disabled.
"""

from __future__ import annotations

import html
from typing import Any

from .engine import BYTES_PER_TOKEN
from .report_json import SCHEMA

_CSS = """
body{font:14px/1.45 system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:24px auto;max-width:1100px;color:#1d2430;padding:0 16px}
h1{font-size:22px;margin:0 0 4px}h2{font-size:17px;margin:28px 0 8px;border-bottom:1px solid #dde2ea;padding-bottom:4px}
.sub{color:#5b6575;margin:0 0 16px}.tiles{display:flex;flex-wrap:wrap;gap:10px}
.tile{border:1px solid #dde2ea;border-radius:8px;padding:10px 14px;min-width:130px;background:#f8f9fb}
.tile b{display:block;font-size:22px}.tile small.why{display:block;color:#5b6575;font-size:11.5px;max-width:230px;margin-top:2px}
td pre{margin:0;padding:4px;max-height:9em;font-size:11.5px}details{margin:6px 0}summary{cursor:pointer}.tile.bad{background:#fdecec;border-color:#f2b8b8}.tile.good{background:#eaf7ee;border-color:#b7e1c3}
table{border-collapse:collapse;width:100%;font-size:13px}th,td{border-bottom:1px solid #e6e9ef;padding:4px 8px;text-align:left;vertical-align:top}
th{background:#f3f5f8}td.n{text-align:right;font-variant-numeric:tabular-nums}code{font:12px ui-monospace,Menlo,monospace;word-break:break-all}
pre{background:#f6f8fa;border:1px solid #e1e4e8;padding:8px;overflow:auto;font-size:12px}.legend span{margin-right:14px;white-space:nowrap}
.sw{display:inline-block;width:11px;height:11px;border-radius:2px;margin-right:4px;vertical-align:-1px}
svg text{font:11px system-ui,sans-serif;fill:#1d2430}
"""

_KIND_COLOURS = {
    "read": "#5b8def", "search": "#8fb3f5", "test": "#9b7bd8", "edit": "#f0a43a", "run": "#e07b39", "unknown": "#a0a7b4",
    "skipped": "#d5d9e0",
}
REDUNDANT_COLOUR = "#f2c14e"
REUSED_COLOUR = "#2e9e5b"
MISS_COLOUR = "#d64545"


def _e(value: object) -> str:
    return html.escape(str(value), quote=True)


def _tile(label: str, value: object, why: str, tone: str = "") -> str:
    """A headline figure, its name, and `why`: what the figure counts, in one sentence."""
    return f'<div class="tile {tone}"><b>{_e(value)}</b>{_e(label)}<small class="why">{_e(why)}</small></div>'


def _bars(trajectories: list[dict[str, Any]]) -> str:
    done = [t for t in trajectories if t.get("status") != "failed"]
    if not done:
        return "<p>No trajectory finished.</p>"
    largest = max([max(t["redundant"]["bytes"], t["reused"]["bytes"]) for t in done] + [1])
    label_w, bar_w, row_h = 260, 640, 30
    height = row_h * len(done) + 30
    ids = [t.get("instance_id") for t in done]
    parts = [f'<svg id="bytes-chart" role="img" aria-label="redundant versus reused bytes per trajectory" '
             f'width="{label_w + bar_w + 120}" height="{height}" viewBox="0 0 {label_w + bar_w + 120} {height}">']
    for row, t in enumerate(done):
        y = 10 + row * row_h
        # Two runs of one task (two models, say) share an instance id: the file name tells them apart.
        name = t["instance_id"] if t.get("instance_id") and ids.count(t["instance_id"]) == 1 else t["name"]
        parts.append(f'<text x="{label_w - 8}" y="{y + 14}" text-anchor="end">{_e(str(name)[-40:])}</text>')
        for offset, (kind, colour, value) in enumerate(
            (("redundant", REDUNDANT_COLOUR, t["redundant"]["bytes"]), ("reused", REUSED_COLOUR, t["reused"]["bytes"]))
        ):
            width = max(round(bar_w * value / largest), 1 if value else 0)
            parts.append(
                f'<rect class="bar {kind}" x="{label_w}" y="{y + offset * 11}" width="{width}" height="10" fill="{colour}">'
                f"<title>{_e(name)}: {value:,} {kind} bytes</title></rect>"
            )
            parts.append(f'<text x="{label_w + width + 4}" y="{y + offset * 11 + 9}">{value:,}</text>')
    parts.append("</svg>")
    legend = (f'<p class="legend"><span><i class="sw" style="background:{REDUNDANT_COLOUR}"></i>redundant re-reads '
              f'(bytes a perfect ledger would not re-send)</span><span><i class="sw" style="background:{REUSED_COLOUR}">'
              "</i>reused by Ledger (confirmed fresh)</span></p>")
    return legend + "".join(parts)


def _interest(t: dict[str, Any]) -> tuple[int, ...]:
    misses = sum(len(m) for m in t["misses"].values())
    return (len(t["stale"]), len(t["violations"]), misses, t["reused"]["count"] + t["redundant"]["verbatim"] + t["redundant"]["sub-range"], t["replayed"])


def _timeline(t: dict[str, Any]) -> str:
    steps = t["timeline"]
    if not steps:
        return "<p>No steps.</p>"
    step_w = max(4, min(18, 1000 // len(steps)))
    width, top = step_w * len(steps) + 40, 36
    parts = [f'<svg id="timeline" role="img" aria-label="timeline of {_e(t["name"])}" width="{width}" height="130" '
             f'viewBox="0 0 {width} 130">']
    for n, step in enumerate(steps):
        x = 20 + n * step_w
        kind = step["category"]
        tip = f'step {step["step"]}: {kind}' + (f' ({step.get("reason")})' if kind == "skipped" else f' {step.get("verdict")}: {step.get("command", "")[:120]}')
        parts.append(f'<rect class="step {kind}" x="{x}" y="{top}" width="{step_w - 1}" height="40" '
                     f'fill="{_KIND_COLOURS.get(kind, "#a0a7b4")}"><title>{_e(tip)}</title></rect>')
        if step.get("redundant"):
            parts.append(f'<rect class="mark redundant" x="{x}" y="{top + 44}" width="{step_w - 1}" height="8" fill="{REDUNDANT_COLOUR}"/>')
        if step.get("verdict") == "reuse":
            colour = MISS_COLOUR if step.get("stale") else REUSED_COLOUR
            parts.append(f'<circle class="mark reuse" cx="{x + step_w / 2}" cy="{top - 8}" r="{max(step_w / 2 - 1, 2)}" fill="{colour}"/>')
        if step.get("misses"):
            cx = x + step_w / 2
            parts.append(f'<polygon class="mark miss" points="{cx},{top + 56} {cx - 5},{top + 68} {cx + 5},{top + 68}" fill="{MISS_COLOUR}">'
                         f'<title>missed by {_e(", ".join(step["misses"]))}</title></polygon>')
    parts.append(f'<text x="20" y="{top + 88}">step {steps[0]["step"]}</text><text x="{width - 20}" y="{top + 88}" text-anchor="end">'
                 f'step {steps[-1]["step"]}</text></svg>')
    legend = '<p class="legend">' + "".join(
        f'<span><i class="sw" style="background:{colour}"></i>{kind}</span>' for kind, colour in _KIND_COLOURS.items()
    ) + (f'<span><i class="sw" style="background:{REUSED_COLOUR};border-radius:6px"></i>reuse (above; red if stale)</span>'
         f'<span><i class="sw" style="background:{REDUNDANT_COLOUR}"></i>redundant re-read (below)</span>'
         f'<span style="color:{MISS_COLOUR}">&#9650; detector miss</span></p>')
    return legend + "".join(parts)


def _misses_table(trajectories: list[dict[str, Any]], limit: int = 200) -> str:
    rows = []
    for t in trajectories:
        for label, misses in sorted(t.get("misses", {}).items()):
            for miss in misses:
                rows.append(f'<tr><td>{_e(label)}</td><td>{_e(t.get("instance_id") or t["name"])}</td><td class="n">{miss["step"]}</td>'
                            f'<td><code>{_e(miss["command"][:200])}</code></td><td><code>{_e(", ".join(miss["missing"][:8]))}</code></td></tr>')
    if not rows:
        return "<p>No detector missed a change.</p>"
    more = f"<p>{len(rows) - limit} more in the JSON report.</p>" if len(rows) > limit else ""
    return ("<table id=\"misses\"><tr><th>detector</th><th>trajectory</th><th>step</th><th>command</th><th>changed, not reported</th></tr>"
            + "".join(rows[:limit]) + "</table>" + more)


def _stale_section(trajectories: list[dict[str, Any]]) -> str:
    items = [(t, s) for t in trajectories for s in t.get("stale", [])]
    if not items:
        return "<p>No stale reuse: every Reuse printed what running the command printed.</p>"
    return "".join(
        f'<p><b>{_e(t.get("instance_id") or t["name"])}</b> step {s["step"]}: <code>{_e(s["command"][:200])}</code> '
        f'(exit {s["reused_exit"]} reused, {s["real_exit"]} real)</p><pre>{_e(s["diff"])}</pre>'
        for t, s in items
    )


def _violations_section(trajectories: list[dict[str, Any]]) -> str:
    items = [(t, v) for t in trajectories for v in t.get("violations", [])]
    if not items:
        return "<p>No read-only command changed the tree.</p>"
    return "<table><tr><th>trajectory</th><th>step</th><th>command</th><th>changed</th></tr>" + "".join(
        f'<tr><td>{_e(t.get("instance_id") or t["name"])}</td><td class="n">{v["step"]}</td><td><code>{_e(v["command"][:200])}</code></td>'
        f'<td><code>{_e(", ".join(v["changed"][:8]))}</code></td></tr>' for t, v in items
    ) + "</table>"


def _steps_section(trajectories: list[dict[str, Any]], limit: int = 400) -> str:
    """Every step of every trajectory: command, verdict, exit status, the start of its output."""
    parts = []
    for t in trajectories:
        steps = t.get("timeline") or []
        if not steps:
            continue
        rows = []
        for step in steps[:limit]:
            if step["category"] == "skipped":
                rows.append(f'<tr class="step-row skipped"><td class="n">{step["step"]}</td><td></td>'
                            f'<td>skipped: {_e(step.get("reason"))}</td><td></td><td></td></tr>')
                continue
            flags = [flag for flag, on in (("stale", step.get("stale")), ("redundant re-read", step.get("redundant")),
                                           ("changed files", step.get("violation"))) if on]
            verdict = step.get("verdict", "") + "".join(f" ({flag})" for flag in flags)
            rows.append(f'<tr class="step-row {_e(step["category"])}"><td class="n">{step["step"]}</td>'
                        f'<td><code>{_e(step.get("command", ""))}</code></td><td>{_e(verdict)}</td>'
                        f'<td class="n">{_e(step.get("exit", ""))}</td><td><pre>{_e(step.get("excerpt", ""))}</pre></td></tr>')
        more = f"<p>{len(steps) - limit} more steps in the JSON report.</p>" if len(steps) > limit else ""
        parts.append(f'<details><summary>{_e(t.get("instance_id") or t["name"])}: {len(steps)} steps</summary>'
                     '<table class="steps"><tr><th>step</th><th>command</th><th>verdict</th><th>exit</th>'
                     f'<th>output (start)</th></tr>{"".join(rows)}</table>{more}</details>')
    return "".join(parts) or "<p>No steps.</p>"


def _counts_table(title: str, counts: dict[str, int]) -> str:
    if not counts:
        return ""
    rows = "".join(f'<tr><td>{_e(k)}</td><td class="n">{v:,}</td></tr>' for k, v in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))
    return f"<table><tr><th>{_e(title)}</th><th>count</th></tr>{rows}</table>"


def render(doc: dict[str, Any]) -> str:
    """The page for a `report_json.document`."""
    totals, trajectories = doc["totals"], doc["trajectories"]
    done = [t for t in trajectories if t.get("status") != "failed"]
    share = totals["perfect_share"]
    tiles = [
        _tile("stale reuses", totals["stale"], "Reuses whose stored output differed from running the command for "
              "real; must be 0.", "bad" if totals["stale"] else "good"),
        _tile("classifier violations", totals["violations"], "Commands classified read-only that changed files "
              "when run; must be 0.", "bad" if totals["violations"] else "good"),
        _tile("trajectories", totals["trajectories"], "Agent runs replayed, each in a throwaway copy of its "
              "repository at its base commit."),
        _tile("commands replayed", f'{totals["replayed"]:,}', "Steps run for real; skipped steps (see Commands) "
              "are not counted."),
        _tile("redundant re-reads", f'{totals["redundant"]["verbatim"] + totals["redundant"]["sub-range"]:,}',
              "Reads a perfect ledger (one told of every change) would not have re-run: the same output, or a "
              "range inside an earlier one."),
        _tile("reused by Ledger", f'{totals["reused"]["count"]:,}', "Ledger's Reuses that printed exactly what "
              "running the command printed (checked by running it)."),
        _tile("of a perfect ledger", "n/a" if share is None else f"{share:.0%}", "Ledger's confirmed Reuses as a "
              "share of the steps a perfect ledger could have served; n/a when a perfect ledger could serve none."),
        _tile("tokens not re-sent (est.)", f'{totals["reused"]["tokens"]:,}', f"Bytes of reused outputs the agent "
              f"did not get again, divided by {BYTES_PER_TOKEN} (a rough bytes-per-token figure)."),
    ] + [_tile(f"misses: {label}", n, f"Changes the ground truth saw that {label} neither reported nor covered "
               "with \"unknown\"; each could serve a stale read.", "bad" if n else "good")
         for label, n in sorted(totals["misses"].items())] + [
        _tile(f"unknown scope: {label}", f"{n:,}", f"Steps after which {label} could not name what changed and said "
              "\"something may have\": this costs reuse (every read runs again), never a miss.")
        for label, n in sorted(totals["unknown"].items())
    ]
    chosen = max(done, key=_interest) if done else None
    failed = [t for t in trajectories if t.get("status") == "failed"]
    failed_html = "".join(f'<p><b>{_e(t["name"])}</b>: {_e(t.get("error"))}</p>' for t in failed)
    body = f"""<h1>Ledger audit</h1>
<p class="sub">{totals['trajectories']} trajectories, {totals['replayed']:,} commands replayed, {sum(totals['skipped'].values()):,} skipped;
deciding detector: {_e(doc['settings'].get('detector') or 'default')}; sandbox: {'on' if doc['settings'].get('sandboxed') else 'off'}; schema {SCHEMA}.</p>
<div class="tiles">{''.join(tiles)}</div>
<h2>Redundant versus reused bytes, per trajectory</h2>{_bars(trajectories)}
<h2>Timeline{': ' + _e(chosen.get('instance_id') or chosen['name']) if chosen else ''}</h2>{_timeline(chosen) if chosen else '<p>No trajectory finished.</p>'}
<h2>Detector misses</h2>{_misses_table(trajectories)}
<h2>Stale reuses</h2>{_stale_section(trajectories)}
<h2>Classifier violations</h2>{_violations_section(trajectories)}
<h2>Commands</h2>{_counts_table('category', totals['categories'])}{_counts_table('skipped because', totals['skipped'])}
<h2>Steps</h2><p class="sub">Each step as replayed, numbered by its place in the trajectory file (from 1): the command, Ledger's
verdict, the exit status and the start of the output the agent got (for a Reuse, the stored output).</p>{_steps_section(trajectories)}
{('<h2>Failed trajectories</h2>' + failed_html) if failed else ''}"""
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>Ledger audit</title>
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'; img-src data:">
<style>{_CSS}</style></head><body>{body}</body></html>
"""
