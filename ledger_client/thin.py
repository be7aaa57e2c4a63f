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

# Only modules a bare `python -S` start has loaded already, or nearly: this process starts
# at every tool call. `json` (through `re` and `enum`), `socket` (through `enum` and
# `selectors`) and `subprocess` each cost about as much as the interpreter's own start, so
# the call's path takes none of them: it speaks the service's binary frame over `_socket`,
# prints the reply the service serialized, and imports the others only to start the service
# or fall back (`-X importtime` lists what it loads; tests/test_service.py checks it).
import _socket
import os
import sys
import time

# A cold service start imports Ledger: about half a second on an idle machine. The variable
# lets a test (or a user on a slow machine) change how long the first call waits.
START_WAIT_S = float(os.environ.get("LEDGER_HOOK_START_WAIT_S") or 5.0)
REPLY_TIMEOUT_S = 50.0  # below the 60 s hook timeout `ledger hooks install` writes
HOOK_FRAME = b"hook/3\n"  # `ledger_impl.service.frame` reads it


class Unreachable(Exception):
    """The service did not answer: the caller falls back."""


class Refused(Unreachable):
    """The service answered and refused the call: the caller falls back at once."""


def state_dir(explicit: str | None) -> str:
    """The same default as Ledger's `ledger_impl.state_directory` (`$XDG_STATE_HOME/ledger`, else
    ~/.local/state/ledger), copied so as to import nothing of Ledger; tests/test_state_directory.py
    checks that the two agree."""
    if explicit:
        return os.path.abspath(explicit)
    base = os.environ.get("XDG_STATE_HOME") or os.path.join(os.path.expanduser("~"), ".local", "state")
    return os.path.join(base, "ledger")


def socket_path(state: str) -> str:
    return os.path.join(state, "service", "socket")


def exchange(path: str, data: bytes, timeout: float) -> bytes:
    """Send `data` over one connection to the service's socket; everything it answers before
    closing. Unreachable on any failure to get an answer."""
    try:
        connection = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    except OSError as error:
        raise Unreachable(str(error)) from None
    try:
        connection.settimeout(timeout)
        connection.connect(path)
        connection.sendall(data)
        chunks = []
        while True:
            chunk = connection.recv(1 << 16)
            if not chunk:
                break
            chunks.append(chunk)
        return b"".join(chunks)
    except OSError as error:
        raise Unreachable(str(error)) from None
    finally:
        connection.close()


def request(path: str, message: dict, timeout: float) -> dict:
    """One JSON request (`status`, `stop`, or a `hook` for tests and tools) and its answer."""
    import json

    try:
        return json.loads(exchange(path, json.dumps(message).encode() + b"\n", timeout))
    except ValueError as error:
        raise Unreachable(str(error)) from None


def hook_frame(agent: str, data: bytes, root: str | None, reuse_answer: str = "verbatim") -> bytes:
    """One hook call as the service's frame: length-prefixed fields, the environment as the
    raw `KEY=VALUE` bytes of this process (the agent's), the payload as the agent sent it."""
    environment = b"\0".join(key + b"=" + value for key, value in os.environb.items())
    fields = (agent.encode(), os.fsencode(root or ""), os.fsencode(os.getcwd()), environment, reuse_answer.encode(), data)
    return HOOK_FRAME + b"".join(b"%d\n" % len(field) + field for field in fields)


def answered(frame: bytes) -> bytes:
    """The reply to print from the service's answer frame (`STATUS LENGTH\n` and the body)."""
    header, _, body = frame.partition(b"\n")
    status, _, length = header.partition(b" ")
    if status != b"200" or not length.isdigit() or int(length) != len(body):
        raise Refused(f"the service refused the call: {body[:200].decode('utf-8', 'replace') or header!r}")
    return body


def start_service(python: str, state: str) -> None:
    """Start `ledger serve` detached (its own session; output to the service log)."""
    import subprocess

    directory = os.path.join(state, "service")
    os.makedirs(directory, mode=0o700, exist_ok=True)
    with open(os.path.join(directory, "service.log"), "ab") as log:
        subprocess.Popen([python, "-m", "ledger_cli.main", "serve", "--state-dir", state],
                         stdin=subprocess.DEVNULL, stdout=log, stderr=log, start_new_session=True, close_fds=True)


def forward(agent: str, data: bytes, state: str, root: str | None, python: str,
            reuse_answer: str = "verbatim") -> bytes:
    """The service's reply to this hook call (empty: no opinion), starting the service if needed."""
    frame, path = hook_frame(agent, data, root, reuse_answer), socket_path(state)
    try:
        return answered(exchange(path, frame, REPLY_TIMEOUT_S))
    except Refused:
        raise
    except Unreachable:
        start_service(python, state)
    deadline = time.monotonic() + START_WAIT_S
    while True:
        time.sleep(0.02)
        try:
            return answered(exchange(path, frame, REPLY_TIMEOUT_S))
        except Refused:
            raise
        except Unreachable:
            if time.monotonic() > deadline:
                raise


def fallback(agent: str, data: bytes, state: str | None, root: str | None, python: str, why: str,
             reuse_answer: str = "verbatim") -> bytes:
    """Today's in-process hook, fed the same stdin; its stdout is the answer."""
    import subprocess

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
        sys.stdout.buffer.write(forward(agent, data, state_dir(explicit_state), root, python, reuse_answer))
    except Unreachable as why:
        sys.stdout.buffer.write(fallback(agent, data, explicit_state, root, python, str(why), reuse_answer))
    sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
