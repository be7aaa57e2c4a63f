"""`ledger audit TRAJECTORY...`: replay agent trajectories and judge Ledger by the ground truth.

Each trajectory is replayed in a throwaway copy of its repository at its base commit, inside
bubblewrap unless `--no-sandbox`. Reported per trajectory and in total: commands by category,
redundant re-reads, Ledger's reuses and nudges, stale reuses (with diffs), detector misses
(`default`, `rules`, and `--detector`), classifier violations. Exit 0 when no Reuse was stale,
no read-only command changed the tree, the deciding detector missed nothing and every
trajectory could be replayed; 1 otherwise;
2 for bad input (one line on stderr; nothing has run).
"""

from __future__ import annotations

import argparse
import concurrent.futures
import multiprocessing
import sys
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from ledger_cli.errors import EXIT_OK, EXIT_USAGE, EXIT_VIOLATION
from ledger_properties.audit import report_html, report_json, runner
from ledger_properties.audit.engine import DEFAULT_COMMAND_TIMEOUT, DEFAULT_TRAJECTORY_TIMEOUT, Settings
from ledger_properties.audit.filter import OutsideWrite
from ledger_properties.audit.formats import InputError
from ledger_properties.replay import DetectorLoadError, load_factory

from .cluster import add_cluster_arguments, cluster_problem


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "audit",
        help="replay agent trajectories; report re-reads, reuses, stale reuses, detector misses",
        description=__doc__.split("\n\n")[1].replace("\n", " "),
    )
    parser.add_argument("trajectories", nargs="+", metavar="TRAJECTORY",
                        help="mini-swe-agent .traj.json, Claude Code transcript, corpus or {\"command\"} JSONL")
    parser.add_argument("--repo", metavar="DIR", help="the repository the agent worked on (only read)")
    parser.add_argument("--base-commit", metavar="SHA", help="the commit each trajectory started from")
    parser.add_argument("--workspaces", metavar="FILE.jsonl",
                        help='per-trajectory bases: {"trajectory": ID-or-file-name, "repo": DIR, "commit": SHA} a line')
    parser.add_argument("--detector", metavar="MODULE:FACTORY", help="your detector: it decides, and its misses are reported")
    parser.add_argument("--path", default=None, help="directory to import the detector's MODULE from (default: here)")
    parser.add_argument("-j", "--jobs", type=int, default=1, help="trajectories replayed in parallel (processes)")
    parser.add_argument("--timeout", type=float, default=DEFAULT_COMMAND_TIMEOUT, help="seconds per command")
    parser.add_argument("--trajectory-timeout", type=float, default=DEFAULT_TRAJECTORY_TIMEOUT, help="seconds per trajectory")
    parser.add_argument("--budget", type=float, default=None, metavar="MIN", help="start no trajectory after this many minutes")
    parser.add_argument("--results", type=Path, default=None, metavar="DIR",
                        help="keep one result file per trajectory here; a rerun skips finished ones")
    parser.add_argument("--json", type=Path, default=None, metavar="FILE", help=f"write the report (schema {report_json.SCHEMA})")
    parser.add_argument("--html", type=Path, default=None, metavar="FILE", help="write a self-contained HTML report")
    parser.add_argument("--no-sandbox", action="store_true", help="run commands without bubblewrap")
    parser.add_argument("--no-probe", action="store_true",
                        help="replay without the probe (issue 19): a detector's misses then show as stale reuses")
    parser.add_argument("--skip-outside-writes", action="store_true",
                        help="skip steps that write outside the workspace instead of refusing the trajectory")
    add_cluster_arguments(parser, database=False)
    parser.set_defaults(run=run)


def _fail(message: str) -> int:
    print(f"ledger audit: {message}", file=sys.stderr)
    return EXIT_USAGE


def run(args: argparse.Namespace, executor: concurrent.futures.Executor | None = None) -> int:
    if args.jobs < 1 or args.timeout <= 0 or args.trajectory_timeout <= 0:
        return _fail("-j, --timeout and --trajectory-timeout must be positive")
    if (problem := cluster_problem(args)) is not None:
        return _fail(problem)
    if (args.repo is None) != (args.base_commit is None):
        return _fail("--repo and --base-commit go together")
    if args.workspaces is not None and args.repo is not None:
        return _fail("give either --repo/--base-commit or --workspaces, not both")
    for path in (args.json, args.html):
        if path is not None and not path.resolve().parent.is_dir():
            return _fail(f"cannot write {path}: no such directory")
    sandboxed = not args.no_sandbox
    if sandboxed:
        from ledger_properties import sandbox

        if not sandbox.available():
            return _fail("bubblewrap (bwrap) is not available here; install it, or pass --no-sandbox to run commands unconfined")
    try:
        # The user typed MODULE here, so it is looked up here (as check-detector does); the
        # replay imports it from that same directory, never from the copy it runs in.
        detector_path = str(Path(args.path).resolve()) if args.path else str(Path.cwd())
        if args.detector is not None:
            load_factory(args.detector, detector_path)
        settings = Settings(
            args.timeout, args.trajectory_timeout, args.detector, detector_path if args.detector else None, probe=not args.no_probe
        )
        jobs = runner.plan(
            args.trajectories, repo=args.repo, commit=args.base_commit, workspaces=args.workspaces, settings=settings,
            sandbox=sandboxed, skip_outside_writes=args.skip_outside_writes,
        )
    except (InputError, OutsideWrite, DetectorLoadError) as error:
        return _fail(str(error))

    console = Console(stderr=True, highlight=False)
    own_pool = executor is None
    in_flight = args.jobs
    if executor is None and args.scheduler is not None:
        from ledger_properties.dask_hunt import ClusterExecutor, SchedulerUnavailable, cluster_threads, connect

        try:
            client = connect(args.scheduler)
        except SchedulerUnavailable as error:
            return _fail(str(error))
        executor = ClusterExecutor(client)
        in_flight = max(in_flight, cluster_threads(client))  # keep every thread of the cluster busy
    if executor is None:
        executor = concurrent.futures.ProcessPoolExecutor(args.jobs, mp_context=multiprocessing.get_context("spawn"))
    try:
        with Progress(TextColumn("audit"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                      TextColumn("{task.description}"), console=console, transient=True) as progress:
            task = progress.add_task("", total=len(jobs))

            def advance(job: runner.Job, result: dict[str, Any], resumed: bool) -> None:
                note = "resumed" if resumed else result.get("status", "")
                progress.update(task, advance=1, description=f"{job.name[:50]} {note}")

            results = runner.run(jobs, executor, results_dir=args.results,
                                 budget_s=args.budget * 60 if args.budget else None, in_flight=in_flight, on_result=advance)
    finally:
        if own_pool:
            executor.shutdown(wait=True, cancel_futures=True)  # a Dask executor's also closes its client

    doc = report_json.document(results, {
        "command_timeout": args.timeout, "trajectory_timeout": args.trajectory_timeout, "detector": args.detector,
        "sandboxed": sandboxed,
    })
    if args.json is not None:
        report_json.write(args.json, doc)
    if args.html is not None:
        args.html.write_text(report_html.render(doc), encoding="utf-8")
    _print(Console(highlight=False), doc, len(jobs))
    totals = doc["totals"]
    decider = args.detector or "default"
    return EXIT_VIOLATION if totals["stale"] or totals["violations"] or totals["failed"] or totals["misses"].get(decider) else EXIT_OK


COLUMNS: tuple[str, ...] = ("trajectory", "status", "ran", "skip", "re-read", "reuse", "nudge", "stale", "misses")
"""The per-trajectory table's columns: short enough that the table fits 80 columns."""

COLUMN_KEY = ("ran: commands replayed; skip: steps not replayed; re-read: redundant re-reads (a perfect ledger "
              "would not run them); reuse/nudge: Ledger's verdicts; stale: reuses that printed something else "
              "than running the command; misses: changes a detector did not report")


def _print(out: Console, doc: dict[str, Any], planned: int) -> None:
    totals = doc["totals"]
    per = Table(title="trajectories", title_justify="left", caption=COLUMN_KEY, caption_justify="left", collapse_padding=True)
    for column in COLUMNS:
        text = column in ("trajectory", "misses")
        # Names and miss lists wrap onto more lines; the short numeric columns never shrink.
        per.add_column(column, justify="left" if text or column == "status" else "right",
                       overflow="fold" if text else "ellipsis", no_wrap=not text, ratio=1 if text else None,
                       min_width=len(column) if text else None)
    for t in doc["trajectories"]:
        if t.get("status") == "failed":
            per.add_row(escape(str(t.get("instance_id") or t["name"])), "[red]failed[/red]", *[""] * 7)
            continue
        # A user's detector by its factory's name (the totals below name it in full).
        misses = ", ".join(f"{label.rsplit(':', 1)[-1]} {len(m)}" for label, m in t["misses"].items() if m) or "0"
        per.add_row(
            escape(str(t.get("instance_id") or t["name"])), t["status"], str(t["replayed"]), str(sum(t["skipped"].values())),
            str(t["redundant"]["verbatim"] + t["redundant"]["sub-range"]), str(t["verdicts"]["reuse"]), str(t["verdicts"]["nudge"]),
            str(len(t["stale"])), escape(misses),
        )
    out.print(per)
    share = totals["perfect_share"]
    table = Table(title="totals", title_justify="left", show_header=False)
    table.add_column("measure", overflow="fold")
    table.add_column("value", justify="right", overflow="fold")
    rows = [
        ("trajectories", f"{totals['trajectories']} of {planned}" + (f" ({totals['failed']} failed)" if totals["failed"] else "")),
        ("commands replayed", f"{totals['replayed']:,}"),
        ("skipped", f"{sum(totals['skipped'].values()):,} ("
         + (", ".join(f"{k} {v}" for k, v in sorted(totals['skipped'].items(), key=lambda kv: -kv[1])) or "none") + ")"),
        ("by category", ", ".join(f"{k} {v:,}" for k, v in sorted(totals["categories"].items(), key=lambda kv: -kv[1]))),
        ("allow / reuse / nudge", " / ".join(f"{totals['verdicts'][v]:,}" for v in ("allow", "reuse", "nudge"))),
        ("redundant re-reads (verbatim / sub-range)", f"{totals['redundant']['verbatim']:,} / {totals['redundant']['sub-range']:,}"),
        ("redundant bytes (est. tokens)", f"{totals['redundant']['bytes']:,} ({totals['redundant']['tokens']:,})"),
        ("reused bytes not re-sent (est. tokens)", f"{totals['reused']['bytes']:,} ({totals['reused']['tokens']:,})"),
        ("share of the perfect ledger", "n/a" if share is None else f"{share:.1%}"),
        ("stale reuses", ("[red]" if totals["stale"] else "[green]") + f"{totals['stale']}[/]"),
        ("classifier violations", ("[red]" if totals["violations"] else "[green]") + f"{totals['violations']}[/]"),
        ("oracle inconclusive", str(totals["oracle_inconclusive"])),
    ] + [(f"detector misses: {escape(label)}", str(n)) for label, n in totals["misses"].items()] + [
        (f"unknown scope: {escape(label)}", f"{n:,}") for label, n in totals["unknown"].items()
    ]
    for name, value in rows:
        table.add_row(name, value)
    out.print(table)
    for t in doc["trajectories"]:
        for stale in t.get("stale", []):
            out.print(f"[red]STALE[/red] {escape(str(t['name']))} step {stale['step']}: {escape(stale['command'][:160])}")
            out.print(escape(stale["diff"]), end="")
        if t.get("status") == "failed":
            out.print(f"[red]FAILED[/red] {escape(str(t['name']))}: {escape(str(t.get('error')))}")
