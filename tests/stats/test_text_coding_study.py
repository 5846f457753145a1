"""The published text-coding files of the public study (analyze-data/out_features/text_coding)
and the codebook Table 4 (analyze-data/latex/figures/codebook_examples_latex.txt), value by
value: the exported answers against the ingest's survey texts and attempts, the two coded
subsets against the coded responses, the two exports against each other, and the examples of
Table 4 against nonolab.study.codebook."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml
from public_study import study_ingest

from nonolab.stats.themes import load_coded_responses, select_coded_responses, theme_tables
from nonolab.study.codebook import codebook_examples
from nonolab.study.features import attempt_features
from nonolab.study.presets import resolve_preset

pytestmark = pytest.mark.study

REPO = Path(__file__).resolve().parents[2]
TC = "analyze-data/out_features/text_coding"
RIYAD = "riyad-analysis/derived"


def _read(study_dir, folder, name):
    # "N/A", "n/a" and "NA" are answers, not missing values; the export wrote "nan" for none
    path = study_dir / folder / f"{name}.csv"
    return pd.read_csv(path, keep_default_na=False, na_values=["", "nan"])


def _stem(source_file: pd.Series) -> pd.Series:
    return source_file.str.replace(r"\.[^.]*$", "", regex=True)


def test_exported_texts_equal_the_ingest_survey_texts(study_dir):
    """Every exported answer is the logged text of an analysed participant (trailing
    whitespace stripped by the export; the excluded Bing-p21 has rows but no answer text); the
    export leaves out the `logic_experience_other` answers only."""
    ours = study_ingest(str(study_dir)).tables["survey_texts"].copy()
    ours["order"] = ours["order"].astype("Int64")
    for folder in (TC, RIYAD):
        pub = _read(study_dir, folder, "text_responses").dropna(subset=["text"])
        pub = pub.assign(
            participant_id=_stem(pub["source_file"]),
            question=pub["response_kind"].replace(
                {"size_experience_other": "nonogram_size_experience_other"}
            ),
            order=pub["order"].astype("Int64"),
        )
        m = pub.merge(ours, on=["participant_id", "question", "order"], how="outer", indicator=True)
        assert (m["_merge"] != "left_only").all()
        assert (m["text_x"].dropna() == m["text_y"][m["text_x"].notna()].str.strip()).all()
        missing = m.loc[m["_merge"] == "right_only"]
        assert set(missing["question"]) == {"logic_experience_other"} or folder == RIYAD
    # the analyze-data export: all of the ingest's answers but logic_experience_other
    pub = _read(study_dir, TC, "text_responses").dropna(subset=["text"])
    assert len(pub) == len(ours[ours["question"] != "logic_experience_other"])


def test_exported_rating_rows_against_the_attempts(study_dir):
    """Puzzle ids and initial ratings equal the ingest's; the final rating equals ours wherever
    ours is present. The export also keeps the excluded Bing-p21 and the final rating of
    unsolved attempts (the published feature table blanks it) and the -1 of skipped ones."""
    ing = study_ingest(str(study_dir)).tables
    att = ing["attempts"].merge(
        ing["ratings"], on=["participant_id", "order"], how="left", suffixes=("", "_r")
    )
    pub = _read(study_dir, TC, "text_responses").query("response_kind == 'rating_reason'")
    pub = pub.assign(participant_id=_stem(pub["source_file"]))
    assert set(pub["participant_id"]) - set(att["participant_id"]) == {"Bing-p21"}
    m = pub.merge(att, on=["participant_id", "order"], suffixes=("_pub", ""))
    assert len(m) == 201
    assert (m["puzzle_id_pub"].astype(int).astype(str) == m["puzzle_id"].astype(str)).all()
    feats = pd.read_csv(study_dir / "analyze-data/out_features/behavioral_features.csv")
    f = m.merge(feats, on=["participant_id", "order"], suffixes=("", "_feat"))
    both = f["final_difficulty_feat"].notna()
    assert (f.loc[both, "final_difficulty_pub"] == f.loc[both, "final_difficulty_feat"]).all()
    blank = f.loc[~both]
    assert ((blank["final_difficulty_pub"] == -1) | ~blank["solved_flag"]).all()
    assert (f["immediate_difficulty"] == f["initial_difficulty_feat"]).all()


@pytest.mark.parametrize("folder", [TC, RIYAD])
def test_coded_subsets_are_rows_and_columns_of_coded_responses(study_dir, folder):
    coded = _read(study_dir, folder, "coded_responses")
    for name, kinds in (
        ("coded_difficulty_themes", ["rating_reason", "comments"]),
        ("coded_strategies", ["strategy"]),
    ):
        sub = _read(study_dir, folder, name)
        want = coded[coded["response_kind"].isin(kinds)][list(sub.columns)]
        pd.testing.assert_frame_equal(
            sub.reset_index(drop=True), want.reset_index(drop=True), check_dtype=False
        )


def test_the_two_exports_differ_in_bing_p15_and_file_names_only(study_dir):
    """The analyze-data export holds the answers of Bing-p15 (P015), marked codeable but with
    no code; the riyad-analysis export has them blank (an earlier version of that log). It
    also names the Riyad-p* logs .ndjson instead of .json. No code differs."""
    for name in ("coded_responses", "text_responses"):
        a = _read(study_dir, RIYAD, name).set_index("response_id")
        b = _read(study_dir, TC, name).set_index("response_id")
        diff = a.compare(b)
        rows = set(a.loc[diff.index, "participant_id"])
        assert "P015" in rows
        other = diff.drop(index=a.index[a["participant_id"] == "P015"]).dropna(axis=1, how="all")
        assert set(other.columns.get_level_values(0)) == {"source_file"}
        assert (
            other[("source_file", "self")].str.replace(".json", ".ndjson", regex=False)
            == other[("source_file", "other")]
        ).all()
    a = _read(study_dir, RIYAD, "coded_responses")
    b = _read(study_dir, TC, "coded_responses")
    p15 = a["participant_id"] == "P015"
    assert a.loc[p15, "n_codes"].sum() == 0 == b.loc[p15, "n_codes"].sum()
    assert a.loc[p15, "text"].isna().all() and b.loc[p15, "text"].notna().sum() == 5


def _unescape(s: str) -> str:
    return re.sub(r"\\([&%#_$])", r"\1", s)


def test_codebook_table4_examples(study_dir):
    tex = (study_dir / "analyze-data/latex/figures/codebook_examples_latex.txt").read_text()
    row = re.compile(r"\\texttt\{([A-Z\\_]+)\} & (.*?) & ``(.*?)'' \\\\")
    pub = {_unescape(c): (_unescape(n), _unescape(q)) for c, n, q in row.findall(tex)}
    themes = resolve_preset(study_dir).data["themes"]
    coded = _read(study_dir, RIYAD, "coded_responses")
    ok = coded["codes_str"].notna() & coded["text"].notna()
    responses = [
        (r, c.split("|"), t)
        for r, c, t in coded.loc[ok, ["response_id", "codes_str", "text"]].itertuples(index=False)
    ]
    rows = codebook_examples(
        study_dir / themes["codebook"],
        responses,
        themes["example_overrides"],
        themes["example_max_chars"],
    )
    ours = {r["code"]: (r["name"], r["example"]) for r in rows}
    assert list(ours) == list(pub) and len(ours) == 21
    assert ours == pub
    assert np.sum([q.endswith("\u2026") for _, q in pub.values()]) == 1


def test_themes_tables_are_the_same_with_either_export(study_dir):
    """No code differs between the exports, so the themes stage gives identical tables."""
    preset = resolve_preset(study_dir).data
    tables = study_ingest(str(study_dir)).tables
    att = attempt_features(tables, preset["published"]["pause_threshold_s"])
    conv = yaml.safe_load((REPO / "config/config.yaml").read_text())["themes"]["convergent"]
    ids = set(tables["participants"]["participant_id"])
    got = []
    for folder in (RIYAD, TC):
        coded, _ = select_coded_responses(
            load_coded_responses(study_dir / folder / "coded_responses.csv"), ids
        )
        got.append(theme_tables(coded, att, conv, tables["events"]))
    (a, _, na), (b, _, nb) = got
    assert na == nb == 167
    for name in a:
        pd.testing.assert_frame_equal(a[name], b[name])
