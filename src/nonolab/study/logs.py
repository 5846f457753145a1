"""Parse study log lines (NDJSON) into validated event records.

Every line of a participant log is one JSON object with an ISO-8601 UTC time ``t`` (with a
timezone) and a ``type``. Handling is table-driven: :data:`EVENT_SPECS` maps each known type to
its *role* and its fields. A simulator that writes logs must follow this table.

================================  ===========  =================================================
type                              role         fields (required unless marked ``?``)
================================  ===========  =================================================
``session_start_three``           session      ``queue`` (list of puzzle ids), ``schedule_idx``?
``session_end``                   session      (none); its ``t`` is the completion time, so it
                                               may precede the post-survey line
``survey_submit``                 survey       ``survey_type`` (``pre``, ``puzzle_K``, ``post``),
                                               ``puzzle_idx``? (0-based or null), ``answers``
``move``                          interaction  ``r``, ``c``, ``value`` (1 filled, -1 crossed,
                                               0 cleared)
``drag``                          interaction  ``mode`` (``flip``/``cross``/``cross_toggle``),
                                               ``start``/``end``/``normalized_start``/
                                               ``normalized_end`` (``{r, c}``),
                                               ``changed_cells`` (rectangle size)
``hint``                          interaction  ``r``, ``c`` (the revealed cell)
``check_bank``                    interaction  ``puzzle_id``, ``solved`` (bool), ``mismatches``
                                               (list)
``undo``                          interaction  ``label``?, ``diffs_len``?
``reset``                         interaction  (none)
``skip_puzzle``                   interaction  ``idx``?, ``puzzle_id``
``puzzle_advanced``               interaction  ``from_idx``?, ``to_idx``?, ``puzzle_id`` (the
                                               *next* puzzle)
``hint_none``                     marker       (none): hint refused (rate-limited)
``completed_all_three``           marker       (none): all puzzles solved
``ended_without_full_completion`` marker       ``solved_flags``, ``skipped_flags``?
================================  ===========  =================================================

Roles: ``session`` and ``survey`` events are not interaction; ``interaction`` events are player
actions; ``marker`` events are platform notices that the published analysis nevertheless
counted as interaction (it excluded only session and survey events). :data:`IGNORED_TYPES` lists
types that are read and counted but not used (none in the public study). Any other type is an
unknown type: the line is ledgered and counted, not used.

:func:`parse_line` raises :class:`LogLineError` (a ``ValueError``) naming the file and line for
anything it cannot use; it raises nothing else.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from nonolab.core.strict import STRICT_DECODER, DuplicateKeyError, normalise_id, unique_pairs

ROLES = ("session", "survey", "interaction", "marker")
DRAG_MODES = ("flip", "cross", "cross_toggle")
MOVE_VALUES = (-1, 0, 1)


class LogLineError(ValueError):
    """A log line cannot be used; ``source`` is ``file:line``, ``reason`` says why."""

    def __init__(self, source: str, reason: str):
        super().__init__(f"{source}: {reason}")
        self.source = source
        self.reason = reason


class UnknownEventType(LogLineError):
    """A well-formed line whose ``type`` is not in :data:`EVENT_SPECS`."""


#: integers a table column can hold (``Int64``); a logged integer outside is refused
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1


def _int(v: Any) -> int:
    if isinstance(v, bool) or not isinstance(v, int):
        raise TypeError(f"expected an integer, got {v!r}")
    if not INT64_MIN <= v <= INT64_MAX:
        raise TypeError(f"integer {v} is outside the 64-bit range")
    return v


def _nonneg_int(v: Any) -> int:
    v = _int(v)
    if v < 0:
        raise TypeError(f"expected a non-negative integer, got {v}")
    return v


def _opt_int(v: Any) -> int | None:
    return None if v is None else _int(v)


def _bool(v: Any) -> bool:
    if not isinstance(v, bool):
        raise TypeError(f"expected true/false, got {v!r}")
    return v


def _str(v: Any) -> str:
    if not isinstance(v, str):
        raise TypeError(f"expected a string, got {v!r}")
    return v


def _cell(v: Any) -> tuple[int, int]:
    if not isinstance(v, dict) or "r" not in v or "c" not in v:
        raise TypeError(f"expected a cell {{r, c}}, got {v!r}")
    return (_nonneg_int(v["r"]), _nonneg_int(v["c"]))


def _move_value(v: Any) -> int:
    v = _int(v)
    if v not in MOVE_VALUES:
        raise TypeError(f"move value must be 1, -1 or 0, got {v}")
    return v


def _mode(v: Any) -> str:
    if v not in DRAG_MODES:
        raise TypeError(f"drag mode must be one of {DRAG_MODES}, got {v!r}")
    return v


def _puzzle_id(v: Any) -> str:
    """Return a puzzle id as text: an integer (``3`` -> ``"3"``) or a non-empty string in
    Unicode normal form C; ``true``, ``3.0``, ``null``, lists and objects are refused."""
    if isinstance(v, str):
        if not v:
            raise TypeError("expected a puzzle id, got an empty string")
        return normalise_id(v)
    if isinstance(v, bool) or not isinstance(v, int):
        raise TypeError(f"expected a puzzle id (an integer or a non-empty string), got {v!r}")
    return str(_int(v))


def _id_list(v: Any) -> list[str]:
    if not isinstance(v, list):
        raise TypeError(f"expected a list of puzzle ids, got {v!r}")
    return [_puzzle_id(x) for x in v]


def _bool_list(v: Any) -> list[bool | None]:
    if not isinstance(v, list) or any(x is not None and not isinstance(x, bool) for x in v):
        raise TypeError(f"expected a list of true/false, got {v!r}")
    return list(v)


def _list(v: Any) -> list[Any]:
    if not isinstance(v, list):
        raise TypeError(f"expected a list, got {v!r}")
    return v


def _dict(v: Any) -> dict[str, Any]:
    if not isinstance(v, dict):
        raise TypeError(f"expected an object, got {v!r}")
    return v


def _survey_type(v: Any) -> str:
    v = _str(v)
    if v in ("pre", "post"):
        return v
    if v.startswith("puzzle_") and v[7:].isdigit() and int(v[7:]) >= 1:
        return v
    raise TypeError(f"survey_type must be pre, post or puzzle_K (K >= 1), got {v!r}")


Validator = Callable[[Any], Any]


@dataclass(frozen=True)
class EventSpec:
    """How one event type is read: its role, required and optional fields with validators."""

    role: str
    required: Mapping[str, Validator]
    optional: Mapping[str, Validator]
    doc: str = ""


EVENT_SPECS: dict[str, EventSpec] = {
    "session_start_three": EventSpec(
        "session", {"queue": _id_list}, {"schedule_idx": _opt_int}, "session start"
    ),
    "session_end": EventSpec("session", {}, {}, "session end (completion time)"),
    "survey_submit": EventSpec(
        "survey",
        {"survey_type": _survey_type, "answers": _dict},
        {"puzzle_idx": _opt_int},
        "survey submission",
    ),
    "move": EventSpec(
        "interaction",
        {"r": _nonneg_int, "c": _nonneg_int, "value": _move_value},
        {},
        "one cell set",
    ),
    "drag": EventSpec(
        "interaction",
        {
            "mode": _mode,
            "normalized_start": _cell,
            "normalized_end": _cell,
            "changed_cells": _nonneg_int,
        },
        {"start": _cell, "end": _cell},
        "rectangle of cells set by one gesture",
    ),
    "hint": EventSpec("interaction", {"r": _nonneg_int, "c": _nonneg_int}, {}, "hint"),
    "check_bank": EventSpec(
        "interaction",
        {"puzzle_id": _puzzle_id, "solved": _bool, "mismatches": _list},
        {},
        "board checked",
    ),
    "undo": EventSpec("interaction", {}, {"label": _str, "diffs_len": _opt_int}, "undo"),
    "reset": EventSpec("interaction", {}, {}, "board cleared"),
    "skip_puzzle": EventSpec(
        "interaction", {"puzzle_id": _puzzle_id}, {"idx": _opt_int}, "puzzle skipped"
    ),
    "puzzle_advanced": EventSpec(
        "interaction",
        {"puzzle_id": _puzzle_id},
        {"from_idx": _opt_int, "to_idx": _opt_int},
        "moved on to the next puzzle (puzzle_id = next puzzle)",
    ),
    "hint_none": EventSpec("marker", {}, {}, "hint refused"),
    "completed_all_three": EventSpec("marker", {}, {}, "all puzzles solved"),
    "ended_without_full_completion": EventSpec(
        "marker",
        {"solved_flags": _bool_list},
        {"skipped_flags": _bool_list},
        "session ended with unsolved puzzles",
    ),
}

#: Types read and counted but deliberately not used (none in the public study).
IGNORED_TYPES: frozenset[str] = frozenset()


@dataclass(frozen=True)
class Event:
    """One parsed log line: ``type``, UTC time ``t``, role and validated fields."""

    type: str
    t: datetime
    role: str
    fields: dict[str, Any]
    line_no: int
    raw: str
    #: what was changed to make the line usable (lone surrogates replaced), else None
    note: str | None = None


_object_new = object.__new__
_object_setattr = object.__setattr__


def _event(
    typ: str, t: datetime, role: str, fields: dict[str, Any], line_no: int, raw: str
) -> Event:
    """Return ``Event(typ, t, role, fields, line_no, raw)`` without the frozen dataclass's
    per-field ``__setattr__`` calls (the same object: equal, same attributes and repr)."""
    e = _object_new(Event)
    _object_setattr(
        e,
        "__dict__",
        {"type": typ, "t": t, "role": role, "fields": fields, "line_no": line_no, "raw": raw},
    )
    return e


def parse_time(value: Any) -> datetime:
    """Return the aware UTC datetime of an ISO-8601 string; raise ``ValueError`` otherwise."""
    if not isinstance(value, str):
        raise ValueError(f"t must be an ISO-8601 string, got {value!r}")
    try:
        dt = datetime.fromisoformat(value)
    except ValueError:
        raise ValueError(f"t is not an ISO-8601 time: {value!r}") from None
    if dt.tzinfo is None:
        raise ValueError(f"t has no time zone: {value!r}")
    return dt.astimezone(UTC)


def parse_line(text: str | bytes, source: str = "<log>", line_no: int = 0) -> Event:
    """Return the :class:`Event` of one log line.

    Raises :class:`LogLineError` (``source:line`` and a reason) for non-UTF-8 bytes, non-JSON
    text, a non-object, a missing/invalid ``t`` or ``type``, or a field that fails its
    validator; :class:`UnknownEventType` for a type not in :data:`EVENT_SPECS`.
    """
    where = f"{source}:{line_no}"
    if isinstance(text, bytes):
        try:
            text = text.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise LogLineError(where, f"not UTF-8 ({exc.reason} at byte {exc.start})") from None
    stripped = text.strip().removeprefix("\ufeff")  # a UTF-8 byte-order mark is not content
    if not stripped:
        raise LogLineError(where, "empty line")
    try:
        obj = _loads(stripped)
    except DuplicateKeyError as exc:
        raise LogLineError(where, f"{exc} (which value is meant is unknown)") from None
    except (json.JSONDecodeError, ValueError, RecursionError) as exc:
        raise LogLineError(where, f"not a JSON object ({exc})") from None
    if not isinstance(obj, dict):
        raise LogLineError(where, f"not a JSON object (a {type(obj).__name__})")
    note = None
    if ("\\u" in stripped or not stripped.isascii()) and _SURROGATE_HINT.search(stripped):
        obj, where_fixed = _replace_surrogates(obj)
        if where_fixed:
            note = (
                "lone UTF-16 surrogate(s) in "
                + ", ".join(where_fixed[:5])
                + " replaced by U+FFFD; line kept"
            )
    typ = obj.get("type")
    if not isinstance(typ, str) or not typ:
        raise LogLineError(where, "missing or non-string 'type'")
    if "t" not in obj:
        raise LogLineError(where, f"{typ} event has no time 't'")
    try:
        t = parse_time(obj["t"])
    except (ValueError, OverflowError) as exc:
        raise LogLineError(where, str(exc)) from None
    if note is not None:
        return _with_note(_parse_fields(obj, typ, t, where, line_no, stripped), note)
    return _parse_fields(obj, typ, t, where, line_no, stripped)


def _with_note(e: Event, note: str) -> Event:
    return Event(e.type, e.t, e.role, e.fields, e.line_no, e.raw, note)


def _parse_fields(
    obj: dict[str, Any], typ: str, t: datetime, where: str, line_no: int, stripped: str
) -> Event:
    """Return the event of a parsed line object (its ``type`` and time already checked)."""
    if typ == "move":  # fast path for the commonest line; anything unusual is checked below
        r, c, v = obj.get("r"), obj.get("c"), obj.get("value")
        if type(r) is int and type(c) is int and type(v) is int and r >= 0 and c >= 0:
            if v == 1 or v == 0 or v == -1:
                return _event(
                    typ, t, "interaction", {"r": r, "c": c, "value": v}, line_no, stripped
                )
    spec = EVENT_SPECS.get(typ)
    if spec is None:
        if typ in IGNORED_TYPES:
            return Event(typ, t, "ignored", {}, line_no, stripped)
        raise UnknownEventType(where, f"unknown event type {typ!r}")
    fields: dict[str, Any] = {}
    for name, check in spec.required.items():
        if name not in obj:
            raise LogLineError(where, f"{typ} event lacks field {name!r}")
        try:
            fields[name] = check(obj[name])
        except (TypeError, ValueError) as exc:
            raise LogLineError(where, f"{typ} field {name!r}: {exc}") from None
    for name, check in spec.optional.items():
        if name in obj:
            try:
                fields[name] = check(obj[name])
            except (TypeError, ValueError) as exc:
                raise LogLineError(where, f"{typ} field {name!r}: {exc}") from None
    return _event(typ, t, spec.role, fields, line_no, stripped)


#: a lone surrogate may be in a line: as a ``\\udXXX`` escape, or as a character of a str line
_SURROGATE_HINT = re.compile(r"\\u[dD][89a-fA-F]|[\ud800-\udfff]")
_SURROGATE = re.compile(r"[\ud800-\udfff]")


def _replace_surrogates(obj: Any, path: str = "") -> tuple[Any, list[str]]:
    """Return ``obj`` with every lone UTF-16 surrogate in its strings (keys too) replaced by
    U+FFFD, and the paths (``answers.comments``) of the strings changed. Such a string cannot
    be written as UTF-8 (CSV, Parquet); JSON escapes of a valid pair decode to one character
    and are not changed."""
    if isinstance(obj, str):
        return (
            (_SURROGATE.sub("\ufffd", obj), [path or "(value)"])
            if _SURROGATE.search(obj)
            else (obj, [])
        )
    changed: list[str] = []
    if isinstance(obj, list):
        out_list = []
        for i, v in enumerate(obj):
            v2, ch = _replace_surrogates(v, f"{path}[{i}]")
            out_list.append(v2)
            changed += ch
        return out_list, changed
    if isinstance(obj, dict):
        out_dict = {}
        for k, v in obj.items():
            k2 = _SURROGATE.sub("\ufffd", k)
            sub = f"{path}.{k2}" if path else k2
            if k2 != k:
                changed.append(f"key {sub}")
            v2, ch = _replace_surrogates(v, sub)
            out_dict[k2] = v2
            changed += ch
        return out_dict, changed
    return obj, changed


def _reject_constant(name: str) -> float:
    if name in ("NaN", "Infinity", "-Infinity"):
        raise ValueError(f"non-standard JSON constant {name}")
    return math.nan  # pragma: no cover


_DECODER = STRICT_DECODER


def _loads(text: str) -> Any:
    """``json.loads(text, parse_constant=_reject_constant)`` for a stripped line, without its
    per-call decoder set-up: one shared decoder's ``raw_decode``; anything it does not accept
    whole (an error, trailing data, a byte-order mark) goes through ``json.loads`` itself, so
    the error messages are the same."""
    if not text.startswith("\ufeff"):
        try:
            obj, end = _DECODER.raw_decode(text)
        except DuplicateKeyError:
            raise
        except (json.JSONDecodeError, ValueError, RecursionError):
            pass
        else:
            if end == len(text):
                return obj
    return json.loads(text, parse_constant=_reject_constant, object_pairs_hook=unique_pairs)


class LogFileError(ValueError):
    """A log file that is not read at all (compressed, or text in an encoding that does not
    decode); ``reason`` says why (one file-level ledger row, no lines)."""

    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason


#: leading bytes of compressed and archive formats (a log must be decompressed first; nonolab
#: does not decompress: a compressed file is one file-level reason, not hundreds of lines)
COMPRESSED_SIGNATURES: tuple[tuple[bytes, str, str], ...] = (
    (b"\x1f\x8b", "gzip", "gunzip"),
    (b"PK\x03\x04", "zip", "unzip"),
    (b"PK\x05\x06", "zip (empty archive)", "unzip"),
    (b"PK\x07\x08", "zip", "unzip"),
    (b"BZh", "bzip2", "bunzip2"),
    (b"\xfd7zXZ\x00", "xz", "unxz"),
    (b"\x28\xb5\x2f\xfd", "zstd", "unzstd"),
    (b"7z\xbc\xaf\x27\x1c", "7-Zip", "7z x"),
    (b"\x04\x22\x4d\x18", "lz4", "unlz4"),
)
#: byte-order marks of encodings other than UTF-8 (UTF-32 first: its LE mark starts as
#: UTF-16's); a UTF-8 mark is tolerated on any line (:func:`parse_line`)
_BOMS: tuple[tuple[bytes, str], ...] = (
    (b"\xff\xfe\x00\x00", "utf-32-le"),
    (b"\x00\x00\xfe\xff", "utf-32-be"),
    (b"\xff\xfe", "utf-16-le"),
    (b"\xfe\xff", "utf-16-be"),
)
#: bytes sampled to recognise UTF-16/32 text without a byte-order mark
_SNIFF = 4096


def _nul_pattern(data: bytes) -> str | None:
    """Return the encoding of ``data`` when it is UTF-32 or UTF-16 text without a byte-order
    mark, else None. A log starts with ``{``: its position among the leading white space and
    NUL bytes, and the NUL bytes around it, give the encoding (``{`` then a NUL: UTF-16 LE; a
    NUL then ``{``: UTF-16 BE; three NULs: UTF-32), and at least a fifth of the first bytes are
    NUL (the keys of every JSON line are ASCII). UTF-8 text has no NUL bytes: a stray one is a
    bad line, not an encoding."""
    head = data[:_SNIFF]
    p = head.find(b"{")
    if p < 0 or head.count(0) < len(head) // 5 or head[:p].strip(b" \t\r\n\x00"):
        return None
    after, before = head[p + 1 : p + 4], head[max(0, p - 3) : p]
    if p % 4 == 0 and after == b"\x00\x00\x00":
        return "utf-32-le"
    if p % 4 == 3 and before == b"\x00\x00\x00":
        return "utf-32-be"
    if p % 2 == 0 and after[:1] == b"\x00":
        return "utf-16-le"
    if p % 2 == 1 and before[-1:] == b"\x00":
        return "utf-16-be"
    return None


def _cr_lines(data: bytes) -> bool:
    """Return True when ``data`` (with no line feed) is lines ended by carriage returns alone:
    at least two lines, each after the first starting with a JSON object (a carriage return
    inside a line is JSON white space, not a line end)."""
    parts = [p.strip() for p in data.split(b"\r")]
    parts = [p for p in parts[1:] if p]
    return bool(parts) and all(p.startswith(b"{") for p in parts)


def decode_log_bytes(data: bytes) -> tuple[bytes, str | None]:
    """Return ``(utf8, note)``: the bytes of a log file as UTF-8 text with ``\\n`` line ends, and
    a note for the ledger when they were not already so (None otherwise).

    * A compressed file (:data:`COMPRESSED_SIGNATURES`) raises :class:`LogFileError`.
    * UTF-16 or UTF-32 text, with a byte-order mark or recognised by its NUL bytes
      (:func:`_nul_pattern`), is decoded (note: the encoding and how it was recognised); text
      that does not decode in that encoding raises :class:`LogFileError`.
    * Old Mac line ends (carriage returns and no line feed at all, each line after the first
      starting with ``{``: :func:`_cr_lines`) are split at each carriage return (note). CRLF and a UTF-8 byte-order mark are tolerated as they are (no note).
    """
    for magic, kind, tool in COMPRESSED_SIGNATURES:
        if data.startswith(magic):
            raise LogFileError(
                f"not read: a {kind}-compressed file (it starts with the {kind} signature "
                f"{magic.hex(' ')}); decompress it ({tool}) and keep the log as text"
            )
    notes: list[str] = []
    enc = how = None
    for bom, name in _BOMS:
        if data.startswith(bom):
            enc, how = name, f"byte-order mark {bom.hex(' ')}"
            data = data[len(bom) :]
            break
    else:
        enc = _nul_pattern(data)
        how = "no byte-order mark; recognised by its NUL bytes"
    if enc is not None:
        label = enc.upper().replace("-LE", " LE").replace("-BE", " BE")
        try:
            text = data.decode(enc)
        except UnicodeDecodeError as exc:
            raise LogFileError(
                f"not read: looks like {label} ({how}) but is not valid {label} at byte "
                f"{exc.start} ({exc.reason}); re-save the log as UTF-8"
            ) from None
        data = text.encode("utf-8")
        notes.append(
            f"read as {label} ({how}); the platform writes UTF-8: the file was re-saved in "
            "another encoding (line numbers are those of the file)"
        )
    if b"\n" not in data and _cr_lines(data):
        data = data.replace(b"\r", b"\n")
        notes.append("old Mac line ends (CR only, no LF): lines split at each CR")
    return data, ("; ".join(notes) or None)


def read_log_lines(path: str, source: str) -> tuple[list[Event], list[LogLineError], int]:
    """Return (events, errors, lines_read) for every non-blank line of the file at ``path``.

    Lines are split on ``\\n`` (CRLF tolerated); bytes are decoded per line, so one bad line
    does not lose the rest. A last line without a newline that fails to parse is reported as
    truncated. The bytes are read as they are (:func:`read_log_file` first recognises
    compressed files, other encodings and old Mac line ends).
    """
    with open(path, "rb") as fh:
        data = fh.read()
    return parse_log_bytes(data, source)


def read_log_file(
    path: str, source: str
) -> tuple[list[Event], list[LogLineError], int, str | None]:
    """Return (events, errors, lines_read, note) of the log file at ``path``: the file's bytes
    through :func:`decode_log_bytes` (``note`` says what was done to them, None when nothing),
    then :func:`parse_log_bytes`. Raises :class:`LogFileError` for a file that is not read
    (compressed, or not decodable in the encoding it is in) and ``OSError`` when it cannot be
    read."""
    with open(path, "rb") as fh:
        data = fh.read()
    data, note = decode_log_bytes(data)
    return (*parse_log_bytes(data, source), note)


def parse_log_bytes(data: bytes, source: str) -> tuple[list[Event], list[LogLineError], int]:
    """Return (events, errors, lines_read) of a log file's bytes (:func:`read_log_lines`)."""
    lines = data.split(b"\n")
    ends_with_newline = data.endswith(b"\n")
    events: list[Event] = []
    errors: list[LogLineError] = []
    n = 0
    for i, raw in enumerate(lines, start=1):
        if not raw.strip():
            continue
        n += 1
        try:
            events.append(parse_line(raw, source, i))
        except LogLineError as exc:
            if i == len(lines) and not ends_with_newline and not isinstance(exc, UnknownEventType):
                exc = LogLineError(exc.source, f"truncated last line ({exc.reason})")
            errors.append(exc)
    return events, errors, n
