"""Hostile values drawn from the request contract's own schema (workflow/schemas/request.schema.yaml).

:func:`event_mutations` walks the schema's ``event`` definition and, for every field, yields
values outside its bounds (out-of-range and 64-bit integers, non-finite numbers written as
``1e999``, NUL and lone surrogates, over-long text, wrong JSON types, deep nesting, extra keys)
as JSON *text* (so that what ``json.dumps`` cannot write, such as ``1e999``, is sent as a client
would). A new field or bound in the schema gives new cases here without a test change.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from nonolab.collect.contract import limits, schema

# a valid event of each kind, in the page's format (seq and t are added by the sender)
BASE: dict[str, dict[str, Any]] = {
    "move": {"kind": "move", "r": 0, "c": 0, "value": 1},
    "drag": {"kind": "drag", "mode": "flip", "start": {"r": 0, "c": 0}, "end": {"r": 1, "c": 1}},
    "step": {"kind": "step", "from": "consent"},
    "survey": {"kind": "survey", "survey_type": "pre", "answers": {"played_before": "few"}},
    "undo": {"kind": "undo"},
}
# which base event carries each field
CARRIER = {"r": "move", "c": "move", "value": "move", "mode": "drag", "start": "drag",
           "end": "drag", "from": "step", "survey_type": "survey", "answers": "survey",
           "kind": "undo", "seq": "undo", "t": "undo"}  # fmt: skip


def _resolve(sub: dict[str, Any]) -> dict[str, Any]:
    while "$ref" in sub:
        sub = schema()["$defs"][sub["$ref"].rsplit("/", 1)[1]]
    return sub


def deep(n: int) -> str:
    """JSON text of a list nested ``n`` levels deep."""
    return "[" * n + "]" * n


def bad_values(sub: dict[str, Any]) -> Iterator[tuple[str, str]]:
    """Yield ``(label, JSON text)`` values that schema ``sub`` refuses."""
    sub = _resolve(sub)
    depth = int(limits()["max_depth"])
    typ = sub.get("type")
    if "enum" in sub:
        yield "not-in-enum", json.dumps("zz-not-an-option")
        yield "enum-wrong-type", "[]"
        if not any(isinstance(v, int) for v in sub["enum"]):
            yield "enum-number", "999"
        else:
            yield "enum-int-out", str(max(v for v in sub["enum"] if isinstance(v, int)) + 1)
    if typ in ("integer", "number"):
        lo, hi = sub.get("minimum"), sub.get("maximum")
        if lo is not None:
            yield "below-minimum", repr(lo - 1)
        if hi is not None:
            yield "above-maximum", repr(hi + 1)
        yield "int64", str(2**63)
        yield "beyond-int64", str(2**64 + 1)
        yield "huge-negative", str(-(2**63) - 1)
        yield "non-finite", "1e999"
        yield "negative-non-finite", "-1e999"
        yield "text-for-number", json.dumps("12")
        yield "bool-for-number", "true"
        yield "null-for-number", "null"
        if typ == "integer":
            yield "fraction", "1.5"
    if typ == "string":
        yield "too-long", json.dumps("x" * (sub.get("maxLength", 100) + 1))
        yield "nul", json.dumps("a\x00b")
        yield "lone-surrogate", '"a\\ud800b"'
        yield "number-for-text", "7"
        yield "object-for-text", "{}"
    if typ == "object":
        yield "list-for-object", "[]"
        yield "text-for-object", json.dumps("x")
        yield "extra-key", json.dumps({"zz_extra": 1}) if "properties" in sub else "[]"
        yield "deep", deep(depth + 1)
        props = sub.get("properties", {})
        for name, psub in props.items():
            for label, text in bad_values(psub):
                yield f"{name}.{label}", "{" + f"{json.dumps(name)}: {text}" + "}"
        if "additionalProperties" in sub and isinstance(sub["additionalProperties"], dict):
            yield "bad-key", json.dumps({"not a key!": 1})
            yield "nul-key", '{"a\\u0000": 1}'
            yield "surrogate-key", '{"a\\udfff": 1}'
            yield "value-int64", '{"k": ' + str(2**63) + "}"
            yield "value-non-finite", '{"k": 1e999}'
            yield "value-nul", '{"k": "\\u0000"}'
            yield "value-deep", '{"k": ' + deep(depth) + "}"
            yield "too-many-keys", json.dumps({f"k{i}": 1 for i in range(sub["maxProperties"] + 1)})


def event_text(ev: dict[str, Any], field: str | None = None, value: str | None = None) -> str:
    """JSON text of event ``ev`` with ``field`` set to the JSON text ``value``."""
    parts = [f"{json.dumps(k)}: {json.dumps(v)}" for k, v in ev.items() if k != field]
    if field is not None:
        parts.append(f"{json.dumps(field)}: {value}")
    return "{" + ", ".join(parts) + "}"


def event_mutations() -> list[tuple[str, str, str]]:
    """Return ``(case id, field, JSON text of the bad value)`` for every field of the schema's
    event definition, plus an unknown top-level key."""
    out = []
    for name, sub in schema()["$defs"]["event"]["properties"].items():
        for label, text in bad_values(sub):
            out.append((f"{name}:{label}", name, text))
    out.append(("extra-field", "zz_unknown", "1"))
    out.append(("deep-extra", "zz_unknown", deep(int(limits()["max_depth"]) + 1)))
    return out


def mutated_event(case: tuple[str, str, str], seq: int, t: float) -> str:
    """JSON text of the event of ``case`` with number ``seq`` at client time ``t``."""
    _, field, value = case
    base = {**BASE[CARRIER.get(field, "undo")], "seq": seq, "t": t}
    return event_text(base, field, value)
