"""Ids that look identical but are not (invisible characters, letters of another script,
compatibility forms) are reported as letter-case twins are: a kept ledger row for two
participants, a ``validate`` warning for one id or two puzzle ids. Variants are generated."""

from __future__ import annotations

import random
import unicodedata

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from synth_study import good_session, ingest, write_study

from nonolab.cli.commands.validate import validate_study
from nonolab.core.confusables import (
    DEFAULT_IGNORABLE,
    HOMOGLYPHS,
    invisible_characters,
    is_default_ignorable,
    mixed_scripts,
    skeleton,
)
from nonolab.core.strict import lookalikes
from nonolab.study.identity import id_warnings

#: Latin letter -> the characters of other scripts drawn as it
LOOKS_LIKE: dict[str, list[str]] = {}
for _k, _v in HOMOGLYPHS.items():
    if not _k.isascii():
        LOOKS_LIKE.setdefault(_v, []).append(_k)
INVISIBLE = [
    chr(c)
    for lo, hi in DEFAULT_IGNORABLE
    for c in range(lo, min(hi, lo + 40) + 1)
    if unicodedata.category(chr(c)) != "Cn"
]
ID = st.text(alphabet="abcdefghkmnopstxyzABEHKMOPT0123456789-_", min_size=2, max_size=10)


@st.composite
def look_alike(draw) -> tuple[str, str, str]:
    """An id, a variant a reader cannot tell from it, and how it was made."""
    ident = draw(ID)
    how = draw(st.sampled_from(["invisible", "homoglyph", "fullwidth"]))
    if how == "invisible":
        i = draw(st.integers(0, len(ident)))
        variant = ident[:i] + draw(st.sampled_from(INVISIBLE)) + ident[i:]
    elif how == "homoglyph":
        spots = [i for i, ch in enumerate(ident) if ch in LOOKS_LIKE]
        assume(spots)
        i = draw(st.sampled_from(spots))
        variant = ident[:i] + draw(st.sampled_from(LOOKS_LIKE[ident[i]])) + ident[i + 1 :]
    else:
        variant = "".join(chr(ord(c) + 0xFEE0) if "!" <= c <= "~" else c for c in ident)
    assume(variant != ident)
    return ident, variant, how


@settings(max_examples=400, deadline=None)
@given(look_alike())
def test_every_generated_look_alike_is_paired(case) -> None:
    ident, variant, how = case
    assert skeleton(ident) == skeleton(variant)
    found = lookalikes([ident, variant])
    assert len(found) == 1 and found[0][:2] == (ident, variant), (case, found)
    assert found[0][2] in ("confusable", "case")
    if how == "invisible":
        assert invisible_characters(variant) and not invisible_characters(ident)


@settings(max_examples=300, deadline=None)
@given(st.lists(ID, min_size=2, max_size=6, unique_by=lambda s: skeleton(s)))
def test_ids_that_look_different_are_not_paired(ids) -> None:
    found = lookalikes(ids)
    assert all(kind != "confusable" for _, _, kind in found)


def test_numbered_ids_of_a_study_are_not_confusable() -> None:
    ids = [f"{site}-p{i}" for site in ("Bing", "Sim", "Pilot") for i in range(1, 200)]
    assert lookalikes(ids) == []
    assert not any(mixed_scripts(i) or invisible_characters(i) for i in ids)


def test_the_homoglyph_table_agrees_with_unicode_names() -> None:
    for k, v in HOMOGLYPHS.items():
        if k.isascii():
            continue
        name = unicodedata.name(k)
        assert name.split()[0] in ("CYRILLIC", "GREEK", "ARMENIAN"), name
        assert unicodedata.normalize("NFKC", k) == k  # not a compatibility form
        if "CAPITAL" in name:
            assert v.isupper() or v == "l", (name, v)  # PALOCHKA is drawn as l
        elif "SMALL" in name:
            assert v.islower(), (name, v)


def test_default_ignorable_code_points_are_drawn_as_nothing() -> None:
    for ch in "\u00ad\u200b\u200c\u200d\u2060\ufeff\u180e\u202e\ufe0f":
        assert is_default_ignorable(ch), hex(ord(ch))
    for lo, hi in DEFAULT_IGNORABLE:
        for c in range(lo, hi + 1):
            cat = unicodedata.category(chr(c))
            assert cat in ("Cf", "Mn", "Lo", "Cn", "Cc"), (hex(c), cat)
    assert not any(is_default_ignorable(ch) for ch in "aZ09-_ é")


def test_mixed_scripts() -> None:
    assert mixed_scripts("Bing-р1") == {"Latin", "Cyrillic"}  # Cyrillic er
    assert mixed_scripts("Bing-p1") == set()
    assert mixed_scripts("日本語abc") == set()  # Latin with Han: allowed by UTS #39
    assert mixed_scripts("αβγ-1") == set()


def _variants(n: int, seed: int) -> list[tuple[str, str]]:
    rng = random.Random(seed)
    out = []
    while len(out) < n:
        base = f"Anna-p{rng.randint(1, 99)}"
        how = len(out) % 3
        if how == 0:
            i = rng.randint(1, len(base) - 1)
            out.append((base, base[:i] + rng.choice(INVISIBLE) + base[i:]))
        elif how == 1:
            i = rng.choice([i for i, c in enumerate(base) if c in LOOKS_LIKE])
            out.append((base, base[:i] + rng.choice(LOOKS_LIKE[base[i]]) + base[i + 1 :]))
        else:
            out.append((base, unicodedata.normalize("NFKC", base).replace("p", "\uff50")))
    return out


@pytest.mark.parametrize(("first", "second"), _variants(3, seed=32))
def test_look_alike_participants_are_a_kept_row_and_a_warning(first, second, tmp_path) -> None:
    other = good_session()
    other[0] = {**other[0], "schedule_idx": 5}
    root = write_study(tmp_path / "s", {first: good_session(), second: other})
    res = ingest(root)
    led = res.tables["ledger"]
    row = led[led["reason"].str.contains("confusable skeleton", regex=False)]
    assert len(row) == 1 and row.iloc[0]["action"] == "kept", led.to_dict("records")
    assert row.iloc[0]["id"] == unicodedata.normalize("NFC", second)
    assert res.summary["participants"] == 2
    report = validate_study(root)
    assert not report["usable"]
    assert any("confusable" in p["reason"] for p in report["problems"])
    if invisible_characters(second):
        assert any("nobody sees" in w["reason"] and w["id"] == second
                   for w in report["warnings"])  # fmt: skip


def test_id_warnings_for_one_id_and_for_puzzle_ids() -> None:
    warnings = id_warnings(
        [("logs/a.ndjson", "Anna\u200b-p1"), ("logs/b.ndjson", "Bing-р1"), ("c", "Carl-p3")],
        ["1", "A", "a", "\u0410"],
        "puzzles.json",
    )
    by_id = {}
    for w in warnings:
        by_id.setdefault(w["id"], []).append(w["reason"])
    assert "U+200B ZERO WIDTH SPACE" in by_id["Anna\u200b-p1"][0]
    assert "mixes scripts (Cyrillic, Latin)" in by_id["Bing-р1"][0]
    assert "Carl-p3" not in by_id
    assert any("only in letter case" in r for r in by_id["a"])
    assert any("drawn alike" in r for r in by_id["\u0410"])
