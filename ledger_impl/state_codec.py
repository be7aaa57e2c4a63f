"""The spec-level values a session stores, as JSON: no pickle, so stored state means what the
format says it means, not whatever the code that wrote it happened to be.

Every value the session journal holds is built from a closed set of types: JSON's own (None,
bool, int, float, str), tuples, frozensets, bytes, the enums and the frozen attrs classes listed
in `CLASSES`. Each non-JSON value is an object with one key naming its kind:

  {"t": [...]}                 a tuple                {"s": [...]}   a frozenset (sorted by encoding)
  {"b": "<hex>"}               bytes                  {"e": ["Category", "read_only"]}   an enum member
  {"a": ["Command", {...}]}    an attrs instance: its class name and its init fields, encoded
  {"r": 3}                     the fourth value of the document's `shared` list (see `dumps`)

Lists and dicts are not used by the stored values, and are refused, as is any other type: a
value that cannot be written exactly is an error, never a lossy guess. Decoding builds the
classes again through their own constructors, so their validators check what is read.
A renamed or reshaped class is a new format (`ledger_impl.store.FORMAT`) and needs a migration.
"""

from __future__ import annotations

import enum
import json
from typing import Any, Final

import attrs

from ledger_spec import context, values
from ledger_spec.errors import UnreadableState
from ledger_spec.policy import Policy
from ledger_spec.state import State

from ledger_spec import dependencies

from .fingerprint import Fingerprint
from .probe.dependencies import OutsideDependency
from .probe.guard import TracedFingerprint, TracedRecord

CLASSES: Final[dict[str, type]] = {
    cls.__name__: cls
    for cls in (
        values.LineRange, values.FileTarget, values.TreeTarget, values.Command, values.Changes,
        values.Observation, values.Pending, values.Modification, values.Allow, values.Reuse,
        values.Nudge, values.CommandRecord, State, Fingerprint, Policy,
        # format 4: an observation's fingerprint names its probe; a confirmed probe's record;
        # the model's context (what was delivered in which epoch)
        TracedFingerprint, TracedRecord, dependencies.Dependencies, dependencies.Counters, OutsideDependency,
        context.Context, context.Delivery,
    )
}
ENUMS: Final[dict[str, type[enum.Enum]]] = {cls.__name__: cls for cls in (values.Category, values.Verdict)}
# The init fields of each class, looked up once: a session's state holds thousands of values.
_FIELDS: Final[dict[type, tuple[str, ...]]] = {
    cls: tuple(field.name for field in attrs.fields(cls) if field.init) for cls in CLASSES.values()
}


class CodecError(UnreadableState, ValueError):
    """A value outside the stored types, or stored text that is not a valid encoding."""


def dumps(value: object) -> str:
    """`value` as compact JSON text: `{"shared": [...], "value": ...}`, where each command or
    fingerprint in `value` (a command is in the observations and again in the history) is
    written once in `shared` and named elsewhere by its index, `{"r": i}`."""
    shared: dict[object, int] = {}
    written: list[object] = []
    tree = encode(value, shared, written)
    return json.dumps({"shared": written, "value": tree}, separators=(",", ":"), ensure_ascii=False)


def loads(text: str | bytes) -> Any:
    """The value `dumps` wrote."""
    try:
        document = json.loads(text)
    except (ValueError, UnicodeDecodeError) as error:
        raise CodecError(f"not JSON: {error}") from None
    if not isinstance(document, dict) or set(document) != {"shared", "value"} or not isinstance(document["shared"], list):
        raise CodecError("not a stored value: expected an object with 'shared' and 'value'")
    shared: list[object] = []
    for item in document["shared"]:
        shared.append(decode(item, shared))  # each may name only those written before it
    return decode(document["value"], shared)


# Values written once and named by index: commands repeat across a session's logs, and so do
# fingerprints (an observation's, its probe's record's), each of which holds the environment
# and the identities of programs and paths. Sharing fingerprints made a 610-step session's
# state 2.8 times smaller, and its encoding and decoding three to four times faster.
_SHARED: Final = (values.Command, Fingerprint)


def encode(value: object, shared: dict[object, int] | None = None, written: list[object] | None = None) -> object:
    cls = type(value)
    if cls is str or cls is int or value is None or cls is bool or cls is float:
        return value
    if shared is not None and written is not None and cls in _SHARED:
        index = shared.get(value)
        if index is None:
            tree = _encode_fields(value, cls, shared, written)
            index = shared[value] = len(written)
            written.append(tree)
        return {"r": index}
    if cls in _FIELDS:
        return _encode_fields(value, cls, shared, written)
    return _encode_other(value, shared, written)


def _encode_fields(value: object, cls: type, shared: dict[object, int] | None, written: list[object] | None) -> object:
    return {"a": [cls.__name__, {name: encode(getattr(value, name), shared, written) for name in _FIELDS[cls]}]}


def _encode_other(value: object, shared: dict[object, int] | None, written: list[object] | None) -> object:
    if isinstance(value, tuple):
        return {"t": [encode(item, shared, written) for item in value]}
    if isinstance(value, frozenset):
        items = [encode(item, shared, written) for item in value]
        return {"s": sorted(items, key=lambda item: json.dumps(item, sort_keys=True))}
    if isinstance(value, bytes):
        return {"b": value.hex()}
    if isinstance(value, enum.Enum) and ENUMS.get(type(value).__name__) is type(value):
        return {"e": [type(value).__name__, value.name]}
    cls = type(value)
    raise CodecError(f"cannot store a {cls.__module__}.{cls.__qualname__}")


def decode(tree: object, shared: list[object] | None = None) -> Any:
    cls = type(tree)
    if cls is str or cls is int or tree is None or cls is bool or cls is float:
        return tree
    if not isinstance(tree, dict) or len(tree) != 1:
        raise CodecError(f"not an encoded value: {str(tree)[:80]}")
    ((kind, body),) = tree.items()
    try:
        if kind == "t":
            return tuple(decode(item, shared) for item in _list(body))
        if kind == "s":
            return frozenset(decode(item, shared) for item in _list(body))
        if kind == "r":
            if shared is None or not isinstance(body, int) or isinstance(body, bool) or not 0 <= body < len(shared):
                raise CodecError(f"no shared value {body!r} written before")
            return shared[body]
        if kind == "b":
            return bytes.fromhex(body)
        if kind == "e":
            name, member = _list(body)
            return ENUMS[name][member]
        if kind == "a":
            name, fields = _list(body)
            if not isinstance(fields, dict):
                raise CodecError(f"fields of {name} are not an object")
            return CLASSES[name](**{key: decode(item, shared) for key, item in fields.items()})
    except (KeyError, TypeError, ValueError) as error:
        if isinstance(error, CodecError):
            raise
        raise CodecError(f"cannot decode {kind!r}: {error!r}") from None
    raise CodecError(f"unknown kind {kind!r}")


def _list(body: object) -> list[Any]:
    if not isinstance(body, list):
        raise CodecError(f"expected a list, got {type(body).__name__}")
    return body
