"""What a researcher should know about the effect sizes a plan is powered for.

:func:`effect_checks` returns plain-language warnings (the CLI prints them and the
pre-registration lists them under "Sample size"): effects beyond sanity bounds on the rating
scale, effects extrapolated far from the study they were fitted on (a pilot's metric spread
scaled to the pool's, puzzles of another size), a Spearman rho observed on few puzzles (with
its interval), effects whose signs contradict one another, and default effect sizes, which are
far more optimistic than the public study's fits (:data:`PUBLIC_STUDY`).

:func:`directions` returns the direction each hypothesis states: the sign of the effect the
analysis is powered for, so that a hypothesis never says "positive" while the plan is
powered for a negative effect.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

#: sanity bounds on the simulator's effects (rating points on the 1-5 scale; behaviour in SD
#: units): a latent puzzle-difficulty SD beyond 1.5 spreads the puzzles' mean ratings over more
#: than the whole scale; a metric slope of 1 rating point per SD of the metric, an interaction
#: of 0.5, a behaviour slope of 1 SD per SD are several times what any fit of the public study
#: gives (:data:`PUBLIC_STUDY`)
BOUNDS = {
    "rating.difficulty_sd": 1.5,
    "rating.metric_slope": 1.0,
    "rating.participant_sd": 1.5,
    "rating.interaction": 0.5,
    "behaviour.slope": 1.0,
}
#: the fitted slopes are moved to the pool's metric spread; beyond this factor (either way)
#: the fits are extrapolated, not rescaled
SCALE_FACTOR_MAX = 2.0
#: a Spearman rho observed on at most this many puzzles is flagged with its interval
FEW_PUZZLES = 10

#: the public study's fits for conflicts (MiniSat22, block-start encoding, corrected join;
#: slopes on the public pool's scale), measured with ``nonolab run`` and ``--effects-from``
#: (docs/designing-a-study.md, "The public study")
PUBLIC_STUDY = {
    "rho": 0.478,
    "rating.metric_slope": 0.061,
    "rating.metric_strength": 0.121,
    "rating.difficulty_sd": 0.506,
    "rating.interaction": -0.075,
    "rating.expertise_effect": -0.078,
    "rating.participant_sd": 0.465,
    "behaviour.slope": 0.148,
    "behaviour.var_participant": 0.085,
}


@dataclass(frozen=True)
class EffectRow:
    """One effect size the plan uses beside the public study's fit."""

    name: str
    used: float
    public: float | None
    source: str


def _rho_interval(rho: float, n: int, level_z: float = 1.959964) -> tuple[float, float] | None:
    """Fisher-z interval of a Spearman rho over ``n`` puzzles (variance 1.06 / (n - 3));
    None with 3 puzzles or fewer or |rho| = 1."""
    if n <= 3 or not abs(rho) < 1:
        return None
    z, se = math.atanh(rho), math.sqrt(1.06 / (n - 3))
    return math.tanh(z - level_z * se), math.tanh(z + level_z * se)


def shrunk_rho(rho: float, n: int) -> float | None:
    """Return a Spearman rho observed over ``n`` puzzles shrunk toward 0 by its standard error:
    the positive-part James-Stein (empirical-Bayes) estimate on Fisher's z,
    ``tanh(z max(0, 1 - SE^2 / z^2))`` with ``SE^2 = 1.06 / (n - 3)`` (0 when the observed z is
    within one SE of 0: no evidence of an effect to plan for); None with 3 puzzles or fewer
    or |rho| >= 1 (unitless)."""
    if n <= 3 or not abs(rho) < 1:
        return None
    z = math.atanh(rho)
    if z == 0:
        return 0.0
    return math.tanh(z * max(0.0, 1.0 - 1.06 / (n - 3) / (z * z)))


def effect_table(s: Any) -> list[EffectRow]:
    """Return the effect sizes ``s`` (:class:`~nonolab.design.study.DesignSettings`) plans
    with, each beside the public study's fit and where it came from."""
    fitted = {str(e["field"]) for e in s.effect_sources}
    r, b = s.rating, s.behaviour

    def src(field: str) -> str:
        return "fitted (--effects-from)" if field in fitted else "default or --effects"

    rows = [
        EffectRow("Spearman rho (pool population)", s.rho, PUBLIC_STUDY["rho"], src("rho")),
        EffectRow(
            "rating slope per SD of the metric",
            r.difficulty_sd * r.metric_strength,
            PUBLIC_STUDY["rating.metric_slope"],
            src("rating.metric_strength"),
        ),
        EffectRow(
            "metric strength",
            r.metric_strength,
            PUBLIC_STUDY["rating.metric_strength"],
            src("rating.metric_strength"),
        ),
        EffectRow(
            "latent difficulty SD",
            r.difficulty_sd,
            PUBLIC_STUDY["rating.difficulty_sd"],
            src("rating.difficulty_sd"),
        ),
        EffectRow(
            "metric x expertise interaction",
            r.interaction,
            PUBLIC_STUDY["rating.interaction"],
            src("rating.interaction"),
        ),
        EffectRow(
            "participant SD",
            r.participant_sd,
            PUBLIC_STUDY["rating.participant_sd"],
            src("rating.participant_sd"),
        ),
        EffectRow(
            "behaviour slope (SD per SD)",
            b.slope,
            PUBLIC_STUDY["behaviour.slope"],
            src("behaviour.slope"),
        ),
        EffectRow(
            "behaviour participant share",
            b.var_participant,
            PUBLIC_STUDY["behaviour.var_participant"],
            src("behaviour.var_participant"),
        ),
    ]
    return rows


def directions(s: Any) -> dict[str, str]:
    """Return the direction (``positive`` / ``negative`` / ``zero``) of the effect each
    hypothesis is powered for: ``H1`` (rho), ``H2_rating`` (metric slope), ``H2_behaviour``
    (behaviour slope), ``H3`` (interaction)."""

    def sign(v: float) -> str:
        return "positive" if v > 0 else "negative" if v < 0 else "zero"

    return {
        "H1": sign(s.rho),
        "H2_rating": sign(s.rating.metric_strength),
        "H2_behaviour": sign(s.behaviour.slope),
        "H3": sign(s.rating.interaction),
    }


def effect_checks(
    s: Any,
    *,
    scale_factor: float | None = None,
    pool_sizes: frozenset[str] = frozenset(),
    study: Mapping[str, Any] | None = None,
) -> list[str]:
    """Return the warnings about the effect sizes of ``s`` (module text), in plain words.

    ``scale_factor``: SD of log1p(metric) over the pool over that over the study the effects
    were fitted on (None: not rescaled); ``pool_sizes``: the eligible puzzles' sizes
    (``HxW``); ``study``: what is known of that study (``n_puzzles``, ``sizes``,
    ``participants``)."""
    out: list[str] = []
    r, b = s.rating, s.behaviour
    fitted = {str(e["field"]) for e in s.effect_sources}
    values = {
        "rating.difficulty_sd": r.difficulty_sd,
        "rating.metric_slope": r.difficulty_sd * r.metric_strength,
        "rating.participant_sd": r.participant_sd,
        "rating.interaction": r.interaction,
        "behaviour.slope": b.slope,
    }
    words = {
        "rating.difficulty_sd": "latent puzzle-difficulty SD {v:.2f} rating points on a 1-5 "
        "scale (bound {m:g})",
        "rating.metric_slope": "metric slope {v:.2f} rating points per SD of the metric "
        "(bound {m:g})",
        "rating.participant_sd": "participant SD {v:.2f} rating points (bound {m:g})",
        "rating.interaction": "metric x expertise interaction {v:.2f} rating points per SD x "
        "SD (bound {m:g})",
        "behaviour.slope": "behaviour slope {v:.2f} SD per SD of the metric (bound {m:g})",
    }
    for k, v in values.items():
        if abs(v) > BOUNDS[k]:
            out.append(
                "Implausible effect: "
                + words[k].format(v=v, m=BOUNDS[k])
                + "; the power computed with it is not credible."
            )
    if scale_factor is not None and not 1 / SCALE_FACTOR_MAX <= scale_factor <= SCALE_FACTOR_MAX:
        out.append(
            f"The fitted slopes were multiplied by {scale_factor:.2f} to move them from the "
            "spread of the metric over the fitted study's puzzles to its spread over the pool: "
            "that extrapolates the fit far beyond the puzzles it saw."
        )
    study = study or {}
    sizes = set(study.get("sizes") or ())
    if sizes and pool_sizes and not sizes & set(pool_sizes):
        out.append(
            f"The effects were fitted on puzzles of size {', '.join(sorted(sizes))}; the pool's "
            f"eligible puzzles are {', '.join(sorted(pool_sizes))}: the metric's relation to "
            "difficulty may not carry over."
        )
    n_puz = study.get("n_puzzles")
    if "rho" in fitted and n_puz is not None and int(n_puz) <= FEW_PUZZLES:
        ci = _rho_interval(s.rho, int(n_puz))
        span = f" (95% interval {ci[0]:.2f} to {ci[1]:.2f})" if ci else ""
        shr = shrunk_rho(s.rho, int(n_puz))
        shrunk = (
            f" Shrunk toward 0 by its standard error (empirical Bayes on Fisher's z) it is "
            f"{shr:.2f}" + (": no evidence of an effect to plan for." if shr == 0 else ".")
            if shr is not None
            else ""
        )
        out.append(
            f"The planned rho {s.rho:.2f} is the Spearman correlation observed over only "
            f"{int(n_puz)} puzzles{span}: the study is powered for a value that could be far "
            f"from the truth; consider --rho with a smaller, defensible value.{shrunk}"
        )
    names = {"rating.metric_slope": "metric slope", "rating.interaction": "interaction"}
    for field, (est, se) in sorted((study.get("estimates") or {}).items()):
        lo, hi = est - 1.959964 * se, est + 1.959964 * se
        if lo < 0 < hi:
            out.append(
                f"The fitted {names.get(field, field)} {est:.3f} (SE {se:.3f}; 95% interval "
                f"{lo:.2f} to {hi:.2f}, in the fitted study's units) is compatible with no effect "
                "and with effects of either sign; the plan uses its point estimate."
            )
    d = directions(s)
    signs = {v for k, v in d.items() if k in ("H1", "H2_rating") and v != "zero"}
    if len(signs) > 1:
        out.append(
            f"The effects contradict one another: the Spearman rho is {d['H1']} but the "
            f"metric's slope on ratings is {d['H2_rating']}; the hypotheses follow each effect's "
            "sign, so they point in opposite directions."
        )
    from nonolab.design.power import BehaviourModel, RatingModel

    if r == RatingModel() and b == BehaviourModel():  # neither fitted nor given: the defaults
        used = values["rating.metric_slope"]
        pub = PUBLIC_STUDY["rating.metric_slope"]
        out.append(
            f"Default effect sizes are used; they are far more optimistic than the public "
            f"study's fits (metric slope {used:.2f} against {pub:.3f} rating points per SD on "
            f"the pool's scale, behaviour participant share {b.var_participant:.2f} against "
            f"{PUBLIC_STUDY['behaviour.var_participant']:.3f}, interaction "
            f"{r.interaction:+.2f} against {PUBLIC_STUDY['rating.interaction']:+.3f}: the "
            "opposite sign). Powers computed with them are upper bounds unless a pilot "
            "supports them (--effects-from)."
        )
    return out


__all__ = ["BOUNDS", "PUBLIC_STUDY", "effect_checks", "effect_table", "directions"]
