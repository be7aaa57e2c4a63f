"""The step logic both drivers share (`ledger_impl.engine`), asked directly."""

from __future__ import annotations

import os
from pathlib import Path

from ledger_impl.classifier import classify
from ledger_impl.engine import observation_fingerprint


def test_only_a_read_with_a_target_in_the_root_has_a_fingerprint(tmp_path: Path) -> None:
    # A read outside the root and a write are never reused: fingerprinting them is work for
    # nothing, and a Step would carry a fingerprint that no decision used.
    (tmp_path / "a.txt").write_text("a\n")
    env = dict(os.environ)
    take = lambda text: observation_fingerprint(tmp_path, classify(text, cwd=".", root=tmp_path), env)  # noqa: E731
    assert take("cat a.txt") is not None
    assert take("cat /etc/hostname") is None, "a read with no target in the root"
    assert take("echo x > a.txt") is None, "a write"
