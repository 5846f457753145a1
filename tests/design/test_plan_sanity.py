"""The plan a researcher signs: hypotheses follow the effects' signs, implausible or
extrapolated effects are warned about, defaults are compared with the public study."""

from __future__ import annotations

import math
from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nonolab.design.power import BehaviourModel, RatingModel
from nonolab.design.prereg import _md, hypotheses
from nonolab.design.sanity import BOUNDS, PUBLIC_STUDY, directions, effect_checks
from nonolab.design.study import DesignSettings

_FITTED = ({"field": "rho", "lines": [2]}, {"field": "rating.metric_strength", "lines": [3]})


def _settings(rho: float, strength: float, slope: float, inter: float, **kw) -> DesignSettings:
    return DesignSettings(
        pool="pool",
        rho=rho,
        rating=RatingModel(metric_strength=strength, interaction=inter, **kw),
        behaviour=BehaviourModel(slope=slope),
    )


signed = st.one_of(st.floats(-0.95, -0.01), st.floats(0.01, 0.95))


@settings(max_examples=60, deadline=None)
@given(signed, signed, signed, signed)
def test_hypotheses_follow_the_effects_signs(rho, strength, slope, inter) -> None:
    s = _settings(rho, strength, slope, inter)
    text = "\n".join(hypotheses(s))
    word = "positive" if rho > 0 else "negative"
    assert f"and conflicts is {word}." in text
    assert ("perceived as harder" in text) == (rho > 0)
    assert ("rating increases with" in text) == (strength > 0)
    assert ("rating decreases with" in text) == (strength < 0)
    assert ("hints) increase with" in text) == (slope > 0)
    assert f"interaction is {'positive' if inter > 0 else 'negative'}" in text
    # effects whose signs disagree are flagged, agreeing ones are not
    warn = effect_checks(replace(s, effect_sources=_FITTED))
    contradiction = any("contradict one another" in w for w in warn)
    assert contradiction == ((rho > 0) != (strength > 0))


@settings(max_examples=60, deadline=None)
@given(
    st.sampled_from(sorted(BOUNDS)),
    st.floats(0.0, 3.0),
    st.sampled_from([-1.0, 1.0]),
)
def test_each_sanity_bound_warns_exactly_beyond_it(name: str, frac: float, sign: float) -> None:
    """Generated effects at a fraction of each bound: a warning names the effect exactly when
    the value is beyond the bound (the 'latent difficulty SD of 5.18' case among them)."""
    bound = BOUNDS[name]
    v = sign * frac * bound
    rating = RatingModel(
        difficulty_sd=0.6, metric_strength=0.5, participant_sd=0.4, interaction=0.1
    )
    beh = BehaviourModel(slope=0.2)
    if name == "rating.difficulty_sd":
        rating = replace(rating, difficulty_sd=abs(v), metric_strength=0.01)
    elif name == "rating.metric_slope":
        sd = max(abs(v) / 0.9, 0.6)  # slope = sd * strength, strength within (-1, 1)
        rating = replace(rating, difficulty_sd=min(sd, 1.5), metric_strength=v / min(sd, 1.5))
        v = rating.difficulty_sd * rating.metric_strength
        if abs(rating.metric_strength) >= 1:
            return
    elif name == "rating.participant_sd":
        rating = replace(rating, participant_sd=abs(v))
        v = abs(v)
    elif name == "rating.interaction":
        rating = replace(rating, interaction=v)
    else:
        beh = replace(beh, slope=v)
    s = replace(DesignSettings(pool="p"), rating=rating, behaviour=beh, effect_sources=_FITTED)
    warn = [w for w in effect_checks(s) if w.startswith("Implausible")]
    label = {
        "rating.difficulty_sd": "difficulty SD",
        "rating.metric_slope": "metric slope",
        "rating.participant_sd": "participant SD",
        "rating.interaction": "interaction",
        "behaviour.slope": "behaviour slope",
    }[name]
    named = [w for w in warn if label in w]
    assert bool(named) == (abs(v) > bound), (v, warn)


def test_the_reviewed_pilot_is_warned_about() -> None:
    """The issue's pilot: fits scaled by 5.85 to the pool, SD 5.18 on a 1-5 scale, a slope of
    -3.15 SD, 8x8 puzzles for a 10x10 pool, rho 0.899 from 6 puzzles."""
    s = replace(
        _settings(0.899, -0.5, -3.15, 0.1, difficulty_sd=5.18),
        effect_sources=_FITTED,
    )
    warn = effect_checks(
        s,
        scale_factor=5.85,
        pool_sizes=frozenset({"10x10"}),
        study={
            "n_puzzles": 6,
            "sizes": ["8x8"],
            "estimates": {"rating.metric_slope": [0.090, 0.213], "rating.interaction": [-0.3, 0.1]},
        },
    )
    text = " ".join(warn)
    assert "5.18" in text and "-3.15" in text and "5.85" in text
    assert "8x8" in text and "10x10" in text
    assert "only 6 puzzles" in text and "95% interval" in text
    # both numbers: the observed 0.899 and its shrunk value, by hand: z = atanh(0.899) =
    # 1.4674, SE^2 = 1.06 / 3, z (1 - SE^2 / z^2) = 1.2266, tanh = 0.84
    assert (
        "Shrunk toward 0 by its standard error (empirical Bayes on Fisher's z) it is 0.84." in text
    )
    assert "contradict one another" in text
    # the slope's interval spans 0 (0.090, SE 0.213: -0.33 to 0.51); the interaction's does not
    assert "metric slope 0.090 (SE 0.213; 95% interval -0.33 to 0.51" in text
    assert "fitted interaction" not in text
    assert not any("Default effect sizes" in w for w in warn)


def test_defaults_are_compared_with_the_public_study() -> None:
    warn = effect_checks(DesignSettings(pool="p"))
    (w,) = [w for w in warn if w.startswith("Default effect sizes")]
    assert f"{PUBLIC_STUDY['rating.metric_slope']:.3f}" in w and "opposite sign" in w
    assert f"{0.6 * 0.6:.2f}" in w
    # effects a user gave (--effects, no sources recorded) are not the defaults
    mine = replace(DesignSettings(pool="p"), rating=RatingModel(metric_strength=0.2))
    assert not any(w.startswith("Default effect sizes") for w in effect_checks(mine))


@pytest.mark.parametrize("text", ["a*b_c", "[x](y)", "# h", "a|b", "`x`", "<b>"])
def test_user_strings_are_escaped_for_markdown(text: str) -> None:
    out = _md(text)
    for ch in "*_[]#|`<>":
        assert ch not in out.replace("\\" + ch, "")


def test_directions_of_zero() -> None:
    d = directions(_settings(0.0, 0.5, -0.2, 0.0))
    assert d == {"H1": "zero", "H2_rating": "positive", "H2_behaviour": "negative", "H3": "zero"}


def test_shrunk_rho_by_hand() -> None:
    """The public study's 0.478 over six puzzles is within one SE of 0 on Fisher's z (z = 0.520,
    SE = 0.594): shrunk to 0; many puzzles barely move a rho; the sign is kept."""
    from nonolab.design.sanity import shrunk_rho

    assert shrunk_rho(0.478, 6) == 0.0
    assert shrunk_rho(-0.899, 6) == pytest.approx(-math.tanh(1.4674 - 1.06 / 3 / 1.4674), abs=1e-3)
    assert shrunk_rho(0.5, 1003) == pytest.approx(
        math.tanh(0.5493 - 1.06 / 1000 / 0.5493), abs=1e-4
    )
    assert shrunk_rho(0.5, 3) is None and shrunk_rho(1.0, 20) is None
    warn = effect_checks(
        replace(_settings(0.478, 0.3, 0.3, 0.1), effect_sources=_FITTED), study={"n_puzzles": 6}
    )
    assert any("it is 0.00: no evidence of an effect to plan for." in w for w in warn)
