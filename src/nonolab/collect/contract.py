"""The study server's request contract: one schema (``workflow/schemas/request.schema.yaml``)
judges every JSON body before anything touches the store.

:func:`parse_body` turns request bytes into JSON within the schema's ``x-limits`` (nesting
depth; every string and key valid Unicode without NUL; every number finite) or raises
:class:`ContractError` (HTTP 400); :func:`check_body` checks a parsed body against one of the
schema's body definitions (``events_body``, ``join_body``, ``links_body``); :func:`check_event`
checks one page event (the schema's ``event`` and the client-time window around the session)
and raises :class:`nonolab.collect.session.InvalidEvent`, so that a refused event is reported
with its ``seq`` while the events before it are stored.
"""

from __future__ import annotations

import json
import math
from functools import cache
from typing import Any

from nonolab.collect.session import InvalidEvent
from nonolab.core.paths import workflow_root

REQUEST_SCHEMA = workflow_root() / "workflow" / "schemas" / "request.schema.yaml"


class ContractError(ValueError):
    """A request body outside the contract: ``status`` is the HTTP status (4xx), the message
    says why."""

    def __init__(self, message: str, status: int = 400):
        super().__init__(message)
        self.status = status


@cache
def schema() -> dict[str, Any]:
    """Return the request schema (parsed YAML)."""
    import yaml

    return yaml.safe_load(REQUEST_SCHEMA.read_text(encoding="utf-8"))


def limits() -> dict[str, Any]:
    """Return the schema's ``x-limits`` (``max_depth``, ``client_time_tolerance_ms``)."""
    return schema()["x-limits"]


@cache
def _validator(name: str) -> Any:
    import jsonschema

    doc = schema()
    sub = {"$schema": doc["$schema"], "$defs": doc["$defs"], "$ref": f"#/$defs/{name}"}
    return jsonschema.Draft202012Validator(sub)


def _bad_text(s: str) -> str | None:
    if "\x00" in s:
        return "contains NUL"
    try:
        s.encode("utf-8")
    except UnicodeEncodeError:
        return "is not valid Unicode (a lone surrogate)"
    return None


def _walk(doc: Any, max_depth: int, top: str = "(top)") -> None:
    """Raise ContractError for nesting beyond ``max_depth``, a bad string or key, or a non-finite
    number anywhere in ``doc``."""
    stack: list[tuple[Any, int, str]] = [(doc, 1, top)]
    while stack:
        v, depth, where = stack.pop()
        if isinstance(v, dict | list):
            if depth > max_depth:
                raise ContractError(f"the body is nested more than {max_depth} levels deep")
            if isinstance(v, dict):
                for k, x in v.items():
                    why = _bad_text(k)
                    if why:
                        raise ContractError(f"a key at {where} {why}")
                    stack.append((x, depth + 1, f"{where}/{k}"[:200]))
            else:
                stack.extend((x, depth + 1, f"{where}/{i}"[:200]) for i, x in enumerate(v))
        elif isinstance(v, str):
            why = _bad_text(v)
            if why:
                raise ContractError(f"the text at {where} {why}")
        elif isinstance(v, float) and not math.isfinite(v):  # 1e999 parses as infinity
            raise ContractError(f"the number at {where} is not finite")


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def parse_body(body: bytes) -> Any:
    """Return the JSON of request ``body`` (an empty body is ``{}``); raise
    :class:`ContractError` (400) for bytes that are not JSON in UTF-8 (or nested beyond what the
    parser takes). The limits on its content are :func:`check_body`'s."""
    try:
        doc = json.loads(body or b"{}", parse_constant=_no_constant)
    except RecursionError:
        raise ContractError(
            f"the body is nested more than {limits()['max_depth']} levels deep"
        ) from None
    except (ValueError, UnicodeDecodeError) as e:
        raise ContractError(f"the body is not JSON (UTF-8): {str(e)[:200]}") from None
    return doc


_ARTICLE = {"integer": "an integer", "object": "an object", "array": "a list",
            "string": "text", "number": "a number", "null": "null", "boolean": "true or false"}  # fmt: skip


def _message(err: Any) -> str:
    """Return a plain message for jsonschema error ``err``: the field, then what it must be."""
    path = "/".join(str(p) for p in err.absolute_path) or "the body"
    v, kw = err.validator_value, err.validator
    if kw == "type":
        types = [v] if isinstance(v, str) else list(v)
        what = " or ".join(_ARTICLE.get(t, t) for t in types)
        return f"{path} must be {what}"
    if kw == "enum":
        return f"{path} must be one of {v}, got {_short(err.instance)}"
    if kw in ("minimum", "maximum"):
        word = "at least" if kw == "minimum" else "at most"
        return f"{path} must be {word} {v}, got {_short(err.instance)}"
    if kw in ("maxLength", "maxItems", "maxProperties"):
        unit = {"maxLength": "characters", "maxItems": "items", "maxProperties": "keys"}[kw]
        return f"{path} must have at most {v} {unit}"
    if kw == "minItems":
        return f"{path} must have at least {v} items"
    if kw == "required":
        return f"{path}: {err.message}"
    if kw in ("additionalProperties", "propertyNames"):
        return f"{path}: {err.message[:200]}"
    if kw == "anyOf":
        return f"{path} must be null, an integer, text or a list of them"
    return f"{path}: {err.message[:200]}"


def _short(v: Any) -> str:
    text = repr(v)
    return text if len(text) <= 60 else text[:57] + "..."


def _first_error(name: str, doc: Any) -> str | None:
    v = _validator(name)
    if v.is_valid(doc):
        return None
    err = min(v.iter_errors(doc), key=lambda e: (len(e.absolute_path), str(e.absolute_path)))
    return _message(err)


def check_body(name: str, doc: Any) -> dict[str, Any]:
    """Return body ``doc`` when it matches the schema's ``$defs/<name>`` and ``x-limits``
    (nesting, text, finite numbers); raise :class:`ContractError` (400) naming the field
    otherwise. The events of an ``events_body`` are judged one by one (:func:`check_event`), so
    that the events before a refused one are stored."""
    if name == "events_body" and isinstance(doc, dict):
        _walk({k: None for k in doc}, 1)
    else:
        _walk(doc, int(limits()["max_depth"]))
    msg = _first_error(name, doc)
    if msg is not None:
        raise ContractError(msg)
    return doc


def check_event(ev: Any, start_ms: float, now_ms: float) -> None:
    """Raise :class:`InvalidEvent` when page event ``ev`` is outside the contract: the schema's
    ``event`` definition, or a client time ``t`` (epoch ms) before ``start_ms`` (the session's
    creation) or after ``now_ms`` (the server clock), each beyond the schema's tolerance."""
    if not isinstance(ev, dict):
        raise InvalidEvent("an event must be an object")
    try:  # an event sits two levels deep in its body: {"events": [event]}
        _walk(ev, int(limits()["max_depth"]) - 2, "event")
    except ContractError as e:
        raise InvalidEvent(str(e).replace("the body is", "the event is")) from None
    kind = ev.get("kind")
    if kind not in schema()["$defs"]["event"]["properties"]["kind"]["enum"]:
        raise InvalidEvent(f"unknown event kind {_short(kind)}")
    t = ev.get("t")
    tol = float(limits()["client_time_tolerance_ms"])
    if isinstance(t, int | float) and not isinstance(t, bool) and math.isfinite(t):
        if t > now_ms + tol:
            raise InvalidEvent(
                f"{kind}: t is {(t - now_ms) / 1000:.0f} s ahead of the server clock "
                "(is the device's clock wrong?)"
            )
        if t < start_ms - tol:
            raise InvalidEvent(
                f"{kind}: t is {(start_ms - t) / 1000:.0f} s before the session started "
                "(is the device's clock wrong?)"
            )
    msg = _first_error("event", ev)
    if msg is not None:
        raise InvalidEvent(f"{kind}: {msg}")
