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
    from scipy import stats

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
    behaviour when the code is present), ``n_unmatched`` (responses without an attempt) and
    ``p_fdr`` (Benjamini-Hochberg over every check of the table: the family is the configured
    theme-behaviour pairs).
    """
    j, n_unmatched = _join_attempts(responses, attempts, participant_col)
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
    out = pd.DataFrame(rows, columns=[*CONVERGENT_COLUMNS[:-1]])
    out["p_fdr"] = bh_fdr(out["p"]) if len(out) else pd.Series(dtype=float)
    return out


CONVERGENT_COLUMNS = [
    "code",
    "behaviour",
    "n_present",
    "n_absent",
    "median_present",
    "median_absent",
    "u",
    "p",
    "rank_biserial",
    "n_unmatched",
    "p_fdr",
]


#: Behaviours of the theme x behaviour table (:func:`theme_behaviour_tests`).
THEME_BEHAVIOURS: tuple[str, ...] = (
    "time_to_solve_s",
    "pause_count",
    "hint_count",
    "error_count",
    "incorrect_submissions",
    "action_count",
)


def with_action_counts(attempts: pd.DataFrame, events: pd.DataFrame) -> pd.DataFrame:
    """Return ``attempts`` with ``action_count``: the attempt's player actions, i.e. its events
    of role ``interaction`` inside the puzzle window (``phase == "puzzle"``, same participant
    and ``order``; moves, drags, hints, checks, resets, undos, skips, advances; platform markers
    not counted), 0 when there are none."""
    ev = events[(events["phase"] == "puzzle") & (events["role"] == "interaction")]
    n = ev.groupby(["participant_id", "order"]).size().rename("action_count")
    out = attempts.drop(columns=["action_count"], errors="ignore").merge(
        n.reset_index(), on=["participant_id", "order"], how="left", validate="one_to_one"
    )
    out["action_count"] = out["action_count"].fillna(0).astype(int)
    return out


def with_incorrect_submissions(attempts: pd.DataFrame, events: pd.DataFrame) -> pd.DataFrame:
    """Return ``attempts`` with ``incorrect_submissions``: the attempt's ``check_bank`` events
    (``phase == "puzzle"``, same participant and ``order``) whose ``solved`` is false, i.e.
    boards submitted while wrong (0 when there are none)."""
    ev = events[(events["type"] == "check_bank") & (events["phase"] == "puzzle")]
    wrong = ev[~ev["solved"].astype("boolean").fillna(False).astype(bool)]
    n = wrong.groupby(["participant_id", "order"]).size().rename("incorrect_submissions")
    out = attempts.drop(columns=["incorrect_submissions"], errors="ignore").merge(
        n.reset_index(), on=["participant_id", "order"], how="left", validate="one_to_one"
    )
    out["incorrect_submissions"] = out["incorrect_submissions"].fillna(0).astype(int)
    return out


def _join_attempts(
    responses: pd.DataFrame, attempts: pd.DataFrame, participant_col: str = "participant_id"
) -> tuple[pd.DataFrame, int]:
    """Rating reasons joined to their attempts on (published participant id, puzzle id), and the
    number of responses without an attempt."""
    a = attempts.copy()
    a["_pid"] = a[participant_col].astype(str)
    a["_puz"] = a["puzzle_id"].astype(str)
    r = responses.assign(_pid=responses["participant"].astype(str), _puz=responses["puzzle_id"])
    j = r.merge(a, on=["_pid", "_puz"], how="left", suffixes=("", "_attempt"), indicator=True)
    n_unmatched = int((j["_merge"] == "left_only").sum())
    return j[j["_merge"] == "both"].drop(columns="_merge"), n_unmatched


def within_puzzle_percentile(values: pd.Series, puzzle: pd.Series) -> pd.Series:
    """Return each value's percentile within its puzzle, in 0-1: (mid-rank - 0.5) / n among the
    non-missing values of the same puzzle (ties share their mid-rank), so behaviours of puzzles
    of different difficulty compare on one scale. Missing values stay missing."""
    v = pd.to_numeric(values, errors="coerce").astype(float)
    rank = v.groupby(puzzle).rank(method="average")
    n = v.notna().groupby(puzzle).transform("sum")
    return (rank - 0.5) / n


def _signed_rank(d: np.ndarray):
    """Wilcoxon signed-rank test of ``d`` against 0 as R's ``wilcox.test`` does by default:
    zero differences dropped; exact below 50 non-zero differences without ties or zeros, else
    the normal approximation with tie and continuity correction (scipy ``wilcoxon``)."""
    from scipy import stats

    nonzero = d[d != 0]
    exact = len(nonzero) < 50 and len(np.unique(np.abs(nonzero))) == len(nonzero)
    exact = exact and len(nonzero) == len(d)
    if exact:
        return stats.wilcoxon(d, zero_method="wilcox", method="exact")
    return stats.wilcoxon(d, zero_method="wilcox", method="asymptotic", correction=True)


def theme_behaviour_tests(
    responses: pd.DataFrame,
    attempts: pd.DataFrame,
    codes: Sequence[str],
    behaviours: Sequence[str] = THEME_BEHAVIOURS,
    min_pairs: int = 2,
) -> pd.DataFrame:
    """Return every theme against every behaviour, compared within participants: one row per
    code x behaviour.

    ``responses`` (rating reasons, :func:`theme_test_responses`) are joined to ``attempts``
    (published participant id and puzzle id; ``attempts`` with the ``behaviours`` columns, e.g.
    after :func:`with_incorrect_submissions`). Each behaviour becomes its percentile within the
    puzzle (:func:`within_puzzle_percentile`, over all attempts of the puzzle), so a
    participant's responses on different puzzles compare. For each participant with responses both with and
    without the code, d = mean percentile with - mean percentile without; the test is the
    Wilcoxon signed-rank test of the d (two-sided, as R's ``wilcox.test``: zero differences
    dropped, exact below 50 pairs without ties, else normal with tie and continuity
    correction). Columns: ``code``, ``behaviour``, ``n_participants`` (pairs), ``n_present`` /
    ``n_absent`` (responses of those participants), ``mean_difference`` (mean d, percentile
    points as a 0-1 fraction: positive = more of the behaviour, relative to the puzzle, when
    the theme is named), ``rank_biserial`` (matched-pairs rank-biserial r = (W+ - W-) / (W+ +
    W-), positive = more when named), ``w``, ``p`` and ``p_fdr`` (Benjamini-Hochberg over every
    test of the table: the family is all themes x behaviours). Fewer than ``min_pairs`` pairs:
    no test (NaN, outside the family)."""
    from scipy import stats

    missing = [b for b in behaviours if b not in attempts.columns]
    if missing:
        raise ValueError(f"attempts table lacks behaviour column(s) {missing}")
    puzzle = attempts["puzzle_id"].astype(str)
    pcts = {f"_pct_{b}": within_puzzle_percentile(attempts[b], puzzle) for b in behaviours}
    j, _ = _join_attempts(responses, attempts.assign(**pcts))
    rows = []
    for b in behaviours:
        pct = j[f"_pct_{b}"]
        for code in codes:
            has = j["code_" + code] == 1
            d = pd.DataFrame({"pid": j["_pid"], "has": has, "x": pct}).dropna(subset=["x"])
            means = d.groupby(["pid", "has"])["x"].mean().unstack("has")
            if True not in means.columns or False not in means.columns:
                pairs = means.iloc[0:0]
            else:
                pairs = means.dropna(subset=[True, False])
            # rounded: equal percentile differences reached by different sums are ties
            diff = (pairs[True] - pairs[False]).round(12) if len(pairs) else pd.Series(dtype=float)
            both = d[d["pid"].isin(pairs.index)]
            row = {
                "code": code,
                "behaviour": b,
                "n_participants": int(len(pairs)),
                "n_present": int(both["has"].sum()),
                "n_absent": int((~both["has"]).sum()),
                "mean_difference": float(diff.mean()) if len(diff) else np.nan,
                "rank_biserial": np.nan,
                "w": np.nan,
                "p": np.nan,
            }
            nonzero = diff[diff != 0]
            if len(pairs) >= min_pairs and len(nonzero):
                ranks = stats.rankdata(np.abs(nonzero))
                w_plus, w_minus = ranks[nonzero > 0].sum(), ranks[nonzero < 0].sum()
                res = _signed_rank(diff.to_numpy())
                row.update(
                    {
                        "rank_biserial": float((w_plus - w_minus) / (w_plus + w_minus)),
                        "w": float(res.statistic),
                        "p": float(res.pvalue),
                    }
                )
            elif len(pairs) >= min_pairs:  # every difference is zero
                row.update({"rank_biserial": 0.0, "p": 1.0})
            rows.append(row)
    cols = ["code", "behaviour", "n_participants", "n_present", "n_absent", "mean_difference"]
    out = pd.DataFrame(rows, columns=[*cols, "rank_biserial", "w", "p"])
    out["p_fdr"] = bh_fdr(out["p"]) if len(out) else pd.Series(dtype=float)
    return out


def theme_tables(
    coded: pd.DataFrame,
    attempts: pd.DataFrame,
    convergent: Mapping[str, Sequence[str]],
    events: pd.DataFrame | None = None,
) -> tuple[dict[str, pd.DataFrame], dict[str, list[str]], int]:
    """Return ``(tables, checks, n_responses)`` of the themes stage (METHODS 10).

    ``tables``: ``tests`` (:func:`code_tests` of the rating reasons vs final difficulty),
    ``theme_prevalence`` (rating reasons, then every response coded with a theme),
    ``strategy_prevalence`` (strategy answers), ``convergent`` (:func:`convergent_checks`, with
    ``p_fdr`` over its tests) and ``behaviour`` (:func:`theme_behaviour_tests`: every theme x
    every behaviour of :data:`THEME_BEHAVIOURS` present in the attempts, within participants);
    ``checks``: the ``convergent`` code -> behaviour columns restricted to codes present;
    ``n_responses``: rating reasons with a final difficulty and at least one theme code.
    ``events`` (the ingest's events table) adds ``incorrect_submissions`` and ``action_count``
    to the attempts (:func:`with_incorrect_submissions`, :func:`with_action_counts`); without
    it, checks of those behaviours are an error and the behaviour table leaves them out.
    """
    if events is not None:
        attempts = with_action_counts(with_incorrect_submissions(attempts, events), events)
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
        "behaviour": theme_behaviour_tests(
            resp, attempts, themes, [b for b in THEME_BEHAVIOURS if b in attempts.columns]
        ),
    }
    return tables, checks, len(resp)
