"""Power of a planned study by simulating its exact design (docs/designing-a-study.md).

A design (:class:`Design`) is the schedule actually served (sessions x M puzzle indices, the
first ``participants`` sessions of the plan), the selected puzzles' target-metric values and the
share of ratings that go missing. Every analysis is simulated on that design, many replications
at once:

* ``spearman_bt`` (:func:`spearman_power`): the puzzle-level Spearman correlation of
  Bradley-Terry difficulty with the metric. Latent difficulty ``D_j = sd (r s_j + sqrt(1 - r^2)
  e_j)`` with ``s_j`` the normal scores of the metric's ranks in the pool (or among the selected
  puzzles, :class:`Design`) and ``r = 2 sin(pi rho / 6)`` (``rho``: the Spearman correlation in
  the population of puzzles the scores refer to); final ratings by the simulator's rating
  model (:class:`RatingModel`: ``mean + D_j + b_E E_i + v_i + noise``, rounded and clipped to 1-5,
  each missing with probability ``missing``); BT strengths from within-session pairs
  (:func:`nonolab.stats.power.bt_scores_batch`) and the Spearman test against the metric
  (:func:`nonolab.stats.power.spearman_tests`).
* ``rating_lmm`` and ``moderation_lmm`` (:func:`lmm_power`): ``final_difficulty ~ metric
  (+ expertise + metric:expertise) + (1 | participant) + (1 | puzzle)``, ratings from the same
  model with latent difficulty ``D_j = sd (m x_j + sqrt(1 - m^2) e_j)`` (``x`` the
  log1p-z-scored metric on the pool's or the selection's scale, :class:`Design`; ``m`` the
  metric strength) plus ``b_int x_j E_i``, and analysed with the pipeline's covariate (the
  metric log1p-z-scored over the selected puzzles); ``behaviour_lmm``: ``behaviour ~ metric + (1 |
  participant) + (1 | puzzle)`` for a Gaussian behaviour outcome in SD units
  (:class:`BehaviourModel`). Fits are REML, batched: all replications that share a draw of the
  covariates (expertise, missing ratings; ``chunk`` replications) are fitted together by
  :func:`nonolab.stats.lmm.reml_fit_batch` started at the true relative SDs, and tested with
  Satterthwaite df (:func:`nonolab.stats.lmm.satterthwaite_df_batch`) as
  :func:`nonolab.stats.mixed_models.moderation_models` does (a boundary fit has no df and counts
  as not significant, as there). Power is averaged over covariate draws.
* ``moderation_maximal`` (:func:`maximal_power`): the moderation model with correlated random
  slopes of the metric by participant, ``(1 + metric | participant) + (1 | puzzle)``, fitted by
  :func:`nonolab.stats.lmm_general.refit` per replication (warm-started from the first fit) and
  tested with Satterthwaite or Kenward-Roger df.

Effect sizes from a study's fitted models (``nonolab design --effects-from``) are converted to
these models' parameters by :mod:`nonolab.design.effects`: the moderation model's coefficients
and variance components give :class:`RatingModel` (``b_x = difficulty_sd * metric_strength``,
``var_puzzle = difficulty_sd^2 (1 - metric_strength^2)``, ``interaction`` and
``expertise_effect`` as fitted, ``participant_sd^2 = var_participant``, ``residual_sd^2 =
var_residual``), the behaviour model's give :class:`BehaviourModel` (slope and variances over
the summed variance components), and the metric slopes are moved from the study's puzzles' SD
of ``log1p(metric)`` to the pool's (:func:`nonolab.design.effects.to_pool_scale`).

Every result carries its Monte-Carlo standard error ``sqrt(p (1 - p) / R)`` and a 95% Wilson
interval.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field

import numpy as np
from scipy import special, stats

from nonolab.stats.lmm import (
    _single_thread_blas,
    reml_fit_arrays,
    reml_fit_batch,
    satterthwaite_df_batch,
)
from nonolab.stats.power import (
    bt_win_counts,
    pearson_for_spearman,
    regularised_bt,
    spearman_tests,
)
from nonolab.stats.ranking import strongly_connected_batch

#: analysis kinds simulated here
ANALYSES = ("spearman_bt", "rating_lmm", "moderation_lmm", "behaviour_lmm", "moderation_maximal")


@dataclass(frozen=True)
class RatingModel:
    """The simulator's final-rating model (:class:`nonolab.sim.model.SimParams`, rating points).

    ``metric_strength``: correlation of latent difficulty with the metric covariate (LMM
    analyses; the Spearman analysis takes its ``rho`` separately); ``interaction``: change of
    the metric's effect per SD of expertise (rating points per SD x SD; the moderation effect);
    ``slope_sd`` / ``slope_corr``: SD of participants' metric slopes and its correlation with
    their intercepts (the maximal structure's extra random effects); ``scale``: ``rating``
    (rounded and clipped to 1-5, as the simulator and the study) or ``gaussian`` (the latent
    value, as simr simulates from a fitted lme4 model).
    """

    rating_mean: float = 3.4
    difficulty_sd: float = 0.6
    metric_strength: float = 0.6
    expertise_effect: float = -0.15
    participant_sd: float = 0.4
    noise_sd: float = 0.7
    final_noise_sd: float = 0.35
    interaction: float = 0.1
    slope_sd: float = 0.1
    slope_corr: float = 0.0
    scale: str = "rating"

    @property
    def residual_sd(self) -> float:
        """SD of the final rating's noise (initial and final noise together)."""
        return math.hypot(self.noise_sd, self.final_noise_sd)

    def record(self) -> dict[str, object]:
        """Return the model as a plain mapping."""
        return asdict(self)


@dataclass(frozen=True)
class BehaviourModel:
    """A Gaussian behaviour outcome in SD units: ``slope`` per SD of the metric covariate and
    the variance shares of participants, puzzles (beyond the metric) and the residual."""

    slope: float = 0.3
    var_participant: float = 0.3
    var_puzzle: float = 0.15
    var_residual: float = 0.55

    def record(self) -> dict[str, object]:
        """Return the model as a plain mapping."""
        return asdict(self)


@dataclass(frozen=True)
class Design:
    """One design: ``queues`` (participants x M puzzle indices 0..K-1, the sessions served),
    ``metric`` (the K selected puzzles' target-metric counts), ``missing`` (probability that a
    final rating is missing).

    ``pool_scores`` / ``pool_z``: the puzzles' metric on the pool's scale (normal scores of
    their pool percentiles; log1p z-scored with the pool's mean and SD), on which latent
    difficulty depends, so that a selection that spreads the metric over the pool gains power;
    None: on the selection's own scale (:func:`normal_scores`, :func:`metric_covariate`), as
    when the puzzles are a random draw (the simulator's studies)."""

    queues: np.ndarray
    metric: np.ndarray
    missing: float = 0.1
    pool_scores: np.ndarray | None = None
    pool_z: np.ndarray | None = None

    @property
    def latent_scores(self) -> np.ndarray:
        """The rank scores latent difficulty depends on (Spearman analysis)."""
        if self.pool_scores is not None:
            return np.asarray(self.pool_scores, dtype=float)
        return normal_scores(self.metric)

    @property
    def latent_z(self) -> np.ndarray:
        """The metric scale latent difficulty depends on (mixed-model analyses)."""
        if self.pool_z is not None:
            return np.asarray(self.pool_z, dtype=float)
        return metric_covariate(self.metric)

    @property
    def n_participants(self) -> int:
        """Number of participants (sessions)."""
        return int(self.queues.shape[0])

    @property
    def n_puzzles(self) -> int:
        """Number of puzzles (K)."""
        return int(len(self.metric))

    @property
    def per_session(self) -> int:
        """Puzzles per session (M)."""
        return int(self.queues.shape[1])


@dataclass(frozen=True)
class PowerResult:
    """Power of one analysis at one design: rejections out of ``replications`` (independent:
    each draws its own data, expertise and missing ratings); ``failed``: replications whose
    test was undefined, counted as not rejected, for the reason ``undefined_reason``
    (Spearman: the Bradley-Terry ranking cannot be estimated; mixed models: a variance
    component at the boundary, where the pipeline has no Satterthwaite df, or a failed fit).

    Mixed models also carry ``boundary`` (replications whose fit has a variance at 0) and
    ``rejections_lmertest`` (rejections when boundary fits are tested as lmerTest does, with
    the df of the model without the zero component; None: not a mixed model).
    ``chunk_rejections``: rejections per consecutive ``chunk`` replications (the check that
    they vary as binomial counts, :meth:`dispersion`)."""

    analysis: str
    n_participants: int
    n_puzzles: int
    per_session: int
    effect: float
    replications: int
    rejections: int
    failed: int
    alpha: float
    seed: int
    extra: dict[str, float] = field(default_factory=dict)
    undefined_reason: str = ""
    boundary: int | None = None
    rejections_lmertest: int | None = None
    chunk: int = 0
    chunk_rejections: tuple[int, ...] = ()

    @property
    def undefined_share(self) -> float:
        """Share of replications whose test was undefined (counted as not rejected)."""
        return self.failed / self.replications if self.replications else float("nan")

    @property
    def boundary_share(self) -> float | None:
        """Share of replications whose fit has a variance component at 0 (mixed models)."""
        if self.boundary is None or not self.replications:
            return None
        return self.boundary / self.replications

    @property
    def power_lmertest(self) -> float | None:
        """Power with boundary fits tested as lmerTest does (mixed models; else None)."""
        if self.rejections_lmertest is None or not self.replications:
            return None
        return self.rejections_lmertest / self.replications

    def dispersion(self) -> float | None:
        """Return the across-chunk variance of the rejection counts over the binomial variance
        ``c p (1 - p)`` of chunks of ``c`` independent replications (about 1 when the
        replications are independent; None with fewer than two whole chunks or p at 0 or 1).
        Its chi-square statistic ``(chunks - 1) x dispersion`` has ``chunks - 1`` df."""
        whole = [r for r in self.chunk_rejections][: self.replications // max(self.chunk, 1)]
        p = self.power
        if len(whole) < 2 or not 0 < p < 1 or self.chunk < 1:
            return None
        a = np.asarray(whole, dtype=float)
        return float(((a - self.chunk * p) ** 2).sum() / (len(a) - 1) / (self.chunk * p * (1 - p)))

    @property
    def power(self) -> float:
        """Share of replications with p < alpha."""
        return self.rejections / self.replications if self.replications else float("nan")

    @property
    def mc_se(self) -> float:
        """Monte-Carlo standard error of :attr:`power`."""
        p = self.power
        return math.sqrt(p * (1 - p) / self.replications) if self.replications else float("nan")

    def interval(self, level: float = 0.95) -> tuple[float, float]:
        """Return the Wilson interval of :attr:`power` at ``level``."""
        n, p = self.replications, self.power
        if not n:
            return float("nan"), float("nan")
        z = stats.norm.ppf(0.5 + level / 2)
        den = 1 + z * z / n
        mid = (p + z * z / (2 * n)) / den
        half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / den
        return mid - half, mid + half

    def row(self) -> dict[str, object]:
        """Return a flat table row."""
        lo, hi = self.interval()
        return {
            "analysis": self.analysis,
            "n_participants": self.n_participants,
            "n_puzzles": self.n_puzzles,
            "per_session": self.per_session,
            "effect": self.effect,
            "replications": self.replications,
            "power": self.power,
            "mc_se": self.mc_se,
            "ci_low": lo,
            "ci_high": hi,
            "failed": self.failed,
            "undefined_share": self.undefined_share,
            "undefined_reason": self.undefined_reason,
            "boundary_share": self.boundary_share,
            "power_lmertest": self.power_lmertest,
            "mc_dispersion": self.dispersion(),
            "alpha": self.alpha,
            "seed": self.seed,
            **self.extra,
        }


POWER_COLUMNS = [
    "analysis",
    "n_participants",
    "n_puzzles",
    "per_session",
    "effect",
    "replications",
    "power",
    "mc_se",
    "ci_low",
    "ci_high",
    "failed",
    "undefined_share",
    "undefined_reason",
    "boundary_share",
    "power_lmertest",
    "mc_dispersion",
    "alpha",
    "seed",
]

#: why a replication's test is undefined, per kind of analysis
NO_RANKING = "Bradley-Terry ranking not estimable (win graph not strongly connected)"
AT_BOUNDARY = "variance component at the boundary (no Satterthwaite df) or fit failed"


def normal_scores(values: Sequence[float]) -> np.ndarray:
    """Return the standardised normal scores ``Phi^-1((rank - 1/2) / K)`` of ``values``
    (average ranks for ties; mean 0, population SD 1)."""
    v = np.asarray(values, dtype=float)
    r = stats.rankdata(v)
    s = special.ndtri((r - 0.5) / len(v))
    sd = s.std()
    return (s - s.mean()) / sd if sd > 0 else s - s.mean()


def metric_covariate(values: Sequence[float]) -> np.ndarray:
    """Return the pipeline's metric covariate: z-score of ``log1p(values)`` over the selected
    puzzles (population SD; :func:`nonolab.stats.mixed_models.metric_covariates`)."""
    x = np.log1p(np.asarray(values, dtype=float))
    sd = x.std()
    if not sd > 0:
        raise ValueError("the metric is constant over the selected puzzles")
    return (x - x.mean()) / sd


def _seed(seed: int, *keys: int) -> np.random.SeedSequence:
    return np.random.SeedSequence([seed, *keys])


def _ratings(latent: np.ndarray, model: RatingModel, rng: np.random.Generator) -> np.ndarray:
    y = latent + rng.normal(0.0, model.residual_sd, latent.shape)
    if model.scale == "rating":
        return np.clip(np.floor(y + 0.5), 1, 5)
    return y


def spearman_power(
    design: Design,
    rho: float,
    replications: int,
    seed: int,
    model: RatingModel | None = None,
    alpha: float = 0.05,
    bt_ridge: float = 0.01,
    require_connected: bool = True,
) -> PowerResult:
    """Return the power of the Spearman test of BT difficulty with the metric (module text)
    at population Spearman ``rho``; all replications drawn at once (seed ``[seed, N, K, 1]``).

    ``require_connected``: as the ranking stage, a replication whose win graph is not strongly
    connected has no Bradley-Terry ML estimate and counts as not rejected (``failed``); its
    strengths are otherwise the regularised ones (``bt_ridge``), whose ranking is the ML one's
    up to near-ties."""
    model = model or RatingModel()
    rng = np.random.default_rng(_seed(seed, design.n_participants, design.n_puzzles, 1))
    n_r, k = replications, design.n_puzzles
    s = design.latent_scores
    r = pearson_for_spearman(rho)
    d = model.difficulty_sd * (r * s + math.sqrt(1 - r * r) * rng.standard_normal((n_r, k)))
    q = np.broadcast_to(design.queues, (n_r, *design.queues.shape))
    n_i = design.n_participants
    person = model.expertise_effect * rng.standard_normal((n_r, n_i)) + rng.normal(
        0, model.participant_sd, (n_r, n_i)
    )
    d_q = np.take_along_axis(d, q.reshape(n_r, -1), axis=1).reshape(q.shape)
    ratings = _ratings(model.rating_mean + d_q + person[..., None], model, rng)
    ratings[rng.random(q.shape) < design.missing] = np.nan
    qc = np.ascontiguousarray(q)
    wins = bt_win_counts(qc, ratings, k)
    score = regularised_bt(wins, bt_ridge)
    metric = np.broadcast_to(np.asarray(design.metric, dtype=float), (n_r, k))
    rho_hat, p = spearman_tests(metric, score)
    if require_connected:
        p = np.where(strongly_connected_batch(wins > 0), p, np.nan)
    sig = np.nan_to_num(p, nan=1.0) < alpha
    chunk = 100
    counts = tuple(int(sig[i : i + chunk].sum()) for i in range(0, n_r, chunk))
    return PowerResult(
        "spearman_bt",
        design.n_participants,
        k,
        design.per_session,
        rho,
        n_r,
        int(sig.sum()),
        int(np.isnan(p).sum()),
        alpha,
        seed,
        {"mean_estimate": float(np.nanmean(rho_hat))},
        undefined_reason=NO_RANKING,
        chunk=chunk,
        chunk_rejections=counts,
    )


def _lmm_chunk(
    analysis: str,
    design: Design,
    model: RatingModel,
    behaviour: BehaviourModel,
    n: int,
    rng: np.random.Generator,
) -> tuple[np.ndarray, np.ndarray, list[np.ndarray], int, np.ndarray, np.ndarray | None]:
    """Return ``(Y, X, codes, tested column, true relative SDs, keep)`` of ``n`` independent
    replications: each draws its own expertise (z-scored over the participants), its own
    missing ratings and its own responses. ``Y``: n x rows (every scheduled attempt); ``X``:
    rows x p, or n x rows x p when it holds the replication's expertise (moderation);
    ``codes``: participant and puzzle of every row; ``keep``: n x rows, the rows each
    replication has (its ratings not missing), None when every row is kept."""
    q = design.queues
    n_i, m = q.shape
    x = metric_covariate(design.metric)
    xl = design.latent_z
    pc = np.repeat(np.arange(n_i), m)
    qc = q.ravel()
    rows = len(qc)
    k = design.n_puzzles
    keep = None
    if analysis == "behaviour_lmm":  # no covariate drawn: every replication has the same design
        b = behaviour
        y = (
            b.slope * xl[qc]
            + math.sqrt(b.var_participant) * rng.standard_normal((n, n_i))[:, pc]
            + math.sqrt(b.var_puzzle) * rng.standard_normal((n, k))[:, qc]
            + math.sqrt(b.var_residual) * rng.standard_normal((n, rows))
        )
        X = np.column_stack([np.ones(rows), x[qc]])
        col = 1
        rel = np.sqrt([b.var_participant, b.var_puzzle]) / math.sqrt(b.var_residual)
    else:
        e = rng.standard_normal((n, n_i))
        if n_i > 1:
            sd = e.std(axis=1, keepdims=True)
            e = (e - e.mean(axis=1, keepdims=True)) / np.where(sd > 0, sd, 1.0)
        if design.missing > 0:
            keep = rng.random((n, rows)) >= design.missing
        s = model.metric_strength
        d = model.difficulty_sd * (s * xl + math.sqrt(1 - s * s) * rng.standard_normal((n, k)))
        person = rng.normal(0.0, model.participant_sd, (n, n_i))
        ep = e[:, pc]
        latent = (
            model.rating_mean
            + d[:, qc]
            + model.expertise_effect * ep
            + model.interaction * (xl[qc] * ep)
            + person[:, pc]
        )
        y = _ratings(latent, model, rng)
        if analysis == "rating_lmm":
            X = np.column_stack([np.ones(rows), x[qc]])
            col = 1
        else:
            X = np.stack(
                [np.ones((n, rows)), np.broadcast_to(x[qc], (n, rows)), ep, x[qc] * ep], axis=2
            )
            col = 3
        puz_sd = model.difficulty_sd * math.sqrt(1 - s * s)
        rel = np.array([model.participant_sd, max(puz_sd, 1e-3)]) / model.residual_sd
    return y, X, [pc, qc], col, rel, keep


def pd_codes(a: np.ndarray) -> np.ndarray:
    """Return 0-based dense codes of the values of ``a`` (sorted order)."""
    return np.unique(a, return_inverse=True)[1]


#: the conventions for a fit with a random-effect variance at the boundary (0): the pipeline's
#: (no Satterthwaite df, counted as not significant) and lmerTest's (the df of the model
#: without the zero component, which is what lmerTest's numerical Hessian gives there)
BOUNDARY_CONVENTIONS = ("not_significant", "lmertest")


@dataclass(frozen=True)
class LmmTests:
    """Tests of one fixed effect for a batch of responses: ``estimate``, ``p`` (the
    pipeline's convention: NaN at the boundary or when the fit failed), ``p_lmertest`` (the
    boundary fits tested with the df of the model without the zero component; NaN only when
    the fit failed), ``boundary`` (a random-effect variance at 0) and ``failed`` (the fit
    failed), each one per response."""

    estimate: np.ndarray
    p: np.ndarray
    p_lmertest: np.ndarray
    boundary: np.ndarray
    failed: np.ndarray


def lmm_tests(
    Y: np.ndarray,
    X: np.ndarray,
    codes: list[np.ndarray],
    col: int,
    start: Sequence[float] | None = None,
    keep: np.ndarray | None = None,
) -> LmmTests:
    """Return the :class:`LmmTests` of fixed effect ``col`` for every response of ``Y``
    (random intercepts for the two factors of ``codes``; ``X`` shared or one per response,
    ``keep`` the rows of each response: :func:`nonolab.stats.lmm.reml_fit_batch`).

    Batched REML; a response whose batched fit does not converge is refitted alone
    (:func:`nonolab.stats.lmm.reml_fit_arrays`). Satterthwaite df as lmerTest
    (:func:`nonolab.stats.lmm.satterthwaite_df_batch`); at the boundary (a variance below
    1e-6 of the residual's) the pipeline has no df and ``p`` is NaN, while ``p_lmertest``
    uses the Satterthwaite df of the model without the zero component(s) (none left: the
    residual df ``n - p``)."""
    from nonolab.stats.lmm import _Cross, _variance_derivatives

    Y = np.atleast_2d(Y)
    B, n = Y.shape
    each = keep is not None or np.ndim(X) == 3
    beta, cov, var, _, ok = reml_fit_batch(Y, X, codes, start=start, keep=keep)
    kp = np.ones((B, n), dtype=bool) if keep is None else np.asarray(keep, dtype=bool)
    Xb = np.broadcast_to(np.asarray(X, dtype=float), (B, n, np.shape(X)[-1]))
    failed = np.zeros(B, dtype=bool)
    for i in np.flatnonzero(~ok):
        r = kp[i]
        try:
            b_i, c_i, v_i, _ = reml_fit_arrays(
                Y[i][r], Xb[i][r], [c[r] for c in codes], start=start
            )
            beta[i], cov[i], var[i] = b_i, c_i, v_i
        except (np.linalg.LinAlgError, ValueError, FloatingPointError):
            beta[i], var[i] = np.nan, np.nan
            failed[i] = True
    cvec = np.zeros(Xb.shape[2])
    cvec[col] = 1.0
    df = satterthwaite_df_batch(Y, X, codes, var, cvec, keep=keep if each else None)
    with np.errstate(invalid="ignore", divide="ignore"):
        t = beta[:, col] / np.sqrt(cov[:, col, col])
        p = 2 * special.stdtr(df, -np.abs(t))
    boundary = ~failed & np.isfinite(var).all(axis=1)
    boundary &= np.minimum(var[:, 0], var[:, 1]) < 1e-6 * np.maximum(var[:, 2], 1e-300)
    df_l = df.copy()
    for i in np.flatnonzero(boundary):
        r = kp[i]
        live = [j for j in range(2) if var[i, j] >= 1e-6 * max(var[i, 2], 1e-300)]
        if not live:
            df_l[i] = r.sum() - Xb.shape[2]
            continue
        try:
            c = _Cross.of(Y[i][r], Xb[i][r], [codes[j][r] for j in live])
            phi, g, H, _ = _variance_derivatives(c, var[i, live], var[i, 2], cvec)
            df_l[i] = 2 * phi**2 / (g @ (2 * np.linalg.inv(H)) @ g)
        except np.linalg.LinAlgError:
            df_l[i] = np.nan
    with np.errstate(invalid="ignore", divide="ignore"):
        p_l = 2 * special.stdtr(df_l, -np.abs(t))
    return LmmTests(beta[:, col], p, p_l, boundary, failed)


def lmm_test_batch(
    Y: np.ndarray,
    X: np.ndarray,
    codes: list[np.ndarray],
    col: int,
    start: Sequence[float] | None = None,
    keep: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray, int]:
    """Return ``(estimate, Satterthwaite p, failed fits)`` of fixed effect ``col`` for every
    response of ``Y`` (:func:`lmm_tests`; p NaN at the boundary or when the fit failed)."""
    r = lmm_tests(Y, X, codes, col, start, keep)
    return r.estimate, r.p, int(r.failed.sum())


def lmm_power(
    analysis: str,
    design: Design,
    replications: int,
    seed: int,
    model: RatingModel | None = None,
    behaviour: BehaviourModel | None = None,
    alpha: float = 0.05,
    chunk: int = 100,
    progress: Callable[[int, int], None] | None = None,
    boundary: str = "not_significant",
) -> PowerResult:
    """Return the power of the random-intercept model ``analysis`` (``rating_lmm``,
    ``moderation_lmm`` or ``behaviour_lmm``; module text) by batched REML fits and
    Satterthwaite tests of independent replications (each its own expertise, missing ratings
    and responses), fitted ``chunk`` at a time (seed ``[seed, N, K, 2 + kind]``).
    ``boundary``: how a fit with a variance component at 0 is tested
    (:data:`BOUNDARY_CONVENTIONS`); the result carries the share of such fits and the power
    under lmerTest's convention either way."""
    if analysis not in ("rating_lmm", "moderation_lmm", "behaviour_lmm"):
        raise ValueError(f"unknown random-intercept analysis {analysis!r}")
    model = model or RatingModel()
    behaviour = behaviour or BehaviourModel()
    kind = ("rating_lmm", "moderation_lmm", "behaviour_lmm").index(analysis)
    rng = np.random.default_rng(_seed(seed, design.n_participants, design.n_puzzles, 2 + kind))
    if boundary not in BOUNDARY_CONVENTIONS:
        raise ValueError(f"boundary convention {boundary!r}: one of {BOUNDARY_CONVENTIONS}")
    rej = rej_l = failed = done = n_boundary = undefined = 0
    est_sum = 0.0
    counts: list[int] = []
    while done < replications:
        n = min(chunk, replications - done)
        Y, X, codes, col, rel, keep = _lmm_chunk(analysis, design, model, behaviour, n, rng)
        r = lmm_tests(Y, X, codes, col, start=rel, keep=keep)
        sig = np.nan_to_num(r.p, nan=1.0) < alpha
        sig_l = np.nan_to_num(r.p_lmertest, nan=1.0) < alpha
        use = sig if boundary == "not_significant" else sig_l
        p_use = r.p if boundary == "not_significant" else r.p_lmertest
        failed += int(r.failed.sum())
        n_boundary += int(r.boundary.sum())
        undefined += int(np.isnan(p_use).sum())
        rej += int(use.sum())
        rej_l += int(sig_l.sum())
        counts.append(int(use.sum()))
        est_sum += float(np.nansum(r.estimate))
        done += n
        if progress is not None:
            progress(done, replications)
    effect = {
        "rating_lmm": model.metric_strength,
        "moderation_lmm": model.interaction,
        "behaviour_lmm": behaviour.slope,
    }[analysis]
    return PowerResult(
        analysis,
        design.n_participants,
        design.n_puzzles,
        design.per_session,
        effect,
        replications,
        rej,
        undefined,
        alpha,
        seed,
        {"mean_estimate": est_sum / max(replications - failed, 1), "fit_failures": failed},
        undefined_reason=AT_BOUNDARY,
        boundary=n_boundary,
        rejections_lmertest=rej_l,
        chunk=chunk,
        chunk_rejections=tuple(counts),
    )


def _maximal_draw(
    design: Design, model: RatingModel, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Return one independent replication of the maximal model's data: ``(y, X, participant,
    puzzle)`` over its kept rows (its own expertise, z-scored over participants, its own
    missing ratings, puzzle effects, correlated participant intercepts and metric slopes and
    rating noise); ``X`` = ``[1, metric, expertise, metric x expertise]`` with the pipeline's
    metric covariate."""
    q = design.queues
    n_i, m = q.shape
    k = design.n_puzzles
    x = metric_covariate(design.metric)
    xl = design.latent_z
    pc = np.repeat(np.arange(n_i), m)
    qc = q.ravel()
    e = rng.standard_normal(n_i)
    if n_i > 1 and e.std() > 0:
        e = (e - e.mean()) / e.std()
    keep = rng.random(len(qc)) >= design.missing
    s = model.metric_strength
    d = model.difficulty_sd * (s * xl + math.sqrt(1 - s * s) * rng.standard_normal(k))
    c = model.slope_corr * model.participant_sd * model.slope_sd
    cov = np.array([[model.participant_sd**2, c], [c, model.slope_sd**2]])
    u = rng.multivariate_normal(np.zeros(2), cov, size=n_i, method="cholesky")
    latent = (
        model.rating_mean
        + d[qc]
        + (model.expertise_effect * e)[pc]
        + model.interaction * (xl[qc] * e[pc])
        + u[pc, 0]
        + u[pc, 1] * xl[qc]
    )
    y = _ratings(latent, model, rng)[keep]
    X = np.column_stack([np.ones(len(qc)), x[qc], e[pc], x[qc] * e[pc]])[keep]
    return y, X, pc[keep], qc[keep]


@_single_thread_blas
def maximal_power(
    design: Design,
    replications: int,
    seed: int,
    model: RatingModel | None = None,
    alpha: float = 0.05,
    method: str = "satterthwaite",
    progress: Callable[[int, int], None] | None = None,
) -> PowerResult:
    """Return the power of the metric x expertise interaction under the maximal structure
    ``(1 + metric | participant) + (1 | puzzle)`` (correlated), responses simulated with the
    model's participant slopes (``slope_sd``, ``slope_corr``); ``method``: ``satterthwaite``
    or ``kenward_roger`` df. Every replication is independent (:func:`_maximal_draw`: its own
    expertise and missing ratings, so its own rows); the first is fitted by
    :func:`~nonolab.stats.lmm_general.fit_general`, the others warm-started from its optimum
    (as :func:`~nonolab.stats.lmm_general.refit`, on their own rows). Seed ``[seed, N, K,
    9]``."""
    import pandas as pd

    from nonolab.stats.lmm_general import RandomTerm, _fit_arrays, _Term, fit_general

    model = model or RatingModel()
    rng = np.random.default_rng(_seed(seed, design.n_participants, design.n_puzzles, 9))
    names = ["Intercept", "metric", "expertise", "metric:expertise"]
    formula = "y ~ metric * expertise"
    specs = (RandomTerm("participant_id", ("1", "metric")), RandomTerm("puzzle_hash"))
    term = "metric:expertise"
    rej = failed = 0
    est: list[float] = []
    sig: list[bool] = []
    start = None
    for b in range(replications):
        y, X, pc, qc = _maximal_draw(design, model, rng)
        try:
            if start is None:
                data = pd.DataFrame(
                    {"y": y, "metric": X[:, 1], "expertise": X[:, 2],
                     "participant_id": pc.astype(str), "puzzle_hash": qc.astype(str)}
                )  # fmt: skip
                f = fit_general(data, formula, specs)
                start = f._theta_scaled
            else:
                tdata = []
                for spec, codes_raw in zip(specs, (pc, qc), strict=True):
                    vals = X[:, :2] if len(spec.columns) == 2 else X[:, :1]
                    scale = np.sqrt(np.mean(vals**2, axis=0))
                    scale[scale == 0] = 1.0
                    codes = np.unique(codes_raw, return_inverse=True)[1]
                    tdata.append(_Term(codes, vals / scale, scale, int(codes.max()) + 1, spec))
                f = _fit_arrays(y, X, names, tuple(tdata), formula, True, start, ())
            t = f.satterthwaite(term) if method == "satterthwaite" else f.kenward_roger(term)
            est.append(t.estimate)
            ok = bool(np.isfinite(t.p) and t.p < alpha)
            rej += ok
            failed += not np.isfinite(t.p)
            sig.append(ok)
        except (np.linalg.LinAlgError, ValueError, FloatingPointError):
            failed += 1
            sig.append(False)
        if progress is not None and ((b + 1) % 50 == 0 or b + 1 == replications):
            progress(b + 1, replications)
    chunk = 100
    counts = tuple(int(sum(sig[i : i + chunk])) for i in range(0, len(sig), chunk))
    return PowerResult(
        f"moderation_maximal_{method}",
        design.n_participants,
        design.n_puzzles,
        design.per_session,
        model.interaction,
        replications,
        rej,
        failed,
        alpha,
        seed,
        {"mean_estimate": float(np.mean(est)) if est else float("nan")},
        undefined_reason="fit failed or no df",
        chunk=chunk,
        chunk_rejections=counts,
    )


def expected_sample_rho(
    design: Design, rho: float, draws: int = 4000, seed: int = 0, sd: float = 1.0
) -> tuple[float, float]:
    """Return the mean and SD over ``draws`` of the Spearman correlation between latent
    difficulty and the metric over the design's own K puzzles (unitless): the estimand a
    study of these puzzles estimates, as against ``rho``, the Spearman correlation in the
    population of puzzles the latent scores refer to (the pool). Latent difficulty as
    :func:`spearman_power` draws it (no rating noise: the correlation a study with
    unlimited participants would find); tied metric values get average ranks."""
    rng = np.random.default_rng(_seed(seed, design.n_puzzles, 7))
    s = design.latent_scores
    r = pearson_for_spearman(rho)
    d = sd * (r * s + math.sqrt(1 - r * r) * rng.standard_normal((draws, design.n_puzzles)))
    m = stats.rankdata(np.asarray(design.metric, dtype=float))
    rd = stats.rankdata(d, axis=1)
    mc, rc = m - m.mean(), rd - rd.mean(axis=1, keepdims=True)
    den = np.sqrt((mc**2).sum() * (rc**2).sum(axis=1))
    with np.errstate(invalid="ignore", divide="ignore"):
        rs = (rc @ mc) / den
    return float(np.nanmean(rs)), float(np.nanstd(rs))
