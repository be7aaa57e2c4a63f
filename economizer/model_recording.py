"""Every model call of a run written to a file, and the run replayed from it offline.

`Recorder(client, path, prices)` appends one JSON line per call: the model, the call kind,
the request (system prompt, user message, token limit), the reply (text or error, attempts),
the four token counts and the cost at `prices` (null without prices). `Replayer(path)`
answers the same calls in the same order from the file, with no key and no network, and
refuses (`ReplayDiverged`) a call whose model, kind or request differs from the recorded
one: a replay that would have asked something else is not the recorded run. Since the
controller is a function of its inputs and its model answers, the same stream replayed
gives the same decisions, call for call.
"""

from __future__ import annotations

import json
import pathlib
from typing import IO, Any

import attrs

from economizer_spec.cost import Prices, Usage, cost

from .model_client import ModelClient, Reply, Request
from ledger_spec.errors import InvalidInput


class ReplayDiverged(InvalidInput, ValueError):
    """The replayed run asked for a call the recording does not have next."""


def _request_json(model: str, request: Request) -> dict[str, Any]:
    return {"model": model, **attrs.asdict(request)}


class Recorder:
    def __init__(self, client: ModelClient, path: pathlib.Path, prices: Prices | None = None) -> None:
        self.client = client
        self.model = client.model
        self.prices = prices
        self._file: IO[str] = path.open("w", encoding="utf-8")  # one recording per run

    def complete(self, request: Request) -> Reply:
        reply = self.client.complete(request)
        line = {
            "request": _request_json(self.model, request),
            "reply": {"text": reply.text, "error": reply.error, "attempts": reply.attempts},
            "usage": attrs.asdict(reply.usage),
            "cost_usd": float(cost(reply.usage, self.prices)) if self.prices is not None else None,
        }
        self._file.write(json.dumps(line, sort_keys=True) + "\n")
        self._file.flush()
        return reply

    def close(self) -> None:
        self._file.close()
        self.client.close()


class Replayer:
    def __init__(self, path: pathlib.Path) -> None:
        try:
            lines = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
            raise ReplayDiverged(f"cannot read the recording {path}: {error}") from None
        self.path = path
        self._lines = lines
        self._next = 0
        self.model = lines[0]["request"]["model"] if lines else "replay"

    def complete(self, request: Request) -> Reply:
        if self._next >= len(self._lines):
            raise ReplayDiverged(f"{self.path}: the run made more calls than the {len(self._lines)} recorded ({request.kind})")
        line = self._lines[self._next]
        wanted = _request_json(line["request"]["model"], request)
        if line["request"] != wanted:
            differing = sorted(k for k in wanted if line["request"].get(k) != wanted[k])
            raise ReplayDiverged(f"{self.path}: call {self._next + 1} ({request.kind}) differs from the recording in {', '.join(differing)}")
        self._next += 1
        reply = line["reply"]
        return Reply(reply["text"], Usage(**line["usage"]), reply["error"], reply["attempts"])

    def close(self) -> None:
        if self._next != len(self._lines):
            raise ReplayDiverged(f"{self.path}: the run made {self._next} of the {len(self._lines)} recorded calls")
