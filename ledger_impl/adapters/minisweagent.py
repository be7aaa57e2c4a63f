"""LedgerEnvironment: any mini-swe-agent environment, with Ledger governing every command.

In a mini-swe-agent YAML config (see `examples/mini_ledger.yaml`):

    environment:
      environment_class: ledger_impl.adapters.minisweagent.LedgerEnvironment
      inner_environment_class: local      # or docker, singularity, a dotted class path, ...
      cwd: /path/to/repo                  # every other key configures the inner environment

- With a local inner environment, commands run through the `Runtime` itself (bash in the
  inner environment's `cwd`, the default detector), with the inner environment's timeout.
- With any other inner environment, commands go through `Runtime.step(command, run=...)`,
  executed by the inner environment, and changes are detected through that same channel
  (`ChannelDetector`: one `find -printf` listing per step; nothing of Ledger in the container).
  The classifier cannot see the container's tree, so it names files lexically; a symbolic link
  could then make two names one file, so while the tree holds any link (or no `.git` at its
  root), commands are governed without reusable targets: nothing is reused, nothing is stale.
- The submit command (`COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT`) goes straight to the inner
  environment, so its `Submitted` exception propagates; if it returns instead, whatever it
  did is recorded as a change of unknown scope.
- Each observation carries the verdict and note: `output["ledger_verdict"]`,
  `output["ledger_note"]` (always present, "" when there is none, so templates under
  StrictUndefined never fail), the note as a first line of the output when there is one, and
  `extra.ledger` in the trajectory. Templates see the inform view as `ledger_view`.
"""

from __future__ import annotations

import os
import shlex
import shutil
import stat
import tempfile
from typing import Any

import attrs

from minisweagent.environments import get_environment_class

from ledger_spec import Changes, Command, Policy

from ..classifier import classify
from ..detectors import default_detector
from ..detectors.channel import ChannelDetector
from ..runtime import Runtime, Step

SUBMIT_MARKER = "COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"
LOCAL_CLASSES = {"local", "minisweagent.environments.local.LocalEnvironment"}


class _ChannelRuntime(Runtime):
    """A Runtime whose workspace is behind a channel: commands are classified against the
    channel's root, lexically, and without targets while the tree could alias names."""

    def __init__(self, channel_root: str, detector: ChannelDetector, policy: Policy | None, timeout: float) -> None:
        self._placeholder = tempfile.mkdtemp(prefix="ledger-channel-")  # Runtime wants a local root
        # No local probe can rerun a command that runs behind the channel: Reuse here rests on the
        # channel detector and the fingerprint, as before the probe (an open gap, docs/safety/probe.md).
        super().__init__(self._placeholder, detector, policy, timeout=timeout, probe=False)
        self.channel_root = channel_root
        self.channel = detector

    def classify(self, command: str) -> Command:
        classified = classify(command, cwd=".", root=self.channel_root)
        if classified.target is not None and not self._lexical_names_are_sound():
            return attrs.evolve(classified, target=None)
        return classified

    def _lexical_names_are_sound(self) -> bool:
        snapshot = self.channel.last_snapshot
        if snapshot is None:
            return False
        git = snapshot.entries.get(".git")
        if git is None or git.sig[0] != stat.S_IFDIR:
            return False
        return not any(entry.sig[0] == stat.S_IFLNK for entry in snapshot.entries.values())

    def close(self) -> None:
        super().close()
        shutil.rmtree(self._placeholder, ignore_errors=True)


class LedgerEnvironment:
    """Wraps the environment named by `inner_environment_class`; see the module docstring."""

    def __init__(
        self,
        *,
        inner_environment_class: str | type = "local",
        ledger_policy: dict[str, Any] | None = None,
        ledger_task: str = "",
        **inner_settings: Any,
    ) -> None:
        if isinstance(inner_environment_class, str):
            self.inner_class_name = inner_environment_class
            inner_class = get_environment_class(inner_environment_class)
        else:  # a class, from Python rather than YAML
            inner_class = inner_environment_class
            self.inner_class_name = f"{inner_class.__module__}.{inner_class.__qualname__}"
        self.inner = inner_class(**inner_settings)
        self.policy = Policy(**ledger_policy) if ledger_policy else Policy()
        self.task = ledger_task
        config = getattr(self.inner, "config", None)
        timeout = float(getattr(config, "timeout", 0) or 120)
        workspace = str(getattr(config, "cwd", "") or "")
        self.local = self.inner_class_name in LOCAL_CLASSES
        if self.local:
            self.workspace = workspace or os.getcwd()
            self.runtime: Runtime = Runtime(self.workspace, default_detector(), self.policy, task=self.task, timeout=timeout)
        else:
            if not workspace:
                raise ValueError("a non-local inner environment needs `cwd`: the workspace as the environment sees it")
            self.workspace = workspace
            detector = ChannelDetector(self._run_inner, workspace)
            detector.before(None, "")  # the first listing: the first command is classified on it
            self.runtime = _ChannelRuntime(workspace, detector, self.policy, timeout)

    # --- the mini-swe-agent Environment protocol ----------------------------------------------

    def execute(self, action: dict, cwd: str = "", *, timeout: int | None = None) -> dict[str, Any]:
        command = action.get("command", "")
        if SUBMIT_MARKER in command:
            result = self.inner.execute(action, cwd, timeout=timeout)  # Submitted propagates
            self.runtime.ledger.modify(Changes(unknown=True))
            return result
        if cwd and os.path.normpath(cwd) != os.path.normpath(self.workspace):
            command = f"cd {shlex.quote(cwd)} && {command}"
        step = self.runtime.step(command) if self.local else self.runtime.step(command, run=self._run_inner)
        return self._observation(step)

    def get_template_vars(self, **kwargs: Any) -> dict[str, Any]:
        return self.inner.get_template_vars(**kwargs) | {"ledger_view": self.runtime.view()}

    def serialize(self) -> dict:
        data = self.inner.serialize()
        info = data.setdefault("info", {}).setdefault("config", {})
        info["environment_type"] = f"{type(self).__module__}.{type(self).__name__}"
        info["inner_environment_type"] = self.inner_class_name
        return data

    def close(self) -> None:
        self.runtime.close()

    def __getattr__(self, name: str) -> Any:
        # Anything else an agent or run script asks of the environment (config, cleanup, ...).
        if name == "inner":
            raise AttributeError(name)
        return getattr(self.inner, name)

    # --- internals ----------------------------------------------------------------------------

    def _run_inner(self, command: str) -> tuple[str, int]:
        result = self.inner.execute({"command": command}, self.workspace)
        return str(result.get("output", "")), int(result.get("returncode", -1))

    def _observation(self, step: Step) -> dict[str, Any]:
        note = step.note or ""
        output = f"[ledger] {note}\n{step.output}" if note else step.output
        return {
            "output": output,
            "returncode": step.exit_code,
            "exception_info": "",
            "ledger_verdict": step.verdict,
            "ledger_note": note,
            "extra": {
                "ledger": {
                    "verdict": step.verdict,
                    "note": note,
                    "step": step.index,
                    "raw_output": step.output,
                    "detector_error": step.detector_error,
                }
            },
        }
