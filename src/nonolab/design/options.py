"""What ``nonolab design`` is given, checked against the plan schema before anything is computed.

The plan schema (``workflow/schemas/plan.schema.yaml``) holds, under ``$defs``, the bounds of
every option of ``nonolab design`` (``design_options``, keyed by the option's name without its
dashes) and of the effect sizes of ``--effects`` (``effects_file``: ``rating:`` and
``behaviour:`` mappings with no other keys). :func:`check_design_options` and
:func:`check_effects` validate against them and add the one rule JSON Schema cannot say: every
number is finite (a schema bound lets NaN through, and infinity through a one-sided bound).
Each refusal is a :class:`DesignOptionError` (a ``ValueError``: the command line prints it as a
usage error, exit 2) naming the option (``--alpha``) or the key (``rating.metric_strength``),
the bounds and the value given, so that no bad value reaches the simulation (where it ended as
"math domain error" or a ``TypeError``) or the plan.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from functools import cache
from pathlib import Path
from typing import Any

from jsonschema.validators import Draft202012Validator

from nonolab.design.plan import plan_schema


class DesignOptionError(ValueError):
    """An option of ``nonolab design`` or a key of its effects file is not allowed (the message
    names the option or key, what is allowed and the value given)."""


@cache
def _validator(name: str) -> Draft202012Validator:
    """Return a validator of the plan schema's ``$defs/<name>`` (``name`` may be a path:
    ``design_options/properties/alpha``; references resolve inside the plan schema)."""
    from referencing import Registry, Resource

    uri = "urn:nonolab:plan.schema"
    registry = Registry().with_resource(uri, Resource.from_contents(plan_schema()))
    return Draft202012Validator({"$ref": f"{uri}#/$defs/{name}"}, registry=registry)


def option_schemas() -> dict[str, dict[str, Any]]:
    """Return the plan schema's ``design_options`` properties: option name (without dashes)
    -> its JSON Schema (possibly a ``$ref`` into the plan schema; :func:`resolved`)."""
    return dict(plan_schema()["$defs"]["design_options"]["properties"])


def resolved(schema: Mapping[str, Any]) -> dict[str, Any]:
    """Return ``schema`` with its ``$ref`` (a JSON pointer into the plan schema) followed, the
    referring schema's own keys (``description``) kept; other schemas unchanged."""
    out = dict(schema)
    while "$ref" in out:
        node: Any = plan_schema()
        for part in out.pop("$ref").removeprefix("#/").split("/"):
            node = node[part]
        out = {**node, **out}
    return out


def _bounds(schema: Mapping[str, Any]) -> str:
    """Return what ``schema`` allows, in words (``a number > 0 and < 1``)."""
    s = resolved(schema)
    if "enum" in s:
        return "one of " + ", ".join(map(str, s["enum"]))
    kind = {"integer": "a whole number", "number": "a finite number", "string": "text"}
    if s.get("type") == "array":
        each = _bounds(s.get("items", {})).removeprefix("a ")
        kind_, _, rest = each.partition(" number")
        return f"a list of {kind_} numbers" + (f", each{rest}" if rest else "")
    words = [kind.get(str(s.get("type")), "a value")]
    for key, sign in (
        ("minimum", ">="),
        ("exclusiveMinimum", ">"),
        ("maximum", "<="),
        ("exclusiveMaximum", "<"),
    ):
        if key in s:
            words.append(f"{sign} {s[key]:g}")
    if "minLength" in s:
        words.append("not empty")
    if len(words) > 2:
        return f"{words[0]} {words[1]} and {' and '.join(words[2:])}"
    return " ".join(words)


def _non_finite(value: Any) -> bool:
    """Return True when ``value`` is (or holds, in a list) a float that is NaN or infinite."""
    if isinstance(value, float):
        return not math.isfinite(value)
    if isinstance(value, (list, tuple)):
        return any(_non_finite(v) for v in value)
    return False


def _plain(value: Any) -> Any:
    """Return ``value`` as JSON-like data (tuples as lists) for the validator."""
    if isinstance(value, tuple):
        return [_plain(v) for v in value]
    return value


def check_design_options(options: Mapping[str, Any]) -> None:
    """Raise :class:`DesignOptionError` for the first option of ``options`` (option name with or
    without dashes, or the argparse ``dest`` with underscores -> value; options the schema does
    not bound are ignored) that the plan schema's ``design_options`` does not allow, or that is
    not finite; and for ``--per-session`` above ``--puzzles`` and ``--fill`` with LOW above
    HIGH. Returns None."""
    props = option_schemas()
    given: dict[str, Any] = {}
    for key, value in options.items():
        name = str(key).lstrip("-").replace("_", "-")
        if name in props and value is not None:
            given[name] = _plain(value)
    for name in props:  # in the schema's order: the first bad option is named
        if name not in given:
            continue
        value = given[name]
        schema = props[name]
        if _non_finite(value) or any(
            _validator(f"design_options/properties/{name}").iter_errors(value)
        ):
            raise DesignOptionError(f"--{name} needs {_bounds(schema)}, not {_shown(value)}")
    if "per-session" in given and "puzzles" in given and given["per-session"] > given["puzzles"]:
        raise DesignOptionError(
            f"--per-session ({given['per-session']}) cannot exceed --puzzles "
            f"({given['puzzles']}): a session serves distinct puzzles"
        )
    fill = given.get("fill")
    if fill is not None and fill[0] > fill[1]:
        raise DesignOptionError(f"--fill needs LOW,HIGH with LOW <= HIGH, not {_shown(fill)}")


def _shown(value: Any) -> str:
    if isinstance(value, list):
        return ",".join(_shown(v) for v in value)
    if isinstance(value, float):
        return repr(value) if math.isfinite(value) else str(value)
    return repr(value) if isinstance(value, str) else str(value)


def _walk_numbers(value: Any, path: str) -> list[str]:
    """Return the dotted keys under ``value`` whose values are non-finite floats."""
    if isinstance(value, Mapping):
        out: list[str] = []
        for k, v in value.items():
            out += _walk_numbers(v, f"{path}.{k}" if path else str(k))
        return out
    return [path] if _non_finite(value) else []


def check_effects(data: Any, where: str) -> None:
    """Raise :class:`DesignOptionError` naming ``where`` (the file, or the results folder the
    values were fitted from) and the key (``rating.metric_strength``) when ``data`` is not an
    ``effects_file`` of the plan schema: an unknown section or key, a value of another type, a
    number out of its bounds or not finite. Returns None."""
    if data is None:
        return
    for key in _walk_numbers(data, ""):
        section, _, field = key.partition(".")
        schema = _field_schema(section, field)
        allowed = _bounds(schema) if schema is not None else "a finite number"
        raise DesignOptionError(f"{where}: {key} needs {allowed}, not {_value_at(data, key)}")
    errors = sorted(_validator("effects_file").iter_errors(data), key=lambda e: list(e.path))
    if not errors:
        return
    err = errors[0]
    path = [str(p) for p in err.path]
    if err.validator in ("additionalProperties", "unevaluatedProperties"):
        extra = _unknown_keys(data, path)
        section = ".".join(path)
        known = sorted(_known_keys(section))
        shown = ", ".join(f"{section}.{k}" if section else k for k in extra)
        raise DesignOptionError(f"{where}: unknown key {shown} (known: {', '.join(known)})")
    key = ".".join(path)
    if len(path) == 2:
        schema = _field_schema(path[0], path[1])
        if schema is not None:
            raise DesignOptionError(
                f"{where}: {key} needs {_bounds(schema)}, not {_shown(err.instance)}"
            )
    what = key or "the file"
    raise DesignOptionError(
        f"{where}: {what} needs a mapping (rating: and behaviour: with their keys), "
        f"not {err.message.split(' is not')[0]}"
    )


_SECTIONS = {"rating": "rating_fields", "behaviour": "behaviour_fields"}


def _known_keys(section: str) -> list[str]:
    """Return the keys a mapping of the effects file may hold (top level: the sections)."""
    if not section:
        return list(_SECTIONS)
    return list(plan_schema()["$defs"][_SECTIONS[section]]["properties"])


def _unknown_keys(data: Any, path: list[str]) -> list[str]:
    node = data
    for p in path:
        node = node[p]
    known = set(_known_keys(".".join(path)))
    return sorted(str(k) for k in node if k not in known)


def _field_schema(section: str, field: str) -> dict[str, Any] | None:
    """Return the schema of ``section.field`` of the effects file (None when unknown)."""
    defs = plan_schema()["$defs"]
    if section not in _SECTIONS:
        return None
    return defs[_SECTIONS[section]]["properties"].get(field)


def _value_at(data: Any, key: str) -> str:
    node = data
    for part in key.split("."):
        node = node[part]
    return _shown(node)


def read_effects_file(path: str | Path) -> Any:
    """Return the checked content of an ``--effects`` YAML file (:func:`check_effects`);
    raise :class:`DesignOptionError` naming the file for YAML it cannot read (a repeated key
    among them)."""
    import yaml

    from nonolab.core.strict import yaml_load

    try:
        data = yaml_load(Path(path).read_text(encoding="utf-8"))
    except (yaml.YAMLError, ValueError) as exc:
        raise DesignOptionError(f"{path}: not an effects file ({exc})") from None
    check_effects(data, str(path))
    return data


def check_effect_models(rating: Any, behaviour: Any, where: str) -> None:
    """Raise :class:`DesignOptionError` when the rating or behaviour model a design would run
    (after the fitted and given effects are merged) is outside the plan schema; ``where`` says
    where the values came from. Returns None."""
    check_effects({"rating": rating.record(), "behaviour": behaviour.record()}, where)


__all__ = [
    "DesignOptionError",
    "check_design_options",
    "check_effect_models",
    "check_effects",
    "option_schemas",
    "read_effects_file",
    "resolved",
]
