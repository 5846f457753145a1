"""``nonolab design`` options and effect sizes are checked by one mechanism derived from the plan
schema (``nonolab.design.options``): values generated from the schema's own bounds."""

from __future__ import annotations

import argparse
import math
import tempfile
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from jsonschema.validators import Draft202012Validator

from nonolab.cli import build_parser, main
from nonolab.design.options import (
    DesignOptionError,
    check_design_options,
    check_effect_models,
    check_effects,
    option_schemas,
    resolved,
)
from nonolab.design.plan import plan_schema
from nonolab.design.power import BehaviourModel, RatingModel

OPTIONS = option_schemas()
DEFS = plan_schema()["$defs"]
EFFECT_FIELDS = {
    "rating": dict(DEFS["rating_fields"]["properties"]),
    "behaviour": dict(DEFS["behaviour_fields"]["properties"]),
}


def _design_parser() -> argparse.ArgumentParser:
    parser = build_parser(["design"])
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return action.choices["design"]
    raise AssertionError("no design sub-command")


def _numeric_options() -> dict[str, argparse.Action]:
    """The design options that take a number or a list of numbers (their ``type=``)."""
    out = {}
    for action in _design_parser()._actions:
        if not action.option_strings or action.type is None:
            continue
        name = action.option_strings[0].lstrip("-")
        probe = {"1", "0.5", "1,2"}
        for text in probe:
            try:
                value = action.type(text)
            except (argparse.ArgumentTypeError, ValueError, TypeError):
                continue
            if isinstance(value, (int, float, tuple)) and not isinstance(value, bool):
                out[name] = action
                break
    return out


def test_the_plan_schema_is_a_valid_2020_12_schema() -> None:
    Draft202012Validator.check_schema(plan_schema())


def test_every_numeric_option_is_bounded_by_the_plan_schema_and_every_entry_is_an_option() -> None:
    numeric = _numeric_options()
    assert "alpha" in numeric and "participants" in numeric and "fill" in numeric
    assert set(numeric) <= set(OPTIONS), set(numeric) - set(OPTIONS)
    names = {s.lstrip("-") for a in _design_parser()._actions for s in a.option_strings}
    assert set(OPTIONS) <= names, set(OPTIONS) - names


def test_the_defaults_of_the_command_and_of_the_models_are_allowed() -> None:
    parser = _design_parser()
    defaults = {a.dest: a.default for a in parser._actions if a.default is not argparse.SUPPRESS}
    check_design_options(defaults)
    check_effect_models(RatingModel(), BehaviourModel(), "the defaults")


# -- values generated from the schema ------------------------------------------------------------


def _bad_scalars(schema: dict) -> list:
    """Values just outside ``schema`` (a number, integer or string schema), and non-finite ones."""
    s = resolved(schema)
    if "enum" in s:
        return ["not-" + str(s["enum"][0]), 3]
    if s.get("type") == "string":
        return [""] if s.get("minLength") else []
    out: list = []
    if s.get("type") in ("number", None):
        out += [math.nan, math.inf, -math.inf]
    step = 1 if s.get("type") == "integer" else 1e-9
    if s.get("type") == "integer":
        out.append(s.get("minimum", 0) + 1.5)  # not a whole number
    if "minimum" in s:
        out.append(s["minimum"] - step)
    if "exclusiveMinimum" in s:
        out.append(s["exclusiveMinimum"])
    if "maximum" in s:
        out.append(s["maximum"] + (step if step == 1 else max(1e-9, abs(s["maximum"]) * 1e-9)))
    if "exclusiveMaximum" in s:
        out.append(s["exclusiveMaximum"])
    return out


def _bad_values(name: str) -> list:
    s = resolved(OPTIONS[name])
    if s.get("type") == "array":
        good = _good(resolved(s["items"]))
        n = s.get("minItems", 1)
        return [[*([good] * (n - 1)), bad] for bad in _bad_scalars(s["items"])]
    return _bad_scalars(s)


def _good(s: dict):
    if s.get("type") == "integer":
        return max(s.get("minimum", 1), 2)
    lo = s.get("minimum", s.get("exclusiveMinimum", -1.0))
    hi = s.get("maximum", s.get("exclusiveMaximum", lo + 2.0))
    return (lo + hi) / 2


BAD_OPTIONS = [(name, v) for name in OPTIONS for v in _bad_values(name)]


def _text(value) -> str:
    if isinstance(value, list):
        return ",".join(_text(v) for v in value)
    return repr(value) if isinstance(value, float) and math.isfinite(value) else str(value)


def test_every_bounded_option_has_generated_bad_values() -> None:
    # a schema entry from which no bad value can be drawn would leave its option untested
    unbounded = {n for n in OPTIONS if not _bad_values(n)}
    assert not unbounded, unbounded
    assert len(BAD_OPTIONS) >= 50, len(BAD_OPTIONS)


@pytest.fixture
def no_design(monkeypatch):
    """Fail the test if the design itself starts (a bad option must stop before)."""
    import nonolab.design.study as study

    def boom(*a, **k):
        raise AssertionError("run_design started")

    monkeypatch.setattr(study, "run_design", boom)
    monkeypatch.setattr(study, "settings_with_effects", boom)


def _run(args: list[str], out: Path, capsys) -> tuple[int, str]:
    argv = ["design", "--pool", str(out.parent / "no-pool"), *args, "--out", str(out)]
    try:
        code = main(argv)
    except SystemExit as exc:  # argparse's own refusal (a type= function)
        code = int(exc.code or 0)
    return code, capsys.readouterr().err


@pytest.mark.parametrize(("name", "value"), BAD_OPTIONS, ids=lambda v: str(v))
def test_a_bad_option_is_a_usage_error_naming_it_and_writes_nothing(
    name, value, tmp_path, capsys, no_design
) -> None:
    out = tmp_path / "out"
    code, err = _run([f"--{name}", _text(value)], out, capsys)
    assert code == 2, err
    assert f"--{name}" in err, err
    assert "Traceback" not in err and "domain error" not in err and "TypeError" not in err
    assert not out.exists()


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_values_inside_the_schema_bounds_are_accepted(data) -> None:
    options = {}
    for name, schema in OPTIONS.items():
        s = resolved(schema)
        if s.get("type") == "array":
            s = resolved(s["items"]) | {"_n": schema}
        options[name] = data.draw(_inside(s), label=name)
    options["per-session"] = min(options["per-session"], options["puzzles"])
    options["fill"] = sorted(options["fill"])
    check_design_options(options)


def _inside(s: dict) -> st.SearchStrategy:
    array = "_n" in s
    if s.get("type") == "integer":
        one: st.SearchStrategy = st.integers(s.get("minimum", 0), s.get("minimum", 0) + 10**6)
    elif s.get("type") == "string":
        one = st.text(min_size=1, max_size=8)
    else:
        one = st.floats(
            s.get("minimum", s.get("exclusiveMinimum", -1e6)),
            s.get("maximum", s.get("exclusiveMaximum", 1e6)),
            exclude_min="exclusiveMinimum" in s,
            exclude_max="exclusiveMaximum" in s,
            allow_nan=False,
        )
    if array:
        n = resolved(s["_n"]).get("minItems", 1)
        return st.lists(one, min_size=n, max_size=max(n, resolved(s["_n"]).get("maxItems", 4)))
    return one


def test_per_session_above_puzzles_and_fill_reversed_are_named(capsys, tmp_path, no_design):
    code, err = _run(["--puzzles", "6", "--per-session", "7"], tmp_path / "o", capsys)
    assert code == 2 and "--per-session" in err and "--puzzles" in err
    code, err = _run(["--fill", "0.9,0.1"], tmp_path / "o", capsys)
    assert code == 2 and "--fill" in err and "LOW <= HIGH" in err


# -- effect sizes -----------------------------------------------------------------------------

_FIELDS = [(sec, key) for sec, props in EFFECT_FIELDS.items() for key in props]
_BAD_EFFECTS = [
    (sec, key, v) for sec, key in _FIELDS for v in _bad_scalars(EFFECT_FIELDS[sec][key])
]
_NAME = st.text(alphabet="abcdefghijklmnopqrstuvwxyz_", min_size=1, max_size=12)


@st.composite
def bad_effects(draw) -> tuple[dict, str]:
    """An effects mapping with one fault: a bad value from the schema, an unknown key or an
    unknown section (named by the returned dotted key)."""
    sec, key = draw(st.sampled_from(_FIELDS))
    good = {sec: {key: _good(resolved(EFFECT_FIELDS[sec][key]))}}
    if EFFECT_FIELDS[sec][key].get("enum"):
        good = {sec: {key: EFFECT_FIELDS[sec][key]["enum"][0]}}
    kind = draw(st.sampled_from(["value", "key", "section"]))
    if kind == "value":
        sec, key, value = draw(st.sampled_from(_BAD_EFFECTS))
        return {sec: {key: value}}, f"{sec}.{key}"
    if kind == "key":
        extra = draw(_NAME.filter(lambda k: k not in EFFECT_FIELDS[sec]))
        good[sec][extra] = 0.1
        return good, f"{sec}.{extra}"
    extra = draw(_NAME.filter(lambda k: k not in EFFECT_FIELDS))
    return {**good, extra: {"x": 1}}, extra


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(bad_effects())
def test_a_bad_effects_file_is_a_usage_error_naming_the_key(case) -> None:
    data, key = case
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "effects.yaml"
        path.write_text(yaml.safe_dump(data), encoding="utf-8")
        out = Path(tmp) / "out"
        import contextlib
        import io

        err = io.StringIO()
        with contextlib.redirect_stderr(err):
            code = main(["design", "--pool", "nope", "--effects", str(path), "--out", str(out)])
        text = err.getvalue()
        assert code == 2, text
        assert key in text and str(path) in text, text
        assert "Traceback" not in text and not out.exists()


@settings(max_examples=60, deadline=None)
@given(st.data())
def test_effect_sizes_inside_the_schema_are_accepted(data) -> None:
    sec = data.draw(st.sampled_from(list(EFFECT_FIELDS)))
    values = {}
    for key, schema in EFFECT_FIELDS[sec].items():
        s = resolved(schema)
        if "enum" in s:
            values[key] = data.draw(st.sampled_from(s["enum"]))
        else:
            values[key] = data.draw(_inside(s))
    check_effects({sec: values}, "f.yaml")


def test_fitted_effects_outside_the_schema_are_named_with_their_source() -> None:
    with pytest.raises(DesignOptionError, match=r"RESULTS: rating.metric_strength needs"):
        check_effect_models(RatingModel(metric_strength=1.2), BehaviourModel(), "RESULTS")
    with pytest.raises(DesignOptionError, match=r"behaviour.var_residual needs"):
        check_effect_models(RatingModel(), BehaviourModel(var_residual=math.nan), "RESULTS")


def test_the_instances_of_the_issue(tmp_path, capsys, no_design) -> None:
    # "math domain error" (rho 1.5) and a TypeError for an unknown effects key
    code, err = _run(["--rho", "1.5"], tmp_path / "o", capsys)
    assert code == 2 and "--rho" in err and "domain" not in err
    eff = tmp_path / "e.yaml"
    eff.write_text("rating:\n  metric_strenght: 0.5\n")
    code, err = _run(["--effects", str(eff)], tmp_path / "o", capsys)
    assert code == 2 and "rating.metric_strenght" in err and "metric_strength" in err


def test_the_workflow_design_config_is_checked_by_the_same_mechanism() -> None:
    """scripts/design.py calls check_design_options on config `design:` (underscored keys)."""
    repo = Path(__file__).resolve().parents[2]
    cfg = yaml.safe_load((repo / "config" / "config.yaml").read_text(encoding="utf-8"))["design"]
    check_design_options(cfg)
    for key, bad in (("target_power", 1.5), ("alpha", math.nan), ("per_session", 99)):
        with pytest.raises(DesignOptionError, match=f"--{key.replace('_', '-')}"):
            check_design_options({**cfg, key: bad})
    assert "check_design_options(cfg)" in (repo / "scripts" / "design.py").read_text()
