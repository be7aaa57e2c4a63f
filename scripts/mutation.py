"""Mutation run on the safety core: cosmic-ray, one session per module, a per-module table.

Theory of operation. Each module of the safety core maps to the test files that cover it
(`MODULES`). Before the mutants, one baseline run of those files under coverage with per-test
contexts records which tests execute each line of the module, cheapest first (`_baseline`);
a mutant then runs only the tests that execute the lines it changed (`mutant-tests`, the
command cosmic-ray calls), or every file of the module for an import-time line. A survivor
is a mutant that *its own tests* do not notice.

cosmic-ray mutates the module's file in place, so every module runs in its own copy of the
repository under `.mutation/<slug>/tree`, with `PYTHONPATH` pointing there so that tests and
the subprocesses they start (the `ledger` CLI, replays) import the mutated code and never the
editable install (the harness, imported as `ledger_properties`, which no mutant touches, is the
one package still found through the install: its folder's name is not its import name). Its session (`.mutation/<slug>/session.sqlite`) records every result as it
comes, so an interrupted run resumes where it stopped; the session is started afresh only when
the module's source changed since it was created (the recorded mutation positions would no
longer match). The tree copy is refreshed before every run, so tests added since are used.

    python scripts/mutation.py run                      # every module, then the table
    python scripts/mutation.py run ledger_spec/lines.py # one module (resumes)
    python scripts/mutation.py run --retest-survivors ledger_spec/lines.py
    python scripts/mutation.py report                   # the table from the sessions so far
    python scripts/mutation.py survivors ledger_spec/lines.py   # each survivor's diff
    python scripts/mutation.py check ledger_spec/lines.py JOB_ID --tests NODE_ID  # kills it?
    python scripts/mutation.py check ledger_spec/lines.py JOB_ID --tests NODE_ID --verdicts v.json
    python scripts/mutation.py record ledger_spec/lines.py --verdicts v.json --source "..."  # the tables

Needs the `mutation` extra: `pip install -e ".[mutation,test]"`.
"""

from __future__ import annotations

import argparse
import ast
import hashlib
import json
import os
import re
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import coverage

sys.path.insert(0, str(Path(__file__).resolve().parent))

import mutation_record  # noqa: E402  (beside this file, which is run as a script)

REPO = Path(__file__).resolve().parent.parent
WORK = REPO / ".mutation"

# Module -> the test files (or test ids) that cover it. A mutant of the module runs against these only.
MODULES: dict[str, tuple[str, ...]] = {
    "ledger_spec/lines.py": ("tests/test_spec_lines.py",),
    "ledger_spec/state.py": ("tests/test_spec_state.py",),
    "ledger_spec/values.py": ("tests/test_spec_state.py", "tests/test_spec_lines.py"),
    "ledger_impl/ledger_index.py": ("tests/test_ledger_differential.py",),
    "ledger_impl/ledger.py": ("tests/test_ledger_differential.py",),
    "ledger_impl/detectors/rules.py": ("tests/test_rules_detector.py",),
    "ledger_impl/detectors/events.py": (
        "tests/test_event_detector.py", "tests/test_event_detector_mutants.py", "tests/test_counterexamples.py",
        "tests/test_honest_limits.py",
    ),
    "ledger_impl/detectors/snapshot.py": ("tests/test_snapshot_detector.py",),
    "ledger_impl/detectors/stat_index.py": (
        "tests/test_stat_index.py", "tests/test_snapshot_detector.py", "tests/test_session_adversary.py",
        "tests/test_watchman_detector.py", "tests/test_economizer_cli.py",
    ),
    "ledger_impl/detectors/protocol.py": (
        "tests/test_detector_protocol.py", "tests/test_runtime.py", "tests/test_runtime_hardening.py",
        "tests/test_service.py",
    ),
    "ledger_impl/detectors/channel.py": ("tests/test_channel_detector.py",),
    # The profile hunts of the other detectors in that file say nothing about this one.
    "ledger_impl/detectors/watchman.py": (
        "tests/test_watchman_detector.py", "tests/test_watchman_mutants.py",
        "tests/test_check_detector_profiles.py::test_the_profile_hunt_finds_nothing[watchman]",
    ),
    "ledger_impl/detectors/__init__.py": (
        "tests/test_watchman_detector.py", "tests/test_snapshot_detector.py", "tests/test_event_detector.py", "tests/test_hook_imports.py",
    ),
    "ledger_impl/runtime.py": (
        "tests/test_runtime.py", "tests/test_runtime_hardening.py", "tests/test_runtime_executor.py",
        "tests/test_honest_limits.py", "tests/test_fingerprint.py",
    ),
    "ledger_impl/execution.py": (
        "tests/test_execution.py", "tests/test_execution_wake.py", "tests/test_runtime_executor.py", "tests/test_runtime_hardening.py",
    ),
    "ledger_impl/shell.py": (
        "tests/test_shell_mutants.py", "tests/test_classifier.py", "tests/test_rules_detector.py", "tests/test_fingerprint.py",
    ),
    "ledger_impl/workspace.py": ("tests/test_workspace.py", "tests/test_classifier.py", "tests/test_rules_detector.py", "tests/test_runtime.py"),
    # The one engine both drivers share, where Ledger keeps its state, and the persisted
    # detectors' baseline reasons (issue 20's code).
    "ledger_impl/engine.py": (
        "tests/test_engine.py", "tests/test_runtime.py", "tests/test_session.py", "tests/test_fingerprint.py", "tests/test_git_reads_outside_the_root.py",
    ),
    "ledger_impl/state_directory.py": ("tests/test_state_directory.py", "tests/test_session.py", "tests/test_watchman_detector.py"),
    "ledger_impl/detectors/baseline.py": ("tests/test_stat_index.py", "tests/test_watchman_detector.py", "tests/test_service.py"),
    # The durable session's store and its format, the fingerprint and git's inputs (issue 23:
    # the code added after the first runs).
    "ledger_impl/state_codec.py": ("tests/test_session_store_format.py", "tests/test_ledger_reload.py"),
    "ledger_impl/state_rows.py": (
        "tests/test_state_rows.py", "tests/test_session_rows.py", "tests/test_store_rows.py", "tests/test_session_store_format.py",
        "tests/test_ledger_reload.py", "tests/test_session.py",
    ),
    "ledger_impl/store.py": (
        "tests/test_session.py", "tests/test_session_store_format.py", "tests/test_store_connection.py",
        "tests/test_sessions_command.py", "tests/test_store_rows.py", "tests/test_store_edges.py",
    ),
    "ledger_impl/git_inputs.py": (
        "tests/test_git_inputs.py", "tests/test_fingerprint.py", "tests/test_git_reads_outside_the_root.py",
    ),
    "ledger_impl/fingerprint.py": (
        "tests/test_fingerprint.py", "tests/test_fingerprint_absent_inputs.py", "tests/test_git_reads_outside_the_root.py",
    ),
    # The hook path: the durable session, the observed-dependency probe, the service and the
    # agent adapters (issue 23: what the first lists left out). Their end-to-end tests with
    # the real agent CLIs are left out: each takes tens of seconds and runs through the same
    # adapters the hook tests call directly.
    "ledger_impl/session.py": (
        "tests/test_session.py", "tests/test_session_requests.py", "tests/test_session_rows.py",
        "tests/test_session_crash.py", "tests/test_session_adversary.py", "tests/test_hook_payloads.py",
        "tests/test_detector_protocol.py", "tests/test_session_store_format.py", "tests/test_probe_hook_path.py",
        "tests/test_session_edges.py",
    ),
    "ledger_impl/session_probe.py": ("tests/test_probe_hook_path.py", "tests/test_session.py", "tests/test_session_probe.py"),
    "ledger_impl/context_journal.py": (
        "tests/test_context_journal.py", "tests/test_session.py", "tests/test_session_requests.py", "tests/test_hook_payloads.py",
    ),
    "ledger_impl/tree_snapshot.py": (
        "tests/test_stat_index.py", "tests/test_snapshot_detector.py", "tests/test_channel_detector.py",
        "tests/test_tree_snapshot.py", "tests/test_event_detector.py",
    ),
    "ledger_impl/descendants.py": (
        "tests/test_descendants.py", "tests/test_descendants_cleanup.py", "tests/test_descendants_contracts.py", "tests/test_execution.py",
        "tests/test_runtime_hardening.py",
    ),
    **{
        f"ledger_impl/probe/{name}.py": (
            "tests/test_probe.py", "tests/test_probe_runtime.py", "tests/test_probe_hook_path.py", "tests/test_probe_sockets.py",
            "tests/test_probe_dependencies.py", "tests/test_probe_guard.py", "tests/test_probe_sandbox.py",
            "tests/test_probe_trace_lines.py", "tests/test_probe_verdicts.py", "tests/test_probe_clock.py",
            "tests/test_probe_rendering.py",
        )
        for name in ("__init__", "dependencies", "trace", "guard", "sandbox", "clock", "confine", "rendering")
    },
    **{
        f"ledger_impl/service/{name}.py": (
            "tests/test_service.py", "tests/test_service_frame.py", "tests/test_service_security.py", "tests/test_service_gate.py",
            "tests/test_service_workspaces.py",
            "tests/test_service_layout.py", "tests/test_directory_watch.py", "tests/test_watchman_detector.py",
            "tests/test_service_resident.py", "tests/test_directory_watch_events.py", "tests/test_service_answers.py",
            "tests/test_service_layout_files.py",
        )
        for name in ("gate", "frame", "layout", "resident", "workspaces", "directory_watch", "server")
    },
    "ledger_impl/agents/claude.py": (
        "tests/agents/test_claude_hook.py", "tests/agents/test_hook_adversary.py", "tests/agents/test_claude_reference.py",
        "tests/test_hook_payloads.py", "tests/agents/test_claude_adapter_edges.py",
    ),
    "ledger_impl/agents/codex.py": (
        "tests/agents/test_codex_hook.py", "tests/test_hook_payloads.py", "tests/agents/test_codex_adapter_edges.py",
    ),
    **{
        f"ledger_impl/agents/{name}.py": (
            "tests/agents/test_gemini_hook.py", "tests/agents/test_qwen_hook.py", "tests/agents/test_copilot_hook.py",
            "tests/agents/test_agent_plugins.py", "tests/agents/test_hook_session_edges.py",
            "tests/agents/test_agent_spec_fields.py", "tests/agents/test_qwen_adapter_edges.py",
            "tests/agents/test_gemini_adapter_edges.py", "tests/agents/test_copilot_adapter_edges.py",
        )
        for name in ("hook_session", "spec", "qwen", "gemini", "copilot")
    },
    "ledger_impl/classifier/views.py": ("tests/test_classifier.py",),
    # The larger classifier modules also have the tests written for their own survivors.
    **{
        f"ledger_impl/classifier/{name}.py": ("tests/test_classifier.py", "tests/test_classifier_mutants_big.py")
        for name in ("command", "effect", "sed")
    },
    # The rules detector consults the same table (`effect_of`, git's `subcommand` and writers)
    # to decide that a command writes nothing, so its tests cover these modules as well.
    **{
        f"ledger_impl/classifier/{name}.py": (
            "tests/test_classifier.py", "tests/test_classifier_mutants_small.py", "tests/test_rules_detector.py",
        )
        for name in ("awk", "git", "hazards", "listing", "programs", "search", "streams", "table")
    },
}

# A mutant whose tests run longer than this many times the baseline (every test file of the
# module, under coverage, which is slower than a mutant's selected tests without it) is counted
# as a timeout (killed: an infinite loop is noticed). Generous, because the machine is shared;
# bounded, so that a hang costs a module with quick tests a minute or two, not ten.
TIMEOUT_FACTOR = 4.0
TIMEOUT_BOUNDS = (60.0, 600.0)

# Operators left out, so that the run spends its time on mutants that say something:
# - `|` is only ever a type union in an annotation here, and annotations are not evaluated
#   (`from __future__ import annotations`): every such mutant is equivalent.
# - arithmetic is mutated to its opposite (+ <-> -) only; shifts, powers and bitwise
#   replacements of an index computation are killed by whatever kills + <-> -.
# - a comparison is not turned into an identity test (`==` -> `is`), which is either
#   equivalent (small ints, interned strings) or depends on the interpreter's caching.
EXCLUDED_OPERATORS = (
    r"core/ReplaceBinaryOperator_BitOr_.*$",
    r"core/ReplaceBinaryOperator_.*_(RShift|LShift|BitXor|BitOr|BitAnd|Pow|Mod|FloorDiv|Div|Mul)$",
    r"core/ReplaceUnaryOperator_USub_(Not|Invert)$",
    r"core/ReplaceComparisonOperator_(Eq|NotEq|Lt|LtE|Gt|GtE)_(Is|IsNot)$",
    r"core/ReplaceComparisonOperator_(Is|IsNot)_(Eq|NotEq|Lt|LtE|Gt|GtE)$",
)


# Stop at the first failure; no cache, coverage, benchmark or xdist plugin; no assertion
# rewriting (cosmic-ray forbids bytecode caches, so pytest would re-rewrite every plugin module
# for every mutant: two thirds of a short file's run); Hypothesis from a fixed seed and without
# its database (the plugin's docstring says why). A verdict is reproducible and costs as little as the kill check allows:
# a failing assert still fails, only its message is plainer.
PYTEST_BASE = (
    "-x", "-q", "--assert=plain", "-p", "no:cacheprovider", "-p", "no:benchmark", "-p", "no:xdist",
    "-p", "scripts.mutation_hypothesis", "--hypothesis-seed=0",
)
PYTEST_OPTIONS = (*PYTEST_BASE, "-p", "no:pytest_cov")


def _slug(module: str) -> str:
    return module.removesuffix(".py").replace("/", ".")


def _module_digest(module: str) -> str:
    return hashlib.sha256((REPO / module).read_bytes()).hexdigest()


def _refresh_tree(tree: Path) -> None:
    """Copy the working tree's files (tracked and untracked, not ignored) into `tree`."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=REPO, check=True, capture_output=True,
    ).stdout.decode().split("\0")
    if tree.exists():
        shutil.rmtree(tree)
    for name in filter(None, listed):
        source = REPO / name
        if source.is_file():
            target = tree / name
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target)


def _timeout(baseline_seconds: float) -> float:
    low, high = TIMEOUT_BOUNDS
    return round(min(high, max(low, TIMEOUT_FACTOR * baseline_seconds)))


def _config(module: str, timeout: float) -> str:
    command = f"{sys.executable} {Path(__file__).resolve()} mutant-tests {module}"
    return (
        "[cosmic-ray]\n"
        f'module-path = "{module}"\n'
        f"timeout = {timeout}\n"
        "excluded-modules = []\n"
        f'test-command = "{command}"\n'
        "\n[cosmic-ray.distributor]\n"
        'name = "local"\n'
        "\n[cosmic-ray.filters.operators-filter]\n"
        f"exclude-operators = [{', '.join(repr(pattern) for pattern in EXCLUDED_OPERATORS)}]\n"
    )


def _function_body_lines(source: str) -> set[int]:
    """Lines that run only when a function is called, never when the module is imported."""
    lines: set[int] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for statement in node.body:
                lines.update(range(statement.lineno, (statement.end_lineno or statement.lineno) + 1))
    return lines


def _baseline(module: str, tree: Path, out: Path) -> float:
    """Run the module's tests on the unmutated tree, under coverage with per-test contexts.

    If they fail, every mutant would seem killed: stop. Otherwise record in `out`, for each line
    of `module` inside a function body, the tests that execute it, cheapest first. A mutant there
    can change only what a test that executes its line observes, so only those tests need to
    run (`mutant-tests`), and with `-x` a mutant usually dies in the cheapest. Import-time lines
    (module and class bodies, `def` headers with their defaults and decorators) and lines no test
    was seen executing fall back to every test file of the module, which is never less thorough
    than the file-level run. Known limit: code a test runs in a subprocess (the `ledger` CLI) is
    not traced, so a line some other test also runs in-process gets only the in-process tests.
    """
    data_file = out.with_suffix(".coverage")
    data_file.unlink(missing_ok=True)
    started = time.monotonic()
    result = subprocess.run(
        [sys.executable, "-m", "pytest", *[option for option in PYTEST_BASE if option != "-x"], "-rfE", "-vv", "--durations=0",
         f"--cov={tree / Path(module).parent}", "--cov-context=test", "--cov-report=", *MODULES[module]],
        cwd=tree, env=dict(os.environ, PYTHONPATH=str(tree), COVERAGE_FILE=str(data_file)),
        capture_output=True, text=True,
    )
    seconds = time.monotonic() - started
    # A test that fails without any mutant says nothing about mutants: it is left out (and
    # named), so that one broken test elsewhere does not make every mutant look killed.
    broken = sorted(set(re.findall(r"^(?:FAILED|ERROR) (\S+::\S+)", result.stdout, re.MULTILINE)))
    if result.returncode != 0 and not broken:
        tail = "\n".join(result.stdout.splitlines()[-15:])
        sys.exit(f"mutation: {module}: its tests fail without any mutant, so no verdict would mean anything:\n{tail}")
    for test in broken:
        print(f"mutation: {module}: left out, fails without any mutant: {test}", flush=True)
    cost: dict[str, float] = {}
    for match in re.finditer(r"^([0-9.]+)s (?:setup|call|teardown) +(\S.*)$", result.stdout, re.MULTILINE):
        cost[match[2]] = cost.get(match[2], 0.0) + float(match[1])
    data = coverage.CoverageData(basename=str(data_file))
    data.read()
    inside = _function_body_lines((tree / module).read_text())
    by_line: dict[str, list[str]] = {}
    for line, contexts in sorted(data.contexts_by_lineno(str(tree / module)).items()):
        tests = {context.rsplit("|", 1)[0] for context in contexts if context}
        if line in inside and tests - set(broken):
            by_line[str(line)] = sorted(tests - set(broken), key=lambda test: (cost.get(test, 0.0), test))
    out.write_text(json.dumps({"broken": broken, "lines": by_line}, indent=0))
    return seconds


def _changed_lines(original: list[str], mutated: list[str]) -> range:
    """The 1-based lines a mutant rewrote: from the first differing line to the last."""
    first = next((i for i, (a, b) in enumerate(zip(original, mutated)) if a != b), min(len(original), len(mutated)))
    tail = 0
    while tail < min(len(original), len(mutated)) - first and original[-1 - tail] == mutated[-1 - tail]:
        tail += 1
    return range(first + 1, max(len(mutated) - tail, first + 1) + 1)


def mutant_tests(module: str) -> int:
    """cosmic-ray's test command: run the tests that execute the mutated lines (cwd: the tree)."""
    directory = WORK / _slug(module)
    original = (directory / "original.py").read_text().splitlines()
    mutated = Path(module).read_text().splitlines()
    selection = json.loads((directory / "tests_by_line.json").read_text())
    by_line: dict[str, list[str]] = selection["lines"]
    changed = _changed_lines(original, mutated)
    selected: dict[str, None] = {}  # ordered: cheapest first, as the baseline listed them
    for line in changed:
        if str(line) not in by_line:
            # Import-time or unseen: every test file the tree holds. A file mapped after the tree
            # was copied is absent from it, and pytest's "file not found" would count as a kill.
            selected = dict.fromkeys(name for name in MODULES[module] if Path(name.partition("::")[0]).exists())
            break
        selected.update(dict.fromkeys(by_line[str(line)]))
    print(f"mutation: lines {changed.start}-{changed.stop - 1}: {len(selected)} tests", flush=True)
    deselected = [f"--deselect={test}" for test in selection["broken"]]
    return subprocess.run([sys.executable, "-m", "pytest", *PYTEST_OPTIONS, *deselected, *selected]).returncode


def _cosmic_ray(tool: str, *args: str, cwd: Path) -> subprocess.CompletedProcess[bytes]:
    env = dict(os.environ, PYTHONPATH=str(cwd))
    return subprocess.run([str(Path(sys.executable).parent / tool), *args], cwd=cwd, env=env, check=True)


def _retest_survivors(session: Path) -> int:
    with sqlite3.connect(session) as db:
        return db.execute("DELETE FROM work_results WHERE test_outcome = 'SURVIVED'").rowcount


def run(module: str, retest_survivors: bool) -> None:
    directory = WORK / _slug(module)
    tree, session, config = directory / "tree", directory / "session.sqlite", directory / "config.toml"
    digest_file = directory / "source.sha256"
    directory.mkdir(parents=True, exist_ok=True)
    _refresh_tree(tree)
    config.write_text(_config(module, TIMEOUT_BOUNDS[1]))
    digest = _module_digest(module)
    if not session.exists() or not digest_file.exists() or digest_file.read_text() != digest:
        session.unlink(missing_ok=True)
        _cosmic_ray("cosmic-ray", "init", str(config), str(session), cwd=tree)
        _cosmic_ray("cr-filter-operators", str(session), str(config), cwd=tree)
        digest_file.write_text(digest)
    elif retest_survivors:
        print(f"mutation: {module}: retesting {_retest_survivors(session)} survivors", flush=True)
    shutil.copy2(REPO / module, directory / "original.py")
    seconds = _baseline(module, tree, directory / "tests_by_line.json")
    config.write_text(_config(module, _timeout(seconds)))
    print(f"mutation: {module}: its tests pass unmutated in {seconds:.1f} s (under coverage);"
          f" a mutant's tests time out after {_timeout(seconds)} s", flush=True)
    _cosmic_ray("cosmic-ray", "exec", str(config), str(session), cwd=tree)


def _outcomes(session: Path) -> dict[str, int]:
    counts = {"mutants": 0, "killed": 0, "survived": 0, "timeout": 0, "incompetent": 0, "pending": 0}
    with sqlite3.connect(session) as db:
        counts["mutants"] = db.execute("SELECT COUNT(*) FROM work_items").fetchone()[0]
        skipped = 0
        for worker, outcome, output in db.execute("SELECT worker_outcome, test_outcome, output FROM work_results"):
            if worker == "SKIPPED":
                skipped += 1
            elif outcome == "KILLED":
                counts["timeout" if output == "timeout" else "killed"] += 1
            elif outcome == "SURVIVED":
                counts["survived"] += 1
            else:
                counts["incompetent"] += 1
    counts["mutants"] -= skipped
    counts["pending"] = counts["mutants"] - counts["killed"] - counts["survived"] - counts["timeout"] - counts["incompetent"]
    return counts


#: The table `report --record` writes: cosmic-ray's own counts, per module, from the sessions.
RUN_COLUMNS: tuple[dict[str, str], ...] = (
    {"name": "module", "align": "left"},
    *({"name": name, "align": "right", "format": "{:,}"} for name in ("mutants", "killed", "survived", "timeout", "pending")),
    {"name": "score (raw)", "align": "right"},
)


def run_rows(modules: list[str], work: Path = WORK) -> list[dict[str, object]]:
    """One row per module that has a session under `work`: its counts and raw score (killed
    and timed out over those decided), before any survivor is argued equivalent or killed by a
    test written for it (`mutation_survivors.json` holds those verdicts)."""
    rows: list[dict[str, object]] = []
    for module in modules:
        session = work / _slug(module) / "session.sqlite"
        if not session.exists():
            continue
        c = _outcomes(session)
        done = c["killed"] + c["survived"] + c["timeout"]
        score = f"{100 * (c['killed'] + c['timeout']) / done:.1f}%" if done else "-"
        rows.append({"module": f"`{module}`", **{name: c[name] for name in ("mutants", "killed", "survived", "timeout", "pending")},
                     "score (raw)": score})
    return rows


def report(modules: list[str], results: Path | None = None, work: Path = WORK) -> None:
    """Print the per-module table; with `results` (benchmarks/results/ for `--record`), also
    write it there as the `mutation-run` series (machine, commit and date recorded in it)."""
    rows = run_rows(modules, work)
    print(f"{'module':40} {'mutants':>7} {'killed':>6} {'survived':>8} {'timeout':>7} {'pending':>7} {'score':>6}")
    for row in rows:
        print(f"{str(row['module']).strip('`'):40} {row['mutants']:>7} {row['killed']:>6} {row['survived']:>8}"
              f" {row['timeout']:>7} {row['pending']:>7} {row['score (raw)']:>6}")
    for module in sorted(set(modules) - {str(row["module"]).strip("`") for row in rows}):
        print(f"{module:40} {'not run':>7}")
    if results is not None:
        sys.path.insert(0, str(REPO))
        from benchmarks import record as series

        series.write(series.measured(
            "mutation-run", "Mutation run: cosmic-ray's counts per module, from the sessions under .mutation/",
            "python scripts/mutation.py report --record", RUN_COLUMNS, rows, load_before=series.load_average(),
            notes="counts, not timings: the load average is the report's own; the published score (mutation-score) "
                  "also counts survivors killed by tests written for them and equivalents argued in mutation_survivors.json",
        ), results)


def survivors(module: str) -> None:
    session = WORK / _slug(module) / "session.sqlite"
    with sqlite3.connect(session) as db:
        rows = db.execute(
            "SELECT r.job_id, m.operator_name, m.start_pos_row, r.diff FROM work_results r"
            " JOIN mutation_specs m ON m.job_id = r.job_id WHERE r.test_outcome = 'SURVIVED'"
            " ORDER BY m.start_pos_row"
        ).fetchall()
    for job_id, operator, line, diff in rows:
        print(f"## {module}:{line} {operator} ({job_id})\n{diff}")


def _apply(diff: str, target: Path) -> None:
    """Apply one mutant's diff (a single hunk) to `target`: its removed lines, where the hunk
    header puts them, become its added lines. Not `patch`: cosmic-ray's diff of a file's last
    line carries a context line past the end of the file, which `patch` rejects."""
    lines = diff.split("\n")
    header = next(line for line in lines if line.startswith("@@"))
    body = lines[lines.index(header) + 1:]
    before = next(i for i, line in enumerate(body) if line.startswith(("-", "+")))
    removed = [line[1:] for line in body if line.startswith("-")]
    added = [line[1:] for line in body if line.startswith("+")]
    at = int(re.match(r"@@ -(\d+)", header).group(1)) - 1 + before  # type: ignore[union-attr]
    source = target.read_text().split("\n")
    if not removed or source[at:at + len(removed)] != removed:
        raise SystemExit(f"mutation: the diff's removed lines are not at line {at + 1} of {target}")
    source[at:at + len(removed)] = added
    target.write_text("\n".join(source))


def killed_by(failed: str) -> str:
    """The verdict of a mutant that pytest's `FAILED path::test[case] - message` line reports
    (the test's name: a case's id may hold any text, newlines included)."""
    test = failed.removeprefix("FAILED ").split(" - ", 1)[0].strip().split("::")[-1].split("[", 1)[0]
    return f"killed by `{test}`"


def check(module: str, job_ids: list[str], tests: list[str], verdicts: Path | None = None) -> None:
    """Apply each mutant to a fresh copy of the working tree and run `tests` (default: the
    module's test files) on it: KILLED means a test failed, as a test written for it must.
    With `verdicts`, each killed mutant without a verdict there gets one naming the test that
    failed (`record` reads that file)."""
    session = WORK / _slug(module) / "session.sqlite"
    with sqlite3.connect(session) as db:
        diffs = dict(db.execute("SELECT job_id, diff FROM work_results"))
    selection = WORK / _slug(module) / "tests_by_line.json"
    deselected = [f"--deselect={test}" for test in json.loads(selection.read_text()).get("broken", [])] if selection.exists() else []
    recorded = json.loads(verdicts.read_text()) if verdicts is not None and verdicts.exists() else {}
    command = [sys.executable, "-m", "pytest", *PYTEST_OPTIONS, *deselected, *(tests or MODULES[module])]
    with tempfile.TemporaryDirectory(prefix="mutation-check-") as scratch:
        tree = Path(scratch) / "tree"
        environment = dict(os.environ, PYTHONPATH=str(tree), PYTHONDONTWRITEBYTECODE="1")
        # A test that fails without any mutant would call every mutant killed: refuse first.
        _refresh_tree(tree)
        unmutated = subprocess.run(command, cwd=tree, env=environment, capture_output=True, text=True)
        if unmutated.returncode != 0:
            tail = "\n".join(unmutated.stdout.splitlines()[-10:])
            sys.exit(f"mutation: the tests fail without any mutant (pytest exit status {unmutated.returncode}), "
                     f"so no verdict would mean anything:\n{tail}")
        for job_id in job_ids:
            _refresh_tree(tree)
            _apply(diffs[job_id], tree / module)
            result = subprocess.run(command, cwd=tree, env=environment, capture_output=True, text=True)
            failed = [line for line in result.stdout.splitlines() if line.startswith("FAILED") or " Error" in line][:1]
            # Only a failing test kills (exit status 1); a test id that does not exist, or no
            # test collected, is an error in the request, never a verdict.
            verdict = {0: "SURVIVED", 1: "KILLED"}.get(result.returncode, f"ERROR (pytest exit status {result.returncode})")
            print(f"{job_id}: {verdict} {' '.join(failed)}", flush=True)
            if verdicts is not None and verdict == "KILLED" and failed and failed[0].startswith("FAILED"):
                recorded.setdefault(job_id, {"kind": "killed", "verdict": killed_by(failed[0])})
                verdicts.write_text(json.dumps(recorded, indent=1) + "\n")


def session_survivors(module: str, work: Path = WORK) -> list[tuple[str, int, str]]:
    """Each survivor of the module's session: its job id, first line and diff."""
    with sqlite3.connect(work / _slug(module) / "session.sqlite") as db:
        return db.execute(
            "SELECT r.job_id, m.start_pos_row, r.diff FROM work_results r JOIN mutation_specs m ON m.job_id = r.job_id"
            " WHERE r.test_outcome = 'SURVIVED' ORDER BY m.start_pos_row, r.job_id"
        ).fetchall()


def record(module: str, verdicts: Path, source: str, work: Path = WORK, root: Path = REPO) -> None:
    """Write the module's survivors table and score row from its session and `verdicts`."""
    session = work / _slug(module) / "session.sqlite"
    if not session.exists():
        sys.exit(f"mutation: {module} has no session under {work}: run it first")
    settled = json.loads(verdicts.read_text())
    try:
        table = mutation_record.rows(session_survivors(module, work), settled)
        row = mutation_record.score_row(module, _outcomes(session), settled)
    except mutation_record.RecordError as error:
        sys.exit(f"mutation: {module}: nothing recorded: {error}")
    mutation_record.write(module, source, table, row, root / "scripts" / "mutation_survivors.json",
                          root / "benchmarks" / "results" / "mutation-score.json")
    print(f"mutation: {module}: {len(table)} rows recorded; {row['score (non-equivalent)']}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    sub = parser.add_subparsers(dest="action", required=True)
    check_parser = sub.add_parser("check", help="apply survivors to a copy of the tree and run tests on them")
    check_parser.add_argument("module", choices=list(MODULES))
    check_parser.add_argument("job_ids", nargs="+", metavar="JOB_ID")
    check_parser.add_argument("--tests", nargs="*", default=[], help="pytest node ids (default: the module's test files)")
    check_parser.add_argument("--verdicts", type=Path, help="JSON file to add each killed mutant's verdict to (for record)")
    record_parser = sub.add_parser("record", help="write a module's survivors table and score row from its session")
    record_parser.add_argument("module", choices=list(MODULES))
    record_parser.add_argument("--verdicts", type=Path, required=True, help="JSON: job id -> kind, verdict, miss")
    record_parser.add_argument("--source", required=True, help="how the run was made: date, commit, load, tests checked")
    for name in ("run", "report", "survivors", "mutant-tests"):
        command = sub.add_parser(name)
        command.add_argument("modules", nargs="*", choices=[[], *MODULES], default=[], metavar="MODULE")
        if name == "report":
            command.add_argument("--record", action="store_true", help="also write benchmarks/results/mutation-run.json")
        if name == "run":
            command.add_argument("--retest-survivors", action="store_true", help="run the survivors again (after adding tests)")
    arguments = parser.parse_args()
    if arguments.action == "check":
        check(arguments.module, arguments.job_ids, arguments.tests, arguments.verdicts)
        return
    if arguments.action == "record":
        record(arguments.module, arguments.verdicts, arguments.source)
        return
    modules = arguments.modules or list(MODULES)
    if arguments.action == "mutant-tests":
        sys.exit(mutant_tests(modules[0]))
    if arguments.action == "run":
        for module in modules:
            run(module, arguments.retest_survivors)
        report(modules)
    elif arguments.action == "report":
        report(modules, REPO / "benchmarks" / "results" if arguments.record else None)
    else:
        for module in modules:
            survivors(module)


if __name__ == "__main__":
    main()
