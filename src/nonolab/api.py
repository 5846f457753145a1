"""The Python entry points of nonolab, one function per step of the analysis.

``import nonolab`` gives every name of :data:`__all__` (``nonolab.ingest_study``,
``nonolab.bt_ranking``, ...), loaded on first use so that ``import nonolab`` stays cheap.
Each function here is the one the workflow's rules call, or a short composition of them, so a
result computed in Python is the result the workflow writes for the same inputs and settings.

A study, step by step (the workflow's order; docs/examples/api_tour.py runs it)::

    import nonolab

    study = nonolab.ingest_study("data/example-study")            # tables + ledger
    gaps = nonolab.interaction_gaps(study.tables["events"])["gap_s"]
    model = nonolab.fit_pause_model(gaps)                          # threshold_s in seconds
    attempts = nonolab.attempt_features(study.tables, model.threshold_s)
    strengths = nonolab.bt_ranking(attempts)                       # Bradley-Terry strengths
    metrics = nonolab.sat_metrics(nonolab.study_puzzles(study))    # solver counters
    t1 = nonolab.table1(strengths, attempts, metrics)              # Spearman rho and p

The SAT toolkit needs only the core dependencies (numpy, python-sat): :func:`solve`,
:func:`generate_puzzles`, :class:`Puzzle`. Everything else needs the ``pipeline`` extra.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover - names for the type hints only
    import pandas as pd

    from nonolab.sat.puzzles import Puzzle
    from nonolab.stats.lmm import CrossedFit
    from nonolab.stats.pauses import PauseModel
    from nonolab.study.ingest import IngestResult


def ingest_study(study_dir: str | os.PathLike, preset: str = "auto") -> IngestResult:
    """Read a study folder into tidy tables and an exclusion ledger.

    ``preset`` is a preset name under ``config/studies/``, a preset file, or ``auto`` (the
    preset whose fingerprint matches the study's puzzle file, else ``default``;
    docs/presets.md). Returns an :class:`nonolab.study.ingest.IngestResult`: ``tables`` maps
    ``events``, ``attempts``, ``participants``, ``ratings``, ``survey_texts``, ``puzzles`` and
    ``ledger`` to DataFrames (times as UTC timestamps), ``summary`` holds the counts. Raises
    :class:`nonolab.study.presets.StudyError` (a ``ValueError``) for a study that cannot be
    used, naming the file.
    """
    from nonolab.study.ingest import ingest_study as _ingest
    from nonolab.study.presets import resolve_preset

    return _ingest(study_dir, resolve_preset(study_dir, preset))


def interaction_gaps(events: pd.DataFrame) -> pd.DataFrame:
    """Return one row per gap between consecutive interaction events of an attempt, from the
    ``events`` table of :func:`ingest_study`: ``participant_id``, ``puzzle_id``,
    ``puzzle_hash``, ``order`` and ``gap_s`` (seconds, >= 0). The pause model is fitted to
    ``gap_s``."""
    from nonolab.study.features import interaction_gaps as _gaps

    return _gaps(events)


def fit_pause_model(
    gaps_s: Sequence[float] | Any,
    components: int = 3,
    n_init: int = 10,
    seed: int = 42,
    *,
    threshold: str | float = "fitted",
    preset: str | None = None,
    study_dir: str | os.PathLike | None = None,
    max_components: int | None = None,
) -> PauseModel:
    """Fit the pause model to the gaps (seconds) as the workflow's ``pauses`` rule does
    (:func:`nonolab.stats.pauses.pause_threshold` with the converged EM fit), with the
    config's names: ``components`` (mixtures with 1..``components`` components), ``n_init``,
    ``seed`` (the config's ``random_state``) and ``threshold`` (``fitted``, ``auto`` = the
    preset's published value when it has one, or seconds). ``preset`` (a name or file, or
    ``auto`` with ``study_dir``) supplies the published threshold for ``auto`` and for the
    chain's fixed step.

    Returns a :class:`nonolab.stats.pauses.PauseModel` of the largest mixture fitted whose
    ``threshold_s`` (seconds) is the threshold to count pauses with: the end of the threshold
    chain (never an error on finite non-negative gaps), or the preset's or the given value;
    ``provenance`` holds the full record (``threshold_sentences``, ``threshold_provenance``,
    ``clock_resolution``, ``mass_points``, ...). ``max_components`` is the deprecated name of
    ``components``."""
    import warnings

    from nonolab.stats.pauses import pause_model_from_record, pause_threshold

    if max_components is not None:
        warnings.warn(
            "fit_pause_model(max_components=...) is deprecated: use components=... (the "
            "config's name)",
            DeprecationWarning,
            stacklevel=2,
        )
        components = max_components
    preset_threshold = None
    if preset is not None:
        from nonolab.study.presets import resolve_preset

        if preset == "auto" and study_dir is None:
            raise ValueError("preset='auto' needs study_dir (the preset is found from it)")
        data = resolve_preset(study_dir or ".", preset).data
        preset_threshold = (data.get("published") or {}).get("pause_threshold_s")
    rec = pause_threshold(
        gaps_s,
        threshold=threshold,
        preset_threshold=preset_threshold,
        components=components,
        n_init=n_init,
        random_state=seed,
        em_tol="converged",
        converged={"random_state_checks": 0},
    )
    return pause_model_from_record(rec)


def attempt_features(
    tables: dict[str, pd.DataFrame],
    threshold_s: float,
    keep_initial_rating_sentinel: bool = False,
) -> pd.DataFrame:
    """Return one row per attempt (``participant_id``, ``puzzle_id``, ``puzzle_hash``,
    ``order``, ``time_to_solve_s`` in seconds, ``pause_count`` = gaps longer than
    ``threshold_s`` seconds, ``error_count``, ``hint_count``, initial and final ratings 1-5,
    ...) from the ``tables`` of :func:`ingest_study`. ``keep_initial_rating_sentinel`` keeps the
    platform's -1 initial rating of a skipped puzzle instead of a missing value."""
    from nonolab.study.features import attempt_features as _features

    return _features(tables, threshold_s, keep_initial_rating_sentinel)


def bt_ranking(
    attempts: pd.DataFrame,
    rating: str = "final_difficulty",
    n_boot: int = 0,
    seed: int = 0,
    level: float = 0.95,
) -> pd.DataFrame:
    """Return the Bradley-Terry strengths of reported difficulty, one row per puzzle.

    Each participant's ratings of ``rating`` (a column of :func:`attempt_features`) give one
    within-participant comparison per pair of puzzles they rated (a tie counts half each
    way). Columns: ``puzzle_id``, ``puzzle_hash``, ``strength`` (geometric mean 1; larger =
    rated harder), ``log_strength`` (natural log), ``rank`` (1 = hardest), ``ci_low`` /
    ``ci_high`` (percentile interval at ``level`` of ``n_boot`` participant-bootstrap
    resamples drawn with ``seed``; NaN when ``n_boot`` is 0) and ``status``.
    """
    from nonolab.stats.ranking import (
        bootstrap_log_strengths,
        pairwise_comparisons,
        strengths_table,
    )

    hashes = dict(zip(attempts["puzzle_id"], attempts["puzzle_hash"], strict=False))
    items = sorted(attempts["puzzle_id"].unique(), key=lambda s: (len(str(s)), str(s)))
    comparisons = pairwise_comparisons(attempts, rating_col=rating)
    boot = bootstrap_log_strengths(comparisons, items, n_boot, seed) if n_boot else None
    table = strengths_table(comparisons, items, boot, level=level, hashes=hashes)
    return table.drop(columns=[c for c in table.columns if c.endswith("_published_semantics")])


def study_puzzles(study: IngestResult) -> list[Puzzle]:
    """Return the puzzles of an ingested study (its ``puzzles`` table) as
    :class:`nonolab.sat.puzzles.Puzzle` objects labelled by puzzle id."""
    from nonolab.measure.tables import puzzles_from_table

    return list(puzzles_from_table(study.tables["puzzles"]))


def sat_metrics(
    puzzles: Iterable[Puzzle],
    solvers: Iterable[str] = ("minisat22", "glucose42", "cadical195"),
    encodings: Iterable[str] = ("block_start",),
) -> pd.DataFrame:
    """Return the SAT solver counters of every puzzle, one row per puzzle x encoding x solver:
    ``puzzle_hash``, ``puzzle_id``, ``encoding``, ``solver``, ``variables``, ``clauses``,
    ``decisions``, ``propagations``, ``conflicts``, ``restarts`` (counts), ``time_s`` (wall
    seconds) and ``status``. Counters are deterministic; times are not."""
    from nonolab.measure.tables import stats_table

    return stats_table(puzzles, encodings, solvers)


def table1(
    strengths: pd.DataFrame,
    attempts: pd.DataFrame,
    metrics: pd.DataFrame,
    rating: str = "final_difficulty",
    exact_max_n: int | None = None,
    n_perm: int = 100_000,
    seed: int = 0,
) -> pd.DataFrame:
    """Return Table 1: the Spearman correlation of each puzzle's Bradley-Terry strength
    (:func:`bt_ranking`) and of its mean ``rating`` with each SAT metric (:func:`sat_metrics`),
    one row per solver x encoding x metric, each puzzle joined to its own statistics.

    Columns include ``bt_rho``, ``bt_p`` (two-sided permutation p: exact over every order of
    up to ``exact_max_n`` puzzles, default :data:`nonolab.stats.correlations.EXACT_MAX_N`, else
    ``n_perm`` draws seeded by ``seed``; never 0), ``p_method`` (which of the two),
    ``bt_p_asymptotic`` (Student t approximation, for comparison), ``bt_p_fdr``
    (Benjamini-Hochberg of ``bt_p`` over the metrics), and the same for the raw mean rating
    (``raw_*``).
    """
    from nonolab.stats.correlations import EXACT_MAX_N, aligned_metrics, raw_mean_rating
    from nonolab.stats.correlations import table1 as _table1

    exact_max_n = EXACT_MAX_N if exact_max_n is None else exact_max_n

    served = attempts[["puzzle_id", "puzzle_hash"]].drop_duplicates()
    aligned = {"corrected": aligned_metrics(metrics, served)}
    raw = raw_mean_rating(attempts, rating_col=rating)
    return _table1(strengths, raw, aligned, exact_max_n=exact_max_n, n_perm=n_perm, seed=seed)


def fit_mixed_model(data: pd.DataFrame, formula: str, reml: bool = True) -> CrossedFit:
    """Fit a linear mixed model with crossed random intercepts for ``participant_id`` and
    ``puzzle_id`` (the workflow's behaviour and moderation models; lme4's
    ``y ~ x + (1|participant_id) + (1|puzzle_id)``). ``formula`` gives the fixed effects in
    statsmodels' formula syntax (``"pause_count ~ metric"``); rows with a missing value are
    dropped. Returns a :class:`nonolab.stats.lmm.CrossedFit` (``params``, ``bse``,
    ``cov_params``, variance components, ``n``)."""
    from nonolab.stats.lmm import fit_crossed

    return fit_crossed(data, formula, reml=reml)


def solve(puzzle: Puzzle, timeout_s: float | None = None) -> Any:
    """Solve a puzzle and decide whether its solution is unique (line propagation, then SAT on
    what is left). Returns a :class:`nonolab.sat.result.SolveResult`: ``status`` (``unique``,
    ``multiple``, ``unsat`` or ``unknown`` after ``timeout_s`` seconds), ``grid`` (rows of 0/1)
    and phase ``times`` in seconds."""
    from nonolab.sat.fastsolve import solve as _solve

    return _solve(puzzle, timeout_s=timeout_s)


def generate_puzzles(
    count: int, height: int, width: int, filled: int | None = None, seed: int = 0
) -> list[Puzzle]:
    """Return ``count`` distinct random puzzles of ``height`` x ``width`` cells, each with
    exactly ``filled`` filled cells (default: half the cells, rounded down) and a unique
    solution (proven by SAT), drawn from ``numpy.random.default_rng(seed)``: the same seed
    gives the same puzzles (``nonolab generate``)."""
    import numpy as np

    from nonolab.sat.generate import random_unique_puzzles

    n = height * width // 2 if filled is None else filled
    rng = np.random.default_rng(seed)
    return list(random_unique_puzzles(count, height, width, n, rng, distinct=True))


def load_puzzles(path: str | os.PathLike) -> list[Puzzle]:
    """Return the puzzles of a file in any supported format (a study puzzle file, ``.non``,
    ``.nin``, TAAI text, a CSV or Parquet table, ...; format from the extension and
    content), each labelled."""
    from nonolab.measure.puzzle_files import read_puzzles

    return list(read_puzzles(path))


def __getattr__(name: str) -> Any:
    if name == "Puzzle":
        from nonolab.sat.puzzles import Puzzle

        return Puzzle
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "Puzzle",
    "attempt_features",
    "bt_ranking",
    "fit_mixed_model",
    "fit_pause_model",
    "generate_puzzles",
    "ingest_study",
    "interaction_gaps",
    "load_puzzles",
    "sat_metrics",
    "solve",
    "study_puzzles",
    "table1",
]
