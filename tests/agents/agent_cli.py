"""The real agent CLIs (Claude Code, Codex, Copilot CLI, Gemini CLI, Qwen Code), pinned, installed
from npm into a cache directory.

`python3 tests/agents/agent_cli.py` installs them all (`.ci/run` does); the tests' fixtures call
`ensure(agent)` and install when missing. Package install scripts are not run: each native
binary comes in its platform's optional dependency and is found there (Gemini CLI and Qwen
Code are JavaScript bundles that `node` runs).
"""

from __future__ import annotations

import concurrent.futures
import fcntl
import os
import pathlib
import shutil
import subprocess
import sys
from typing import NamedTuple


class AgentPackage(NamedTuple):
    package: str
    version: str
    binaries: tuple[str, ...]  # globs under node_modules, tried in order
    version_prefix: str  # what `--version` starts with


AGENTS: dict[str, AgentPackage] = {
    "claude": AgentPackage("@anthropic-ai/claude-code", "2.1.328",
                           ("@anthropic-ai/claude-code-*/claude", ".bin/claude"), "2.1.328"),
    "codex": AgentPackage("@openai/codex", "0.171.0", ("@openai/codex-*/vendor/*/bin/codex", ".bin/codex"),
                          "codex-cli 0.171.0"),
    "copilot": AgentPackage("@github/copilot", "1.0.102", ("@github/copilot-linux-*/copilot", ".bin/copilot"),
                            "GitHub Copilot CLI 1.0.102"),
    "gemini": AgentPackage("@google/gemini-cli", "0.61.0", (".bin/gemini",), "0.61.0"),
    "qwen": AgentPackage("@qwen-code/qwen-code", "0.24.4", (".bin/qwen",), "0.24.4"),
}


def cache_dir(agent: str) -> pathlib.Path:
    base = os.environ.get("LEDGER_AGENT_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "ledger-agents")
    return pathlib.Path(base) / f"{agent}-{AGENTS[agent].version}"


def unpack_cache(agent: str) -> pathlib.Path:
    """`XDG_CACHE_HOME` for the CLI: Copilot unpacks its bundled package there (235 MB) on the
    first run, so every test run shares one copy."""
    return cache_dir(agent) / "xdg-cache"


def _binary(agent: str, prefix: pathlib.Path) -> pathlib.Path | None:
    spec = AGENTS[agent]
    for pattern in spec.binaries:
        for candidate in sorted((prefix / "node_modules").glob(pattern)):
            try:
                version = subprocess.run([str(candidate), "--version"], capture_output=True, text=True, timeout=60,
                                         env={**os.environ, "CODEX_HOME": str(prefix),
                                              "XDG_CACHE_HOME": str(unpack_cache(agent))})
            except OSError:
                continue
            if version.returncode == 0 and version.stdout.startswith(spec.version_prefix):
                return candidate
    return None


def ensure(agent: str) -> tuple[pathlib.Path | None, str]:
    """The agent CLI's path, installing it if needed; or None and why it is not available."""
    spec, prefix = AGENTS[agent], cache_dir(agent)
    found = _binary(agent, prefix)
    if found is not None:
        return found, ""
    package = f"{spec.package}@{spec.version}"
    if shutil.which("npm") is None:
        return None, f"npm not found: cannot install {package}"
    prefix.mkdir(parents=True, exist_ok=True)
    with open(prefix / ".install-lock", "w") as lock:  # parallel test workers install once
        fcntl.flock(lock, fcntl.LOCK_EX)
        found = _binary(agent, prefix)
        if found is None:
            install = subprocess.run(
                ["npm", "install", "--prefix", str(prefix), "--no-audit", "--no-fund", "--no-save",
                 "--ignore-scripts", "--loglevel=error", package],
                capture_output=True, text=True, timeout=900,
            )
            found = _binary(agent, prefix)
            if found is None:
                return None, f"npm install {package} failed: {install.stderr.strip()[-500:]}"
    return found, ""


if __name__ == "__main__":
    # Each agent has its own prefix and lock, so the downloads run side by side (on a machine
    # with an empty npm cache they are most of the install's time).
    names = sys.argv[1:] or sorted(AGENTS)
    with concurrent.futures.ThreadPoolExecutor(max_workers=len(names)) as pool:
        results = list(pool.map(ensure, names))
    for name, (path, why) in zip(names, results):
        print(f"{name} {AGENTS[name].version}: {path or why}", file=sys.stderr)
    sys.exit(1 if any(path is None for path, _ in results) else 0)
