"""`ledger-hook AGENT`: forward one hook call to `ledger serve` over its Unix socket.

An agent with command hooks only (Codex, Claude's SessionStart) starts this around each call.
It imports nothing but the standard library (run it with `python -S`, as `ledger hooks install`
writes it), reads the hook's JSON from stdin, sends it with the agent's environment and cwd to
the service, and prints the reply. If the service is not running it starts one (`python -m
ledger_cli.main serve`, detached) and waits up to `START_WAIT_S` for its socket. If the service
cannot be reached or does not answer in time, the call falls back to today's in-process hook
(`python -m ledger_cli.main hook AGENT`), fed the same stdin: every call is answered. The
exit status is always 0, as for `ledger hook`.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time

# A cold service start imports Ledger: about half a second on an idle machine. The variable
# lets a test (or a user on a slow machine) change how long the first call waits.
START_WAIT_S = float(os.environ.get("LEDGER_HOOK_START_WAIT_S") or 5.0)
REPLY_TIMEOUT_S = 50.0  # below the 60 s hook timeout `ledger hooks install` writes


class Unreachable(Exception):
    """The service did not answer: the caller falls back."""


def state_dir(explicit: str | None) -> str:
    """The same default as Ledger's (`$XDG_STATE_HOME/ledger`, else ~/.local/state/ledger)."""
    if explicit:
        return os.path.abspath(explicit)
    base = os.environ.get("XDG_STATE_HOME") or os.path.join(os.path.expanduser("~"), ".local", "state")
    return os.path.join(base, "ledger")


def socket_path(state: str) -> str:
    return os.path.join(state, "service", "socket")


def request(path: str, message: dict, timeout: float) -> dict:
    """One request over the service's socket; Unreachable on any failure to get an answer."""
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as connection:
            connection.settimeout(timeout)
            connection.connect(path)
            connection.sendall(json.dumps(message).encode() + b"\n")
            chunks = []
            while True:
                chunk = connection.recv(1 << 16)
                if not chunk:
                    break
                chunks.append(chunk)
                if chunk.endswith(b"\n"):
                    break
        return json.loads(b"".join(chunks))
    except (OSError, ValueError) as error:
        raise Unreachable(str(error)) from None


def start_service(python: str, state: str) -> None:
    """Start `ledger serve` detached (its own session; output to the service log)."""
    directory = os.path.join(state, "service")
    os.makedirs(directory, mode=0o700, exist_ok=True)
    with open(os.path.join(directory, "service.log"), "ab") as log:
        subprocess.Popen([python, "-m", "ledger_cli.main", "serve", "--state-dir", state],
                         stdin=subprocess.DEVNULL, stdout=log, stderr=log, start_new_session=True, close_fds=True)


def forward(agent: str, data: bytes, state: str, root: str | None, python: str,
            reuse_answer: str = "verbatim") -> dict | None:
    """The service's reply to this hook call (None: no opinion), starting the service if needed."""
    message = {"op": "hook", "agent": agent, "payload": json.loads(data or b"{}"), "env": dict(os.environ),
               "cwd": os.getcwd(), "root": root, "reuse_answer": reuse_answer}
    path = socket_path(state)
    try:
        answer = request(path, message, REPLY_TIMEOUT_S)
    except Unreachable:
        start_service(python, state)
        deadline = time.monotonic() + START_WAIT_S
        while True:
            time.sleep(0.02)
            try:
                answer = request(path, message, REPLY_TIMEOUT_S)
                break
            except Unreachable:
                if time.monotonic() > deadline:
                    raise
    if not answer.get("ok"):
        raise Unreachable(f"the service refused the call: {answer.get('error') or answer.get('reply')}")
    return answer.get("reply")


def fallback(agent: str, data: bytes, state: str | None, root: str | None, python: str, why: str,
             reuse_answer: str = "verbatim") -> bytes:
    """Today's in-process hook, fed the same stdin; its stdout is the answer."""
    command = [python, "-m", "ledger_cli.main", "hook", agent, "--reuse-answer", reuse_answer]
    if state is not None:
        command += ["--state-dir", state]
    if root is not None:
        command += ["--root", root]
    done = subprocess.run(command, input=data, stdout=subprocess.PIPE, timeout=REPLY_TIMEOUT_S)
    sys.stderr.write(f"ledger-hook: service unreachable ({why}): answered in process\n")
    return done.stdout


def parse(argv: list[str]) -> tuple[str, str | None, str | None, str]:
    """AGENT [--state-dir DIR] [--root ROOT] [--reuse-answer verbatim|reference], parsed by hand
    (argparse costs a few ms of import)."""
    usage = "usage: ledger-hook AGENT [--state-dir DIR] [--root ROOT] [--reuse-answer verbatim|reference]"
    if not argv or argv[0].startswith("-"):
        raise SystemExit(usage)
    agent, options = argv[0], dict(zip(argv[1::2], argv[2::2]))
    unknown = set(options) - {"--state-dir", "--root", "--reuse-answer"}
    if unknown or len(argv[1:]) % 2:
        raise SystemExit(f"ledger-hook: unknown or incomplete options {sorted(unknown) or argv[1:]}")
    reuse_answer = options.get("--reuse-answer", "verbatim")
    if reuse_answer not in ("verbatim", "reference"):
        raise SystemExit(usage)
    return agent, options.get("--state-dir"), options.get("--root"), reuse_answer


def main(argv: list[str] | None = None) -> int:
    agent, explicit_state, root, reuse_answer = parse(sys.argv[1:] if argv is None else argv)
    data = sys.stdin.buffer.read()
    python = sys.executable
    try:
        reply = forward(agent, data, state_dir(explicit_state), root, python, reuse_answer)
        if reply:
            sys.stdout.write(json.dumps(reply))
    except (Unreachable, ValueError) as why:
        sys.stdout.buffer.write(fallback(agent, data, explicit_state, root, python, str(why), reuse_answer))
    sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
