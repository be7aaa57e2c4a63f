"""`ledger hooks install|uninstall AGENT [--project|--user]`: Ledger's entries in an
agent's hook settings. Where each agent keeps them, its events and matchers, and which events
go over HTTP are fields of the agent's plugin record (`ledger_impl.agents`).

Claude Code reads `.claude/settings.json` (the project, the default) or
`~/.claude/settings.json` (`--user`); Codex reads `hooks.json` in `.codex/` or in `$CODEX_HOME`
(default `~/.codex`); Gemini CLI reads `.gemini/settings.json` or `~/.gemini/settings.json`,
Qwen Code `.qwen/settings.json` or `~/.qwen/settings.json`, Copilot CLI a file of Ledger's own,
`.github/hooks/ledger.json` or `$COPILOT_HOME/hooks/ledger.json` (default `~/.copilot`);
all in the same shape (`{"hooks": {EVENT: [{"matcher": ..., "hooks": [{"type": "command",
"command": ...}]}]}}`). Install merges one matcher group per event,
keeping every other setting and hook; running it twice changes nothing. Uninstall removes
exactly the entries whose command is Ledger's hook, and the lists that only they made
non-empty. The hook command names this Python interpreter, so it works without `ledger` on PATH.

Install first records what the settings file was (absent, or its exact text) outside the
workspace, in Ledger's state directory. Uninstall gives that back when nothing but Ledger's hooks
changed since: a file install created is removed (and the folder, if it created that too and it
is empty), a file with other content gets its bytes back. When the user edited the settings in
between, uninstall keeps the edit and removes only Ledger's entries.

A project install writes into the workspace because the user asked for it; the session sees
that write as one change before the first step, nothing more.

Transports (`--transport`). `service` (the default) talks to `ledger serve`: Claude's tool
events become `type: "http"` entries POSTing to the service on 127.0.0.1 with the user's
secret as a literal header (Claude Code 2.1.328 does not deliver SessionStart to an HTTP hook,
and an environment variable would be one more step for the user), and SessionStart and
UserPromptSubmit run the thin client (`ledger_client/thin.py`), which starts the service when
it is not running and registers the session's root and environment. Codex gets the thin
client for every event, and so do Gemini CLI (it has command hooks only), Qwen Code and
Copilot CLI. A file holding the secret is written 0600; for a Claude project install it is `.claude/settings.local.json`, the per-user file Claude Code keeps out of git,
never the shared `settings.json`. `command` keeps today's `ledger hook` command hooks.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import pathlib
import shlex
import sys
from typing import Any

import attrs

import ledger_client.thin
from ledger_cli.errors import EXIT_USAGE
from ledger_impl.agents import BY_REFERENCE, HOOKED
from ledger_impl.agents.hook_session import REUSE_ANSWERS
from ledger_impl.agents.spec import Hooks, Scope
from ledger_impl import state_directory
from ledger_impl.service.layout import HOOK_PATH, SECRET_HEADER, Layout
from ledger_spec.errors import UnreadableState, UsageError

TRANSPORTS = ("service", "command")


class SettingsError(UnreadableState):
    """The settings file cannot be read as an agent's hook settings."""


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("hooks", help="install or remove Ledger's hooks in an agent's settings")
    actions = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    for action, text in (("install", "add Ledger's hooks (idempotent)"), ("uninstall", "remove exactly Ledger's hooks")):
        sub = actions.add_parser(action, help=text)
        sub.add_argument("agent", choices=sorted(HOOKED))
        where = sub.add_mutually_exclusive_group()
        where.add_argument("--project", action="store_true", help=" or ".join(
            f"PROJECT/{hooks.settings.project}" for hooks in HOOKED.values()) + " (the default)")
        where.add_argument("--user", action="store_true",
                           help=" or ".join(hooks.settings.user_shown for hooks in HOOKED.values()))
        sub.add_argument("--root", default=".", help="the project directory for --project (default: .)")
        if action == "install":
            sub.add_argument("--state-dir", default=None, help="pass --state-dir to every hook call")
            sub.add_argument("--transport", choices=TRANSPORTS, default="service",
                             help="service: HTTP hooks (Claude) and the thin client, served by `ledger serve` "
                                  "(the default); command: a `ledger hook` process per call")
            sub.add_argument("--reuse-answer", choices=REUSE_ANSWERS, default="verbatim",
                             help="how the installed hooks answer a Reuse: the stored output (the default), or "
                                  "a note pointing at the earlier result when the model provably still holds it "
                                  f"(reference: {', '.join(BY_REFERENCE)} only; refused for the others, whose "
                                  "plugins do not track the model's context)")
        sub.set_defaults(run=run)


def settings_path(agent: str, user: bool, root: str | os.PathLike[str], transport: str = "command") -> pathlib.Path:
    hooks = HOOKED[agent]
    # A service install of an agent with HTTP hooks writes the secret: the per-user file, never the shared one.
    scope: Scope = "user" if user else "local" if transport == "service" and hooks.http_events else "project"
    return hooks.settings.path(scope, root)


@attrs.frozen
class HttpTarget:
    """Where an agent's HTTP hook entries POST, and the secret header they carry."""

    url: str
    secret: str

    def entry(self, timeout_s: int | None) -> dict[str, Any]:
        entry: dict[str, Any] = {"type": "http", "url": self.url, "headers": {SECRET_HEADER: self.secret}}
        return entry if timeout_s is None else {**entry, "timeout": timeout_s}


def client_command(agent: str, state_dir: str | None = None, reuse_answer: str = "verbatim") -> str:
    """The thin client, run without site-packages (it needs only the standard library)."""
    return shlex.join([sys.executable, "-S", os.path.abspath(ledger_client.thin.__file__), agent,
                       *_options(state_dir, reuse_answer)])


def hook_command(agent: str, state_dir: str | None = None, reuse_answer: str = "verbatim") -> str:
    return shlex.join([sys.executable, "-m", "ledger_cli.main", "hook", agent, *_options(state_dir, reuse_answer)])


def _options(state_dir: str | None, reuse_answer: str) -> list[str]:
    """The options every installed hook passes on; the default answer is left out, so an install
    without `--reuse-answer` writes the same command as before the option existed."""
    options = [] if state_dir is None else ["--state-dir", os.path.abspath(state_dir)]
    return options if reuse_answer == "verbatim" else [*options, "--reuse-answer", reuse_answer]


def is_ledger_hook(entry: Any) -> bool:
    if not isinstance(entry, dict):
        return False
    command = str(entry.get("command", ""))
    return ("ledger_cli.main hook " in command or "ledger_client/thin.py " in command
            or (entry.get("type") == "http" and HOOK_PATH in str(entry.get("url", ""))))


def installed(settings: dict[str, Any], command: str, agent: str = "claude", http: HttpTarget | None = None) -> dict[str, Any]:
    """`settings` with Ledger's hooks (running `command`, or POSTing to `http` for the agent's
    HTTP events when given) present exactly once per event."""
    plugin: Hooks = HOOKED[agent]
    merged = uninstalled(settings)
    hooks = merged.setdefault("hooks", {})
    for event, matcher in plugin.events.items():
        entry: dict[str, Any] = {"type": "command", "command": command}
        if http is not None and event in plugin.http_events:
            entry = http.entry(plugin.timeout_s)
        elif plugin.timeout_s is not None:
            entry["timeout"] = plugin.timeout_s
        group: dict[str, Any] = {"hooks": [entry]}
        if matcher is not None:
            group = {"matcher": matcher, **group}
        hooks.setdefault(event, []).append(group)
    return merged


def uninstalled(settings: dict[str, Any]) -> dict[str, Any]:
    """`settings` without Ledger's hooks; everything else as it was."""
    result = json.loads(json.dumps(settings))  # a deep copy
    hooks = result.get("hooks")
    if not isinstance(hooks, dict):
        return result
    for event in list(hooks):
        groups = hooks[event]
        if not isinstance(groups, list):
            continue
        kept = []
        for group in groups:
            entries = group.get("hooks") if isinstance(group, dict) else None
            if not isinstance(entries, list) or not any(is_ledger_hook(e) for e in entries):
                kept.append(group)
                continue
            others = [e for e in entries if not is_ledger_hook(e)]
            if others:
                kept.append({**group, "hooks": others})
        if kept:
            hooks[event] = kept
        else:
            del hooks[event]
    if not hooks:
        del result["hooks"]
    return result


def read_settings(path: pathlib.Path) -> dict[str, Any]:
    if not path.exists():
        return {}
    try:
        settings = json.loads(path.read_text(encoding="utf-8") or "{}")
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
        raise SettingsError(f"{path}: not readable as JSON ({error})") from error
    if not isinstance(settings, dict) or not isinstance(settings.get("hooks", {}), dict):
        raise SettingsError(f"{path}: not hook settings (expected an object with an object 'hooks')")
    return settings


def write_settings(path: pathlib.Path, settings: dict[str, Any], *, private: bool = False) -> None:
    """Replace `path` atomically; `private`: it holds a secret, so it is created 0600."""
    write_text_atomically(path, json.dumps(settings, indent=2) + "\n", private=private)


def write_text_atomically(path: pathlib.Path, text: str, *, private: bool = False) -> None:
    """`text` into `path` in one rename; a file that is private already (no group or other
    bits), or one that will hold a secret, is written 0600, any other 0644."""
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(path.name + ".ledger-tmp")
    mode = 0o600 if private or (path.exists() and path.stat().st_mode & 0o077 == 0) else 0o644
    descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
    os.fchmod(descriptor, mode)
    with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
        handle.write(text)
    os.replace(temporary, path)  # never a half-written settings file


def before_record(path: pathlib.Path) -> pathlib.Path:
    """Where install keeps what `path` was before it, one record per settings file."""
    name = hashlib.sha256(str(path.absolute()).encode()).hexdigest()[:32]
    return state_directory.default() / "hooks-before" / f"{name}.json"


def remember_before(path: pathlib.Path) -> None:
    """Record `path`'s state before Ledger's first install into it (a reinstall keeps the first)."""
    record = before_record(path)
    if record.exists():
        return
    state = {
        "path": str(path.absolute()),
        "text": path.read_text(encoding="utf-8") if path.exists() else None,
        "created_dirs": [str(p.absolute()) for p in path.absolute().parents if not p.exists()],
    }
    write_settings(record, state)


def restore_before(path: pathlib.Path, updated: dict[str, Any]) -> bool:
    """Give `path` back as it was before install if `updated` (the settings without Ledger's
    hooks) is what it was, read the same way; True when done. The record goes either way: it is stale after."""
    record = before_record(path)
    try:
        state = json.loads(record.read_text(encoding="utf-8"))
        record.unlink()
    except (OSError, ValueError):
        return False
    text = state.get("text")
    try:
        before = json.loads(text or "{}") if isinstance(text, str) or text is None else None
    except ValueError:
        before = None
    if state.get("path") != str(path.absolute()) or not isinstance(before, dict) or uninstalled(before) != updated:
        return False
    if text is None:
        path.unlink(missing_ok=True)
        for folder in state.get("created_dirs", []):
            try:
                os.rmdir(folder)
            except OSError:
                break  # not empty any more: the user put something there
    else:
        write_text_atomically(path, text)
    return True


def run(args: argparse.Namespace) -> int:
    transport = getattr(args, "transport", "command")
    reuse_answer = getattr(args, "reuse_answer", "verbatim")
    if reuse_answer not in HOOKED[args.agent].reuse_answers:
        # Hooks that silently answered verbatim would look like the mode asked for.
        raise UsageError(f"--reuse-answer {reuse_answer} is available for {', '.join(BY_REFERENCE)} only: "
                         f"{args.agent}'s plugin does not track the model's context, so its hooks answer a "
                         "Reuse verbatim (leave the option out)")
    paths = [settings_path(args.agent, args.user, args.root, transport)]
    if args.action == "uninstall":  # wherever either transport put them
        paths = sorted({settings_path(args.agent, args.user, args.root, t) for t in TRANSPORTS})
    for path in paths:
        status = _update(args, transport, path)
        if status:
            return status
    return 0


def _update(args: argparse.Namespace, transport: str, path: pathlib.Path) -> int:
    try:
        settings = read_settings(path)
    except SettingsError as error:
        print(f"ledger hooks: {error}", file=sys.stderr)
        return EXIT_USAGE
    http: HttpTarget | None = None
    reuse_answer = getattr(args, "reuse_answer", "verbatim")
    if args.action == "install" and transport == "service":
        command = client_command(args.agent, args.state_dir, reuse_answer)
        if HOOKED[args.agent].http_events:
            layout = Layout.of(args.state_dir)
            http = HttpTarget(layout.hook_url(args.agent, reuse_answer), layout.secret())
        updated = installed(settings, command, args.agent, http)
    elif args.action == "install":
        updated = installed(settings, hook_command(args.agent, args.state_dir, reuse_answer), args.agent)
    else:
        updated = uninstalled(settings)
    if updated == settings:
        if args.action == "install" or path.exists():
            print(f"ledger hooks: {path} already {'has' if args.action == 'install' else 'lacks'} Ledger's hooks")
        return 0
    if not updated and not path.exists():
        return 0
    if args.action == "install":
        remember_before(path)
    elif restore_before(path, updated):
        print(f"ledger hooks: uninstalled Ledger's hooks; {path} is back as it was before install"
              + ("" if path.exists() else " (absent)"))
        return 0
    write_settings(path, updated, private=http is not None)
    print(f"ledger hooks: {args.action}ed Ledger's hooks in {path}")
    return 0
