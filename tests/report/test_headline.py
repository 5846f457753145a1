"""Headline sentences are computed from the tables: their numbers are the tables' numbers, a
p-value is never written as p = 0, the exact permutation p is named as such, a collapsed pause
component and its fallback are stated, and the errata summary counts the table's categories."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import numpy as np
import pandas as pd
from hypothesis import given, settings
from hypothesis import strategies as st

from nonolab.report import headline
from nonolab.stats.correlations import p_method
from nonolab.stats.errata import (
    ERRATA_COLUMNS,
    errata_summary,
    errata_summary_text,
    verdict_table,
)


def _table1(root: Path, rows: list[dict]) -> None:
    (root / "tables").mkdir(parents=True, exist_ok=True)
    pd.DataFrame(rows).to_csv(root / "tables" / "table1_spearman.csv", index=False)


@settings(max_examples=40, deadline=None)
@given(
    rho=st.floats(-1, 1, allow_nan=False),
    asym=st.one_of(st.just(0.0), st.floats(0, 1)),
    n=st.integers(3, 12),
    data=st.data(),
)
def test_table1_sentence_has_the_tables_numbers_and_never_p_zero(
    tmp_path_factory, rho, asym, n, data
):
    root = tmp_path_factory.mktemp("t1")
    method = p_method(n)
    perm = data.draw(st.floats(2 / math.factorial(n) if n <= 9 else 1e-5, 1))
    row = {
        "solver": "s1",
        "encoding": "e1",
        "metric": "decisions",
        "n": n,
        "bt_rho": rho,
        "bt_p": perm,
        "bt_p_asymptotic": asym,
        "p_method": method,
    }
    _table1(
        root,
        [
            {"alignment": "corrected", **row},
            {**row, "alignment": "published", "bt_rho": 0.123456},
        ],
    )
    text = " ".join(headline.table1_sentences(root, "s1", "e1"))
    assert f"rho = {headline.fmt(rho)}" in text
    assert f"{method.split(' (')[0]} p = {headline.fmt(perm)}" in text
    assert ("exact permutation" in text) == (n <= 9)
    assert not re.search(r"\bp = 0(?![.\d])", text)
    assert "0.123" not in text  # the published alignment is not the headline
    assert (f"With {n} puzzles" in text) == (n < 10)


def test_fmt_p_never_writes_zero():
    assert headline.fmt_p(0.0) == "p < 1e-300"
    assert headline.fmt_p(3e-12) == "p = 3.00e-12"
    assert headline.fmt(29156.0) == "29,156"


def test_ranking_sentence_names_hardest_and_easiest(tmp_path):
    (tmp_path / "tables").mkdir()
    rng = np.random.default_rng(1)
    s = rng.lognormal(size=5)
    pd.DataFrame(
        {"puzzle_id": list("abcde"), "strength": s, "ci_low": s / 2, "ci_high": s * 2}
    ).to_csv(tmp_path / "tables" / "bt_strengths.csv", index=False)
    (tmp_path / "tables" / "bt_lr_test.json").write_text(
        json.dumps({"chi2": 12.5, "df": 4, "p": 0.014, "n_comparisons": 40})
    )
    text = " ".join(headline.ranking_sentences(tmp_path))
    hard, easy = "abcde"[int(np.argmax(s))], "abcde"[int(np.argmin(s))]
    assert f"hardest is puzzle {hard} (strength {headline.fmt(s.max())}" in text
    assert f"easiest puzzle {easy} (strength {headline.fmt(s.min())}" in text
    assert "chi2 = 12.5 on 4 df, p = 0.014" in text


def test_collapsed_pause_component_and_fallback_are_stated(tmp_path):
    rec = {
        "threshold_used_s": 2.28,
        "threshold_s": 1.005,
        "threshold_source": "fallback (mixture collapsed onto a spike)",
        "weights": [0.2, 0.5, 0.3],
        "n_gaps": 500,
        "degenerate_components": [
            {
                "component": 2,
                "mean_s": 1.0,
                "sd_log": 1e-4,
                "weight": 0.4,
                "n_gaps": 200,
                "spike_s": 1.0,
                "spike_share": 0.97,
                "reasons": ["sd_below_floor"],
            }
        ],
        "threshold_fallback": {"ok": True, "threshold_s": 2.28, "rule": "refit", "n_removed": 190},
    }
    (tmp_path / "pauses").mkdir()
    (tmp_path / "pauses" / "threshold.json").write_text(json.dumps(rec))
    text = " ".join(headline.pause_sentences(tmp_path))
    assert "Pause threshold used: 2.28 s" in text and "fitted crossing is 1.005 s" in text
    assert "component 2" in text and "collapsed onto a spike" in text and "97%" in text
    assert "Fallback threshold 2.28 s" in text and "190 gaps left out" in text


def test_errata_summary_sentences_follow_the_table(tmp_path):
    rng = np.random.default_rng(3)
    n = 30
    rows = []
    for i in range(n):
        row = dict.fromkeys(ERRATA_COLUMNS, "")
        row.update(
            quantity=f"q{i}",
            verdict=f"model {i % 7}; term",
            published=rng.normal(),
            corrected=rng.normal(),
            change_category=rng.choice(["significance", "direction", "estimate"]),
            cause_evidence=rng.choice(["error", "analysis choice", "not reproducible"]),
            cause=f"cause {i % 3}: because",
        )
        rows.append(row)
    (tmp_path / "tables").mkdir()
    pd.DataFrame(rows, columns=ERRATA_COLUMNS).to_csv(
        tmp_path / "tables" / "errata.csv", index=False
    )
    t = pd.read_csv(tmp_path / "tables" / "errata.csv")
    summary = errata_summary(t)
    sentences = headline.errata_sentences(tmp_path)
    text = " ".join(sentences)
    # the README's sentence, by the same function
    assert sentences[0] == errata_summary_text(summary)
    assert text.startswith(f"{n} published numbers change.")
    for cat, k in summary["change_category"].items():
        assert f"{cat}: {k}" in text
    for cause, k in summary["cause_evidence"].items():
        assert f"{cause}: {k}" in text
    verdicts = verdict_table(t)
    changed = verdicts[verdicts["category"].isin(["significance", "direction"])]
    assert len(changed) and summary["other_flips"] == len(changed)  # no registered conclusion
    first = changed.iloc[0]
    assert f"{first['verdict']}: {first['category']} changes; evidence: " in text
    # a verdict is listed once, however many rows are its evidence
    assert text.count(f"{first['verdict']}: ") == 1


def test_no_errata_rows_no_summary(tmp_path):
    (tmp_path / "tables").mkdir()
    pd.DataFrame(columns=ERRATA_COLUMNS).to_csv(tmp_path / "tables" / "errata.csv", index=False)
    assert headline.errata_sentences(tmp_path) == []


def test_pause_sentences_read_the_order_check_from_its_own_record(tmp_path):
    """The data-order sentences come from pauses/order_dependence.json (rule pause_order), not
    from threshold.json; a check that did not run says nothing about the order."""
    (tmp_path / "pauses").mkdir()
    rec = {"threshold_used_s": 2.36, "n_gaps": 500, "weights": [0.3, 0.7]}
    (tmp_path / "pauses" / "threshold.json").write_text(json.dumps(rec))
    summary = {
        "n_orders": 20,
        "n_published_orders": 80,
        "published_settings": {
            "n_orders": 80,
            "crossing_s": {"input_order": 2.356, "min": 2.3494, "max": 2.38},
        },
        "converged": {
            "n_orders": 20,
            "crossing_s": {"input_order": 1.5174, "min": 1.5174, "max": 1.5174},
        },
    }
    order = tmp_path / "pauses" / "order_dependence.json"
    assert not any("Data order" in s for s in headline.pause_sentences(tmp_path))
    order.write_text(json.dumps({"run": True, "order_dependence": summary, "provenance": {}}))
    said = [s for s in headline.pause_sentences(tmp_path) if s.startswith("Data order")]
    assert said == [
        "Data order: over 20 random orders of the same gaps the converged fit's crossing stays "
        "at 1.517 s (file order: 1.517 s).",
        "Data order: over 80 random orders of the same gaps the published-settings fit's "
        "crossing ranges from 2.349 to 2.38 s (file order: 2.356 s).",
    ]
    order.write_text(json.dumps({"run": False, "why": "no published fit", "provenance": {}}))
    assert not any("Data order" in s for s in headline.pause_sentences(tmp_path))
