"""A log in another encoding, compressed, or with old-Mac line ends is one file-level ledger row
with its reason, never hundreds of per-line rows: every encoding x line end x compression, in
one synthetic study (one participant per case), and generated text for the recogniser."""

from __future__ import annotations

import bz2
import gzip
import io
import itertools
import json
import lzma
import os
import zipfile
from datetime import datetime, timedelta

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from synth_study import good_session, ingest, write_study

from nonolab.study.logs import (
    COMPRESSED_SIGNATURES,
    LogFileError,
    decode_log_bytes,
    parse_log_bytes,
)

#: encodings: (name in the test, codec, byte-order mark written, what the note says)
ENCODINGS = {
    "utf-8": ("utf-8", b"", None),
    "utf-8-bom": ("utf-8", b"\xef\xbb\xbf", None),
    "utf-16-le-bom": ("utf-16-le", b"\xff\xfe", "read as UTF-16 LE (byte-order mark ff fe)"),
    "utf-16-be-bom": ("utf-16-be", b"\xfe\xff", "read as UTF-16 BE (byte-order mark fe ff)"),
    "utf-16-le": ("utf-16-le", b"", "read as UTF-16 LE (no byte-order mark"),
    "utf-16-be": ("utf-16-be", b"", "read as UTF-16 BE (no byte-order mark"),
    "utf-32-le-bom": ("utf-32-le", b"\xff\xfe\x00\x00", "read as UTF-32 LE (byte-order mark"),
    "utf-32-be-bom": ("utf-32-be", b"\x00\x00\xfe\xff", "read as UTF-32 BE (byte-order mark"),
    "utf-32-le": ("utf-32-le", b"", "read as UTF-32 LE (no byte-order mark"),
}
N_GOOD = len(good_session())
LINE_ENDS = {"lf": "\n", "crlf": "\r\n", "cr": "\r"}


def _zip(data: bytes) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        z.writestr("log.ndjson", data)
    return buf.getvalue()


#: compressions: the real compressor where the standard library has one; zstd, 7-Zip and lz4
#: by their signature followed by the data (only the signature is looked at)
COMPRESSIONS = {
    "gzip": gzip.compress,
    "zip": _zip,
    "bzip2": bz2.compress,
    "xz": lzma.compress,
    "zstd": lambda d: b"\x28\xb5\x2f\xfd" + d,
    "7-Zip": lambda d: b"7z\xbc\xaf\x27\x1c" + d,
    "lz4": lambda d: b"\x04\x22\x4d\x18" + d,
}


def _session(hours: int) -> list[dict]:
    """good_session() moved ``hours`` later: another session (not a copy of another case's)."""
    out = []
    for e in good_session():
        t = datetime.fromisoformat(e["t"]) + timedelta(hours=hours)
        out.append({**e, "t": t.isoformat()})
    return out


def _text(events: list[dict], end: str) -> str:
    return "".join(json.dumps(e) + end for e in events)


def _encode(text: str, enc: str) -> bytes:
    codec, bom, _ = ENCODINGS[enc]
    return bom + text.encode(codec)


CASES = [(e, le, None) for e, le in itertools.product(ENCODINGS, LINE_ENDS)] + [
    (e, le, c)
    for e, le, c in itertools.product(("utf-8", "utf-16-le-bom"), LINE_ENDS, COMPRESSIONS)
]


def test_every_encoding_line_end_and_compression_is_one_file_row(tmp_path) -> None:
    names = {f"P{i}-{e}-{le}-{c or 'plain'}": (e, le, c) for i, (e, le, c) in enumerate(CASES)}
    sessions = {name: _session(i) for i, name in enumerate(names)}
    root = write_study(tmp_path / "study", sessions)
    for name, (enc, le, comp) in names.items():
        path = root / "backend" / "logs" / f"{name}.ndjson"
        data = _encode(_text(sessions[name], LINE_ENDS[le]), enc)
        path.write_bytes(COMPRESSIONS[comp](data) if comp else data)
    res = ingest(root)
    led = res.tables["ledger"]
    att = res.tables["attempts"]
    events = res.tables["events"]
    base = sorted(events[events["participant_id"] == "P0-utf-8-lf-plain"]["line_no"])
    assert set(base) == set(range(1, N_GOOD + 1))
    skipped = led["reason"].str.contains("value for a skipped puzzle", regex=False)
    for name, (enc, le, comp) in names.items():
        rel = f"backend/logs/{name}.ndjson"
        rows = led[led["source"].str.startswith(rel) & ~skipped]
        if comp is not None:
            assert len(rows) == 1, (name, rows.to_dict("records"))
            row = rows.iloc[0]
            assert row["level"] == "file" and row["action"] == "excluded"
            assert row["reason"].startswith(f"not read: a {comp}-compressed file"), row["reason"]
            assert name not in set(att["participant_id"])
            continue
        notes = [n for n in (ENCODINGS[enc][2], "old Mac line ends" if le == "cr" else None) if n]
        assert (rows["level"] == "file").all(), (name, rows.to_dict("records"))
        assert len(rows) == (1 if notes else 0), (name, rows.to_dict("records"))
        if notes:
            assert rows.iloc[0]["action"] == "kept"
            assert all(n in rows.iloc[0]["reason"] for n in notes), rows.iloc[0]["reason"]
        # every line used, at the line numbers of the file
        assert (att["participant_id"] == name).sum() == 3, name
        mine = events[events["participant_id"] == name]
        assert sorted(mine["line_no"]) == base, name
    s = res.summary
    assert s["events_read"] == s["events_used"] + s["events_excluded"] + s["events_ignored"]
    assert s["files_excluded"] == sum(c is not None for _, _, c in CASES)


def test_utf16_that_does_not_decode_is_one_row(tmp_path) -> None:
    text = _text(good_session(), "\n").encode("utf-16-le")
    with pytest.raises(LogFileError, match="not valid UTF-16 LE"):
        decode_log_bytes(b"\xff\xfe" + text[:100] + b"\x00\xd8" + b"a\x00" + text[100:])
    with pytest.raises(LogFileError, match="not valid UTF-16 LE"):
        decode_log_bytes(b"\xff\xfe" + text + b"{")  # an odd number of bytes


# -- the recogniser on generated text ------------------------------------------------------------

ANY_TEXT = st.text(st.characters(blacklist_categories=("Cs",)), max_size=30)


@settings(max_examples=int(os.environ.get("NONOLAB_ENCODING_EXAMPLES", 100)), deadline=None)
@given(
    st.lists(
        st.fixed_dictionaries({"type": st.just("move"), "note": ANY_TEXT}), min_size=1, max_size=6
    ),  # fmt: skip
    st.sampled_from(sorted(ENCODINGS)),
    st.sampled_from(sorted(LINE_ENDS)),
)
@example([{"type": "move", "note": "\u0100\u0100\u0100\u0180"}], "utf-32-le", "cr")
@example([{"type": "move", "note": "\u0100\u0100\u0100\u0100"}], "utf-16-be", "cr")
def test_any_text_in_any_encoding_reads_back_as_the_same_lines(objs, enc, le) -> None:
    """JSON lines holding any text (non-ASCII, NUL, CR escaped in JSON; raw line ends are not
    possible in a JSON line), written in any encoding with any line end, decode to the same
    lines; the note names the encoding exactly when it is not UTF-8."""
    lines = [json.dumps(o, ensure_ascii=False) for o in objs]
    data, note = decode_log_bytes(_encode("".join(x + LINE_ENDS[le] for x in lines), enc))
    got = [x.decode("utf-8").rstrip("\r").removeprefix("\ufeff") for x in data.split(b"\n")]
    assert [x for x in got if x.strip()] == [x for x in lines if x.strip()]
    expected = ENCODINGS[enc][2]
    assert (expected is not None and expected in (note or "")) or (
        expected is None and (note is None or note.startswith("old Mac"))
    ), note


@settings(max_examples=int(os.environ.get("NONOLAB_ENCODING_EXAMPLES", 150)), deadline=None)
@given(st.lists(st.binary(max_size=40), max_size=8))
def test_utf8_logs_with_stray_bytes_are_read_line_by_line(chunks) -> None:
    """UTF-8 lines with a few stray bytes (NUL among them: the fuzzer's corrupt_bytes) are not
    taken for another encoding: decoding leaves the bytes as they are unless they start with a
    signature, and each line is still one event or one line error."""
    data = b"\n".join(b'{"type": "move", "t": "x"}' + c.replace(b"\n", b"") for c in chunks)
    try:
        out, note = decode_log_bytes(data)
    except LogFileError:
        assert data.startswith(tuple(m for m, _, _ in COMPRESSED_SIGNATURES))
        return
    if note is not None:  # carriage returns alone before each JSON object: old Mac lines
        assert note.startswith("old Mac") and b"\n" not in data
        assert out == data.replace(b"\r", b"\n")
    else:
        assert out == data
    events, errors, n = parse_log_bytes(out, "log.ndjson")
    assert len(events) + len(errors) == n
