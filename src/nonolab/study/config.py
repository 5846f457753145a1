"""The workflow configuration's contract: ``workflow/schemas/config.schema.yaml`` bounds every
value, and :func:`check_config` enforces it before any job runs (the Snakefile calls it right
after loading the config, so a bad value stops ``snakemake -n``, not a job hours later).

Stricter than Snakemake's own ``validate``: an integer is an integer (``1.0`` and ``true`` are
not), and a config file that names a key twice is refused (:func:`check_config_file`), where
YAML would keep the last value silently.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jsonschema
import yaml

from nonolab.core.strict import DuplicateKeyError, yaml_load
from nonolab.study.presets import SCHEMA_DIR

CONFIG_SCHEMA = SCHEMA_DIR / "config.schema.yaml"


class ConfigError(ValueError):
    """A workflow configuration value or file breaks the config schema."""


def config_schema() -> dict[str, Any]:
    """Return the config schema (a JSON Schema mapping)."""
    return yaml.safe_load(CONFIG_SCHEMA.read_text(encoding="utf-8"))


_INT = jsonschema.Draft202012Validator.TYPE_CHECKER.redefine(
    "integer", lambda _checker, v: isinstance(v, int) and not isinstance(v, bool)
)
#: JSON Schema 2020-12 with exact integers (1.0 is a number, not an integer)
StrictValidator = jsonschema.validators.extend(jsonschema.Draft202012Validator, type_checker=_INT)


def check_config(config: dict[str, Any]) -> None:
    """Raise :class:`ConfigError` naming the key path (``ranking.seed``) and the rule broken
    when ``config`` does not satisfy the config schema (exact integer types)."""
    validator = StrictValidator(config_schema())
    errors = sorted(validator.iter_errors(config), key=lambda e: list(map(str, e.path)))
    if errors:
        err = jsonschema.exceptions.best_match(errors)
        where = ".".join(map(str, err.absolute_path)) or "(top level)"
        raise ConfigError(
            f"config value {where}: {err.message} (workflow/schemas/config.schema.yaml)"
        )


def coerce_config(config: dict[str, Any]) -> list[str]:
    """Parse, in place, the strings of ``config`` that the config schema wants as another type
    and return their key paths: Snakemake's ``--config key={...}`` reads nested values with
    YAML's base loader, so ``pauses={"components": 2}`` arrives as the string ``"2"``. A string
    that already satisfies its schema stays a string; another is read as YAML and replaced
    when the value read satisfies the schema (``"2"`` -> 2, ``"null"`` -> None, ``"true"`` ->
    True, ``"1e-5"`` -> 1e-05; list items are parsed in turn); anything else is left
    for :func:`check_config` to refuse, naming the key."""
    changed: list[str] = []
    _coerce(config, config_schema(), (), changed)
    return changed


def _coerce(value: Any, schema: dict[str, Any], path: tuple[str, ...], changed: list[str]) -> Any:
    """Return ``value`` with its strings parsed where ``schema`` wants another type (dicts and
    lists are changed in place)."""
    if isinstance(value, str):
        validator = StrictValidator(schema)
        if validator.is_valid(value):
            return value
        try:
            parsed = yaml.safe_load(value)
        except yaml.YAMLError:
            return value
        if isinstance(parsed, str):  # YAML 1.1 reads "1e-5" (no dot) as a string
            for number in (int, float):
                try:
                    parsed = number(value)
                    break
                except ValueError:
                    pass
        if not isinstance(parsed, str) and validator.is_valid(_coerce(parsed, schema, path, [])):
            changed.append(".".join(path) or "(top level)")
            return _coerce(parsed, schema, path, [])
        return value
    branches = [schema, *schema.get("oneOf", []), *schema.get("anyOf", [])]
    if isinstance(value, dict):
        for branch in branches:
            props = branch.get("properties", {})
            extra = branch.get("additionalProperties")
            if not props and not isinstance(extra, dict):
                continue
            for key in list(value):
                sub = props.get(key, extra if isinstance(extra, dict) else None)
                if sub is not None:
                    value[key] = _coerce(value[key], sub, (*path, str(key)), changed)
            break
    elif isinstance(value, list):
        for branch in branches:
            if isinstance(branch.get("items"), dict):
                for i, item in enumerate(value):
                    value[i] = _coerce(item, branch["items"], (*path, str(i)), changed)
                break
    return value


def check_config_file(path: str | os.PathLike) -> None:
    """Raise :class:`ConfigError` naming the file and line when the YAML config file at
    ``path`` names a key twice (YAML would keep the last value silently)."""
    try:
        yaml_load(Path(path).read_text(encoding="utf-8"))
    except DuplicateKeyError as exc:
        raise ConfigError(f"{path}: {exc}; which value is meant is unknown") from None


def numeric_leaves(
    schema: dict[str, Any], path: tuple[str, ...] = ()
) -> Iterator[tuple[tuple[str, ...], dict[str, Any]]]:
    """Yield ``(key path, schema)`` of every integer or number value the schema describes
    (a path element ``"[]"`` is an array item; ``oneOf`` branches are walked)."""
    for branch in schema.get("oneOf", []) + schema.get("anyOf", []):
        yield from numeric_leaves(branch, path)
    types = schema.get("type")
    types = [types] if isinstance(types, str) else list(types or [])
    if "integer" in types or "number" in types:
        yield path, schema
    for key, sub in schema.get("properties", {}).items():
        yield from numeric_leaves(sub, (*path, key))
    if isinstance(schema.get("items"), dict):
        yield from numeric_leaves(schema["items"], (*path, "[]"))
    extra = schema.get("additionalProperties")
    if isinstance(extra, dict):
        yield from numeric_leaves(extra, (*path, "*"))


__all__ = [
    "CONFIG_SCHEMA",
    "ConfigError",
    "check_config",
    "check_config_file",
    "coerce_config",
    "config_schema",
    "numeric_leaves",
]
