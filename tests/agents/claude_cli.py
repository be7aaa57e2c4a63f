"""The real Claude Code CLI, pinned, installed from npm into a cache directory.

`python3 tests/agents/claude_cli.py` installs it (`.ci/run` does); the tests' fixture calls
`ensure()` and installs it when missing. The package's postinstall is not run: the native
binary comes in the platform's optional dependency and is used directly.
"""

from __future__ import annotations

import fcntl
import os
import pathlib
import shutil
import subprocess
import sys

VERSION = "2.1.328"
PACKAGE = f"@anthropic-ai/claude-code@{VERSION}"


def cache_dir() -> pathlib.Path:
    base = os.environ.get("LEDGER_AGENT_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "ledger-agents")
    return pathlib.Path(base) / f"claude-code-{VERSION}"


def _binary(prefix: pathlib.Path) -> pathlib.Path | None:
    modules = prefix / "node_modules" / "@anthropic-ai"
    candidates = sorted(modules.glob("claude-code-*/claude")) + [prefix / "node_modules" / ".bin" / "claude"]
    for candidate in candidates:
        if not candidate.is_file():
            continue
        try:
            version = subprocess.run([str(candidate), "--version"], capture_output=True, text=True, timeout=60)
        except OSError:
            continue
        if version.returncode == 0 and version.stdout.startswith(VERSION):
            return candidate
    return None


def ensure() -> tuple[pathlib.Path | None, str]:
    """The CLI's path, installing it if needed; or None and why it is not available."""
    prefix = cache_dir()
    found = _binary(prefix)
    if found is not None:
        return found, ""
    if shutil.which("npm") is None or shutil.which("node") is None:
        return None, f"npm/node not found: cannot install {PACKAGE}"
    prefix.mkdir(parents=True, exist_ok=True)
    with open(prefix / ".install-lock", "w") as lock:  # parallel test workers install once
        fcntl.flock(lock, fcntl.LOCK_EX)
        found = _binary(prefix)
        if found is None:
            install = subprocess.run(
                ["npm", "install", "--prefix", str(prefix), "--no-audit", "--no-fund", "--no-save",
                 "--ignore-scripts", "--loglevel=error", PACKAGE],
                capture_output=True, text=True, timeout=900,
            )
            found = _binary(prefix)
            if found is None:
                return None, f"npm install {PACKAGE} failed: {install.stderr.strip()[-500:]}"
    return found, ""


if __name__ == "__main__":
    path, why = ensure()
    print(f"claude code {VERSION}: {path}" if path else f"claude code {VERSION}: {why}", file=sys.stderr)
    sys.exit(0 if path else 1)
