"""`ledger replay FILE`: replay a counterexample step by step, contained.

A counterexample file is code: its steps are shell commands, its `detector` names a Python
module. So the file is validated first (nothing runs for a malformed file), then replayed in a
worker process inside the bubblewrap sandbox (`ledger_properties.sandbox`: read-only `/`, a private
`/tmp` holding the workspace, no network, its own PID namespace). Without a working bwrap the
replay refuses unless `--unsandboxed` is given. A detector named in the file is imported only if
it ships with Ledger or `--trust-detector` is given; `--detector` picks one yourself.

Each step is printed with its verdict; at the violation, a diff of the stale (reused) output
against what running the command printed. Exit 1 if the recorded violation reproduces exactly
(same property, same step, same outputs), 0 if it does not, 2 if the file, the detector or the
sandbox is not usable (one line on stderr, nothing run), 130 if interrupted.
"""

from __future__ import annotations

import argparse
import difflib
import sys

from rich.console import Console
from rich.markup import escape

from ledger_cli.errors import EXIT_INTERRUPTED, EXIT_USAGE, EXIT_VIOLATION
from ledger_properties import sandbox
from ledger_properties.counterexample import CounterexampleError, load
from ledger_properties.oracle import StepRecord
from ledger_properties.replay import TRUSTED_DETECTORS, DetectorLoadError, ReplayWorkerError, parse_spec, replay_in_worker


# Control characters of untrusted text (the file's explanation, commands, outputs) are shown
# escaped, so a file cannot move the cursor, retitle or clear the terminal it is replayed in.
_CONTROLS = {code: f"\\x{code:02x}" for code in [*range(0x00, 0x09), *range(0x0B, 0x20), 0x7F, *range(0x80, 0xA0)]}


def shown(text: str) -> str:
    """`text` safe to print: control characters (but newline and tab) escaped, markup escaped."""
    return escape(text.translate(_CONTROLS))


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "replay",
        help="replay a counterexample file in a sandbox; exit 1 if the violation reproduces",
        description="Replay a counterexample in a fresh temporary repository inside a sandbox, step by step.",
    )
    parser.add_argument("file", metavar="FILE")
    parser.add_argument("--detector", metavar="MODULE:FACTORY", default=None,
                        help="replay against this detector instead of the one recorded in FILE")
    parser.add_argument("--trust-detector", action="store_true",
                        help="import the detector FILE names even though it does not ship with Ledger (runs in the sandbox)")
    parser.add_argument("--unsandboxed", action="store_true",
                        help="run the steps without bubblewrap (only for a file you trust)")
    parser.add_argument("--path", default=None, help="directory to import the detector's MODULE from")
    parser.set_defaults(run=run)


def _fail(message: str) -> int:
    print(f"ledger replay: {message}", file=sys.stderr)
    return EXIT_USAGE


def run(args: argparse.Namespace) -> int:
    try:
        counterexample = load(args.file)
        spec = args.detector or counterexample.detector
        parse_spec(spec)
    except (CounterexampleError, DetectorLoadError) as error:
        return _fail(str(error))
    if args.detector is None and spec not in TRUSTED_DETECTORS and not args.trust_detector:
        return _fail(
            f"{args.file} names the detector {spec}, which does not ship with Ledger; importing it runs "
            "its code: pass --trust-detector to allow it, or choose one with --detector"
        )
    sandboxed = not args.unsandboxed
    if sandboxed and not sandbox.available():
        return _fail("bubblewrap (bwrap) is not installed or cannot create namespaces here; a counterexample "
                     "is code, so replay runs it in a sandbox: install bubblewrap, or pass --unsandboxed for a file you trust")

    out = Console(highlight=False)
    out.print(f"[bold]{counterexample.id}[/bold]: {shown(counterexample.explanation)}")
    out.print(f"property {counterexample.property}, detector {spec}, {'sandboxed' if sandboxed else '[red]unsandboxed[/red]'}")

    def show(record: StepRecord) -> None:
        command = record.template.replace("\n", "\\n")
        if len(command) > 100:
            command = command[:97] + "..."
        colour = {"reuse": "yellow", "nudge": "cyan"}.get(record.verdict, "white")
        out.print(f"{record.index + 1:>3} [{colour}]{record.verdict:<5}[/{colour}] exit {record.exit_code:<3} {shown(command)}")

    try:
        result = replay_in_worker(counterexample, spec, search_path=args.path, sandboxed=sandboxed, on_record=show)
    except KeyboardInterrupt:
        print("ledger replay: interrupted; the workspace was removed and its processes stopped", file=sys.stderr)
        return EXIT_INTERRUPTED
    except (DetectorLoadError, sandbox.SandboxUnavailable) as error:
        return _fail(str(error))
    except ReplayWorkerError as error:
        return _fail(f"the replay itself failed (not the file's violation): {error}")

    violation = result.violation
    if not result.reproduced:
        out.print(f"[green]not reproduced[/green]: {shown(str(result.mismatch))}")
        if violation is not None:
            out.print(f"[yellow]note[/yellow]: {shown(violation.message)}")
        return 0
    assert violation is not None
    out.print(f"[red]violation at step {violation.step + 1}[/red], as recorded: {shown(violation.message)}")
    expected, observed = violation.expected, violation.observed
    if "output" in expected and "output" in observed:
        diff = difflib.unified_diff(
            str(observed["output"]).splitlines(keepends=True),
            str(expected["output"]).splitlines(keepends=True),
            "stale (reused)",
            "fresh (run now)",
        )
        text = "".join(line if line.endswith("\n") else line + "\n\\ No newline at end of output\n" for line in diff)
        out.print(shown(text), end="")
        if observed.get("exit_code") != expected.get("exit_code"):
            out.print(f"exit status: stale {observed.get('exit_code')}, fresh {expected.get('exit_code')}")
    else:
        out.print(f"expected {shown(str(dict(expected)))}\nobserved {shown(str(dict(observed)))}")
    return EXIT_VIOLATION
