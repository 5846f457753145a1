"""Which measures track difficulty: one evaluation for every registered measure.

Every measure of :mod:`nonolab.measure.registry` goes through the same tests, on any study:

* **Spearman with the Bradley-Terry ranking** (the paper's Table 1 test): rho of the measure with
  the BT strength over the puzzles, exact permutation p up to 9 puzzles
  (:func:`nonolab.stats.correlations.spearman_permutation_p`);
* **crossed LMM slopes** ``outcome ~ measure + (1|participant) + (1|puzzle)`` on the final
  difficulty and on each behaviour, Satterthwaite t test
  (:func:`nonolab.stats.mixed_models.behaviour_models`);
* **expertise moderation**: the ``measure:expertise`` interaction of
  ``final_difficulty ~ measure * expertise`` (:func:`nonolab.stats.mixed_models.moderation_models`);
* **out-of-sample prediction** (scikit-learn): leave-one-puzzle-out, each held-out puzzle's
  attempts predicted by a linear model fitted on the other puzzles' attempts, from puzzle-level
  features only (so nothing about a participant can leak across folds); the model (size/density
  baseline plus the measure) against an intercept-only and a size/density-only model, by mean
  squared error on the held-out attempts; the gain's p from permuting the measure's values over
  the puzzles (all orderings up to :data:`EXACT_MAX_PUZZLES` puzzles, else seeded draws).

The p-values of all these tests over all evaluated measures form **one multiplicity family**,
adjusted together by Benjamini-Hochberg (:data:`FAMILY`). Measures are scaled before the models
by their registry transform (``log1p`` for counts) and z-scored over the puzzles (population SD),
so every slope is in outcome units per SD of the (transformed) measure. A measure constant over
the puzzles (every served puzzle line-solvable: no stall) has no test: it is listed with the
reason, never as a zero.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from nonolab.stats.correlations import bh_fdr, p_method, spearman_permutation_p
from nonolab.stats.lmm import PARTICIPANT, PUZZLE
from nonolab.stats.mixed_models import BEHAVIOURS, behaviour_models, metric_covariates

RATING = "final_difficulty"
MODERATOR = "expertise_composite"
#: outcome column -> label: the final difficulty rating, then the paper's behaviours
OUTCOMES: dict[str, str] = {RATING: "final difficulty", **BEHAVIOURS}
#: the size/density baseline's features (registry names)
BASELINE: tuple[str, ...] = ("n_cells", "filled_share")
#: up to this many puzzles the out-of-sample permutation test enumerates every ordering
EXACT_MAX_PUZZLES = 7
FAMILY = (
    "Benjamini-Hochberg over every test of every evaluated measure: the BT Spearman, the LMM "
    "slopes on the final difficulty and on each behaviour, the expertise moderation and the "
    "out-of-sample gain on each outcome"
)

LEADERBOARD_COLUMNS = [
    "measure",
    "label",
    "kind",
    "status",
    "n_puzzles",
    "bt_rho",
    "bt_p",
    "bt_q",
    "difficulty_slope",
    "difficulty_p",
    "difficulty_q",
    "moderation_coef",
    "moderation_p",
    "moderation_q",
    "oos_r2",
    "oos_gain",
    "oos_p",
    "oos_q",
    "min_q",
    "notes",
]


def measure_covariates(
    measures: pd.DataFrame, names: Sequence[str], transforms: Mapping[str, str]
) -> pd.DataFrame:
    """Return one row per ``puzzle_hash`` with each measure transformed (``log1p`` or
    ``identity``, ``transforms``) and z-scored over the puzzles (population SD; NaN when the
    measure is constant). Reuses :func:`nonolab.stats.mixed_models.metric_covariates`."""
    base = measures[[PUZZLE, *names]].reset_index(drop=True)
    out = base[[PUZZLE]].copy()
    for tr, how in (("log1p", "log1p_z"), ("identity", "z")):
        cols = [n for n in names if transforms.get(n, "identity") == tr]
        if cols:
            cov = metric_covariates(base, cols, how)
            out[cols] = cov[cols].to_numpy()
    return out[[PUZZLE, *names]]


def measure_status(measures: pd.DataFrame, name: str, puzzles: Sequence[str]) -> str:
    """Return ``"ok"`` or why measure ``name`` cannot be evaluated on ``puzzles`` (hashes)."""
    v = measures.set_index(PUZZLE).loc[list(puzzles), name].astype(float)
    if v.isna().all():
        return "undefined for every puzzle"
    if v.isna().any():
        return f"undefined for {int(v.isna().sum())} of {len(v)} puzzles"
    if np.ptp(v.to_numpy()) == 0:
        return f"constant over the {len(v)} puzzles ({v.iloc[0]:g})"
    return "ok"


# ------------------------------------------------------------------------------------------------
# out-of-sample prediction


def _loo_predictions(
    y: np.ndarray, x: np.ndarray, groups: np.ndarray, *, fast: bool = False
) -> np.ndarray:
    """Leave-one-group-out predictions of ``y`` from ``x`` (rows of puzzle-level features).

    The folds are scikit-learn's ``LeaveOneGroupOut`` and the model its ``LinearRegression``.
    Because the features are constant within a puzzle, the attempt-level least-squares fit
    equals the fit to the puzzle means weighted by attempt counts, which is what is fitted
    (same coefficients, far fewer rows). ``fast`` solves the same weighted least squares with
    numpy instead of scikit-learn (the permutation test's thousands of refits);
    ``tests/stats/test_measure_evaluation.py`` checks both against ``cross_val_predict`` on the
    attempts."""
    from sklearn.linear_model import LinearRegression
    from sklearn.model_selection import LeaveOneGroupOut

    pred = np.empty_like(y, dtype=float)
    for train, test in LeaveOneGroupOut().split(x, y, groups):
        _keys, inv, counts = np.unique(groups[train], return_inverse=True, return_counts=True)
        ybar = np.bincount(inv, weights=y[train]) / counts
        xg = x[train][np.unique(inv, return_index=True)[1]]
        if xg.shape[1] == 0:
            pred[test] = np.average(ybar, weights=counts)
        elif fast:
            a = np.column_stack([np.ones(len(xg)), xg]) * np.sqrt(counts)[:, None]
            beta = np.linalg.lstsq(a, ybar * np.sqrt(counts), rcond=None)[0]
            pred[test] = beta[0] + x[test] @ beta[1:]
        else:
            pred[test] = LinearRegression().fit(xg, ybar, sample_weight=counts).predict(x[test])
    return pred


def _loo_mse_puzzles(ybar: np.ndarray, counts: np.ndarray, ss: np.ndarray, x: np.ndarray) -> float:
    """Return the leave-one-puzzle-out mean squared error over the attempts, from puzzle-level
    arrays: ``ybar`` (mean outcome), ``counts`` (attempts), ``ss`` (within-puzzle sum of squares
    about the mean) and ``x`` (features, one row per puzzle). Equals the attempt-level value of
    :func:`_loo_predictions` (sum over puzzles of ``ss + count * (ybar - prediction)^2``, over
    the attempts); the permutation test's fast path."""
    k = len(ybar)
    a = np.column_stack([np.ones(k), x]) if x.shape[1] else np.ones((k, 1))
    w = np.sqrt(counts)
    total = float(ss.sum())
    for g in range(k):
        keep = np.arange(k) != g
        beta = np.linalg.lstsq(a[keep] * w[keep, None], ybar[keep] * w[keep], rcond=None)[0]
        total += counts[g] * (ybar[g] - a[g] @ beta) ** 2
    return total / counts.sum()


def _loo_mse_orderings(
    ybar: np.ndarray, counts: np.ndarray, ss: np.ndarray, x: np.ndarray
) -> np.ndarray:
    """Return :func:`_loo_mse_puzzles` for each of a stack of feature matrices ``x`` (shape
    ``(orderings, puzzles, features)``, e.g. one per permutation of a measure's values), as an
    array of mean squared errors (squared outcome units).

    Each leave-one-puzzle-out residual comes from the full weighted fit by the deleted-residual
    identity ``e_g = r_g / (1 - h_g)`` (``h_g``: the puzzle's weighted leverage), all orderings
    at once; an ordering whose fit is near singular (condition number above 1e10) or has a
    puzzle of leverage near 1 (its removal leaves a rank-deficient fit) is computed by
    :func:`_loo_mse_puzzles`, the minimum-norm least squares of each fold, so the two agree on
    every input (``tests/stats/test_measure_evaluation.py``)."""
    n_ord, k, _m = x.shape
    a = np.concatenate([np.ones((n_ord, k, 1)), x], axis=2)
    aw = a * counts[None, :, None]
    gram = np.einsum("pki,pkj->pij", aw, a)
    out = np.full(n_ord, np.nan)
    with np.errstate(all="ignore"):
        cond = np.linalg.cond(gram)
    ok = np.isfinite(cond) & (cond < 1e10)
    if ok.any():
        inv = np.linalg.inv(gram[ok])
        beta = np.einsum("pij,pj->pi", inv, np.einsum("pki,k->pi", aw[ok], ybar))
        resid = ybar[None, :] - np.einsum("pki,pi->pk", a[ok], beta)
        lev = counts[None, :] * np.einsum("pki,pij,pkj->pk", a[ok], inv, a[ok])
        fine = (lev < 1 - 1e-8).all(axis=1)
        with np.errstate(all="ignore"):
            sq = (counts[None, :] * (resid / (1 - lev)) ** 2).sum(axis=1)
        idx = np.flatnonzero(ok)
        out[idx[fine]] = (ss.sum() + sq[fine]) / counts.sum()
        ok[idx[~fine]] = False
    for i in np.flatnonzero(~ok):
        out[i] = _loo_mse_puzzles(ybar, counts, ss, x[i])
    return out


def _feature_matrix(cols: Sequence[np.ndarray], n: int) -> np.ndarray:
    """Stack the non-constant feature columns (a constant one adds nothing to an intercept and
    only makes the least-squares problem rank-deficient)."""
    keep = [c for c in cols if np.ptp(c) > 0]
    return np.column_stack(keep) if keep else np.empty((n, 0))


def out_of_sample(
    attempts: pd.DataFrame,
    measures: pd.DataFrame,
    name: str,
    outcome: str,
    *,
    baseline: Sequence[str] = BASELINE,
    n_perm: int = 999,
    seed: int = 0,
) -> dict[str, object]:
    """Return the leave-one-puzzle-out evaluation of measure ``name`` on ``outcome``.

    ``attempts``: one row per attempt (``puzzle_hash``, the outcome); ``measures``: one row per
    puzzle (``puzzle_hash``, the measure and the ``baseline`` columns). Keys: ``n``,
    ``n_puzzles``, ``mse_intercept``, ``mse_baseline``, ``mse_model`` (squared outcome units, on
    the held-out attempts), ``oos_r2`` (1 - mse_model / mse_intercept), ``oos_gain``
    (mse_baseline - mse_model: positive when the measure improves on the baseline), ``oos_p``
    (share of measure-value permutations over the puzzles with a gain at least as large;
    exact over all orderings up to :data:`EXACT_MAX_PUZZLES` puzzles, the observed ordering
    counted; else ``(1 + hits) / (1 + n_perm)`` with seeded draws), ``oos_p_method``.
    """
    d = attempts[[PUZZLE, outcome]].dropna()
    d = d.merge(measures[[PUZZLE, name, *baseline]], on=PUZZLE, how="inner")
    d = d.dropna(subset=[name])
    y = d[outcome].to_numpy(dtype=float)
    groups = d[PUZZLE].to_numpy()
    puzzles, idx = np.unique(groups, return_inverse=True)
    k = len(puzzles)
    out: dict[str, object] = {"n": len(d), "n_puzzles": k}
    if k < 3:
        return out | {"oos_status": f"{k} puzzles: leave-one-puzzle-out needs at least 3"}
    base_cols = [d[b].to_numpy(dtype=float) for b in baseline]
    xb = _feature_matrix(base_cols, len(d))
    mse = {
        "intercept": float(np.mean((y - _loo_predictions(y, np.empty((len(d), 0)), groups)) ** 2)),
        "baseline": float(np.mean((y - _loo_predictions(y, xb, groups)) ** 2)),
    }
    per_puzzle = d.groupby(PUZZLE)[name].first().reindex(puzzles).to_numpy(dtype=float)

    counts = np.bincount(idx).astype(float)
    ybar = np.bincount(idx, weights=y) / counts
    ss = np.bincount(idx, weights=(y - ybar[idx]) ** 2)
    first = np.unique(idx, return_index=True)[1]
    base_puzzle = [c[first] for c in base_cols]

    x_obs = _feature_matrix([*base_cols, per_puzzle[idx]], len(d))
    mse["model"] = float(np.mean((y - _loo_predictions(y, x_obs, groups)) ** 2))
    gain = mse["baseline"] - mse["model"]
    if k <= EXACT_MAX_PUZZLES:
        perms = [np.array(p) for p in itertools.permutations(range(k))]
        how = f"exact permutation (all {math.factorial(k):,} orderings of the puzzles)"
    else:
        rng = np.random.default_rng(seed)
        perms = [rng.permutation(k) for _ in range(n_perm)]
        how = f"Monte Carlo permutation ({n_perm:,} seeded orderings of the puzzles)"
    # the features of every ordering at once (a constant column stays constant when permuted,
    # so each ordering keeps the same columns as :func:`_feature_matrix` of the observed one)
    cols = [c for c in base_puzzle if np.ptp(c) > 0]
    xs = np.stack([np.column_stack([*cols, per_puzzle[p]]) for p in perms])
    if np.ptp(per_puzzle) == 0:
        xs = xs[:, :, :-1]
    # a tolerance for gains equal up to rounding (e.g. orderings that only swap tied values)
    tol = 1e-9 * max(1.0, mse["baseline"])
    hits = int((mse["baseline"] - _loo_mse_orderings(ybar, counts, ss, xs) >= gain - tol).sum())
    p = hits / len(perms) if k <= EXACT_MAX_PUZZLES else (1 + hits) / (1 + n_perm)
    return out | {
        "oos_status": "ok",
        "mse_intercept": mse["intercept"],
        "mse_baseline": mse["baseline"],
        "mse_model": mse["model"],
        "oos_r2": 1 - mse["model"] / mse["intercept"] if mse["intercept"] > 0 else float("nan"),
        "oos_gain": gain,
        "oos_p": float(p),
        "oos_p_method": how,
    }


# ------------------------------------------------------------------------------------------------
# the evaluation


def _served_measures(
    attempts: pd.DataFrame,
    measures: pd.DataFrame,
    registry: pd.DataFrame,
    outcomes: Mapping[str, str] | None,
) -> tuple[
    Mapping[str, str],
    list[str],
    pd.DataFrame,
    pd.DataFrame,
    list[str],
    dict[str, str],
    pd.DataFrame,
]:
    """Return what both evaluations start from: the outcomes (default :data:`OUTCOMES` present
    in ``attempts``), the served puzzles (``puzzle_hash`` values of ``measures`` that
    ``attempts`` has), their measures table, the registry indexed by name, the measure names
    the table has, each one's status (:func:`measure_status`) and the covariates of those whose
    status is ``ok`` (:func:`measure_covariates`: transformed, SD units)."""
    if outcomes is None:
        outcomes = {c: lab for c, lab in OUTCOMES.items() if c in attempts.columns}
    served = [h for h in measures[PUZZLE] if h in set(attempts[PUZZLE])]
    meas = measures[measures[PUZZLE].isin(served)].reset_index(drop=True)
    reg = registry.set_index("name")
    names = [n for n in reg.index if n in meas.columns]
    status = {n: measure_status(meas, n, served) for n in names}
    ok = [n for n in names if status[n] == "ok"]
    cov = measure_covariates(meas, ok, reg["transform"].to_dict())
    return outcomes, served, meas, reg, names, status, cov


def evaluate_measures(
    attempts: pd.DataFrame,
    strengths: pd.DataFrame,
    measures: pd.DataFrame,
    registry: pd.DataFrame,
    *,
    outcomes: Mapping[str, str] | None = None,
    moderator: str = MODERATOR,
    n_perm: int = 999,
    seed: int = 0,
) -> dict[str, pd.DataFrame]:
    """Return the evaluation tables of every measure in ``registry``.

    ``attempts``: one row per attempt with ``participant_id``, ``puzzle_hash``, the outcome
    columns and (for the moderation) ``moderator`` (the expertise composite, SD units; absent:
    no moderation tests); ``strengths``: the BT table (``puzzle_hash``, ``strength``);
    ``measures``: one row per puzzle (``puzzle_hash`` and every measure,
    :func:`nonolab.measure.registry.measures_table`); ``registry``: ``name``, ``label``,
    ``kind``, ``transform`` (:func:`nonolab.measure.registry.registry_table`); ``outcomes``:
    column -> label (default :data:`OUTCOMES`, those present in ``attempts``).

    Returns ``{"tests": ..., "leaderboard": ..., "oos": ...}``: ``tests`` has one row per
    measure x test (``test``: ``bt_spearman``, ``lmm_slope``, ``moderation``, ``oos_gain``;
    ``outcome``; ``estimate`` (rho; slope in outcome units per measure SD; interaction; MSE
    gain in squared outcome units); ``p``; ``q`` (the family's BH-adjusted p,
    :data:`FAMILY`); ``p_method``); ``leaderboard`` one row per measure
    (:data:`LEADERBOARD_COLUMNS`, ``status`` ``ok`` or why the measure is not evaluated; sorted
    by ``min_q`` then ``bt_p``); ``oos`` one row per measure x outcome
    (:func:`out_of_sample`).
    """
    outcomes, served, meas, reg, names, status, cov = _served_measures(
        attempts, measures, registry, outcomes
    )
    ok = [n for n in names if status[n] == "ok"]
    rows: list[dict[str, object]] = []

    # BT Spearman, exact permutation p
    bt = strengths.set_index(PUZZLE)["strength"].astype(float)
    for n in ok:
        ids = [h for h in served if h in bt.index and np.isfinite(bt[h])]
        x = bt.loc[ids].to_numpy()
        y = meas.set_index(PUZZLE).loc[ids, n].to_numpy(dtype=float)
        from scipy import stats

        rho = float(stats.spearmanr(x, y).statistic) if len(ids) > 1 else float("nan")
        rows.append(
            {
                "measure": n,
                "test": "bt_spearman",
                "outcome": "BT strength",
                "estimate": rho,
                "p": spearman_permutation_p(x, y, seed=seed),
                "p_method": p_method(len(ids)),
                "n": len(ids),
            }
        )

    # crossed LMM slopes (Satterthwaite)
    if ok:
        lm = behaviour_models(attempts, cov, behaviours=dict(outcomes), metrics=ok)
        for r in lm.to_dict("records"):
            rows.append(
                {
                    "measure": r["metric"],
                    "test": "lmm_slope",
                    "outcome": r["outcome_column"],
                    "estimate": r["coef"],
                    "p": r["p_satt"],
                    "p_method": "crossed LMM, Satterthwaite t",
                    "n": r["n"],
                    "note": r["warnings"],
                }
            )

    # expertise moderation
    if ok and moderator in attempts.columns and RATING in outcomes:
        from nonolab.stats.mixed_models import moderation_models

        mod, _slopes = moderation_models(
            attempts, cov, outcome=RATING, moderator=moderator, metrics=ok
        )
        for n in ok:
            term = mod[(mod["metric"] == n) & (mod["term"] == f"{n}:{moderator}")]
            r = term.iloc[0].to_dict() if len(term) else {}
            rows.append(
                {
                    "measure": n,
                    "test": "moderation",
                    "outcome": RATING,
                    "estimate": r.get("coef", float("nan")),
                    "p": r.get("p_satt", float("nan")),
                    "p_method": "crossed LMM interaction, Satterthwaite t",
                    "n": r.get("n"),
                    "note": r.get("warnings", "no interaction term fitted"),
                }
            )

    # out-of-sample prediction
    oos_rows = []
    base = [b for b in BASELINE if b in meas.columns]
    for n in ok:
        for col in outcomes:
            o = out_of_sample(attempts, meas, n, col, baseline=base, n_perm=n_perm, seed=seed)
            oos_rows.append({"measure": n, "outcome": col, **o})
            if o.get("oos_status") == "ok":
                rows.append(
                    {
                        "measure": n,
                        "test": "oos_gain",
                        "outcome": col,
                        "estimate": o["oos_gain"],
                        "p": o["oos_p"],
                        "p_method": o["oos_p_method"],
                        "n": o["n"],
                    }
                )
    tests = pd.DataFrame(
        rows, columns=["measure", "test", "outcome", "estimate", "p", "q", "p_method", "n", "note"]
    )
    tests["q"] = bh_fdr(tests["p"]) if len(tests) else []
    oos = pd.DataFrame(oos_rows)
    board = leaderboard(tests, reg, names, status, len(served))
    if len(oos) and "oos_r2" in oos:
        r2 = oos[oos["outcome"] == RATING].set_index("measure")["oos_r2"]
        board["oos_r2"] = board["measure"].map(r2).astype(float)
    return {"tests": tests, "leaderboard": board, "oos": oos}


def _notes(t: pd.DataFrame) -> str:
    """Return why some of a measure's tests have no p (``test outcome: reason``; ``; ``-joined)."""
    out = []
    for r in t.to_dict("records"):
        note = r.get("note")
        if isinstance(note, str) and note and not np.isfinite(float(r["p"])):
            out.append(f"{r['test']} {r['outcome']}: {note}")
    return "; ".join(out)


def leaderboard(
    tests: pd.DataFrame,
    registry: pd.DataFrame,
    names: Sequence[str],
    status: Mapping[str, str],
    n_puzzles: int,
) -> pd.DataFrame:
    """Return one row per measure (:data:`LEADERBOARD_COLUMNS`) from the ``tests`` table:
    the BT Spearman, the LMM slope on the final difficulty, the moderation and the
    out-of-sample result on the final difficulty, each with its family q; ``min_q`` the
    smallest q of any of the measure's tests (behaviours included); ``notes`` why a test has no
    p (e.g. a singular fit, whose Satterthwaite df is undefined)."""
    rows = []
    for n in names:
        t = tests[tests["measure"] == n]

        def pick(test: str, outcome: str | None = None, _t: pd.DataFrame = t) -> dict:
            s = _t[(_t["test"] == test) & ((_t["outcome"] == outcome) if outcome else True)]
            return s.iloc[0].to_dict() if len(s) else {}

        sp, sl = pick("bt_spearman"), pick("lmm_slope", RATING)
        mo, oo = pick("moderation"), pick("oos_gain", RATING)
        nan = float("nan")
        rows.append(
            {
                "measure": n,
                "label": registry.loc[n, "label"],
                "kind": registry.loc[n, "kind"],
                "status": status[n],
                "n_puzzles": n_puzzles,
                "bt_rho": sp.get("estimate", nan),
                "bt_p": sp.get("p", nan),
                "bt_q": sp.get("q", nan),
                "difficulty_slope": sl.get("estimate", nan),
                "difficulty_p": sl.get("p", nan),
                "difficulty_q": sl.get("q", nan),
                "moderation_coef": mo.get("estimate", nan),
                "moderation_p": mo.get("p", nan),
                "moderation_q": mo.get("q", nan),
                "oos_r2": nan,
                "oos_gain": oo.get("estimate", nan),
                "oos_p": oo.get("p", nan),
                "oos_q": oo.get("q", nan),
                "min_q": float(t["q"].min()) if len(t) and t["q"].notna().any() else nan,
                "notes": _notes(t),
            }
        )
    out = pd.DataFrame(rows, columns=LEADERBOARD_COLUMNS)
    return out.sort_values(["min_q", "bt_p"], na_position="last", kind="stable").reset_index(
        drop=True
    )


# ------------------------------------------------------------------------------------------------
# several studies at once

STUDY = "study"
POOLED_FAMILY = (
    "Benjamini-Hochberg over every pooled test: the LMM slope of every evaluated measure on the "
    "final difficulty and on each behaviour"
)


def pool_studies(
    studies: Mapping[str, tuple[pd.DataFrame, pd.DataFrame]],
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Return ``(attempts, measures)`` of several studies pooled.

    ``studies``: study name -> (attempts, measures per puzzle). Attempts get a ``study`` column
    and participant ids prefixed by the study (``name:id``: the same id in two studies is two
    people); a puzzle served in several studies is one puzzle (its ``puzzle_hash``), so puzzles
    stay crossed with participants across studies. Measures are the columns every study has,
    one row per puzzle; a puzzle whose measures differ between studies (measured under other
    settings) raises ``ValueError`` naming it.
    """
    atts, meas = [], []
    for name, (a, m) in studies.items():
        a = a.copy()
        a[STUDY] = name
        a[PARTICIPANT] = name + ":" + a[PARTICIPANT].astype(str)
        atts.append(a)
        meas.append(m)
    common = [c for c in meas[0].columns if all(c in m.columns for m in meas[1:])]
    allm = pd.concat([m[common] for m in meas], ignore_index=True)
    value_cols = [c for c in common if c not in (PUZZLE, "puzzle_id")]
    for h, g in allm.groupby(PUZZLE):
        if len(g) > 1 and not g[value_cols].astype(float).nunique(dropna=False).le(1).all():
            raise ValueError(f"puzzle {h}: its measures differ between the studies")
    measures = allm.drop_duplicates(subset=[PUZZLE]).reset_index(drop=True)
    return pd.concat(atts, ignore_index=True), measures


def pooled_evaluation(
    studies: Mapping[str, tuple[pd.DataFrame, pd.DataFrame]],
    registry: pd.DataFrame,
    *,
    outcomes: Mapping[str, str] | None = None,
) -> pd.DataFrame:
    """Return the pooled test of every measure over several studies: one row per measure x
    outcome of ``outcome ~ measure + (1|participant) + (1|puzzle) + (1|study)`` (REML,
    :func:`nonolab.stats.lmm_general.fit_general`; Satterthwaite t as lmerTest computes it).

    ``studies``: as :func:`pool_studies`; ``registry``: ``name``, ``label``, ``transform``.
    Measures are transformed and z-scored over the pooled puzzles (:func:`measure_covariates`).
    Columns: ``measure``, ``label``, ``outcome``, ``status`` (``ok`` or why there is no test),
    ``estimate`` (outcome units per measure SD), ``se``, ``df``, ``p``, ``q`` (BH over the table,
    :data:`POOLED_FAMILY`), ``n``, ``n_studies``, ``n_participants``, ``n_puzzles``,
    ``var_study`` (squared outcome units), ``singular``.
    """
    from nonolab.stats.lmm_general import RandomTerm, fit_general

    attempts, measures = pool_studies(studies)
    outcomes, served, meas, reg, names, status, cov = _served_measures(
        attempts, measures, registry, outcomes
    )
    d = attempts.merge(cov, on=PUZZLE, how="left", validate="many_to_one")
    terms = [RandomTerm(PARTICIPANT), RandomTerm(PUZZLE), RandomTerm(STUDY)]
    rows = []
    for n in names:
        for col in outcomes:
            row: dict[str, object] = {
                "measure": n,
                "label": reg.loc[n, "label"],
                "outcome": col,
                "status": status[n],
                "n_studies": int(attempts[STUDY].nunique()),
            }
            if status[n] == "ok":
                try:
                    fit = fit_general(d, f"{col} ~ {n}", terms)
                    t = fit.satterthwaite(n)
                    vc = fit.varcorr
                    var_study = vc.loc[(vc["group"] == STUDY) & (vc["var2"] == ""), "vcov"]
                    row |= {
                        "estimate": t.estimate,
                        "se": t.se,
                        "df": t.df,
                        "p": t.p,
                        "n": fit.n,
                        "n_participants": fit.n_levels.get(PARTICIPANT),
                        "n_puzzles": fit.n_levels.get(PUZZLE),
                        "var_study": float(var_study.iloc[0]) if len(var_study) else float("nan"),
                        "singular": bool(fit.singular),
                    }
                except (ValueError, FloatingPointError, np.linalg.LinAlgError) as e:
                    row["status"] = f"not fitted: {e}"
            rows.append(row)
    cols = ["measure", "label", "outcome", "status", "estimate", "se", "df", "p", "q", "n"]
    cols += ["n_studies", "n_participants", "n_puzzles", "var_study", "singular"]
    out = pd.DataFrame(rows).reindex(columns=cols)
    out["q"] = bh_fdr(out["p"].astype(float))
    return out
