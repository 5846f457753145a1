"""Coded free-text survey answers: theme prevalence and themes vs reported difficulty (METHODS 10).

Input: a coded-responses export (``coded_responses.csv``: one row per response, ``response_kind``,
``participant_id`` (coder's ``Pnnn``), ``source_file`` (``<published participant id>.<ext>``),
``puzzle_id``, ``final_difficulty``, and one 0/1 ``code_<CODE>`` column per code). Difficulty
themes are the ``code_*`` columns, strategies the ``code_S_*`` ones. :func:`select_coded_responses`
leaves out repeated rows and responses of participants the ingest did not analyse.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from pathlib import Path

import numpy as np
import pandas as pd
from scipy import stats

from nonolab.stats.correlations import bh_fdr
from nonolab.study.codebook import coded_puzzle_label, out_of_range_rating

REQUIRED = ("response_id", "participant_id", "source_file", "response_kind", "final_difficulty")
THEME_TEST_COLUMNS = [
    "code",
    "n_present",
    "n_absent",
    "mean_present",
    "mean_absent",
    "u",
    "p",
    "rank_biserial",
    "p_fdr",
]


def load_coded_responses(path: str | Path) -> pd.DataFrame:
    """Return the coded responses with a ``participant`` column (published participant id,
    the stem of ``source_file``), ``puzzle_id`` as a string label ("" when absent),
    ``final_difficulty`` as a number (missing when empty or not a number) and
    ``final_difficulty_text`` as written. Only an empty cell is missing: "NA", "null" and "nan"
    are text.

    Raises ``ValueError`` naming the file for missing columns or non-0/1 code values.
    """
    # only an empty cell is missing: "NA", "null", "nan" stay text (an id, or a bad rating)
    df = pd.read_csv(path, keep_default_na=False, na_values=[""])
    missing = [c for c in REQUIRED if c not in df.columns]
    if missing:
        raise ValueError(f"{path}: missing column(s) {missing}")
    codes = [c for c in df.columns if c.startswith("code_")]
    if not codes:
        raise ValueError(f"{path}: no code_* columns")
    for c in codes:
        bad = ~df[c].isin([0, 1])
        if bad.any():
            line = int(np.flatnonzero(bad.to_numpy())[0]) + 2
            raise ValueError(f"{path}, line {line}: column {c} is not 0/1 ({df[c][bad].iloc[0]!r})")
    df = df.copy()
    df["final_difficulty_text"] = df["final_difficulty"].map(
        lambda v: "" if isinstance(v, float) and v != v else str(v)
    )
    df["final_difficulty"] = pd.to_numeric(df["final_difficulty"], errors="coerce")
    df["participant"] = df["source_file"].astype(str).str.replace(r"\.[^.]*$", "", regex=True)
    pid = df["puzzle_id"] if "puzzle_id" in df.columns else pd.Series(np.nan, index=df.index)
    df["puzzle_id"] = [coded_puzzle_label(v) for v in pid]
    return df


def select_coded_responses(
    coded: pd.DataFrame, participant_ids: Collection[str] | None = None
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Return ``(used, dropped)``: the coded responses the theme analysis uses, and one row per
    response left out (``record``: 1-based data row of the export, ``response_id``,
    ``participant``, ``reason``).

    Left out: a repeat of an earlier ``response_id`` (a duplicated row would count twice in
    every n and change the tests' p-values; the first is used), when ``participant_ids``
    is given (the participants table of the ingest), a response of a participant the ingest
    did not analyse (excluded or unknown), and a rating reason whose ``final_difficulty`` is
    not a rating (:func:`nonolab.study.codebook.out_of_range_rating`: 99, 0, 3.5, text). The
    ingest ledgers each with the CSV line.
    """
    record = pd.Series(np.arange(1, len(coded) + 1), index=coded.index)
    first = coded.groupby("response_id", sort=False).cumcount() == 0
    first_record = record.groupby(coded["response_id"], sort=False).transform("min")
    reasons = pd.Series("", index=coded.index, dtype=object)
    reasons[~first] = [f"duplicate of record {r} (same response_id)" for r in first_record[~first]]
    if participant_ids is not None:
        other = ~coded["participant"].astype(str).isin(set(map(str, participant_ids)))
        reasons[other & first] = "participant not analysed (not in the participants table)"
    rated = (coded["response_kind"] == "rating_reason") & first & (reasons == "")
    for i in np.flatnonzero(rated.to_numpy()):
        col = "final_difficulty_text" if "final_difficulty_text" in coded else "final_difficulty"
        why = out_of_range_rating(coded[col].iloc[i])
        if why:
            reasons.iloc[i] = why
    drop = reasons != ""
    dropped = pd.DataFrame(
        {
            "record": record[drop],
            "response_id": coded.loc[drop, "response_id"],
            "participant": coded.loc[drop, "participant"],
            "reason": reasons[drop],
        }
    ).reset_index(drop=True)
    return coded.loc[~drop].reset_index(drop=True), dropped


def theme_codes(df: pd.DataFrame) -> list[str]:
    """Return the difficulty-theme code names (``code_X`` columns that are not ``code_S_*``)."""
    return [c[5:] for c in df.columns if c.startswith("code_") and not c.startswith("code_S_")]


def strategy_codes(df: pd.DataFrame) -> list[str]:
    """Return the strategy code names (``code_S_*`` columns, prefix ``code_`` removed)."""
    return [c[5:] for c in df.columns if c.startswith("code_S_")]


def theme_test_responses(coded: pd.DataFrame, kind: str = "rating_reason") -> pd.DataFrame:
    """Return the responses used for the theme tests: ``response_kind == kind``, with a final
    difficulty and at least one difficulty-theme code."""
    codes = ["code_" + c for c in theme_codes(coded)]
    sel = (
        (coded["response_kind"] == kind)
        & coded["final_difficulty"].notna()
        & (coded[codes].sum(axis=1) > 0)
    )
    return coded.loc[sel].reset_index(drop=True)


def rank_biserial(u_present: float, n_present: int, n_absent: int) -> float:
    """Return the rank-biserial correlation ``1 - 2U/(n1 n2)`` from the present group's U.

    Positive: the outcome tends to be lower (rated easier) when the code is present.
    """
    return 1.0 - 2.0 * u_present / (n_present * n_absent)


def mann_whitney(present: Sequence[float], absent: Sequence[float]) -> dict[str, float]:
    """Return the two-sided Mann-Whitney U test of ``present`` vs ``absent`` (scipy, asymptotic
    with tie and continuity correction when scipy chooses so): ``u`` (present group's U),
    ``p`` and ``rank_biserial``."""
    x = np.asarray(present, dtype=float)
    y = np.asarray(absent, dtype=float)
    res = stats.mannwhitneyu(x, y, alternative="two-sided")
    return {
        "u": float(res.statistic),
        "p": float(res.pvalue),
        "rank_biserial": rank_biserial(float(res.statistic), len(x), len(y)),
    }


def code_tests(
    responses: pd.DataFrame,
    codes: Sequence[str],
    outcome: str = "final_difficulty",
    min_group: int = 1,
) -> pd.DataFrame:
    """Return one Mann-Whitney row per code (columns :data:`THEME_TEST_COLUMNS`) comparing
    ``outcome`` of responses with and without the code; ``p_fdr`` is Benjamini-Hochberg over
    the codes tested. Codes with fewer than ``min_group`` responses in either group get NaN
    statistics and are left out of the FDR family."""
    rows = []
    for code in codes:
        has = responses["code_" + code] == 1
        x = responses.loc[has, outcome].dropna()
        y = responses.loc[~has, outcome].dropna()
        row = {
            "code": code,
            "n_present": len(x),
            "n_absent": len(y),
            "mean_present": float(x.mean()) if len(x) else np.nan,
            "mean_absent": float(y.mean()) if len(y) else np.nan,
            "u": np.nan,
            "p": np.nan,
            "rank_biserial": np.nan,
        }
        if len(x) >= min_group and len(y) >= min_group:
            row.update(mann_whitney(x, y))
        rows.append(row)
    out = pd.DataFrame(rows)
    out["p_fdr"] = bh_fdr(out["p"])
    return out[THEME_TEST_COLUMNS]


def prevalence(responses: pd.DataFrame, codes: Sequence[str], scope: str) -> pd.DataFrame:
    """Return code prevalence: ``scope``, ``code``, ``n`` (responses with the code),
    ``n_responses`` (responses in scope) and ``share`` (0-1), most frequent first."""
    n = len(responses)
    rows = [
        {
            "scope": scope,
            "code": c,
            "n": int(responses["code_" + c].sum()),
            "n_responses": n,
            "share": float(responses["code_" + c].sum() / n) if n else np.nan,
        }
        for c in codes
    ]
    out = pd.DataFrame(rows, columns=["scope", "code", "n", "n_responses", "share"])
    return out.sort_values(["n", "code"], ascending=[False, True], kind="stable").reset_index(
        drop=True
    )


def coded_subset(coded: pd.DataFrame, kinds: Sequence[str], codes: Sequence[str]) -> pd.DataFrame:
    """Return responses of the given kinds that carry at least one of ``codes``."""
    cols = ["code_" + c for c in codes]
    sel = coded["response_kind"].isin(list(kinds)) & (coded[cols].sum(axis=1) > 0)
    return coded.loc[sel].reset_index(drop=True)


def convergent_checks(
    responses: pd.DataFrame,
    attempts: pd.DataFrame,
    checks: Mapping[str, Sequence[str]],
    participant_col: str = "participant_id",
) -> pd.DataFrame:
    """Return Mann-Whitney comparisons of behaviour between attempts whose rating reason carries a
    code and those whose reason does not.

    ``responses`` (rating reasons, from :func:`theme_test_responses`) are joined to ``attempts``
    on (published participant id, ``puzzle_id``). ``checks``: code -> behaviour columns of the
    attempts table. Columns: ``code``, ``behaviour``, ``n_present``, ``n_absent``,
    ``median_present``, ``median_absent``, ``u``, ``p``, ``rank_biserial`` (positive: less of the
    behaviour when the code is present), ``n_unmatched`` (responses without an attempt).
    """
    a = attempts.copy()
    a["_pid"] = a[participant_col].astype(str)
    a["_puz"] = a["puzzle_id"].astype(str)
    r = responses.assign(_pid=responses["participant"].astype(str), _puz=responses["puzzle_id"])
    j = r.merge(a, on=["_pid", "_puz"], how="left", suffixes=("", "_attempt"), indicator=True)
    n_unmatched = int((j["_merge"] == "left_only").sum())
    j = j[j["_merge"] == "both"]
    rows = []
    for code, behaviours in checks.items():
        has = j["code_" + code] == 1
        for b in behaviours:
            if b not in j.columns:
                raise ValueError(f"attempts table lacks behaviour column {b!r} (check {code})")
            x, y = j.loc[has, b].dropna(), j.loc[~has, b].dropna()
            row = {
                "code": code,
                "behaviour": b,
                "n_present": len(x),
                "n_absent": len(y),
                "median_present": float(x.median()) if len(x) else np.nan,
                "median_absent": float(y.median()) if len(y) else np.nan,
                "u": np.nan,
                "p": np.nan,
                "rank_biserial": np.nan,
                "n_unmatched": n_unmatched,
            }
            if len(x) and len(y):
                row.update(mann_whitney(x, y))
            rows.append(row)
    return pd.DataFrame(rows)


def theme_tables(
    coded: pd.DataFrame, attempts: pd.DataFrame, convergent: Mapping[str, Sequence[str]]
) -> tuple[dict[str, pd.DataFrame], dict[str, list[str]], int]:
    """Return ``(tables, checks, n_responses)`` of the themes stage (METHODS 10).

    ``tables``: ``tests`` (:func:`code_tests` of the rating reasons vs final difficulty),
    ``theme_prevalence`` (rating reasons, then every response coded with a theme),
    ``strategy_prevalence`` (strategy answers) and ``convergent`` (:func:`convergent_checks`);
    ``checks``: the ``convergent`` code -> behaviour columns restricted to codes present;
    ``n_responses``: rating reasons with a final difficulty and at least one theme code.
    """
    themes, strategies = theme_codes(coded), strategy_codes(coded)
    resp = theme_test_responses(coded)
    all_coded = coded_subset(coded, ["rating_reason", "comments"], themes)
    checks = {k: list(v) for k, v in convergent.items() if k in themes}
    tables = {
        "tests": code_tests(resp, themes),
        "theme_prevalence": pd.concat(
            [
                prevalence(resp, themes, "rating_reason"),
                prevalence(all_coded, themes, "all_theme_coded"),
            ],
            ignore_index=True,
        ),
        "strategy_prevalence": prevalence(
            coded_subset(coded, ["strategy"], strategies), strategies, "strategy"
        ),
        "convergent": convergent_checks(resp, attempts, checks),
    }
    return tables, checks, len(resp)
