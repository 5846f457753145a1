"""Codebook entries and example answers (nonolab.study.codebook) on a hand-written codebook."""

from __future__ import annotations

import pytest

from nonolab.study.codebook import (
    code_examples,
    codebook_entries,
    codebook_examples,
    truncate_quote,
)

BOOK = """# Codebook

## Difficulty themes (applied to `rating_reason`)

| Code | Theme | Definition |
|---|---|---|
| `FOOT` | Starting footholds | Lines solvable at once. |
| `VIS` | Visual layout | Spatial cues. |

## Strategy taxonomy

| Code | Strategy | Definition |
|---|---|---|
| `S_NEG` | Negative marking | Cross out cells. |
"""


def test_codebook_entries(tmp_path):
    p = tmp_path / "codebook.md"
    p.write_text(BOOK)
    got = codebook_entries(p)
    assert [(e["category"], e["code"], e["name"]) for e in got] == [
        ("Difficulty", "FOOT", "Starting footholds"),
        ("Difficulty", "VIS", "Visual layout"),
        ("Strategy", "S_NEG", "Negative marking"),
    ]
    assert got[2]["definition"] == "Cross out cells."


def test_truncate_quote_cuts_at_a_word_boundary():
    assert truncate_quote("  a  b\nc ") == "a b c"
    assert truncate_quote("one two three", 9) == "one two\u2026"
    assert truncate_quote("one two three", 7) == "one two\u2026"  # the cut falls on a space
    assert truncate_quote("abcdefgh", 3) == "abc\u2026"


RESPONSES = [
    ("R3", ["FOOT"], "long single-code answer"),
    ("R1", ["FOOT", "VIS"], "short"),
    ("R2", ["FOOT"], "short one"),
    ("R4", ["VIS"], "tiny"),
    ("R5", ["VIS"], "a better one"),
]


def test_code_examples_prefers_single_code_then_short_then_id():
    got = code_examples(RESPONSES)
    assert got["FOOT"] == ("R2", "short one")  # single-code beats the shorter multi-code R1
    assert got["VIS"] == ("R4", "tiny")
    assert code_examples(RESPONSES, {"VIS": "R5"})["VIS"] == ("R5", "a better one")
    with pytest.raises(ValueError, match="not coded 'VIS' alone"):
        code_examples(RESPONSES, {"VIS": "R1"})


def test_codebook_examples_rows(tmp_path):
    p = tmp_path / "codebook.md"
    p.write_text(BOOK)
    rows = codebook_examples(p, RESPONSES, max_chars=5)
    assert [r["response_id"] for r in rows] == ["R2", "R4", ""]
    assert rows[0]["example"] == "short\u2026" and rows[2]["example"] == ""
