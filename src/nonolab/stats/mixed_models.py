"""Study tables of the crossed-random-intercept mixed models (METHODS 9).

The engine (design, REML fit, bootstrap, Satterthwaite df) is :mod:`nonolab.stats.lmm`; this
module builds the paper's tables on it. Public entry points:

* :func:`metric_covariates`, :func:`covariates_by_alignment`, :func:`study_covariates`
  (puzzle-level SAT metric covariates per alignment; the alignment of metrics to puzzles is
  :func:`nonolab.stats.correlations.aligned_metrics`);
* :func:`across_alignments` (one table function run under every alignment, stacked);
* :func:`behaviour_models`, :func:`moderation_models`, :func:`simple_slopes` (the paper tables).

The pause-threshold sensitivity table is :func:`nonolab.stats.sensitivity.threshold_sensitivity`.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from typing import TypeVar

import numpy as np
import pandas as pd
from scipy import stats

from nonolab.stats.correlations import bh_fdr as _p_fdr
from nonolab.stats.lmm import (
    PARTICIPANT,
    PUZZLE,
    CrossedFit,
    _single_thread_blas,
    fit_crossed,
    parametric_bootstrap,
    satterthwaite_df,
)

__all__ = [
    "BEHAVIOURS",
    "METRICS",
    "METRIC_TRANSFORMS",
    "across_alignments",
    "behaviour_models",
    "covariates_by_alignment",
    "metric_covariates",
    "moderation_models",
    "simple_slopes",
    "study_covariates",
    "with_expertise",
]

#: Behaviour column -> label used in tables (METHODS 9: pauses, time to solve, errors, hints).
BEHAVIOURS: dict[str, str] = {
    "pause_count": "pauses",
    "time_to_solve_s": "time_to_solve",
    "error_count": "errors",
    "hint_count": "hints",
}
METRICS: tuple[str, ...] = ("decisions", "propagations", "conflicts")
METRIC_TRANSFORMS: tuple[str, ...] = ("log1p_z", "z", "raw")


def metric_covariates(
    metrics: pd.DataFrame, metrics_cols: Sequence[str] = METRICS, transform: str = "log1p_z"
) -> pd.DataFrame:
    """Return the puzzle-level metric covariates (one row per ``puzzle_hash``).

    ``transform``: ``log1p_z`` (default) = z-score of log(1 + metric) across the puzzles,
    population SD, each puzzle weighted once (unitless: SD units of the log metric); ``z`` =
    z-score of the raw metric; ``raw`` = the metric as is (solver counts).
    """
    if transform not in METRIC_TRANSFORMS:
        raise ValueError(f"unknown metric transform {transform!r}; use one of {METRIC_TRANSFORMS}")
    if metrics[PUZZLE].duplicated().any():
        raise ValueError("metric_covariates: more than one metrics row per puzzle_hash")
    out = metrics[[PUZZLE]].copy()
    for m in metrics_cols:
        x = metrics[m].astype(float)
        if transform == "log1p_z":
            x = np.log1p(x)
        if transform in ("log1p_z", "z"):
            sd = x.std(ddof=0)
            x = (x - x.mean()) / sd if sd > 0 else x * np.nan
        out[m] = x.to_numpy()
    return out.reset_index(drop=True)


def covariates_by_alignment(
    metrics: pd.DataFrame,
    served: pd.DataFrame,
    *,
    solver: str,
    encoding: str,
    metrics_cols: Sequence[str] = METRICS,
    transform: str = "log1p_z",
    published_mapping: Mapping[str, str] | None = None,
) -> dict[str, pd.DataFrame]:
    """Return ``{alignment: covariates}`` for ``corrected`` and (given a mapping) ``published``.

    ``metrics``: ``results/sat/metrics.csv`` rows (``puzzle_hash``, ``solver``, ``encoding``,
    metric columns); ``served``: ``puzzle_id``, ``puzzle_hash`` of the served puzzles;
    ``published_mapping``: served id -> source hash (:func:`nonolab.stats.correlations.
    published_alignment`). Metrics are aligned by :func:`nonolab.stats.correlations.aligned_metrics`,
    restricted to ``solver`` x ``encoding`` and transformed by :func:`metric_covariates`.
    """
    from nonolab.stats.correlations import aligned_metrics

    sel = metrics[(metrics["solver"] == solver) & (metrics["encoding"] == encoding)]
    if sel.empty:
        raise ValueError(f"no SAT metrics for solver {solver!r} x encoding {encoding!r}")
    maps: dict[str, Mapping[str, str] | None] = {"corrected": None}
    if published_mapping:
        maps["published"] = published_mapping
    out = {}
    for name, mp in maps.items():
        am = aligned_metrics(sel, served, dict(mp) if mp is not None else None)
        missing = set(served["puzzle_hash"]) - set(am["puzzle_hash"])
        if missing:
            raise ValueError(f"{name} alignment: no metrics for puzzle(s) {sorted(missing)}")
        out[name] = metric_covariates(am, metrics_cols, transform)
    return out


def study_covariates(
    attempts: pd.DataFrame,
    sat_metrics: pd.DataFrame,
    pool_statistics: pd.DataFrame | str | os.PathLike | None,
    *,
    solver: str,
    encoding: str,
    metrics: Sequence[str] = METRICS,
    metric_transform: str = "log1p_z",
    log: Callable[[str], None] | None = None,
) -> dict[str, pd.DataFrame]:
    """Return ``{alignment: covariates}`` (:func:`metric_covariates` frames) for the puzzles in
    ``attempts``: ``corrected`` always, ``published`` when a pool table is given.

    The served puzzles are the distinct ``puzzle_id``/``puzzle_hash`` pairs of ``attempts``;
    ``sat_metrics``: ``results/sat/metrics.csv`` rows; ``pool_statistics`` is the preset's
    published pool-ordered statistics table (a frame or a CSV path; None or ``""`` for studies
    without one). The published mapping (served id -> source hash,
    :func:`nonolab.stats.correlations.published_alignment`) is passed to ``log``. ``metrics``
    are the covariate columns, transformed by ``metric_transform`` (:data:`METRIC_TRANSFORMS`).
    """
    from nonolab.stats.correlations import published_alignment

    served = attempts[["puzzle_id", "puzzle_hash"]].drop_duplicates().reset_index(drop=True)
    mapping = None
    if isinstance(pool_statistics, str | os.PathLike) and str(pool_statistics):
        pool_statistics = pd.read_csv(pool_statistics)
    if isinstance(pool_statistics, pd.DataFrame):
        sizes = sat_metrics[sat_metrics["encoding"] == encoding]
        mapping = published_alignment(pool_statistics, served, sizes)
    if log is not None:
        log(
            f"published alignment (served id -> source hash): {mapping}"
            if mapping
            else "no published pool-ordered statistics table in the preset: "
            "corrected alignment only"
        )
    return covariates_by_alignment(
        sat_metrics,
        served,
        solver=solver,
        encoding=encoding,
        metrics_cols=metrics,
        transform=metric_transform,
        published_mapping=mapping,
    )


TableResult = TypeVar("TableResult", pd.DataFrame, tuple[pd.DataFrame, ...])


def across_alignments(
    covariates: Mapping[str, pd.DataFrame],
    table: Callable[[pd.DataFrame], TableResult],
) -> TableResult:
    """Return ``table(covariates[a])`` for every alignment ``a``, stacked in the mapping's
    order with a first column ``alignment``. ``table`` returns one frame or a tuple of frames;
    the result has the same shape (each frame stacked on its own)."""
    parts: dict[str, pd.DataFrame | tuple[pd.DataFrame, ...]] = {
        a: table(cov) for a, cov in covariates.items()
    }

    def stack(frames: Mapping[str, pd.DataFrame]) -> pd.DataFrame:
        out = []
        for a, f in frames.items():
            f = f.copy()
            f.insert(0, "alignment", a)
            out.append(f)
        return pd.concat(out, ignore_index=True)

    first = next(iter(parts.values()))
    if isinstance(first, pd.DataFrame):
        return stack(parts)  # type: ignore[arg-type,return-value]
    return tuple(  # type: ignore[return-value]
        stack({a: t[i] for a, t in parts.items()}) for i in range(len(first))
    )


def with_expertise(attempts: pd.DataFrame, column: str = "expertise_composite") -> pd.DataFrame:
    """Return ``attempts`` with the expertise composite (population-SD units) as ``column``.

    Computed from the six pre-survey items by :mod:`nonolab.stats.expertise` (METHODS 6); an existing
    ``column`` is replaced.
    """
    from nonolab.stats.expertise import expertise_composite, participant_items

    comp = expertise_composite(participant_items(attempts))
    out = attempts.drop(columns=[column], errors="ignore")
    return out.merge(
        comp.rename(column),
        left_on=PARTICIPANT,
        right_index=True,
        how="left",
        validate="many_to_one",
    )


def _fixed_row(fit: CrossedFit, term: str, alpha: float = 0.05) -> dict[str, float]:
    b, se = float(fit.params[term]), float(fit.bse[term])
    zc = stats.norm.ppf(1 - alpha / 2)
    return {
        "coef": b,
        "se": se,
        "z": b / se if se > 0 else float("nan"),  # se 0: a perfect (degenerate) fit
        "p": float(fit.pvalues[term]),
        "ci_low": b - zc * se,
        "ci_high": b + zc * se,
    }


@_single_thread_blas
def behaviour_models(
    attempts: pd.DataFrame,
    covariates: pd.DataFrame,
    *,
    behaviours: Mapping[str, str] | Sequence[str] = BEHAVIOURS,
    metrics: Sequence[str] = METRICS,
    n_boot: int = 0,
    seed: int = 0,
    satterthwaite: bool = True,
    log: Callable[[str], None] | None = None,
) -> pd.DataFrame:
    """Return the behaviour ~ metric table: one row per (behaviour, metric).

    ``attempts``: one row per attempt with ``participant_id``, ``puzzle_hash`` and the behaviour
    columns; ``behaviours``: column -> table label, or columns (labels from :data:`BEHAVIOURS`); ``covariates``: :func:`metric_covariates` output. Each model is
    ``behaviour ~ metric + (1|participant) + (1|puzzle)``, REML. Columns: ``coef``/``se``/
    ``ci_low``/``ci_high`` in behaviour units per covariate unit, Wald ``p``, BH ``p_fdr`` over
    all rows, ``df_satt``/``p_satt`` (Satterthwaite t test; ``p_satt_fdr``), ``p_boot``
    (``p_boot_fdr``; parametric bootstrap
    with ``n_boot`` draws, seed ``seed + row index``; NaN when ``n_boot`` is 0), ``n``, variance
    components, REML ``llf``, ``converged``, ``warnings``.
    """
    if not isinstance(behaviours, Mapping):
        behaviours = {c: BEHAVIOURS.get(c, c) for c in behaviours}
    d = attempts.merge(covariates, on=PUZZLE, how="left", validate="many_to_one")
    rows = []
    k = 0
    null_fits: dict[tuple[str, bytes], CrossedFit] = {}
    for col, label in behaviours.items():
        for m in metrics:
            row = {"behaviour": label, "outcome_column": col, "metric": m}
            fit, why = _try_fit(d, f"{col} ~ {m}")
            if fit is None:
                rows.append(row | _unfitted_row(d, [col, m], why))
                k += 1
                continue
            row.update(_fixed_row(fit, m))
            df_s = satterthwaite_df(fit, m) if satterthwaite else float("nan")
            row["df_satt"] = df_s
            row["p_satt"] = (
                float(2 * stats.t.sf(abs(row["z"]), df_s)) if np.isfinite(df_s) else float("nan")
            )
            if n_boot > 0:
                step = max(1, n_boot // 4)

                def prog(i: int, n: int, _l: str = f"{label}~{m}", _s: int = step) -> None:
                    if log is not None and (i % _s == 0 or i == n):
                        log(f"bootstrap {_l}: {i}/{n}")

                null = _null_fit(d, col, m, null_fits)
                br = parametric_bootstrap(fit, null, m, n_boot=n_boot, seed=seed + k, progress=prog)
                row["p_boot"], row["n_boot"], row["n_boot_failed"] = (
                    br.p_boot,
                    br.n_valid,
                    br.n_failed,
                )
            else:
                row["p_boot"], row["n_boot"], row["n_boot_failed"] = float("nan"), 0, 0
            row.update(_fit_summary(fit))
            rows.append(row)
            if log is not None:
                log(f"fitted {label} ~ {m}: coef={row['coef']:.4g} p={row['p']:.3g}")
                if row["warnings"]:
                    log(f"warning: {label} ~ {m}: {row['warnings']}")
            k += 1
    out = pd.DataFrame(rows)
    out.insert(out.columns.get_loc("p") + 1, "p_fdr", _p_fdr(out["p"]))
    out.insert(out.columns.get_loc("p_satt") + 1, "p_satt_fdr", _p_fdr(out["p_satt"]))
    out.insert(out.columns.get_loc("p_boot") + 1, "p_boot_fdr", _p_fdr(out["p_boot"]))
    return out


def _null_fit(
    d: pd.DataFrame, col: str, metric: str, cache: dict[tuple[str, bytes], CrossedFit]
) -> CrossedFit:
    """Return the bootstrap's null model ``col ~ 1`` fitted (:func:`fit_crossed`) on the rows of
    ``d`` complete in ``col``, ``metric`` and the factors: :func:`nonolab.stats.lmm.bootstrap_p`'s
    null fit. It does not involve the metric, so one fit serves every metric with the same
    rows (``cache``, keyed by outcome and rows)."""
    keep = d[[col, metric, PARTICIPANT, PUZZLE]].notna().all(axis=1).to_numpy()
    key = (col, np.packbits(keep).tobytes() + len(keep).to_bytes(8, "little"))
    if key not in cache:
        cache[key] = fit_crossed(d[keep].reset_index(drop=True), f"{col} ~ 1")
    return cache[key]


def _try_fit(d: pd.DataFrame, formula: str) -> tuple[CrossedFit | None, str]:
    """Return ``(fit_crossed(d, formula), "")``, or ``(None, reason)`` when the model cannot be
    fitted (no complete rows, e.g. a metric constant over the puzzles; a singular design)."""
    try:
        return fit_crossed(d, formula), ""
    except (ValueError, FloatingPointError, np.linalg.LinAlgError) as e:
        return None, f"not fitted: {e}"


def _unfitted_row(d: pd.DataFrame, cols: Sequence[str], why: str) -> dict[str, object]:
    """Return the table fields of a model that could not be fitted: estimates NaN, counts of
    the complete rows, ``converged`` False and the reason in ``warnings``."""
    used = d.dropna(subset=[*cols, PARTICIPANT, PUZZLE])
    nan = float("nan")
    return {
        **dict.fromkeys(("coef", "se", "z", "p", "ci_low", "ci_high", "df_satt", "p_satt"), nan),
        "p_boot": nan,
        "n_boot": 0,
        "n_boot_failed": 0,
        "n": int(len(used)),
        "n_participants": int(used[PARTICIPANT].nunique()),
        "n_puzzles": int(used[PUZZLE].nunique()),
        **dict.fromkeys(("var_participant", "var_puzzle", "var_residual", "llf_reml"), nan),
        "converged": False,
        "optimiser": "",
        "warnings": why,
    }


def _fit_summary(fit: CrossedFit) -> dict[str, object]:
    return {
        "n": fit.n,
        "n_participants": fit.n_participants,
        "n_puzzles": fit.n_puzzles,
        "var_participant": fit.var_participant,
        "var_puzzle": fit.var_puzzle,
        "var_residual": fit.var_residual,
        "llf_reml": fit.llf,
        "converged": fit.converged,
        "optimiser": fit.optimiser,
        "warnings": fit.warning_text(),
    }


def simple_slopes(
    fit: CrossedFit,
    metric: str,
    moderator: str,
    at: Sequence[float] = (-1.0, 0.0, 1.0),
    alpha: float = 0.05,
) -> pd.DataFrame:
    """Return the slope of ``metric`` at moderator values ``at`` (moderator units; SDs here).

    slope = b_metric + w * b_interaction; se from the fixed-effect covariance
    (var_b + w^2 var_int + 2 w cov). Columns ``moderator_value``, ``slope``, ``se``, ``z``, ``p``
    (Wald), ``ci_low``, ``ci_high``.
    """
    inter = f"{metric}:{moderator}"
    names = list(fit.params.index)
    if inter not in names:
        inter = f"{moderator}:{metric}"
    zc = stats.norm.ppf(1 - alpha / 2)
    rows = []
    for w in at:
        c = np.zeros(len(names))
        c[names.index(metric)] = 1.0
        c[names.index(inter)] = float(w)
        b = float(c @ fit.params.to_numpy())
        se = float(np.sqrt(c @ fit.cov_params.to_numpy() @ c))
        rows.append(
            {
                "moderator_value": float(w),
                "slope": b,
                "se": se,
                "z": b / se if se > 0 else float("nan"),
                "p": float(2 * stats.norm.sf(abs(b / se))) if se > 0 else float("nan"),
                "ci_low": b - zc * se,
                "ci_high": b + zc * se,
            }
        )
    return pd.DataFrame(rows)


@_single_thread_blas
def moderation_models(
    attempts: pd.DataFrame,
    covariates: pd.DataFrame,
    *,
    outcome: str = "final_difficulty",
    moderator: str = "expertise_composite",
    metrics: Sequence[str] = METRICS,
    at: Sequence[float] = (-1.0, 0.0, 1.0),
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Return (moderation table, simple-slopes table) for ``outcome ~ metric * moderator``.

    One model per metric with crossed random intercepts, REML. The moderation table has one row
    per fixed-effect term (``coef``, ``se``, ``p``, ``ci_low``, ``ci_high``; outcome units per
    covariate unit; Satterthwaite ``df_satt``/``p_satt``) plus rows ``var_participant``, ``var_puzzle``, ``var_residual`` (coef = the
    variance, squared outcome units). Simple slopes: :func:`simple_slopes` per metric.
    """
    d = attempts.merge(covariates, on=PUZZLE, how="left", validate="many_to_one")
    rows, slopes = [], []
    for m in metrics:
        fit, why = _try_fit(d, f"{outcome} ~ {m} * {moderator}")
        if fit is None:
            base = _unfitted_row(d, [outcome, m, moderator], why)
            common = {k: base[k] for k in ("n", "converged", "warnings", "llf_reml")}
            fixed = {k: base[k] for k in ("coef", "se", "z", "p", "ci_low", "ci_high")}
            fixed |= {"df_satt": base["df_satt"], "p_satt": base["p_satt"]}
            for term in ("Intercept", m, moderator, f"{m}:{moderator}"):
                rows.append({"metric": m, "term": term, **fixed, **common})
            for vname in ("var_participant", "var_puzzle", "var_residual"):
                rows.append({"metric": m, "term": vname, "coef": base[vname], **common})
            s = pd.DataFrame({"moderator_value": [float(w) for w in at]})
            for c in ("slope", "se", "z", "p", "ci_low", "ci_high"):
                s[c] = float("nan")
            s.insert(0, "metric", m)
            s["n"] = base["n"]
            slopes.append(s)
            continue
        summ = _fit_summary(fit)
        common = {
            "n": fit.n,
            "converged": fit.converged,
            "warnings": summ["warnings"],
            "llf_reml": fit.llf,
        }
        for term in fit.params.index:
            r = {"metric": m, "term": term}
            r.update(_fixed_row(fit, term))
            r["df_satt"] = df_s = satterthwaite_df(fit, term)
            r["p_satt"] = (
                float(2 * stats.t.sf(abs(r["z"]), df_s)) if np.isfinite(df_s) else float("nan")
            )
            r.update(common)
            rows.append(r)
        for vname in ("var_participant", "var_puzzle", "var_residual"):
            r = {"metric": m, "term": vname, "coef": float(getattr(fit, vname))}
            r.update(common)
            rows.append(r)
        s = simple_slopes(fit, m, moderator, at=at)
        s.insert(0, "metric", m)
        s["n"] = fit.n
        slopes.append(s)
    return pd.DataFrame(rows), pd.concat(slopes, ignore_index=True)
