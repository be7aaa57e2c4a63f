"""The model's context, kept in the session's store: the epoch and the deliveries that let a
Reuse be answered by reference (`ledger_spec.context` holds the rule; this is its storage).

Every hook process is new, so the context lives in the workspace's database next to the
ledger, each change in its own `BEGIN IMMEDIATE` transaction. A stored context that cannot be
shown intact (checksum, decoding) is replaced by a new one in a new epoch: it then knows no
delivery, so every Reuse is answered verbatim until a new result is delivered. That costs
tokens, never the model's knowledge.
"""

from __future__ import annotations

from ledger_spec import context as spec
from ledger_spec.context import Answer, Context

from . import state_codec
from .store import Store, checksum


class ContextJournal:
    """The stored `Context` of one workspace, read and written one transaction per event."""

    def __init__(self, store: Store) -> None:
        self._store = store

    def begin_epoch(self, owner: str | None) -> None:
        """Content may have left the model's context (compaction, clear, resume, a new session)."""
        with self._store.transaction():
            self._store.save_context(state_codec.dumps(spec.begin_epoch(self._load(), owner)))

    def deliver(self, owner: str | None, step: int, *, full: bool) -> None:
        """The output of `step` reached `owner`'s model; `full`: the agent did not cut it."""
        with self._store.transaction():
            context = spec.deliver(spec.attend(self._load(), owner), step, full=full)
            self._store.save_context(state_codec.dumps(context))

    def answer(self, owner: str | None, step: int, *, verbatim_full: bool) -> Answer:
        """How to answer `owner`'s Reuse of `step`'s output; a verbatim answer is recorded as a
        delivery (`verbatim_full`: the agent will not cut it)."""
        with self._store.transaction():
            kind, context = spec.answer(self._load(), owner, step, verbatim_full=verbatim_full)
            self._store.save_context(state_codec.dumps(context))
        return kind

    def current(self) -> Context:
        """The stored context (read only): for checks and tools."""
        with self._store.transaction():
            return self._load()

    def _load(self) -> Context:
        row = self._store.load_context()
        if row is None:
            return spec.INITIAL_CONTEXT
        text, stored_sum = row
        try:
            context = state_codec.loads(text) if checksum(text.encode("utf-8")) == stored_sum else None
        except state_codec.CodecError:
            context = None
        if isinstance(context, Context):
            return context
        self._store.add_note("the model's context record was damaged: every Reuse is answered verbatim until a new delivery")
        return spec.begin_epoch(spec.INITIAL_CONTEXT, None)
