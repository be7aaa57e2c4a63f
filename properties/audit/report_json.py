"""The `--json` report: schema `ledger-audit/2`, and the totals every report shows.

Document (all counts are integers, bytes are UTF-8 bytes of command output, tokens are bytes
divided by `bytes_per_token`):

    schema            "ledger-audit/2"; a change that removes or renames a field, or changes
                      what one means, bumps it (/2: steps count from 1)
    settings          command_timeout, trajectory_timeout (s), detector (MODULE:FACTORY or
                      null), sandboxed, bytes_per_token
    totals            the sums below over all trajectories, plus `trajectories`, `failed`,
                      `timed_out`, `perfect_share` (reused count / perfect, null if 0),
                      `misses` as {detector: steps with a miss} and `unknown` as {detector:
                      steps}
    trajectories[]    one record per trajectory, sorted by name:
      name, instance_id, format, source, base {repo, commit}, sandboxed
      status          "done" | "timed out" (the rest skipped with reason "trajectory time
                      limit") | "failed" (with `error`; no counts)
      steps, replayed, skipped {reason: n}, categories {read|search|test|edit|run|unknown: n}
      verdicts        {allow, reuse, nudge}
      redundant       {verbatim, sub-range, bytes}: re-reads of unchanged content, by ground truth
      reused          {count, bytes}: Reuses the oracle confirmed (stale ones excluded)
      perfect         steps a perfect ledger could have served (redundant or confirmed reuse)
      stale[]         {step, command, reused_exit, real_exit, diff}: a Reuse that differed
                      from running the command for real (unified diff, reused -> real)
      oracle_inconclusive  Reuses whose re-run timed out or was truncated
      violations[]    {step, command, changed[]}: a read-only command that changed the tree
      detectors[]     labels: the deciding detector first, then `default`, `rules`
      misses          {detector: [{step, command, missing[]}]}: keys the ground truth saw
                      change that the detector neither reported nor covered with "unknown"
      unknown         {detector: n}: replayed steps whose report was "unknown scope" (the
                      detector could not say what changed; costs reuse, never a miss)
      timeline[]      per step: {step, category, verdict, bytes, redundant, misses[], stale,
                      violation, changed, unknown[] (detectors that said "unknown"), command,
                      exit (the exit status the agent got), excerpt (its output's first lines)}
                      or {step, category: "skipped", reason}
      seconds         wall time of the replay

`step` is the step's place in the trajectory as read, counted from 1 (the first tool call or
command is step 1), as in every report of Ledger (docs/reference/step-numbering.md). Totals are sums over
results sorted by name, so they do not depend on `-j` or on completion order; only `seconds`
varies between runs.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Iterable

from .engine import BYTES_PER_TOKEN

SCHEMA = "ledger-audit/2"


def _add(into: dict[str, int], counts: dict[str, int]) -> None:
    for key, value in counts.items():
        into[key] = into.get(key, 0) + value


def totals(results: Iterable[dict[str, Any]]) -> dict[str, Any]:
    """Sums over `results` (taken in name order, so the same for any arrival order)."""
    ordered = sorted(results, key=lambda r: (str(r.get("name")), str(r.get("source"))))
    total: dict[str, Any] = {
        "trajectories": len(ordered), "failed": 0, "timed_out": 0, "steps": 0, "replayed": 0, "skipped": {}, "categories": {},
        "verdicts": {"allow": 0, "reuse": 0, "nudge": 0}, "redundant": {"verbatim": 0, "sub-range": 0, "bytes": 0},
        "reused": {"count": 0, "bytes": 0}, "perfect": 0, "stale": 0, "violations": 0, "oracle_inconclusive": 0,
        "misses": {}, "unknown": {}, "seconds": 0.0,
    }
    for result in ordered:
        total["seconds"] += float(result.get("seconds", 0.0))
        if result.get("status") == "failed":
            total["failed"] += 1
            continue
        total["timed_out"] += result.get("status") == "timed out"
        for name in ("steps", "replayed", "perfect", "oracle_inconclusive"):
            total[name] += result[name]
        for name in ("skipped", "categories", "verdicts", "redundant", "reused"):
            _add(total[name], result[name])
        total["stale"] += len(result["stale"])
        total["violations"] += len(result["violations"])
        for label, misses in result["misses"].items():
            total["misses"][label] = total["misses"].get(label, 0) + len(misses)
        _add(total["unknown"], result.get("unknown", {}))  # absent from results kept before it existed
    total["seconds"] = round(total["seconds"], 1)
    total["redundant"]["tokens"] = total["redundant"]["bytes"] // BYTES_PER_TOKEN
    total["reused"]["tokens"] = total["reused"]["bytes"] // BYTES_PER_TOKEN
    total["perfect_share"] = round(total["reused"]["count"] / total["perfect"], 4) if total["perfect"] else None
    return total


def document(results: list[dict[str, Any]], settings: dict[str, Any]) -> dict[str, Any]:
    ordered = sorted(results, key=lambda r: (str(r.get("name")), str(r.get("source"))))
    return {
        "schema": SCHEMA,
        "settings": {**settings, "bytes_per_token": BYTES_PER_TOKEN},
        "totals": totals(ordered),
        "trajectories": ordered,
    }


def write(path: Path, doc: dict[str, Any]) -> None:
    partial = path.with_name(path.name + ".partial")
    partial.write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")
    partial.replace(path)
