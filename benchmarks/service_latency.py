"""Hook latency through `ledger serve` (HTTP and the thin client) beside today's in-process hook.

    python benchmarks/service_latency.py [--sizes 7000 100000] [--runs 20] [--out benchmarks/results/service-latency.json]

For each tree size: generates the git tree of `benchmarks/detection.py` in /tmp, lets it age
past the racy window, starts `ledger serve` on a state directory beside it, and then times,
interleaved run by run so that load changes hit every row alike:

Every size has its own service, and the sizes are taken in turn within each run (so the growth
from one size to the next is not a change of the machine's load); the hook rows use the
persisted stat index (today's default where Watchman is not installed), the service its own
choice.

  python -c pass            the floor: starting this interpreter (the thin client's);
  git status                the tree's own cost of one look;
  http pre (reuse|allow)    one PreToolUse POST, a new connection each time, as Claude Code sends it;
  http post                 the PostToolUse of the `allow` call;
  client pre (reuse|allow)  the thin client process (`python -S ledger_client/thin.py`), as
  client post               `ledger hooks install codex` writes it;
  hook pre (reuse|allow)    today's `python -m ledger_cli.main hook claude`, stat index;
  hook post

Wall milliseconds are the caller's. CPU milliseconds are the caller's children (a process row)
plus the service's threads (`/proc/PID/task/*/schedstat`, nanoseconds), so an HTTP row's CPU is
what the service spent. p50 and p95 of each; the targets of issue 20 are evaluated on p95 and
written beside the figures, with the commit and the load average. A script, not a test.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import platform
import pathlib
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from typing import Any, Callable

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))

from benchmarks import record  # noqa: E402
from benchmarks.detection import GIT_ENV, generate_tree  # noqa: E402
from ledger_client import thin  # noqa: E402
from ledger_impl.detectors.watchman import Daemon  # noqa: E402
from ledger_impl.session import DurableSession  # noqa: E402
from ledger_impl.tree_snapshot import RACY_WINDOW_NS  # noqa: E402

THIN = str(pathlib.Path(thin.__file__).resolve())
REPOSITORY = pathlib.Path(__file__).resolve().parent.parent


def percentile(samples: list[float], share: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, round(share * (len(ordered) - 1)))]


def service_cpu_ns(pid: int) -> int:
    total = 0
    for task in pathlib.Path(f"/proc/{pid}/task").iterdir():
        try:
            total += int((task / "schedstat").read_text().split()[0])
        except (OSError, ValueError, IndexError):
            pass  # a thread that ended meanwhile
    return total


class Bench:
    def __init__(self, root: pathlib.Path, base: pathlib.Path, service_detector: str | None) -> None:
        self.root = root
        self.state = base / "state-service"  # `base` is the tree's own: each size has its service
        self.hook_state = base / "state-hook"
        # The hook rows time today's default without Watchman, the persisted stat index; the
        # service chooses as it does for a user (Watchman when installed), unless told.
        self.env = {**os.environ, "LEDGER_SESSION_DETECTOR": "stat-index"}
        service_env = {k: v for k, v in os.environ.items() if k != "LEDGER_SESSION_DETECTOR"}
        if service_detector is not None:
            service_env["LEDGER_SESSION_DETECTOR"] = service_detector
        self.service = subprocess.Popen([sys.executable, "-m", "ledger_cli.main", "serve", "--state-dir", str(self.state)],
                                        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=service_env)
        while True:
            try:
                thin.request(thin.socket_path(str(self.state)), {"op": "status"}, 5.0)
                break
            except thin.Unreachable:
                time.sleep(0.05)
        service_dir = self.state / "service"
        self.port = int((service_dir / "port").read_text())
        self.secret = (service_dir / "secret").read_text()
        self.calls = 0

    def payload(self, event: str, call_id: str, command: str, session: str, stdout: str = "") -> dict[str, Any]:
        body: dict[str, Any] = {"hook_event_name": event, "tool_name": "Bash", "tool_input": {"command": command},
                                "tool_use_id": call_id, "cwd": str(self.root), "session_id": session}
        if event == "PostToolUse":
            body["tool_response"] = {"stdout": stdout, "stderr": "", "interrupted": False, "isImage": False}
        return body

    def settle(self) -> None:
        """Until the probes of the warm reads have stored their verdicts: a read serves only once
        its probe has confirmed it (the service and the hook run them after answering)."""
        for state in (self.state, self.hook_state):
            with DurableSession.open(self.root, state_dir=state) as session:
                assert session.wait_for_probes(60), f"a probe under {state} stored no verdict"

    def http(self, payload: dict[str, Any]) -> tuple[float, float, Any]:
        body = json.dumps(payload).encode()
        cpu0, started = service_cpu_ns(self.service.pid), time.perf_counter()
        connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=60)
        connection.request("POST", "/ledger/v1/hook/claude", body=body,
                           headers={"X-Ledger-Secret": self.secret, "Content-Type": "application/json"})
        answer = connection.getresponse()
        reply = json.loads(answer.read() or b"{}")
        connection.close()
        wall = (time.perf_counter() - started) * 1000
        assert answer.status == 200, reply
        return wall, (service_cpu_ns(self.service.pid) - cpu0) / 1e6, reply

    def process(self, argv: list[str], payload: dict[str, Any], with_service: bool) -> tuple[float, float, Any]:
        cpu0 = service_cpu_ns(self.service.pid) if with_service else 0
        before, started = os.times(), time.perf_counter()
        done = subprocess.run(argv, input=json.dumps(payload).encode(), stdout=subprocess.PIPE, env=self.env,
                              cwd=tempfile.gettempdir(), check=True)
        wall, after = (time.perf_counter() - started) * 1000, os.times()
        cpu = (after[2] + after[3] - before[2] - before[3]) * 1000
        if with_service:
            cpu += (service_cpu_ns(self.service.pid) - cpu0) / 1e6
        return wall, cpu, json.loads(done.stdout or b"null")

    def client(self, payload: dict[str, Any]) -> tuple[float, float, Any]:
        return self.process([sys.executable, "-S", THIN, "claude", "--state-dir", str(self.state)], payload, True)

    def hook(self, payload: dict[str, Any]) -> tuple[float, float, Any]:
        return self.process([sys.executable, "-m", "ledger_cli.main", "hook", "claude", "--state-dir",
                             str(self.hook_state)], payload, False)

    def stop(self) -> None:
        try:
            thin.request(thin.socket_path(str(self.state)), {"op": "stop"}, 30.0)
            self.service.wait(60)
        except (thin.Unreachable, subprocess.TimeoutExpired):
            self.service.kill()
        # A Watchman daemon outlives the service on purpose; this one's state directory is going.
        Daemon(self.state / "watchman").shutdown()


def verdict(reply: Any) -> str:
    output = (reply or {}).get("hookSpecificOutput", {})
    return "reuse" if output.get("permissionDecision") == "deny" else "other"


class Tree:
    """One tree size's workspace, service and samples."""

    def __init__(self, size: int, base: pathlib.Path, service_detector: str | None) -> None:
        self.size = size
        # A parent of its own: Watchman watches the root's parent, which must not hold the other tree.
        own = base / f"size{size}"
        self.root = own / f"tree{size}"
        self.root.mkdir(parents=True)
        generate_tree(self.root, size)
        subprocess.run(["git", "status", "--porcelain"], cwd=self.root, env=GIT_ENV, capture_output=True)
        self.bench = Bench(self.root, own, service_detector)
        self.read = f"cat {next(self.root.rglob('file1.py')).relative_to(self.root)}"
        self.transports: dict[str, Callable[[dict[str, Any]], tuple[float, float, Any]]] = {
            "http": self.bench.http, "client": self.bench.client, "hook": self.bench.hook}
        self.samples: dict[str, list[tuple[float, float]]] = {"python -c pass": [], "git status": []}
        for name in self.transports:
            self.samples.update({f"{name} pre (reuse)": [], f"{name} pre (allow)": [], f"{name} post": []})

    def warm(self) -> None:
        """Each transport's observation of the read, to be reused once its probe confirms it."""
        shown = (self.root / self.read.split(" ", 1)[1]).read_text().rstrip()  # as Claude shows it
        for name, call in self.transports.items():
            call(self.bench.payload("PreToolUse", f"{name}-warm", self.read, name))
            call(self.bench.payload("PostToolUse", f"{name}-warm", self.read, name, stdout=shown))
        self.bench.settle()

    def run(self, index: int) -> None:
        started, before = time.perf_counter(), os.times()
        subprocess.run([sys.executable, "-c", "pass"], check=True)
        after = os.times()
        self.samples["python -c pass"].append(((time.perf_counter() - started) * 1000,
                                               (after[2] + after[3] - before[2] - before[3]) * 1000))
        started, before = time.perf_counter(), os.times()
        subprocess.run(["git", "status", "--porcelain"], cwd=self.root, env=GIT_ENV, capture_output=True, check=True)
        after = os.times()
        self.samples["git status"].append(((time.perf_counter() - started) * 1000,
                                           (after[2] + after[3] - before[2] - before[3]) * 1000))
        for name, call in self.transports.items():
            wall, cpu, reply = call(self.bench.payload("PreToolUse", f"{name}-r{index}", self.read, name))
            assert verdict(reply) == "reuse", (self.size, index, name, reply)
            self.samples[f"{name} pre (reuse)"].append((wall, cpu))
            command = f"echo {index}"
            wall, cpu, reply = call(self.bench.payload("PreToolUse", f"{name}-a{index}", command, name))
            assert verdict(reply) == "other", (name, reply)
            self.samples[f"{name} pre (allow)"].append((wall, cpu))
            wall, cpu, _ = call(self.bench.payload("PostToolUse", f"{name}-a{index}", command, name))
            self.samples[f"{name} post"].append((wall, cpu))

    def table(self) -> dict[str, Any]:
        # A detector degraded to full diffs (the inotify watch limit is per user and shared by
        # every program of the user) scans the tree at every call: say so beside the figures.
        status = thin.request(thin.socket_path(str(self.bench.state)), {"op": "status"}, 30.0)["reply"]
        degraded = sorted({str(w["degraded"]) for w in status["workspaces"] if w["degraded"]})
        detector = sorted({str(w["detector"]) for w in status["workspaces"]})
        table: dict[str, Any] = {"service_detector": ", ".join(detector), "detector_degraded": degraded or None}
        for name, pairs in self.samples.items():
            walls, cpus = [w for w, _ in pairs], [c for _, c in pairs]
            table[name] = {"p50_wall_ms": round(statistics.median(walls), 2), "p95_wall_ms": round(percentile(walls, 0.95), 2),
                           "p50_cpu_ms": round(statistics.median(cpus), 2), "p95_cpu_ms": round(percentile(cpus, 0.95), 2)}
        return table

    def close(self) -> None:
        self.bench.stop()
        shutil.rmtree(self.root, ignore_errors=True)


def measure(sizes: list[int], runs: int, base: pathlib.Path, service_detector: str | None) -> dict[str, dict[str, Any]]:
    """Every size's table. The sizes are served side by side and taken in turn within each run,
    so that a change of the machine's load between the start and the end of the run (a shared
    machine's) hits every size alike, and the growth from one size to the next is its own."""
    trees: list[Tree] = []
    try:
        for size in sizes:
            trees.append(Tree(size, base, service_detector))
        time.sleep(RACY_WINDOW_NS / 1e9 + 0.5)  # every tree past the racy window
        for tree in trees:
            tree.warm()
        for index in range(runs):
            for tree in trees:
                tree.run(index)
        return {str(tree.size): tree.table() for tree in trees}
    finally:
        for tree in trees:
            tree.close()


def targets(results: dict[str, dict[str, Any]], small: str, large: str) -> dict[str, Any]:
    """Issue 20's bounds on p95 wall: HTTP pre <= 1.5x a Python start, thin client <= 2x, and
    growth from the small to the large tree <= 1.3x for both (the worse of reuse and allow)."""
    verdicts: dict[str, Any] = {}
    for name, bound in (("http", 1.5), ("client", 2.0)):
        for kind in ("reuse", "allow"):
            row = f"{name} pre ({kind})"
            big, little = results[large][row]["p95_wall_ms"], results[small][row]["p95_wall_ms"]
            ratio = big / results[large]["python -c pass"]["p95_wall_ms"]
            growth = big / little
            verdicts[row] = {"x_python_start": round(ratio, 2), "bound": bound, "met": ratio <= bound,
                             "growth": round(growth, 2), "growth_bound": 1.3, "growth_met": growth <= 1.3}
    return verdicts


def render(document: dict[str, Any]) -> str:
    """The JSON as the Markdown tables of docs/agents/service.md (`--render FILE` prints them)."""
    load = document["load_average_1_5_15"]
    lines = [f"Commit {document['commit']}, {document['runs']} runs per row, {document['cpus']} CPUs, "
             f"load average (1, 5, 15 min) {load['before']} before and {load['after']} after.", ""]
    for size, table in document["results"].items():
        lines += [f"**{int(size):,} files** (service detector {table.get('service_detector', '?')}, "
                  f"degraded: {table['detector_degraded'] or 'no'})", "",
                  "| row | p50 wall ms | p95 wall ms | p50 CPU ms | p95 CPU ms |", "|---|---:|---:|---:|---:|"]
        lines += [f"| {name} | {row['p50_wall_ms']} | {row['p95_wall_ms']} | {row['p50_cpu_ms']} | {row['p95_cpu_ms']} |"
                  for name, row in table.items() if isinstance(row, dict)]
        lines.append("")
    if "targets" in document:
        lines += ["| target (p95 wall, largest tree) | × python start | bound | met | growth | bound | met |",
                  "|---|---:|---:|---|---:|---:|---|"]
        lines += [f"| {name} | {t['x_python_start']} | {t['bound']} | {'yes' if t['met'] else 'no'} | {t['growth']} "
                  f"| {t['growth_bound']} | {'yes' if t['growth_met'] else 'no'} |" for name, t in document["targets"].items()]
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[7000, 100000])
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--out", default=str(REPOSITORY / "benchmarks" / "results" / "service-latency.json"))
    parser.add_argument("--service-detector", choices=("watchman", "stat-index"), default=None,
                        help="force the service's detector (stat-index means resident inotify); default: its own choice")
    parser.add_argument("--render", metavar="JSON", default=None, help="print the Markdown tables of a results file")
    args = parser.parse_args()
    if args.render is not None:
        print(render(json.loads(pathlib.Path(args.render).read_text())))
        return 0
    # The commit measured is the one checked out at the start (a commit made during a long run
    # does not change the code already imported).
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPOSITORY, capture_output=True, text=True).stdout.strip()
    base = pathlib.Path(tempfile.mkdtemp(prefix="ledger-service-bench-"))
    load_before = os.getloadavg()
    try:
        results = measure(args.sizes, args.runs, base, args.service_detector)
    finally:
        shutil.rmtree(base, ignore_errors=True)
    document = {
        "what": "hook latency in milliseconds: HTTP and thin client through ledger serve, and the in-process hook",
        "commit": commit, "runs": args.runs, "cpus": os.cpu_count(),
        "machine": {"platform": platform.platform(), "python": platform.python_version(), "cpus": os.cpu_count()},
        "load": record.load_text(load_before[0], os.getloadavg()[0]),
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "load_average_1_5_15": {"before": [round(x, 2) for x in load_before], "after": [round(x, 2) for x in os.getloadavg()]},
        "results": results,
    }
    if len(args.sizes) >= 2:
        document["targets"] = targets(results, str(min(args.sizes)), str(max(args.sizes)))
    pathlib.Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    pathlib.Path(args.out).write_text(json.dumps(document, indent=2) + "\n")
    print(render(document))
    return 0


if __name__ == "__main__":
    sys.exit(main())
