"""The report reads like the lab's: JSON records as readable tables (not a key/value dump),
model tables that lead with the inference rule's df and p, and no section without content."""

from __future__ import annotations

import json
import math
import re

from hypothesis import given, settings
from hypothesis import strategies as st
from report_study import Page

from nonolab.report.html import display_columns, format_cell, humanise, json_record_html

KEYS = st.text("abcdefgh_", min_size=1, max_size=8).filter(lambda k: k.strip("_"))
SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-1000, 1000),
    st.floats(allow_nan=True, allow_infinity=True, width=32),
    st.text("abc xyz<>&\"'", max_size=80),
)
JSON = st.recursive(
    SCALARS,
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(KEYS, inner, max_size=5)),
    max_leaves=25,
)


def leaves(obj, depth=0):
    """Yield the scalars of a record down to the depth the renderer unfolds."""
    if isinstance(obj, dict):
        for v in obj.values():
            yield from leaves(v, depth + 1)
    elif isinstance(obj, list):
        for v in obj:
            yield from leaves(v, depth + 1)
    else:
        yield obj


@settings(max_examples=60, deadline=None, derandomize=True)
@given(st.dictionaries(KEYS, JSON, min_size=1, max_size=8))
def test_any_json_record_is_shown_whole_and_escaped(record):
    out = json_record_html(record, "rec")
    page = Page(f"<div>{out}</div>")  # parses: every tag closed, no markup from the data
    assert not [t for t, _ in page.tags if t in ("script", "img")]
    shown = " ".join(page.texts)
    assert not re.search(r"\b(None|nan|NaN)\b", shown), shown
    for v in leaves(record):
        if isinstance(v, str) and v.strip():
            assert " ".join(v.split()) in " ".join(shown.split()), (v, shown)
        elif isinstance(v, float) and math.isfinite(v) and not isinstance(v, bool):
            want = format_cell(repr(v))[0]
            assert want in shown or repr(v) in shown, (v, want, shown)


def test_a_threshold_record_is_tables_not_a_dump():
    rec = {
        "threshold_used_s": 2.5,
        "threshold_source": "fitted",
        "n_gaps": 664,
        "means_s": [0.01, 0.9, 8.1],
        "weights": [0.1, 0.6, 0.3],
        "bic": {"1": 2480.0, "2": 2401.0, "3": 2324.0},
        "delta_bic_vs_1": {"2": 79.2, "3": 156.5},
        "chain": "a converged 3-component fit; its crossing lies between the two slowest means",
        "converged_fit": {"converged": True, "means_s": [0.01, 0.9, 8.1]},
    }
    out = json_record_html(rec, "t")
    page = Page(out)
    rows = out.count("<tr>")
    # facts (3 + header), one row per component (3 + header), one per number of components
    # (3 + header), the nested fit's facts and components: far fewer rows than a dump's keys
    assert rows <= 4 + 4 + 4 + 2 + 4, rows
    assert "threshold used (s)" in page.texts
    assert "chain:" in page.texts and "converged fit" in page.texts
    # the BIC and its improvement share one table keyed by number of components
    assert re.search(r"<th>bic</th><th>delta bic vs 1</th>", out)


def test_model_tables_lead_with_the_inference_rule():
    cols = ["metric", "coef", "se", "z", "p", "p_fdr", "ci_low", "df_satt", "p_satt", "p_satt_fdr"]
    order, heads = display_columns(cols)
    assert heads[:6] == ["metric", "coef", "se", "df_satt", "p_satt", "p_satt_fdr"]
    assert "p (Wald z)" in heads and "p" not in heads
    assert sorted(order) == list(range(len(cols)))
    plain = ["a", "p", "z"]
    assert display_columns(plain) == ([0, 1, 2], plain)


def test_humanise_units():
    assert humanise("threshold_used_s") == "threshold used (s)"
    assert humanise("n_gaps") == "n gaps"


def test_the_pause_stage_sentences_are_shown_as_sentences(tmp_path):
    """A record's list of sentences (threshold.json ``threshold_sentences``, the pause stage's
    threshold chain) is a list of sentences on the page and leads the pause headline."""
    from nonolab.report import headline

    said = [
        "Pauses are gaps longer than 2.41 s (the crossing of the two slowest components of a "
        "2-component log-normal mixture).",
        "Earlier steps of the threshold chain gave none: the 3-component fit did not cross.",
    ]
    rec = {"threshold_used_s": 2.41, "n_gaps": 480, "threshold_sentences": said}
    out = json_record_html(rec, "t")
    page = Page(out)
    assert said[0] in page.texts and said[1] in page.texts
    assert out.count("<li>") == 2
    (tmp_path / "pauses").mkdir()
    (tmp_path / "pauses" / "threshold.json").write_text(json.dumps(rec), encoding="utf-8")
    lines = headline.pause_sentences(tmp_path)
    assert lines[:2] == said
    assert "480 gaps" in lines[2]
