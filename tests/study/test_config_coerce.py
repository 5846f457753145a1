"""`--config key={...}` on the command line: Snakemake reads nested values as strings; every
typed key of the config schema is read back as its type (nonolab.study.config.coerce_config)."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
import yaml
from snakemake.cli import parse_config
from snakemake.utils import update_config

from nonolab.study.config import (
    ConfigError,
    check_config,
    coerce_config,
    config_schema,
    numeric_leaves,
)

REPO = Path(__file__).resolve().parents[2]
CONFIG = yaml.safe_load((REPO / "config" / "config.yaml").read_text(encoding="utf-8"))


def _get(cfg, path):
    for key in path:
        if key in ("[]", "*") or not isinstance(cfg, dict) or key not in cfg:
            return None
        cfg = cfg[key]
    return cfg


def test_the_documented_override_is_accepted():
    cfg = copy.deepcopy(CONFIG)
    update_config(cfg, parse_config(['pauses={"components": 2}']))
    assert cfg["pauses"]["components"] == "2"  # what Snakemake hands over
    assert coerce_config(cfg) == ["pauses.components"]
    check_config(cfg)
    assert cfg["pauses"]["components"] == 2


NUMERIC = [
    path
    for path, _ in numeric_leaves(config_schema())
    if not set(path) & {"[]", "*"}
    and isinstance(_get(CONFIG, path), int | float)
    and not isinstance(_get(CONFIG, path), bool)
]


def test_there_are_typed_keys_to_check():
    assert len(NUMERIC) > 20


@pytest.mark.parametrize("path", NUMERIC, ids=[".".join(p) for p in NUMERIC])
def test_every_numeric_key_given_on_the_command_line_is_read_as_its_type(path):
    value = _get(CONFIG, path)
    text = repr(value) if isinstance(value, float) else str(value)
    nested = text
    for key in reversed(path[1:]):
        nested = "{" + f'"{key}": {nested}' + "}"
    cfg = copy.deepcopy(CONFIG)
    update_config(cfg, parse_config([f"{path[0]}={nested}"]))
    coerce_config(cfg)
    check_config(cfg)
    got = _get(cfg, path)
    assert got == value and type(got) is type(value)


def test_a_string_key_stays_a_string_and_a_bad_value_is_still_refused():
    cfg = copy.deepcopy(CONFIG)
    update_config(cfg, parse_config(['pauses={"em_tol": "auto", "components": "two"}']))
    coerce_config(cfg)
    assert cfg["pauses"]["em_tol"] == "auto"
    with pytest.raises(ConfigError, match="pauses.components"):
        check_config(cfg)


def test_null_lists_and_exponents():
    cfg = copy.deepcopy(CONFIG)
    update_config(
        cfg,
        parse_config(
            [
                'pauses={"max_fit_gaps": null, "threshold": 2.5, "sensitivity_s": [1, 2.5], "converged": {"tol": 1e-5}}'
            ]
        ),
    )
    coerce_config(cfg)
    check_config(cfg)
    p = cfg["pauses"]
    assert p["max_fit_gaps"] is None and p["threshold"] == 2.5
    assert p["sensitivity_s"] == [1, 2.5] and p["converged"]["tol"] == 1e-5
