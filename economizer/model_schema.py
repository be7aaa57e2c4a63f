"""The JSON answer each model call must give, and a strict check of an answer against it.

The schemas are written in a small subset of JSON Schema (type, properties, required,
additionalProperties false, items, maxItems, enum, minimum/maximum, minLength/maxLength,
anyOf), so they can be shown to the model verbatim in the prompt and checked here without a
dependency. Anything the check does not accept makes the call a failed call: the controller
never acts on an answer it had to guess at.
"""

from __future__ import annotations

import json
from typing import Any, Mapping

_TYPES: Mapping[str, tuple[type, ...]] = {
    "object": (dict,), "array": (list,), "string": (str,), "boolean": (bool,), "number": (int, float), "integer": (int,),
}


def schema_error(value: Any, schema: Mapping[str, Any], where: str = "answer") -> str | None:
    """Why `value` does not satisfy `schema`, or None when it does."""
    if "anyOf" in schema:
        errors = [schema_error(value, option, where) for option in schema["anyOf"]]
        return None if any(e is None for e in errors) else f"{where}: matches none of the allowed shapes ({errors[0]})"
    kind = schema.get("type")
    if kind is not None:
        wanted = _TYPES[kind]
        if not isinstance(value, wanted) or (isinstance(value, bool) and kind in ("number", "integer")):
            return f"{where}: expected {kind}, got {type(value).__name__}"
    if "enum" in schema and value not in schema["enum"]:
        return f"{where}: {value!r} is not one of {schema['enum']}"
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        if "minimum" in schema and value < schema["minimum"]:
            return f"{where}: {value} < {schema['minimum']}"
        if "maximum" in schema and value > schema["maximum"]:
            return f"{where}: {value} > {schema['maximum']}"
    if isinstance(value, str):
        if len(value) < schema.get("minLength", 0):
            return f"{where}: shorter than {schema['minLength']} characters"
        if "maxLength" in schema and len(value) > schema["maxLength"]:
            return f"{where}: longer than {schema['maxLength']} characters"
    if isinstance(value, list):
        if "maxItems" in schema and len(value) > schema["maxItems"]:
            return f"{where}: more than {schema['maxItems']} items"
        for number, item in enumerate(value):
            error = schema_error(item, schema.get("items", {}), f"{where}[{number}]")
            if error:
                return error
    if isinstance(value, dict):
        properties = schema.get("properties", {})
        for key in schema.get("required", ()):
            if key not in value:
                return f"{where}: missing {key!r}"
        for key, item in value.items():
            if key in properties:
                error = schema_error(item, properties[key], f"{where}.{key}")
                if error:
                    return error
            elif schema.get("additionalProperties") is False:
                return f"{where}: unexpected field {key!r}"
            elif isinstance(schema.get("additionalProperties"), dict):
                error = schema_error(item, schema["additionalProperties"], f"{where}.{key}")
                if error:
                    return error
    return None


def parse_answer(text: str, schema: Mapping[str, Any]) -> tuple[Any, str | None]:
    """(the JSON value, None) or (None, why it is refused). One JSON object, optionally in a
    ```json fence (models add one however they are asked); nothing else around it."""
    body = text.strip()
    if body.startswith("```"):
        body = body.split("\n", 1)[1] if "\n" in body else ""
        if body.rstrip().endswith("```"):
            body = body.rstrip()[:-3]
    try:
        value = json.loads(body)
    except json.JSONDecodeError as error:
        return None, f"not JSON ({error.msg} at character {error.pos})"
    error = schema_error(value, schema)
    return (value, None) if error is None else (None, error)


_DETECTOR = {
    "anyOf": [
        {"type": "string", "minLength": 1, "maxLength": 300},
        {"type": "object", "properties": {"regex": {"type": "string", "minLength": 1, "maxLength": 300},
                                          "target": {"enum": ["commands", "outputs", "all"]}},
         "required": ["regex"], "additionalProperties": False},
        {"type": "object", "properties": {"builtin": {"type": "string"}}, "required": ["builtin"], "additionalProperties": False},
        {"type": "object", "properties": {"command": {"type": "string", "minLength": 1, "maxLength": 300},
                                          "exit_zero": {"type": "boolean"}, "output": {"type": "string", "maxLength": 300}},
         "required": ["command"], "additionalProperties": False},
    ]
}

PROPOSER = {
    "type": "object",
    "properties": {
        "skills": {
            "type": "array",
            "maxItems": 8,
            "items": {
                "type": "object",
                "properties": {
                    "id": {"type": "string", "minLength": 1, "maxLength": 60},
                    "claim": {"type": "string", "maxLength": 300},
                    "injection": {"type": "string", "minLength": 1, "maxLength": 200},
                    "detector": {
                        "type": "object",
                        "properties": {"scope": _DETECTOR, "confirm": _DETECTOR, "contradict": _DETECTOR, "need": _DETECTOR},
                        "required": ["scope", "confirm"],
                        "additionalProperties": False,
                    },
                    "high_stakes": {"type": "boolean"},
                    "cite": {"type": "array", "maxItems": 8, "items": {"type": "string"}},
                },
                "required": ["id", "injection", "detector", "cite"],
                "additionalProperties": False,
            },
        }
    },
    "required": ["skills"],
    "additionalProperties": False,
}

TOOL_JUDGE = {
    "type": "object",
    "properties": {"load": {"type": "array", "items": {"type": "string"}}, "drop": {"type": "array", "items": {"type": "string"}}},
    "required": ["load", "drop"],
    "additionalProperties": False,
}

TRACE_JUDGE = {
    "type": "object",
    "properties": {
        "stuck": {"type": "boolean"},
        "confidence": {"type": "number", "minimum": 0, "maximum": 1},
        "reason": {"type": "string", "maxLength": 400},
    },
    "required": ["stuck", "confidence", "reason"],
    "additionalProperties": False,
}

REDIRECT_WRITER = {
    "type": "object",
    "properties": {"redirect": {"type": "string", "minLength": 20, "maxLength": 800}},
    "required": ["redirect"],
    "additionalProperties": False,
}
