"""The config schema bounds every value, and a value outside its bounds stops the dry run.

The bad values are generated from the schema itself (:func:`nonolab.study.config.
numeric_leaves`): for every integer or number the schema describes, one value just outside each
of its bounds, and, for integers, a fraction, ``1.0`` and ``true``. Issue example: a negative
seed passed the dry run and stopped the ``ranking`` rule hours later.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest
import yaml
from snake import CONFIG, snakemake

from nonolab.study.config import (
    ConfigError,
    check_config,
    check_config_file,
    config_schema,
    numeric_leaves,
)

BASE = yaml.safe_load(CONFIG.read_text(encoding="utf-8"))
LEAVES = list(numeric_leaves(config_schema()))


def _types(schema: dict[str, Any]) -> set[str]:
    t = schema.get("type")
    return {t} if isinstance(t, str) else set(t or [])


def bad_values(schema: dict[str, Any]) -> list[Any]:
    """Values the leaf ``schema`` must refuse: one step beyond each bound; for integers also a
    fraction, 1.0 and true."""
    is_int = "integer" in _types(schema)
    step = 1 if is_int else 1e-9
    out: list[Any] = []
    if "minimum" in schema:
        out.append(schema["minimum"] - step)
    if "exclusiveMinimum" in schema:
        out.append(schema["exclusiveMinimum"])
    if "maximum" in schema:
        out.append(schema["maximum"] + step)
    if "exclusiveMaximum" in schema:
        out.append(schema["exclusiveMaximum"])
    if is_int and "number" not in _types(schema):
        out += [1.5, 1.0, True]
    return out


def _cases() -> list[tuple[str, tuple[str, ...], Any]]:
    cases = []
    for path, schema in LEAVES:
        if "*" in path:  # a free-form mapping: no numeric leaf in the shipped config
            continue
        for v in bad_values(schema):
            cases.append((".".join(path) + f"={v!r}", path, v))
    return cases


CASES = _cases()


def _with(config: dict[str, Any], path: tuple[str, ...], value: Any) -> dict[str, Any]:
    """Return a copy of ``config`` with ``value`` at ``path`` (an array is replaced by
    ``[value]``; missing sections are taken from the schema's required keys of the base)."""
    out = copy.deepcopy(config)
    node = out
    for i, key in enumerate(path):
        last = i == len(path) - 1 or path[i + 1] == "[]"
        if key == "[]":
            break
        if last:
            node[key] = [value] if i < len(path) - 1 else value
            break
        node = node.setdefault(key, {})
    return out


def test_the_shipped_config_passes():
    check_config(BASE)


@pytest.mark.parametrize("path", [".".join(p) for p, _ in LEAVES])
def test_every_number_in_the_config_schema_has_a_lower_bound(path):
    schema = dict(LEAVES)[tuple(path.split("."))]
    assert "minimum" in schema or "exclusiveMinimum" in schema, path


@pytest.mark.parametrize(("case", "path", "value"), CASES, ids=[c[0] for c in CASES])
def test_every_out_of_bound_value_is_refused(case, path, value):
    cfg = _with(BASE, path, value)
    # the section must otherwise be valid: the error names the generated value's key
    name = ".".join(k for k in path if k != "[]")
    with pytest.raises(ConfigError, match="config value " + name.replace(".", r"\.")):
        check_config(cfg)


def test_cases_cover_every_leaf():
    covered = {c[1] for c in CASES}
    assert covered == {p for p, _ in LEAVES if "*" not in p}
    assert len(CASES) >= 2 * len(covered)


def test_config_file_naming_a_key_twice_is_refused(tmp_path):
    path = tmp_path / "config.yaml"
    path.write_text("seed: 1\npreset: auto\nseed: 2\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=r"line 3: duplicate key 'seed' \(first on line 1\)"):
        check_config_file(path)


@pytest.mark.parametrize("override", ["seed=-1", "ranking.seed=-5"])
def test_negative_seed_stops_the_dry_run(tmp_path, override):
    """Before: `snakemake -n` planned every job and the `ranking` rule failed later."""
    key, value = override.split("=")
    cfg = copy.deepcopy(BASE)
    node = cfg
    *parents, leaf = key.split(".")
    for k in parents:
        node = node[k]
    node[leaf] = int(value)
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(cfg), encoding="utf-8")
    res = snakemake("all", opts=["-n"], directory=tmp_path / "run", configfiles=[path])
    assert res.returncode != 0
    out = res.stdout + res.stderr
    assert "seed" in out and ("minimum" in out or "less than" in out), out[-2000:]
