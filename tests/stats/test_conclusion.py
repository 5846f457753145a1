"""The moderation-conclusion table (nonolab.stats.conclusion) on small synthetic frames of the
input tables' shapes (moderation_raw, moderation_maximal, moderation_ordinal, the published
file), with hand-computed Benjamini-Hochberg values; and the published rows on the public study."""

from __future__ import annotations

import io

import numpy as np
import pandas as pd
import pytest

from nonolab.stats.conclusion import STEPS, conclusion_sentences, moderation_conclusion

METRICS = ("decisions", "propagations", "conflicts")
MOD = "expertise_composite"


def raw_frame() -> pd.DataFrame:
    rows = []
    for alignment, ps in (("corrected", (0.01, 0.04, 0.03)), ("published", (0.2, 0.5, 0.9))):
        for m, p in zip(METRICS, ps, strict=True):
            for term in ("Intercept", m, MOD, f"{m}:{MOD}", "var_puzzle"):
                inter = term == f"{m}:{MOD}"
                rows.append(
                    {
                        "alignment": alignment,
                        "metric": m,
                        "term": term,
                        "coef": -0.1 if inter else 9.0,
                        "p": p if inter else 0.5,
                        "p_satt": 2 * p if inter else 0.6,
                    }
                )
    return pd.DataFrame(rows)


def maximal_frame() -> pd.DataFrame:
    rows = []
    for alignment in ("published", "corrected"):
        for m in METRICS:
            for structure, singular, p_kr in (("maximal", True, 0.9), ("reduced", False, 0.3)):
                rows.append(
                    {
                        "alignment": alignment,
                        "metric": m,
                        "structure": structure,
                        "coef": -0.05,
                        "se": 0.02,
                        "df_satt": 4.0,
                        "p_satt": 0.2,
                        "df_kr": 3.5,
                        "p_kr": np.nan if m == "conflicts" else p_kr,
                        "lrt_chi2": 1.0,
                        "lrt_p": 0.3,
                        "p_fdr": 0.45,
                        "singular": singular,
                        "n": 180,
                    }
                )
    return pd.DataFrame(rows)


def ordinal_frame() -> pd.DataFrame:
    rows = [
        {"alignment": a, "metric": m, "term": f"{m}:{MOD}", "coef": -0.02, "p": p, "p_fdr": q}
        | {"lrt_p": p, "converged": True}
        for a in ("corrected", "published")
        for m, p, q in zip(METRICS, (0.02, 0.3, 0.6), (0.06, 0.45, 0.6), strict=True)
    ]
    return pd.DataFrame(rows)


def published_frame() -> pd.DataFrame:
    return pd.DataFrame(
        {"predictor": ["conflicts", "decisions", "propagations"]}
        | {"interaction": [-0.3, -0.1, -0.2], "p_interaction": [0.005, 0.0125, 0.0057]}
    )


def test_every_step_in_order_with_hand_computed_fdr():
    table, summary = moderation_conclusion(
        raw_frame(), ordinal_frame(), maximal_frame(), published_frame()
    )
    assert list(table.columns) == [
        "metric", "step", "coef", "p", "p_fdr", "significant_at_05", "df_small_sample",
        "p_small_sample", "lrt_p", "note",
    ]  # fmt: skip
    assert len(table) == 3 * len(STEPS)
    assert list(table["step"][:5]) == list(STEPS)
    assert list(table["metric"][::5]) == list(METRICS)
    t = table.set_index(["step", "metric"])
    # published as printed: values from the file, BH over (0.0125, 0.0057, 0.005): 3 x 0.005 = 0.015 > 1.5 x 0.0057
    assert t.loc[(STEPS[0], "decisions"), "coef"] == -0.1
    assert t.loc[(STEPS[0], "conflicts"), "p"] == 0.005
    np.testing.assert_allclose(
        t.loc[STEPS[0]].loc[list(METRICS), "p_fdr"], [0.0125, 0.00855, 0.00855]
    )
    # corrected alignment: p (0.01, 0.04, 0.03) -> BH (0.03, 0.04, 0.04)
    np.testing.assert_allclose(t.loc[STEPS[2]].loc[list(METRICS), "p_fdr"], [0.03, 0.04, 0.04])
    np.testing.assert_allclose(t.loc[STEPS[1]].loc[list(METRICS), "p"], [0.2, 0.5, 0.9])
    assert "Satterthwaite p 0.02" in t.loc[(STEPS[2], "decisions"), "note"]
    # maximal: the non-singular structure; Kenward-Roger p, Satterthwaite when KR is missing
    assert t.loc[(STEPS[3], "decisions"), "p"] == 0.3
    assert "structure reduced" in t.loc[(STEPS[3], "decisions"), "note"]
    assert t.loc[(STEPS[3], "conflicts"), "p"] == 0.2
    assert "Satterthwaite" in t.loc[(STEPS[3], "conflicts"), "note"]
    assert t.loc[(STEPS[3], "decisions"), "p_fdr"] == 0.45
    # ordinal: corrected rows taken as they are
    assert t.loc[(STEPS[4], "decisions"), "p_fdr"] == 0.06
    assert list(t.loc[STEPS[0], "significant_at_05"]) == [True, True, True]
    assert list(t.loc[STEPS[4], "significant_at_05"]) == [False, False, False]
    assert "for none of the metrics in the ordinal model step" in summary
    assert "against all metrics in the published (as printed) step" in summary
    # the synthetic published reproduction (p 0.2, 0.5, 0.9) is significant for no metric,
    # so the change comes there
    assert summary.endswith("the change comes at the published reproduced step.")


def test_without_published_files_or_tables():
    raw = raw_frame()
    raw = raw[raw["alignment"] == "corrected"]
    table, summary = moderation_conclusion(raw, ordinal_frame(), None, None)
    assert list(dict.fromkeys(table["step"])) == [STEPS[2], STEPS[4]]
    assert "against all metrics in the corrected alignment step" in summary
    ordinal = ordinal_frame().assign(p_fdr=[0.01, 0.3, 0.6] * 2)
    _, summary = moderation_conclusion(raw, ordinal, None, None)
    assert "for only decisions in the ordinal model step" in summary


def test_a_singular_only_maximal_fit_is_flagged():
    mx = maximal_frame()
    mx = mx[mx["structure"] == "maximal"]
    table, _ = moderation_conclusion(None, None, mx, None)
    assert (table["step"] == STEPS[3]).all()
    assert table["note"].str.contains("singular fit").all()
    assert table.loc[table["metric"] == "decisions", "p"].item() == 0.9


@pytest.mark.study
def test_published_rows_are_the_published_file(study_dir):
    from nonolab.study.presets import resolve_preset

    preset = resolve_preset(study_dir)
    path = study_dir / preset.get("published")["moderation_expertise"]
    pub = pd.read_csv(path)
    table, _ = moderation_conclusion(None, None, None, pub)
    t = table.set_index("metric")
    for _, r in pub.iterrows():
        assert t.loc[r["predictor"], "coef"] == r["interaction"]
        assert t.loc[r["predictor"], "p"] == r["p_interaction"]
    assert t["significant_at_05"].all()  # the published conclusion: all three moderate


def _kr_maximal() -> pd.DataFrame:
    m = maximal_frame()
    m = m[m["structure"] == "reduced"].assign(kept=True)
    m["p_kr"] = [0.3, 0.2, 0.04] * 2
    m["lrt_p"] = [0.03, 0.5, 0.5] * 2
    return m


def test_sentences_are_computed_from_the_table_alone():
    table, _ = moderation_conclusion(
        raw_frame(), ordinal_frame(), _kr_maximal(), published_frame(), metrics=METRICS
    )
    got = conclusion_sentences(table)
    # corrected p: decisions 0.01, propagations 0.04, conflicts 0.03: all significant
    # unadjusted; BH over 3: 0.03, 0.04, 0.04: all survive; Kenward-Roger 0.3/0.2/0.04
    assert (
        "significant at 0.05 before any correction for decisions (linear mixed model p = 0.010, "
        "ordinal model p = 0.020, maximal model's ML likelihood-ratio test p = 0.030)"
    ) in got
    assert "It disappears with the maximal model's Kenward-Roger test (p = 0.300, df 3.5)" in got
    assert "adjusted p for conflicts = 0.040" in got
    assert got.endswith(
        "as published (row-position join), all 3 were significant (decisions p = 0.013, "
        "propagations p = 0.006, conflicts p = 0.005)."
    )
    # the same sentences from the table written to CSV and read back
    back = pd.read_csv(io.StringIO(table.to_csv(index=False)))
    assert conclusion_sentences(back) == got


def test_sentences_when_nothing_is_significant():
    raw = raw_frame()
    raw.loc[raw["term"].str.contains(":"), "p"] = 0.4
    table, _ = moderation_conclusion(raw, None, metrics=METRICS)
    got = conclusion_sentences(table)
    assert "significant for none of the metrics even before correction" in got
    assert "disappears" not in got and "as published" not in got  # no published table
