"""Cache-aware cost (paper Eq. 4, App. E): four token classes, each with its own price.

A model call's usage has uncached input, cache reads, cache writes and output tokens; the
price of each class is separate because they differ by an order of magnitude (a cache read
costs about a tenth of uncached input). A task's cost is its agent's cost plus the cost of
every controller call it triggered: the tool judge before it, the trace judge and redirect
writer during it, and the proposer after it. Nothing is discounted by moving it into a
controller call, which is the point of charging them to the same record.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Iterable, Literal

import attrs

CallKind = Literal["proposer", "tool_judge", "trace_judge", "redirect_writer"]


def _count(instance: object, attribute: attrs.Attribute, value: int) -> None:
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise ValueError(f"{attribute.name} must be a non-negative token count, got {value!r}")


@attrs.frozen
class Usage:
    uncached_input: int = attrs.field(default=0, validator=_count)
    cache_read: int = attrs.field(default=0, validator=_count)
    cache_write: int = attrs.field(default=0, validator=_count)
    output: int = attrs.field(default=0, validator=_count)

    def __add__(self, other: "Usage") -> "Usage":
        return Usage(
            self.uncached_input + other.uncached_input,
            self.cache_read + other.cache_read,
            self.cache_write + other.cache_write,
            self.output + other.output,
        )


@attrs.frozen
class Prices:
    """USD per million tokens of each class."""

    uncached_input: Fraction = attrs.field(converter=Fraction)
    cache_read: Fraction = attrs.field(converter=Fraction)
    cache_write: Fraction = attrs.field(converter=Fraction)
    output: Fraction = attrs.field(converter=Fraction)


NO_USAGE = Usage()
MILLION = 1_000_000


def cost(usage: Usage, prices: Prices) -> Fraction:
    return (
        usage.uncached_input * prices.uncached_input
        + usage.cache_read * prices.cache_read
        + usage.cache_write * prices.cache_write
        + usage.output * prices.output
    ) / MILLION


@attrs.frozen
class ControllerCall:
    kind: CallKind
    usage: Usage = NO_USAGE


def task_cost(agent: Usage, calls: Iterable[ControllerCall], prices: Prices) -> Fraction:
    """A task's cost: the agent's usage and every controller call the task triggered."""
    return cost(agent, prices) + sum((cost(call.usage, prices) for call in calls), Fraction(0))
