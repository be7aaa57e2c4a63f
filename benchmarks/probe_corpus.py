"""How many of today's Reuses survive the probe, on real agent commands, and why each lost one
was lost.

    nice python benchmarks/probe_corpus.py [--per-project 3] [--out benchmarks/results/probe-corpus.json]

The shared corpus (`mini-swe-agent-deepseek.jsonl`) records commands, not repositories. Each
trajectory of a project whose wheel the local package mirror holds (marshmallow, astroid,
pydicom) is replayed in a workspace made from that wheel's files (a git repository; the
layout is the package's, not the task's commit, so some reads name files that are not there
and print the same error each time: those count as reads too). Every command is mapped to the
workspace (`ledger_properties.audit.filter`), skipped for the audit's reasons, and run through two
Runtimes side by side, each in its own copy: the probe off (the enumerated fingerprint only,
as before) and on (as shipped). A Reuse of the first that the second does not make is a lost
one; its reason is the guard's (`ProbeGuard.why_not`). A script, not a test.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import pathlib
import platform
import shutil
import subprocess
import sys
import tempfile
import time
import zipfile

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))

from benchmarks import record  # noqa: E402
from ledger_impl import Runtime  # noqa: E402
from ledger_properties.audit.filter import OutsideWrite, skip_reason, to_command  # noqa: E402
from ledger_properties.audit.formats import Item, Skipped, load  # noqa: E402

CORPUS = pathlib.Path("/work/shared/corpus/mini-swe-agent-deepseek.jsonl")
WHEELS = pathlib.Path("/opt/pypi/files")
# task_repo -> (wheel file prefix, directory the package lives in within the repository)
PROJECTS = {
    "marshmallow-code/marshmallow": ("marshmallow-3.", "src"),
    "pylint-dev/astroid": ("astroid-", "."),
    "pydicom/pydicom": ("pydicom-", "."),
}
GIT = {"GIT_AUTHOR_NAME": "b", "GIT_AUTHOR_EMAIL": "b@e", "GIT_COMMITTER_NAME": "b", "GIT_COMMITTER_EMAIL": "b@e"}


def workspace_from_wheel(wheel: pathlib.Path, into: str, target: pathlib.Path) -> None:
    base = target / into
    base.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(wheel) as archive:
        for name in archive.namelist():
            if ".dist-info/" in name:
                continue
            archive.extract(name, base)
    env = {**os.environ, **GIT}
    subprocess.run("git init -q && git add -A && git commit -qm base", shell=True, cwd=target, env=env, check=True)


def mapped_command(item: Item, recorded_root: str, workspace: pathlib.Path) -> str | None:
    """The trajectory's item as a command to run in `workspace`; None when the audit skips it
    (not a string, writes outside the workspace, ...: `ledger_properties.audit.filter`)."""
    try:
        command = "" if isinstance(item, Skipped) else to_command(item, recorded_root, workspace)
        reason = skip_reason(item, command, workspace)
    except OutsideWrite:
        return None
    return command if reason is None else None


def wheel_template(repo: str, scratch: pathlib.Path) -> pathlib.Path | None:
    """A workspace (a git repository) made from the wheel of `repo`, one of `PROJECTS`; None
    when the local package mirror has no such wheel."""
    prefix, into = PROJECTS[repo]
    wheel = next(iter(sorted(WHEELS.glob(prefix + "*.whl"))), None)
    if wheel is None:
        return None
    template = scratch / f"template-{repo.replace('/', '-')}"
    workspace_from_wheel(wheel, into, template)
    return template


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--per-project", type=int, default=3)
    parser.add_argument("--out", default="benchmarks/results/probe-corpus.json")
    parser.add_argument("--only", default=None, help="one project (task_repo) only")
    args = parser.parse_args()
    started = time.time()
    load_before = os.getloadavg()
    by_repo: dict[str, list] = collections.defaultdict(list)
    for trajectory in load(CORPUS):
        by_repo[trajectory.task_repo or ""].append(trajectory)
    totals = collections.Counter()
    lost: list[dict[str, object]] = []
    reasons = collections.Counter()
    with tempfile.TemporaryDirectory(prefix="ledger-probe-corpus-") as scratch:
        for repo in PROJECTS:
            if args.only and repo != args.only:
                continue
            template = wheel_template(repo, pathlib.Path(scratch))
            if template is None:
                continue
            for number, trajectory in enumerate(by_repo.get(repo, [])[: args.per_project]):
                copies = {}
                for side in ("off", "on"):
                    copies[side] = pathlib.Path(scratch) / f"{side}-{repo.replace('/', '-')}-{number}"
                    shutil.copytree(template, copies[side], symlinks=True)
                runtimes = {
                    "off": Runtime(copies["off"], probe=False, timeout=20),
                    "on": Runtime(copies["on"], probe=True, timeout=20),
                }
                texts: dict[int, str] = {}  # step index -> command, for "served from"
                try:
                    for item in trajectory.items:
                        steps = {}
                        for side, runtime in runtimes.items():
                            command = mapped_command(item, trajectory.recorded_root, copies[side])
                            if command is None:
                                break
                            steps[side] = runtime.step(command)
                        if len(steps) != 2:
                            totals["skipped"] += 1
                            continue
                        totals["replayed"] += 1
                        off, on = steps["off"], steps["on"]
                        texts[off.index] = off.command.text
                        totals[f"off-{off.verdict}"] += 1
                        totals[f"on-{on.verdict}"] += 1
                        if off.verdict == "reuse" and on.verdict != "reuse":
                            guard = runtimes["on"].probe
                            served = int(off.note.split("step ")[1].split(":")[0]) if off.note and "step " in off.note else None
                            source = runtimes["on"].classify(texts[served]) if served in texts else None
                            why = guard.why_not(on.command, runtimes["on"].ledger) if guard else None
                            if source is not None and guard is not None:
                                why = why or guard.why_not(source, runtimes["on"].ledger)
                            why = why or "no probed observation could serve (another spelling or range)"
                            reasons[_bucket(why)] += 1
                            lost.append({
                                "repo": repo, "trajectory": number, "command": off.command.text[:160], "why": why[:200],
                                "served_from": texts.get(served, "")[:160] if served is not None else None,
                            })
                        if on.verdict == "reuse" and off.verdict != "reuse":
                            totals["gained"] += 1
                finally:
                    for runtime in runtimes.values():
                        runtime.close()
                print(repo, number, dict(totals), flush=True)
    survived = totals["off-reuse"] - len(lost)
    result = {
        "what": "Reuses with the probe off (enumerated fingerprint only) that the probe (as shipped) keeps, "
                "on real corpus commands replayed in workspaces made from the projects' wheels",
        "machine": f"{os.cpu_count()} cores, {platform.system()} {platform.release()}, Python {platform.python_version()}",
        "load": record.load_text(load_before[0], os.getloadavg()[0]),
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "commit": subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip(),
        "corpus": str(CORPUS.name), "per_project": args.per_project, "projects": list(PROJECTS),
        "load_average_before": load_before, "load_average_after": os.getloadavg(), "cores": os.cpu_count(),
        "seconds": round(time.time() - started, 1),
        "totals": dict(totals), "reuses_off": totals["off-reuse"], "reuses_on": totals["on-reuse"],
        "lost": len(lost), "survived_share": round(survived / totals["off-reuse"], 4) if totals["off-reuse"] else None,
        "lost_by_reason": dict(reasons.most_common()), "lost_examples": lost[:60],
    }
    pathlib.Path(args.out).write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps({k: v for k, v in result.items() if k != "lost_examples"}, indent=2))


def _bucket(why: str) -> str:
    """A reason with the path or command left out, for counting."""
    for head in ("dependency changed", "the probe printed something else", "reads ", "the probe failed to start",
                 "statically linked", "the trace is incomplete", "a change inside the root"):
        if why.startswith(head):
            return head
    if "changed while the command ran" in why:
        return "an outside dependency changed while the command ran"
    if "exists, but the probe found nothing there" in why:
        return "a path the private /tmp hid from the probe"
    return why.split(":")[0][:80]


if __name__ == "__main__":
    main()
