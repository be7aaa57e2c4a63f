"""The model's context, as far as an agent's hooks can see it: which results it still holds.

A Reuse can be answered by *reference* ("unchanged since step N, the result you received
then") instead of the stored output, which saves the tokens of sending it again. That is only
sound while the earlier result is still in the model's context, which a hook cannot read: it
can only follow the events that remove content from it. This module is that bookkeeping.

- A *delivery* is a result that reached the model: the output of ledger step N, in *epoch* E,
  in full or cut by the agent (Claude Code keeps only a preview of a long Bash output).
- An *epoch* is a stretch of one conversation in which nothing left the context. A new epoch
  starts whenever content may have left it: a compaction, a `/clear`, a resume, a new
  session, or a conversation owned by someone else (another session id, a subagent).
- The answer rule: a Reuse of step N is answered by reference only if the newest delivery of
  N is full and in the current epoch, and the call comes from the context's owner. Anything
  else is answered verbatim, and a verbatim answer is itself a delivery of N (full if the
  agent did not cut it). A reference answer delivers nothing.

`ledger_spec.z3_context` proves over symbolic event sequences that a reference is only ever
served for a result delivered in full in the current epoch.
"""

from __future__ import annotations

from typing import Literal

import attrs

#: Deliveries kept; the oldest is forgotten first, which only costs a reference.
MAX_DELIVERIES = 512

Answer = Literal["reference", "verbatim"]


@attrs.frozen
class Delivery:
    """The output of ledger step `step` reached the model in epoch `epoch`, cut or not."""

    step: int
    epoch: int
    full: bool


@attrs.frozen
class Context:
    """What a hook knows of one model context. `owner` names the conversation it belongs to
    (None: none seen yet); `deliveries` holds the newest delivery of each step, oldest first."""

    owner: str | None = None
    epoch: int = 0
    deliveries: tuple[Delivery, ...] = ()

    def delivered(self, step: int) -> Delivery | None:
        return next((delivery for delivery in reversed(self.deliveries) if delivery.step == step), None)


INITIAL_CONTEXT = Context()


def begin_epoch(context: Context, owner: str | None) -> Context:
    """Content may have left the model's context (compaction, clear, resume, a new session):
    no earlier delivery counts any more."""
    return attrs.evolve(context, owner=owner, epoch=context.epoch + 1)


def attend(context: Context, owner: str | None) -> Context:
    """A hook call from `owner`: a conversation other than the context's starts a new epoch
    (its model never saw what the other one was sent)."""
    return context if owner is not None and owner == context.owner else begin_epoch(context, owner)


def deliver(context: Context, step: int, *, full: bool) -> Context:
    """The output of `step` reached the model in the current epoch; `full`: not cut."""
    kept = tuple(delivery for delivery in context.deliveries if delivery.step != step)
    kept = (*kept, Delivery(step, context.epoch, full))[-MAX_DELIVERIES:]
    return attrs.evolve(context, deliveries=kept)


def may_reference(context: Context, owner: str | None, step: int) -> bool:
    """The answer rule: the newest delivery of `step` is full and in the current epoch, and the
    call comes from the context's owner."""
    delivery = context.delivered(step)
    return (
        owner is not None
        and owner == context.owner
        and delivery is not None
        and delivery.full
        and delivery.epoch == context.epoch
    )


def answer(context: Context, owner: str | None, step: int, *, verbatim_full: bool) -> tuple[Answer, Context]:
    """Answer a Reuse of `step`'s output for `owner`: by reference when the rule allows it, else
    verbatim, which delivers the output again (`verbatim_full`: the agent will not cut it)."""
    context = attend(context, owner)
    if may_reference(context, owner, step):
        return "reference", context
    return "verbatim", deliver(context, step, full=verbatim_full)
