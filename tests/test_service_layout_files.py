"""The service's files (`ledger_impl.service.layout`): their modes, the port, the hook URL.

The directory holds the secret every HTTP hook call must carry and the socket that answers
hook calls: a mode one bit wider lets another user read the secret or reach the socket."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from ledger_impl.service import layout as layout_module
from ledger_impl.service.layout import HOOK_PATH, Layout
from module_os import ModuleOs


def _mode(path: Path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


def test_an_existing_service_directory_is_tightened_to_the_user_alone(tmp_path: Path) -> None:
    layout = Layout.of(tmp_path / "state")
    layout.directory.mkdir(parents=True)
    os.chmod(layout.directory, 0o755)
    layout.prepare()
    assert _mode(layout.directory) == 0o700


def test_the_secret_is_never_readable_by_others_not_even_as_a_draft(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The draft is linked into place as the secret: created wider, the secret would be readable
    by others until the chmod after it (and for good by a caller that read it in between)."""
    modes: list[int] = []

    def link(source: Path, target: Path) -> None:
        modes.append(_mode(source))
        os.link(source, target)

    monkeypatch.setattr(layout_module, "os", ModuleOs(link=link))
    old_mask = os.umask(0)  # the mode the code asks for, not one the umask narrowed
    try:
        layout = Layout.of(tmp_path / "state")
        secret = layout.secret()
    finally:
        os.umask(old_mask)
    assert modes == [0o600] and _mode(layout.secret_file) == 0o600 and len(secret) == 64


def _ephemeral_ports() -> range:
    low, high = map(int, Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split())
    return range(low, high + 1)


def test_the_port_is_one_the_kernel_chose_and_stays_the_same(tmp_path: Path) -> None:
    layout = Layout.of(tmp_path / "state")
    port = layout.port()
    assert port in _ephemeral_ports()  # asked for port 0: the kernel picks a free one
    assert Layout.of(tmp_path / "state").port() == port
    assert (layout.directory / "port").read_text() == str(port)


def test_the_hook_url_carries_a_reuse_answer_only_when_it_is_not_the_default(tmp_path: Path) -> None:
    layout = Layout.of(tmp_path / "state")
    base = f"http://127.0.0.1:{layout.port()}{HOOK_PATH}claude"
    assert layout.hook_url("claude") == base
    assert layout.hook_url("claude", "verbatim") == base
    assert layout.hook_url("claude", "reference") == f"{base}?reuse_answer=reference"
