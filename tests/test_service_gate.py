"""Who the service answers (`ledger_impl/service/gate.py`), asked directly where operator
mutation of the module found no test asking: the loopback connection's owner read from a
`/proc/net/tcp` table that lists other connections first, a damaged table, and a caller or a
workspace owner whose uid sorts either way of the service's own. The service runs as root in
CI, where no uid sorts below it, so the service's uid is moved instead."""

from __future__ import annotations

import io
import os
from pathlib import Path

import pytest

from ledger_impl.service import gate

CLIENT, SERVER = ("127.0.0.1", 40000), ("127.0.0.1", 8765)
HEADER = "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n"


def _row(local: str, remote: str, uid: str) -> str:
    return f"   0: {local} {remote} 01 00000000:00000000 00:00000000 00000000  {uid}        0 1 1\n"


def _table(monkeypatch: pytest.MonkeyPatch, text: str) -> None:
    monkeypatch.setattr(gate, "open", lambda *args, **kwargs: io.StringIO(text), raising=False)


def test_the_connection_s_own_row_names_its_owner_whatever_is_listed_before_it(monkeypatch: pytest.MonkeyPatch) -> None:
    """Pins `ledger_impl/service/gate.py` line 52 (a miss: another user's connection, listed
    first with a client or server address that sorts either way of the client's, was taken for
    the client's, and its owner let in or shut out)."""
    local, remote = "0100007F:9C40", "0100007F:223D"  # CLIENT, SERVER as the kernel writes them
    others = [("0100007F:0001", remote), ("0100007F:FFFE", remote), (local, "0100007F:0002"), (local, "0100007F:FFFF")]
    _table(monkeypatch, HEADER + "".join(_row(a, b, str(1000 + n)) for n, (a, b) in enumerate(others)) + _row(local, remote, "0"))
    assert gate.tcp_peer_uid(CLIENT, SERVER) == 0


@pytest.mark.parametrize("text", ["", HEADER + _row("0100007F:9C40", "0100007F:223D", "not-a-uid"), HEADER + "   0: short\n"],
                         ids=["empty", "uid-not-a-number", "short-row"])
def test_a_table_that_cannot_be_read_names_no_owner(monkeypatch: pytest.MonkeyPatch, text: str) -> None:
    _table(monkeypatch, text)
    assert gate.tcp_peer_uid(CLIENT, SERVER) is None


@pytest.mark.parametrize("peer", [0, 2000], ids=["sorts-before", "sorts-after"])
def test_a_request_from_another_uid_is_refused_whichever_way_it_sorts(monkeypatch: pytest.MonkeyPatch, peer: int) -> None:
    """Pins `ledger_impl/service/gate.py` line 67 (a miss: `>` let a lower uid, root's
    included, talk to a user's service)."""
    monkeypatch.setattr(gate.os, "getuid", lambda: 1000)
    headers = {"host": "127.0.0.1:8765", "x-ledger-secret": "s"}
    assert gate.http_refusal(headers, "s", 8765, 1000) is None
    refused = gate.http_refusal(headers, "s", 8765, peer)
    assert refused is not None and refused.status == 403


def test_an_unreadable_workspace_is_a_bad_request(tmp_path: Path) -> None:
    refused = gate.workspace_refusal(os.fspath(tmp_path / "missing"))
    assert refused is not None and refused.status == 400 and "cannot be read" in refused.reason


@pytest.mark.parametrize("owner", [0, 2000], ids=["sorts-before", "sorts-after"])
def test_a_workspace_of_another_uid_is_refused_whichever_way_it_sorts(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, owner: int
) -> None:
    """Pins `ledger_impl/service/gate.py` line 78 (a miss: `>` or `<` served a workspace of a
    user whose uid sorts the other way)."""
    if os.geteuid() != 0:
        pytest.skip("giving a directory to another uid needs root")
    root = tmp_path / "theirs"
    root.mkdir()
    os.chown(root, owner, owner)
    monkeypatch.setattr(gate.os, "getuid", lambda: 1000)
    refused = gate.workspace_refusal(os.fspath(root))
    assert refused is not None and refused.status == 403
    os.chown(root, 1000, 1000)
    assert gate.workspace_refusal(os.fspath(root)) is None
