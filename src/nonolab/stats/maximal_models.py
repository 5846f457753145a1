"""The models a reviewer asks for: maximal random effects, small-sample df, LRT, FDR.

For the moderation models (``outcome ~ metric * expertise``, METHODS 9) and the behaviour models
(``behaviour ~ metric``), fitted with the random-effects structure the design supports
(:mod:`nonolab.stats.lmm_general`), reduced by a fixed rule when the fit is singular:

1. ``maximal``: by-participant slopes for the (puzzle-level) metric and by-puzzle slopes for the
   (participant-level) moderator, each correlated with its intercept: ``(1 + metric |
   participant) + (1 + expertise | puzzle)`` (behaviour models: ``(1 + metric | participant) +
   (1 | puzzle)``, a puzzle-level metric cannot vary within a puzzle);
2. ``maximal_uncorrelated``: the same slopes without the intercept-slope correlations (``||``);
3. ``participant_slope`` (moderation only): the by-puzzle slope dropped first (6 puzzles carry
   the least information about a variance);
4. ``intercepts``: crossed random intercepts (the published structure).

The first step whose fit is not singular (lme4's ``isSingular`` on unit-RMS design columns)
is kept; if every step is singular the last is kept and flagged. Each structure's term of
interest (the interaction; the metric slope) gets its REML estimate and SE, Satterthwaite and
Kenward-Roger t tests (lmerTest / pbkrtest), a likelihood-ratio test of the term by ML fits of
the model with and without it (chi-square, 1 df) and, with ``n_boot`` > 0, a parametric
bootstrap of that LRT (responses simulated from the ML null fit, both models refitted).
BH-FDR runs over the metric family (the metrics of one alignment and, for behaviour models,
one behaviour set), on the Kenward-Roger p (``p_fdr``), the Satterthwaite p and the LRT p.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import stats

from nonolab.stats.lmm import PARTICIPANT, PUZZLE, _formula_columns
from nonolab.stats.lmm_general import (
    GeneralFit,
    RandomTerm,
    fit_general,
    refit,
    refit_llf_batch,
    simulate_general,
)
from nonolab.stats.mixed_models import BEHAVIOURS, METRICS, _p_fdr

__all__ = [
    "Structure",
    "behaviour_maximal",
    "behaviour_structures",
    "maximal_by_transform",
    "moderation_maximal",
    "moderation_structures",
    "reduce_structure",
    "term_tests",
]


@dataclass(frozen=True)
class Structure:
    """A named random-effects structure (one step of the reduction rule)."""

    name: str
    terms: tuple[RandomTerm, ...]

    def label(self) -> str:
        """Return the structure in lme4 syntax."""
        return " + ".join(t.label() for t in self.terms)

    def describe(self) -> str:
        """Return the structure in words (:meth:`RandomTerm.describe`, joined by ``"; "``)."""
        return "; ".join(t.describe() for t in self.terms)


def moderation_structures(metric: str, moderator: str) -> list[Structure]:
    """Return the reduction steps of ``outcome ~ metric * moderator`` (module text), in order."""
    p, g = PARTICIPANT, PUZZLE
    return [
        Structure("maximal", (RandomTerm(p, ("1", metric)), RandomTerm(g, ("1", moderator)))),
        Structure(
            "maximal_uncorrelated",
            (RandomTerm(p, ("1", metric), False), RandomTerm(g, ("1", moderator), False)),
        ),
        Structure("participant_slope", (RandomTerm(p, ("1", metric), False), RandomTerm(g))),
        Structure("intercepts", (RandomTerm(p), RandomTerm(g))),
    ]


def behaviour_structures(metric: str) -> list[Structure]:
    """Return the reduction steps of ``behaviour ~ metric`` (module text), in order."""
    p, g = PARTICIPANT, PUZZLE
    return [
        Structure("maximal", (RandomTerm(p, ("1", metric)), RandomTerm(g))),
        Structure("maximal_uncorrelated", (RandomTerm(p, ("1", metric), False), RandomTerm(g))),
        Structure("intercepts", (RandomTerm(p), RandomTerm(g))),
    ]


def reduce_structure(
    data: pd.DataFrame, formula: str, structures: Sequence[Structure]
) -> tuple[list[GeneralFit | None], int, str]:
    """Fit ``formula`` (REML) with each structure in order until one is not singular.

    Returns ``(fits, kept, reason)``: the REML fits tried (None where the fit failed), the index
    of the kept one (the first non-singular; the last tried when all are singular or failed)
    and the reason in words, e.g. ``"maximal singular (boundary: puzzle_hash:x);
    maximal_uncorrelated not singular: kept"``.
    """
    fits: list[GeneralFit | None] = []
    why: list[str] = []
    for s in structures:
        try:
            f = fit_general(data, formula, s.terms)
        except (ValueError, FloatingPointError, np.linalg.LinAlgError) as e:
            fits.append(None)
            why.append(f"{s.name} not fitted ({e})")
            continue
        fits.append(f)
        if not f.singular:
            why.append(f"{s.name} not singular: kept")
            return fits, len(fits) - 1, "; ".join(why)
        why.append(f"{s.name} singular (boundary: {', '.join(f.boundary_terms())})")
    ok = [i for i, f in enumerate(fits) if f is not None]
    if not ok:
        return fits, len(fits) - 1, "; ".join(why) + "; nothing fitted"
    return fits, ok[-1], "; ".join(why) + f"; every step singular: kept {structures[ok[-1]].name}"


def term_tests(
    data: pd.DataFrame,
    fit: GeneralFit,
    term: str,
    null_formula: str,
    *,
    n_boot: int = 0,
    seed: int = 0,
) -> dict[str, float | int | bool | str]:
    """Return the tests of fixed-effect ``term`` of REML ``fit``.

    Keys: ``coef``, ``se`` (lme4's, outcome units), ``df_satt``, ``p_satt``, ``se_kr``,
    ``df_kr``, ``p_kr`` (t tests), ``lrt_chi2``, ``lrt_p`` (ML fits of ``fit.formula`` and of
    ``null_formula`` with the same random terms on the same rows, started from the REML
    and the full ML optimum; chi-square with 1 df),
    ``p_boot_lrt`` (``(1 + #{chi2* >= chi2}) / (1 + n_valid)`` over ``n_boot`` responses
    simulated from the ML null fit with ``numpy.random.default_rng(seed)``, both models
    refitted by :func:`nonolab.stats.lmm_general.refit_llf_batch` from their ML optima; NaN
    when ``n_boot`` is 0), ``n_boot``, ``singular``, ``converged``, ``n``, ``llf_reml`` and
    ``boundary`` (the flat directions of the covariance).
    """
    sat = fit.satterthwaite(term)
    kr = fit.kenward_roger(term)
    full_ml = refit(fit, fit._y, reml=False, warm=False, precise=True)
    null_ml = _null_ml(data, full_ml, term, null_formula)
    if null_ml.n != full_ml.n:
        raise ValueError("term_tests: the null model uses other rows than the full model")
    chi2 = max(2.0 * (full_ml.llf - null_ml.llf), 0.0)
    out: dict[str, float | int | bool | str] = {
        "coef": sat.estimate,
        "se": sat.se,
        "df_satt": sat.df,
        "p_satt": sat.p,
        "se_kr": kr.se,
        "df_kr": kr.df,
        "p_kr": kr.p,
        "lrt_chi2": chi2,
        "lrt_p": float(stats.chi2.sf(chi2, 1)),
    }
    p_boot, n_valid = float("nan"), 0
    if n_boot > 0:
        rng = np.random.default_rng(seed)
        ystar = np.array([simulate_general(null_ml, rng) for _ in range(n_boot)])
        chi2_star = 2.0 * (refit_llf_batch(full_ml, ystar) - refit_llf_batch(null_ml, ystar))
        valid = np.isfinite(chi2_star)
        n_valid = int(valid.sum())
        exceed = int((chi2_star[valid] >= chi2 - 1e-9).sum())
        p_boot = (1 + exceed) / (1 + n_valid) if n_valid else float("nan")
    out |= {"p_boot_lrt": p_boot, "n_boot": n_valid}
    out |= {
        "singular": fit.singular,
        "converged": fit.converged and full_ml.converged and null_ml.converged,
        "n": fit.n,
        "llf_reml": fit.llf,
        "boundary": ", ".join(fit.boundary_terms()),
    }
    return out


def _null_ml(data: pd.DataFrame, full_ml: GeneralFit, term: str, null_formula: str) -> GeneralFit:
    """Return the ML fit of ``null_formula`` with ``full_ml``'s random terms, started from
    ``full_ml``'s optimum: :func:`fit_general` on ``data``, or, when ``null_formula`` is
    ``full_ml``'s formula without ``term`` (same response, every other term kept, each one
    design column) and keeps the same rows, the same fit from ``full_ml``'s design without
    ``term``'s column (the design the formula would build, without building it again)."""
    from patsy import ModelDesc

    def names(formula: str) -> tuple[list[str], list[str]]:
        desc = ModelDesc.from_formula(formula)
        return [t.name() for t in desc.lhs_termlist], [t.name() for t in desc.rhs_termlist]

    (lhs, rhs), (lhs0, rhs0) = names(full_ml.formula), names(null_formula)
    cols = list(full_ml.params.index)
    if lhs == lhs0 and rhs == cols and term in cols and rhs0 == [c for c in cols if c != term]:
        used = _formula_columns(null_formula, data)
        used += [c for t in full_ml.terms for c in (*t.columns, t.group) if c != "1"]
        if len(data.dropna(subset=list(dict.fromkeys(used)))) == full_ml.n:
            keep = [i for i, c in enumerate(cols) if c != term]
            return refit(
                full_ml, full_ml._y, X=full_ml._X[:, keep], names=rhs0, warm=False, precise=True
            )
    return fit_general(data, null_formula, full_ml.terms, reml=False, start=full_ml)


#: Columns of :func:`term_tests` that are missing (NaN) for a structure that could not be fitted.
_TEST_COLUMNS = (
    "coef", "se", "df_satt", "p_satt", "se_kr", "df_kr", "p_kr", "lrt_chi2", "lrt_p",
    "p_boot_lrt", "singular", "llf_reml",
)  # fmt: skip


def _family_rows(
    d: pd.DataFrame,
    jobs: Sequence[tuple[dict[str, str], str, str, str, list[Structure]]],
    *,
    n_boot: int,
    seed: int,
    log: Callable[[str], None] | None,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Fit every job ``(labels, formula, null formula, term, structures)``: the reduction rule,
    then the steps after the kept one too (for reference, ``reason`` saying so). Returns (kept
    rows, one row per structure), FDR columns not yet added."""
    kept_rows, all_rows = [], []
    for k, (labels, formula, null_formula, term, structures) in enumerate(jobs):
        fits, kept, reason = reduce_structure(d, formula, structures)
        for i, s in enumerate(structures):
            row: dict[str, object] = {**labels, "structure": s.name}
            why = reason
            if i < len(fits):
                f = fits[i]
            else:
                why = f"after the kept step, fitted for reference ({reason})"
                try:
                    f = fit_general(d, formula, s.terms)
                except (ValueError, FloatingPointError, np.linalg.LinAlgError) as e:
                    f, why = None, f"not fitted ({e})"
            if f is None:  # every test column present, missing: the table keeps its layout
                row |= dict.fromkeys(_TEST_COLUMNS, np.nan)
                row |= {"n_boot": 0, "converged": False, "n": 0, "boundary": ""}
            else:
                row |= term_tests(
                    d, f, term, null_formula, n_boot=n_boot if i == kept else 0, seed=seed + k
                )
            row |= {"kept": i == kept, "random_effects": s.describe(), "reason": why}
            all_rows.append(row)
            if i == kept:
                kept_rows.append(row)
        if log is not None:
            r = kept_rows[-1]
            log(f"{labels}: kept {r['structure']} ({reason}); p_kr={r.get('p_kr', np.nan):.4g}")
    return pd.DataFrame(kept_rows), pd.DataFrame(all_rows)


_FIRST = ["structure", "coef", "se", "df_satt", "p_satt", "df_kr", "p_kr", "lrt_chi2", "lrt_p"]


def _with_fdr(t: pd.DataFrame, family: Sequence[str]) -> pd.DataFrame:
    """Add ``p_fdr`` (BH of ``p_kr``), ``p_satt_fdr``, ``lrt_p_fdr`` within each ``family``
    group; order the columns with the stable ones first."""
    t = t.copy()
    for src, dst in (("p_kr", "p_fdr"), ("p_satt", "p_satt_fdr"), ("lrt_p", "lrt_p_fdr")):
        t[dst] = np.nan
        for _, idx in t.groupby(
            family[0] if len(family) == 1 else list(family), sort=False
        ).groups.items():
            t.loc[idx, dst] = _p_fdr(t.loc[idx, src].astype(float))
    lead = [
        c for c in t.columns if c not in _FIRST and c in ("behaviour", "outcome_column", "metric")
    ]
    first = lead + _FIRST + ["p_fdr", "singular", "n"]
    return t[first + [c for c in t.columns if c not in first]]


def moderation_maximal(
    attempts: pd.DataFrame,
    covariates: pd.DataFrame,
    *,
    outcome: str = "final_difficulty",
    moderator: str = "expertise_composite",
    metrics: Sequence[str] = METRICS,
    n_boot: int = 0,
    seed: int = 0,
    log: Callable[[str], None] | None = None,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Return (kept table, every structure) for the ``metric:moderator`` interaction of
    ``outcome ~ metric * moderator``, one model per metric.

    Kept table: one row per metric with the structure kept by :func:`reduce_structure` over
    :func:`moderation_structures`; columns ``metric, structure, coef, se, df_satt, p_satt,
    df_kr, p_kr, lrt_chi2, lrt_p, p_fdr, singular, n`` first (``coef``/``se`` in outcome units
    per metric unit per moderator unit; ``p_fdr`` = BH of ``p_kr`` over the metrics), then
    ``se_kr``, ``p_boot_lrt``, ``n_boot``, ``converged``, ``llf_reml``, ``boundary``,
    ``kept``, ``random_effects`` (:meth:`Structure.describe`), ``reason``, ``p_satt_fdr``,
    ``lrt_p_fdr``. The second table has the same columns, one row per metric x structure: the
    steps tried and, for reference, the steps after the kept one (FDR over the metrics within
    each structure).
    Bootstrap seeds: ``seed + metric index``, for the kept structure only.
    """
    d = attempts.merge(covariates, on=PUZZLE, how="left", validate="many_to_one")
    jobs = [
        (
            {"metric": m},
            f"{outcome} ~ {m} * {moderator}",
            f"{outcome} ~ {m} + {moderator}",
            f"{m}:{moderator}",
            moderation_structures(m, moderator),
        )
        for m in metrics
    ]
    kept, tried = _family_rows(d, jobs, n_boot=n_boot, seed=seed, log=log)
    return _with_fdr(kept, ["kept"]), _with_fdr(tried, ["structure"])


def behaviour_maximal(
    attempts: pd.DataFrame,
    covariates: pd.DataFrame,
    *,
    behaviours: Mapping[str, str] | Sequence[str] = BEHAVIOURS,
    metrics: Sequence[str] = METRICS,
    n_boot: int = 0,
    seed: int = 0,
    log: Callable[[str], None] | None = None,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Return (kept table, every structure) for the metric slope of ``behaviour ~ metric``.

    As :func:`moderation_maximal` with :func:`behaviour_structures`; leading columns
    ``behaviour, outcome_column, metric``; FDR over all behaviour x metric rows (as
    :func:`nonolab.stats.mixed_models.behaviour_models`). Bootstrap seeds ``seed + row index``.
    """
    if not isinstance(behaviours, Mapping):
        behaviours = {c: BEHAVIOURS.get(c, c) for c in behaviours}
    d = attempts.merge(covariates, on=PUZZLE, how="left", validate="many_to_one")
    jobs = [
        (
            {"behaviour": label, "outcome_column": col, "metric": m},
            f"{col} ~ {m}",
            f"{col} ~ 1",
            m,
            behaviour_structures(m),
        )
        for col, label in behaviours.items()
        for m in metrics
    ]
    kept, tried = _family_rows(d, jobs, n_boot=n_boot, seed=seed, log=log)
    return _with_fdr(kept, ["kept"]), _with_fdr(tried, ["structure"])


def maximal_by_transform(
    table: Callable[..., tuple[pd.DataFrame, pd.DataFrame]],
    attempts: pd.DataFrame,
    sat_metrics: pd.DataFrame,
    pool_statistics: pd.DataFrame | str | None,
    covariates: Mapping[str, object],
    transforms: Sequence[str],
    *,
    n_boot: int = 0,
    seed: int = 0,
    log: Callable[[str], None] | None = None,
    **kwargs: object,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Run ``table`` (:func:`moderation_maximal` or :func:`behaviour_maximal`) under every
    alignment (:func:`nonolab.stats.mixed_models.across_alignments`) for each metric transform.

    ``covariates``: keyword arguments of :func:`nonolab.stats.mixed_models.study_covariates`
    (its ``metric_transform`` is replaced by each of ``transforms``). Returns (kept rows of the
    first transform, every structure under every transform), each with columns ``alignment``
    first and ``metric_transform`` second. The bootstrap (``n_boot`` draws, seed ``seed``) runs
    for the first transform only.
    """
    from nonolab.stats.mixed_models import across_alignments, study_covariates

    kept_first, steps = None, []
    for k, tr in enumerate(transforms):
        cov = study_covariates(
            attempts, sat_metrics, pool_statistics, **{**covariates, "metric_transform": tr}
        )

        def run(c: pd.DataFrame, _nb: int = n_boot if k == 0 else 0):
            return table(attempts, c, n_boot=_nb, seed=seed, log=log, **kwargs)

        kept, tried = across_alignments(cov, run)
        kept.insert(1, "metric_transform", tr)
        tried.insert(1, "metric_transform", tr)
        kept_first = kept if kept_first is None else kept_first
        steps.append(tried)
    if kept_first is None:
        raise ValueError("maximal_by_transform: no metric transform given")
    return kept_first, pd.concat(steps, ignore_index=True)
