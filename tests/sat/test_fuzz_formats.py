"""Fuzz every puzzle parser: on any text it returns puzzles or raises FormatError/PuzzleError.

Two kinds of input: arbitrary text over an alphabet rich in the formats' own symbols, and valid
files with random edits (character substitutions, deletions, insertions, line duplications).
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from nonolab.sat.formats import (
    FormatError,
    parse_cwd,
    parse_g,
    parse_grid,
    parse_lp,
    parse_mk,
    parse_nin,
    parse_non,
    parse_nonpack,
    parse_pynogram,
    parse_rows_blank_cols,
    parse_spoj,
    parse_taai,
    parse_taai_solutions,
    parse_text,
    parse_toml,
    sniff_txt,
)
from nonolab.sat.puzzles import Puzzle, PuzzleError

PARSERS = {
    "non": parse_non,
    "nonpack": parse_nonpack,
    "nin": parse_nin,
    "mk": parse_mk,
    "g": parse_g,
    "cwd": parse_cwd,
    "lp": parse_lp,
    "toml": parse_toml,
    "pynogram": parse_pynogram,
    "taai": lambda t, s: parse_taai(t, s, size=3),
    "taai_solutions": lambda t, s: list(parse_taai_solutions(t, s, size=3).values()),
    "spoj": parse_spoj,
    "rows_blank_cols": parse_rows_blank_cols,
    "grid": parse_grid,
    "txt": lambda t, s: parse_text(t, "txt", s),
}

SEEDS = {
    "non": 'width 3\nheight 2\nrows\n2\n2\ncolumns\n1\n2\n1\ngoal "110011"\n',
    "nonpack": "width 1\nheight 1\nrows\n1\ncolumns\n1\n====\nwidth 1\nheight 1\nrows\n0\ncolumns\n0\n",
    "nin": "3 2\n2\n2\n1\n2\n1\n",
    "mk": "2 3\n2\n2\n#\n1\n2\n1\n",
    "g": "c\n:\n2\n2\n:\n1\n2\n1\n:\n",
    "cwd": "2\n3\n2\n2\n\n1\n2\n1\n",
    "lp": "#const w = 1.\n#const h = 1.\nrow_hint(1, 1, 1).\ncol_hint(1, 1, 1).\n",
    "toml": '[clues]\ncolumns = "1, 2, 1"\nrows = """\n2\n2 # c\n"""\n',
    "pynogram": "[clues]\ncolumns =\n  1\n  2\n  1\nrows = 2, 2\n",
    "taai": "$1\n1\n1\n1\n1\t1\n\n1\n$2\n\n\n\n\n\n\n",
    "taai_solutions": "$1\n1\t0\t1\n0\t0\t0\n1\t1\t1\n",
    "spoj": "1\n2 3\n2 0\n2 0\n1 0\n2 0\n1 0\n",
    "rows_blank_cols": "2\n2\n\n1\n2\n1\n",
    "grid": "##.\n.##\n",
    "txt": "[clues]\ncolumns = 1, 1\nrows = 1 ; c\n  1\n",
}

ALPHABET = st.sampled_from(
    list("0123456789 \t\n\r,;#:$.\"'=[]%()-_")
    + ["rows", "columns", "width ", "height ", "goal "]
    + ["[clues]", "[colors]", "row_hint(", "col_hint(", "#const w = ", "====", "\u00e9", "\u0663"]
)
texts = st.lists(ALPHABET, max_size=80).map("".join) | st.text(max_size=120)


def _check(result):
    items = result if isinstance(result, list) else [result]
    for x in items:
        assert isinstance(x, Puzzle | tuple)


def _mutate(text: str, edits: list[tuple[int, int, str]]) -> str:
    s = list(text)
    for kind, pos, ch in edits:
        if not s:
            s = [ch]
            continue
        i = pos % len(s)
        if kind == 0:
            s[i] = ch
        elif kind == 1:
            del s[i]
        elif kind == 2:
            s.insert(i, ch)
        else:  # duplicate the line around i
            joined = "".join(s)
            a = joined.rfind("\n", 0, i) + 1
            b = joined.find("\n", i)
            b = len(joined) if b < 0 else b + 1
            s = list(joined[:b] + joined[a:b] + joined[b:])
    return "".join(s)


edits = st.lists(
    st.tuples(st.integers(0, 3), st.integers(0, 10_000), st.sampled_from(list("0123\n ,#:$\t9x"))),
    min_size=1,
    max_size=6,
)


@pytest.mark.parametrize("name", sorted(PARSERS))
def test_seed_parses(name):
    _check(PARSERS[name](SEEDS[name], f"seed.{name}"))


@pytest.mark.parametrize("name", sorted(PARSERS))
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=texts)
def test_fuzz_random_text(name, text):
    try:
        _check(PARSERS[name](text, f"fuzz.{name}"))
    except (FormatError, PuzzleError) as exc:
        assert f"fuzz.{name}" in str(exc)


@pytest.mark.parametrize("name", sorted(PARSERS))
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ed=edits)
def test_fuzz_mutated_files(name, ed):
    text = _mutate(SEEDS[name], ed)
    try:
        _check(PARSERS[name](text, f"fuzz.{name}"))
    except (FormatError, PuzzleError) as exc:
        assert f"fuzz.{name}" in str(exc)


@settings(max_examples=200, deadline=None)
@given(text=texts)
def test_sniff_never_fails(text):
    assert sniff_txt(text) in {
        "taai",
        "taai_solution",
        "pynogram",
        "spoj",
        "grid",
        "rows_blank_cols",
    }
