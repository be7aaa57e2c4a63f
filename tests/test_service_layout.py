"""The service's files (`ledger_impl.service.layout`): the secret every HTTP hook call carries."""

from __future__ import annotations

import stat
import threading
from pathlib import Path

from ledger_impl.service.layout import Layout

CALLERS = 16
FRESH_DIRECTORIES = 40


def test_concurrent_first_callers_all_read_the_one_complete_secret(tmp_path: Path) -> None:
    """A secret created with O_EXCL and then written could be read empty by a second caller in
    between (it found the file and read it before the first caller's write), so a hook would
    carry an empty secret; written under a private name and linked into place, every caller
    reads the same 64 hex digits and no draft is left behind."""
    for attempt in range(FRESH_DIRECTORIES):
        layout = Layout.of(tmp_path / f"state-{attempt}")
        seen: list[str] = []
        callers = [threading.Thread(target=lambda: seen.append(layout.secret())) for _ in range(CALLERS)]
        for caller in callers:
            caller.start()
        for caller in callers:
            caller.join()
        assert len(seen) == CALLERS
        assert len(set(seen)) == 1 and len(seen[0]) == 64 and int(seen[0], 16) >= 0
        assert sorted(p.name for p in layout.directory.iterdir()) == ["secret"]
        assert stat.S_IMODE(layout.secret_file.stat().st_mode) == 0o600
