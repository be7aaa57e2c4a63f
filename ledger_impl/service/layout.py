"""Where the service keeps its files: `<state_dir>/service/`, a directory only the user can enter.

- `secret`: the per-user token HTTP hook calls must carry (mode 0600, created once);
- `port`: the TCP port on 127.0.0.1 the HTTP transport binds (chosen once, so that installed
  hook settings keep pointing at it);
- `socket`: the Unix socket of the thin client (mode 0600);
- `lock`: held by the running service (one per state directory);
- `service.log`: what a service started on demand prints.
"""

from __future__ import annotations

import contextlib
import os
import pathlib
import secrets
import socket

import attrs

from ledger_impl.state_directory import resolve

SECRET_HEADER = "X-Ledger-Secret"
HOOK_PATH = "/ledger/v1/hook/"  # + agent name


@attrs.frozen
class Layout:
    """The service's files under one state directory."""

    state_dir: pathlib.Path

    @classmethod
    def of(cls, state_dir: str | os.PathLike[str] | None) -> "Layout":
        return cls(resolve(state_dir).absolute())

    @property
    def directory(self) -> pathlib.Path:
        return self.state_dir / "service"

    @property
    def secret_file(self) -> pathlib.Path:
        return self.directory / "secret"

    @property
    def port_file(self) -> pathlib.Path:
        return self.directory / "port"

    @property
    def socket_path(self) -> pathlib.Path:
        return self.directory / "socket"

    @property
    def lock_file(self) -> pathlib.Path:
        return self.directory / "lock"

    def prepare(self) -> None:
        """Create the directory, private to the user (0700, tightened if it existed)."""
        self.directory.mkdir(parents=True, exist_ok=True)
        os.chmod(self.directory, 0o700)

    def secret(self) -> str:
        """The user's secret, created on first use, readable by the user alone."""
        self.prepare()
        if not self.secret_file.exists():
            # Written whole under a private name, then linked into place: a concurrent first
            # caller either links first or finds the complete file, never an empty one.
            draft = self.directory / f"secret.{os.getpid()}.{secrets.token_hex(4)}"
            descriptor = os.open(draft, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            try:
                with os.fdopen(descriptor, "w") as handle:
                    handle.write(secrets.token_hex(32))
                with contextlib.suppress(FileExistsError):
                    os.link(draft, self.secret_file)
            finally:
                draft.unlink()
        os.chmod(self.secret_file, 0o600)
        return self.secret_file.read_text().strip()

    def port(self) -> int:
        """The HTTP port, chosen once: a port free now on 127.0.0.1, then always the same."""
        self.prepare()
        with contextlib.suppress(FileNotFoundError, ValueError):
            return int(self.port_file.read_text())
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
            probe.bind(("127.0.0.1", 0))
            chosen = probe.getsockname()[1]
        temporary = self.port_file.with_name("port.tmp")
        temporary.write_text(str(chosen))
        os.replace(temporary, self.port_file)
        return chosen

    def hook_url(self, agent: str, reuse_answer: str = "verbatim") -> str:
        """The URL an agent's HTTP hooks POST to; a Reuse answer other than the default is a
        query parameter (`?reuse_answer=reference`), left out otherwise."""
        query = "" if reuse_answer == "verbatim" else f"?reuse_answer={reuse_answer}"
        return f"http://127.0.0.1:{self.port()}{HOOK_PATH}{agent}{query}"
