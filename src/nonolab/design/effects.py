"""Effect sizes for ``nonolab design`` from a study's fitted models (``--effects-from``).

A results folder written by ``nonolab run`` (a pilot, or the public study) holds the fits the
planned analyses need; :func:`effects_from_results` reads them and returns the overrides
:func:`nonolab.design.study.settings_with` takes, each value with its source (file, line, row
key, fitted study). The conversion to the simulator's parameters
(:class:`nonolab.design.power.RatingModel`, :class:`nonolab.design.power.BehaviourModel`) is the
one the simulation model implies (docs/designing-a-study.md, "Effect sizes from a study's
results"):

* ``results/tables/moderation.csv`` (``final_difficulty ~ x * E + (1 | participant) + (1 |
  puzzle)``, ``x`` the metric log1p-z-scored over the study's puzzles, ``E`` the expertise
  composite in SD units; rows of the ``alignment`` and the primary metric). The simulator's
  rating is ``mean + sd (m x + sqrt(1 - m^2) e_j) + b_E E + b_int x E + v_i + noise``, so
  ``rating_mean`` = Intercept, ``expertise_effect`` = the ``E`` coefficient, ``interaction`` =
  the ``x:E`` coefficient (rating points per SD x SD), ``participant_sd`` =
  ``sqrt(var_participant)``, ``difficulty_sd`` = ``sqrt(b_x^2 + var_puzzle)`` and
  ``metric_strength`` = ``b_x / difficulty_sd`` (the metric slope ``b_x = sd m`` and the
  puzzle variance beyond the metric ``sd^2 (1 - m^2)``), and the residual SD
  ``sqrt(var_residual)``, split into ``noise_sd`` and ``final_noise_sd`` in the simulator's
  default proportion (only their root sum of squares enters the simulation). The fit is of
  whole-point ratings clipped to 1-5 and the simulator's parameters are of the latent rating it
  rounds and clips; the values are taken as they are, which is conservative: simulating from
  known parameters and refitting (tests/design/test_effects_from_results.py; 200 simulated
  studies of 240 participants x 3 of 24 puzzles at the default model) returns the residual SD
  within 1% (rounding adds variance, clipping removes about as much) and the metric slope, the
  interaction, the expertise effect and the participant SD 5-10% closer to 0, so power computed
  from a study's fits is, if anything, underestimated.
* The metric scale. The fitted slopes are per SD of ``log1p(metric)`` over the study's puzzles
  (``results/sat/metrics.csv``, population SD); the design's latent difficulty depends on the
  metric z-scored over the eligible pool (:func:`nonolab.design.selection.pool_scales`). So
  :func:`to_pool_scale` multiplies the metric slope ``b_x`` (and with it ``difficulty_sd`` and
  ``metric_strength``, the puzzle variance beyond the metric kept), the interaction and the
  behaviour slope by ``SD_pool / SD_study`` once the pool is known (``run_design``).
* ``results/tables/behaviour_models.csv`` (``behaviour ~ x + (1 | participant) + (1 |
  puzzle)``, row of the ``alignment``, the behaviour and the metric). The simulator's
  behaviour outcome is in SD units of everything the metric does not explain: with ``V =
  var_participant + var_puzzle + var_residual``, ``slope = coef / sqrt(V)`` and the variance
  shares are each component over ``V``.
* ``results/tables/table1_spearman.csv``: ``bt_rho`` of the alignment, solver, encoding and
  metric, as ``rho``. It is the observed Spearman correlation of a few puzzles' Bradley-Terry
  strengths with the metric, a noisy estimate of the population value (the public study's
  0.48 over six puzzles has a Fisher-z 95% interval of -0.57 to 0.93, with the Spearman
  variance 1.06 / (n - 3)); it is reported and used as is, nothing more.

The results folder is checked first: every file named in :data:`REQUIRED` must exist, the
tables must have been fitted with the requested solver, encoding and the ``log1p_z`` metric
transform (their provenance sidecars), and the rows used must be converged fits.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from nonolab.design.power import BehaviourModel, RatingModel
from nonolab.study.schemas import read_csv, read_table

#: files a results folder must hold (relative to the folder holding ``results/``)
MODERATION = "results/tables/moderation.csv"
BEHAVIOUR = "results/tables/behaviour_models.csv"
TABLE1 = "results/tables/table1_spearman.csv"
SAT = "results/sat/metrics.csv"
STUDY = "results/ingest/study.json"
REQUIRED = (MODERATION, BEHAVIOUR, TABLE1, SAT, STUDY)
#: provenance sidecars of the fitted tables (they say how the models were fitted)
SIDECARS = tuple(r.replace(".csv", ".provenance.json") for r in (MODERATION, BEHAVIOUR, TABLE1))

#: the metric transform the design's mixed models use (power.metric_covariate)
TRANSFORM = "log1p_z"
MODERATOR = "expertise_composite"
#: key columns read as text (a behaviour label or metric never becomes a number)
TEXT_COLUMNS = ("alignment", "metric", "term", "behaviour", "outcome_column", "solver", "encoding")


class ResultsError(ValueError):
    """A results folder that cannot give effect sizes; the message names the file."""


def results_root(results_dir: str | Path) -> Path:
    """Return the folder holding ``results/``: ``results_dir`` itself (``nonolab run
    --results DIR``) or its parent when ``results_dir`` is the ``results`` folder."""
    d = Path(results_dir)
    if not d.is_dir():
        raise ResultsError(f"{d}: no such results folder")
    if not (d / "results").is_dir() and (d / "tables").is_dir() and d.name == "results":
        return d.parent
    return d


def check_results(results_dir: str | Path) -> Path:
    """Return the folder holding ``results/`` after checking that every file of
    :data:`REQUIRED` and :data:`SIDECARS` exists; raise :class:`ResultsError`
    naming the first missing file and the ``nonolab run`` target that writes it."""
    root = results_root(results_dir)
    for rel in (*REQUIRED, *SIDECARS):
        if not (root / rel).is_file():
            target = rel if rel.endswith(".csv") else MODERATION
            if rel in SIDECARS:
                target = rel.replace(".provenance.json", ".csv")
            raise ResultsError(
                f"{root / rel}: missing; the results folder is incomplete (make it with "
                f"`nonolab run --results {root} {target}`)"
            )
    return root


def _params(root: Path, rel: str) -> dict[str, Any]:
    side = root / (rel[: -len(".csv")] + ".provenance.json")
    try:
        return dict(json.loads(side.read_text(encoding="utf-8")).get("params") or {})
    except (OSError, ValueError) as e:
        raise ResultsError(f"{side}: unreadable provenance sidecar ({e})") from None


def _check_fit_params(root: Path, rel: str, solver: str, encoding: str) -> None:
    p = _params(root, rel)
    want = {"solver": solver, "encoding": encoding, "metric_transform": TRANSFORM}
    for k, v in want.items():
        if p.get(k) != v:
            raise ResultsError(
                f"{root / rel}: fitted with {k} {p.get(k)!r}, the design needs {v!r} "
                f"(config models.{k})"
            )


def _table(root: Path, rel: str, columns: Sequence[str]) -> pd.DataFrame:
    df = read_csv(root / rel, text=TEXT_COLUMNS)
    missing = [c for c in columns if c not in df.columns]
    if missing:
        raise ResultsError(f"{root / rel}: no column(s) {missing}")
    return df


def _row(root: Path, rel: str, df: pd.DataFrame, **key: str) -> tuple[pd.Series, int, str]:
    """Return (row, line number in the file with the header as line 1, key text) of the one
    row matching ``key``; raise naming the file and the key otherwise."""
    mask = pd.Series(True, index=df.index)
    for c, v in key.items():
        mask &= df[c].astype(str) == str(v)
    hits = df.index[mask]
    text = ", ".join(f"{c} {v}" for c, v in key.items())
    if len(hits) != 1:
        raise ResultsError(f"{root / rel}: {len(hits)} rows with {text} (needs exactly one)")
    i = int(hits[0])
    return df.loc[i], i + 2, text


def _value(root: Path, rel: str, row: pd.Series, line: int, column: str) -> float:
    v = float(row[column])
    if not math.isfinite(v):
        raise ResultsError(f"{root / rel} line {line}: {column} is not a number (fit failed?)")
    if "converged" in row and str(row["converged"]).lower() not in ("true", "1"):
        raise ResultsError(f"{root / rel} line {line}: the fit did not converge")
    return v


def rating_from_moderation(
    *,
    intercept: float,
    slope: float,
    expertise: float,
    interaction: float,
    var_participant: float,
    var_puzzle: float,
    var_residual: float,
) -> dict[str, float]:
    """Return the :class:`~nonolab.design.power.RatingModel` fields the fitted moderation
    model ``rating ~ x * E + (1 | participant) + (1 | puzzle)`` implies (module docstring):
    coefficients in rating points (per SD of ``x``, of ``E``, of both), variances in squared
    rating points. Negative variances count as 0."""
    v_puz, v_part = max(var_puzzle, 0.0), max(var_participant, 0.0)
    v_res = var_residual
    if not v_res > 0:
        raise ValueError(f"residual variance {var_residual:.4g} is not positive")
    sd = math.sqrt(slope * slope + v_puz)
    if not sd > 0:
        raise ValueError("the metric slope and the puzzle variance are both 0")
    default = RatingModel()
    share = default.noise_sd / default.residual_sd
    res_sd = math.sqrt(v_res)
    return {
        "rating_mean": intercept,
        "difficulty_sd": sd,
        "metric_strength": slope / sd,
        "expertise_effect": expertise,
        "participant_sd": math.sqrt(v_part),
        "noise_sd": res_sd * share,
        "final_noise_sd": res_sd * math.sqrt(1 - share * share),
        "interaction": interaction,
    }


def behaviour_from_fit(
    coef: float, var_participant: float, var_puzzle: float, var_residual: float
) -> dict[str, float]:
    """Return the :class:`~nonolab.design.power.BehaviourModel` fields of a fitted
    ``behaviour ~ x + (1 | participant) + (1 | puzzle)``: the slope in SD units of the
    variance the metric does not explain (per SD of ``x``) and the variance shares."""
    comps = [max(v, 0.0) for v in (var_participant, var_puzzle, var_residual)]
    total = sum(comps)
    if not total > 0:
        raise ValueError("the variance components are all 0")
    return {
        "slope": coef / math.sqrt(total),
        "var_participant": comps[0] / total,
        "var_puzzle": comps[1] / total,
        "var_residual": comps[2] / total,
    }


def effects_from_results(
    results_dir: str | Path,
    *,
    metric: str = "conflicts",
    solver: str = "minisat22",
    encoding: str = "block_start",
    behaviour: str = "pause_count",
    alignment: str = "corrected",
) -> dict[str, Any]:
    """Return the effect sizes a study's fitted models give (module docstring):
    ``{"rating": {...}, "behaviour": {...}, "rho": float, "study_metric_sd": float,
    "effect_sources": (...)}``, the keyword arguments of
    :func:`nonolab.design.study.settings_with` (:func:`merge_effects` adds a user's values).

    ``rating``: :class:`~nonolab.design.power.RatingModel` fields (rating points, rating
    points per SD of the metric covariate and per SD of expertise); ``behaviour``:
    :class:`~nonolab.design.power.BehaviourModel` fields (SD units, variance shares);
    ``rho``: the observed Spearman rho of Bradley-Terry strength with ``metric`` (unitless);
    ``effect_sources``: one mapping per value (``field``, ``value``, ``file`` relative to
    ``results``, ``lines``, ``rows``, ``formula``, ``study``, ``results``: the folder);
    ``study_metric_sd``: SD of ``log1p(metric)`` over the study's puzzles (the slopes' unit;
    ``run_design`` moves them to the pool's, :func:`to_pool_scale`). ``behaviour``: the
    behaviour's column (``pause_count``) or table label (``pauses``). Raises :class:`ResultsError` naming the
    file that is missing or cannot give a value."""
    root = check_results(results_dir)
    try:
        study_rec = json.loads((root / STUDY).read_text(encoding="utf-8"))
    except ValueError as e:
        raise ResultsError(f"{root / STUDY}: unreadable ({e})") from None
    study = str(study_rec.get("study_dir", ""))
    if study_rec.get("preset"):
        study += f" (preset {study_rec['preset']})"
    sources: list[dict[str, Any]] = []

    def source(
        field: str, value: float, rel: str, used: list[tuple[int, str]], formula: str
    ) -> None:
        sources.append(
            {
                "field": field,
                "value": value,
                "file": rel,
                "lines": [ln for ln, _ in used],
                "rows": [k for _, k in used],
                "formula": formula,
                "study": study,
                "results": str(root),
            }
        )

    # -- rating model: the moderation table -------------------------------------------------
    _check_fit_params(root, MODERATION, solver, encoding)
    if _params(root, MODERATION).get("outcome", "final_difficulty") != "final_difficulty":
        raise ResultsError(f"{root / MODERATION}: outcome is not final_difficulty")
    mod = _table(root, MODERATION, ["alignment", "metric", "term", "coef", "converged"])
    terms = {
        "intercept": "Intercept",
        "slope": metric,
        "expertise": MODERATOR,
        "interaction": f"{metric}:{MODERATOR}",
        "var_participant": "var_participant",
        "var_puzzle": "var_puzzle",
        "var_residual": "var_residual",
    }
    got: dict[str, tuple[float, int, str]] = {}
    fitted_se: dict[str, list[float]] = {}  # estimate and SE of the slopes (study units)
    for name, term in terms.items():
        row, line, key = _row(root, MODERATION, mod, alignment=alignment, metric=metric, term=term)
        got[name] = (_value(root, MODERATION, row, line, "coef"), line, key + ", coef")
        if name in ("slope", "interaction") and "se" in row:
            se = float(row["se"])
            if math.isfinite(se) and se > 0:
                label = {"slope": "rating.metric_slope", "interaction": "rating.interaction"}
                fitted_se[label[name]] = [got[name][0], se]

    def used(*names: str) -> list[tuple[int, str]]:
        return [(got[n][1], got[n][2]) for n in names]

    if not got["var_residual"][0] > 0:
        raise ResultsError(
            f"{root / MODERATION} line {got['var_residual'][1]}: residual variance "
            f"{got['var_residual'][0]:.4g} is not positive"
        )
    if got["slope"][0] == 0 and not got["var_puzzle"][0] > 0:
        raise ResultsError(f"{root / MODERATION}: the metric slope and puzzle variance are 0")
    rating = rating_from_moderation(**{k: v[0] for k, v in got.items()})
    default = RatingModel()
    sd = rating["difficulty_sd"]
    src = MODERATION
    source("rating.rating_mean", rating["rating_mean"], src, used("intercept"), "Intercept")
    source(
        "rating.difficulty_sd",
        sd,
        src,
        used("slope", "var_puzzle"),
        f"sqrt({metric}^2 + var_puzzle)",
    )
    source(
        "rating.metric_strength",
        rating["metric_strength"],
        src,
        used("slope", "var_puzzle"),
        f"{metric} / sqrt({metric}^2 + var_puzzle)",
    )
    source("rating.expertise_effect", rating["expertise_effect"], src, used("expertise"), MODERATOR)
    source("rating.participant_sd", rating["participant_sd"], src, used("var_participant"), "sqrt")
    for f in ("noise_sd", "final_noise_sd"):
        source(
            f"rating.{f}",
            rating[f],
            src,
            used("var_residual"),
            "sqrt(var_residual) split in the simulator's default proportion "
            f"{default.noise_sd:g}:{default.final_noise_sd:g}",
        )
    source(
        "rating.interaction",
        rating["interaction"],
        src,
        used("interaction"),
        "coef (rating points per SD of metric x SD of expertise)",
    )

    # -- behaviour model ----------------------------------------------------------------------
    _check_fit_params(root, BEHAVIOUR, solver, encoding)
    beh = _table(
        root,
        BEHAVIOUR,
        ["alignment", "behaviour", "outcome_column", "metric", "coef", "var_residual"],
    )
    col = "outcome_column" if behaviour in set(beh["outcome_column"].astype(str)) else "behaviour"
    key = {"alignment": alignment, col: behaviour, "metric": metric}
    row, line, ktext = _row(root, BEHAVIOUR, beh, **key)
    comps = {
        c: max(_value(root, BEHAVIOUR, row, line, c), 0.0)
        for c in ("var_participant", "var_puzzle", "var_residual")
    }
    if not sum(comps.values()) > 0:
        raise ResultsError(f"{root / BEHAVIOUR} line {line}: variance components are all 0")
    behav = behaviour_from_fit(_value(root, BEHAVIOUR, row, line, "coef"), **comps)
    u = [(line, ktext)]
    source("behaviour.slope", behav["slope"], BEHAVIOUR, u, "coef / sqrt(sum of var_*)")
    for c in comps:
        source(f"behaviour.{c}", behav[c], BEHAVIOUR, u, f"{c} / sum of var_*")

    # -- primary test: Table 1 ---------------------------------------------------------------
    t1 = _table(root, TABLE1, ["alignment", "solver", "encoding", "metric", "bt_rho", "n"])
    row, line, ktext = _row(
        root, TABLE1, t1, alignment=alignment, solver=solver, encoding=encoding, metric=metric
    )
    rho = _value(root, TABLE1, row, line, "bt_rho")
    source(
        "rho",
        rho,
        TABLE1,
        [(line, ktext + ", bt_rho")],
        f"observed Spearman rho over {int(row['n'])} puzzles (a noisy estimate)",
    )
    # -- the metric's scale over the study's puzzles --------------------------------------------
    sat = read_table(root / SAT, "sat_metrics")
    sat = sat[(sat["solver"] == solver) & (sat["encoding"] == encoding)]
    sat = sat.drop_duplicates("puzzle_hash")
    if len(sat) < 2 or metric not in sat:
        raise ResultsError(
            f"{root / SAT}: fewer than 2 puzzles with {metric} of {solver}/{encoding}"
        )
    study_sd = float(np.log1p(sat[metric].to_numpy(dtype=float)).std())
    if not study_sd > 0:
        raise ResultsError(f"{root / SAT}: {metric} is constant over the study's puzzles")
    source(
        "metric_sd",
        study_sd,
        SAT,
        [(int(i) + 2, f"solver {solver}, encoding {encoding}") for i in sat.index],
        f"population SD of log1p({metric}) over the study's {len(sat)} puzzles",
    )
    # the values must make valid simulator models
    RatingModel(**rating)
    BehaviourModel(**behav)
    return {
        "rating": rating,
        "behaviour": behav,
        "rho": rho,
        "study_metric_sd": study_sd,
        "effect_sources": tuple(sources),
        "effect_study": _study_facts(root, sat, int(row["n"])) | {"estimates": fitted_se},
    }


def _study_facts(root: Path, sat: pd.DataFrame, n_rho: int) -> dict[str, Any]:
    """Return what the sanity checks need of the fitted study: its number of puzzles (of the
    observed rho), their sizes (``HxW``, from the ingest's puzzle table when present) and
    its participants (when the ingest's participant table is present)."""
    out: dict[str, Any] = {"n_puzzles": int(n_rho)}
    puz = root / "results/ingest/puzzles.parquet"
    if puz.is_file():
        try:
            p = pd.read_parquet(puz, columns=["puzzle_hash", "height", "width"])
            p = p[p["puzzle_hash"].isin(set(sat["puzzle_hash"]))]
            out["sizes"] = sorted(
                {f"{h}x{w}" for h, w in zip(p["height"], p["width"], strict=True)}
            )
        except (OSError, ValueError, KeyError):
            pass
    part = root / "results/ingest/participants.parquet"
    if part.is_file():
        try:
            out["participants"] = int(len(pd.read_parquet(part, columns=["participant_id"])))
        except (OSError, ValueError, KeyError):
            pass
    return out


def merge_effects(
    from_results: Mapping[str, Any] | None,
    user: Mapping[str, Mapping[str, float]] | None,
    user_file: str | Path | None = None,
) -> dict[str, Any]:
    """Return the overrides of ``from_results`` (:func:`effects_from_results`) with the
    user's YAML overrides (:func:`nonolab.design.study.load_effects`) on top: a value the user
    gives replaces the one from the results, and its source becomes ``user_file``."""
    out: dict[str, Any] = {
        "rating": dict((from_results or {}).get("rating", {})),
        "behaviour": dict((from_results or {}).get("behaviour", {})),
    }
    for k in ("rho", "study_metric_sd", "effect_study"):
        if from_results and k in from_results:
            out[k] = from_results[k]
    sources = list((from_results or {}).get("effect_sources", ()))
    for section, values in (user or {}).items():
        for k, v in values.items():
            out.setdefault(section, {})[k] = v
            name = f"{section}.{k}"
            sources = [s for s in sources if s["field"] != name]
            if from_results is not None:
                sources.append(
                    {"field": name, "value": v, "file": str(user_file or ""), "formula": "given"}
                )
    out = {k: v for k, v in out.items() if v != {}}
    if from_results is not None:
        out["effect_sources"] = tuple(sources)
    return out


def to_pool_scale(
    rating: RatingModel,
    behaviour: BehaviourModel,
    sources: Sequence[Mapping[str, Any]],
    study_sd: float,
    pool_sd: float,
) -> tuple[RatingModel, BehaviourModel, tuple[dict[str, Any], ...]]:
    """Return ``(rating, behaviour, sources)`` with the values taken from a study's fits
    (``sources`` with ``lines``) moved from per SD of ``log1p(metric)`` over the study's puzzles
    (``study_sd``) to per SD over the pool (``pool_sd``; module docstring): the metric slope
    ``difficulty_sd * metric_strength`` (the puzzle variance beyond the metric kept), the
    interaction and the behaviour slope times ``pool_sd / study_sd``. Values the user gave are
    left as they are (they are on the pool's scale, as the defaults)."""
    r = pool_sd / study_sd
    fitted = {str(e["field"]) for e in sources if "lines" in e}
    note = f" x {r:.6g} (SD of log1p(metric): pool {pool_sd:.6g} / study {study_sd:.6g})"
    changed: dict[str, float] = {}
    if {"rating.difficulty_sd", "rating.metric_strength"} <= fitted:
        sd, m = rating.difficulty_sd, rating.metric_strength
        b, v = sd * m * r, sd * sd * (1 - m * m)
        sd2 = math.sqrt(b * b + max(v, 0.0))
        changed |= {"rating.difficulty_sd": sd2, "rating.metric_strength": b / sd2}
    if "rating.interaction" in fitted:
        changed["rating.interaction"] = rating.interaction * r
    if "behaviour.slope" in fitted:
        changed["behaviour.slope"] = behaviour.slope * r
    rk = {k.split(".", 1)[1]: v for k, v in changed.items() if k.startswith("rating.")}
    bk = {k.split(".", 1)[1]: v for k, v in changed.items() if k.startswith("behaviour.")}
    out = []
    for e in sources:
        e = dict(e)
        if e["field"] in changed:
            e["value"] = changed[e["field"]]
            e["formula"] = f"{e['formula']}, on the pool's scale:{note}"
        out.append(e)
    return replace(rating, **rk), replace(behaviour, **bk), tuple(out)


def source_text(src: Mapping[str, Any]) -> str:
    """Return one source as a sentence: ``field = value: from FILE line L (row key), formula;
    fitted on study S``."""
    v = src["value"]
    head = f"{src['field']} = {v:.4g}"
    if "lines" not in src:
        return f"{head}: given in {src['file'] or 'the effects file'}"
    where = "; ".join(f"line {ln} ({k})" for ln, k in zip(src["lines"], src["rows"], strict=True))
    folder = f" of {src['results']}" if src.get("results") else ""
    return (
        f"{head}: from {src['file']}{folder} {where}, {src['formula']}; "
        f"fitted on study {src['study']}"
    )


def source_files(sources: Sequence[Mapping[str, Any]]) -> list[str]:
    """Return the files (full paths) the ``sources`` took values from, each once, sorted."""
    out = set()
    for e in sources:
        if e.get("file"):
            out.add(str(Path(e.get("results", "")) / e["file"]) if "lines" in e else e["file"])
    return sorted(out)


__all__ = [
    "REQUIRED",
    "SIDECARS",
    "ResultsError",
    "behaviour_from_fit",
    "check_results",
    "effects_from_results",
    "merge_effects",
    "rating_from_moderation",
    "source_files",
    "source_text",
    "to_pool_scale",
]
