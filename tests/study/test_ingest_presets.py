"""Study presets and table schemas."""

from __future__ import annotations

import pandas as pd
import pytest

from nonolab.study.ingest import (
    TABLES,
)
from nonolab.study.presets import REPO, available_presets, load_preset, resolve_preset
from nonolab.study.schemas import TableSchemaError, coerce_table, table_schema, validate_table


def test_every_shipped_preset_validates():
    presets = available_presets()
    assert {"default", "he2026"} <= set(presets)
    for name, path in presets.items():
        assert load_preset(path).name == name


def test_preset_by_name_and_path(tmp_path):
    assert resolve_preset(tmp_path, "he2026").name == "he2026"
    path = REPO / "config" / "studies" / "default.yaml"
    assert resolve_preset(tmp_path, str(path)).name == "default"
    with pytest.raises(ValueError, match="neither a name"):
        resolve_preset(tmp_path, "no-such-preset")


def test_fingerprint_mismatch_falls_back_to_default(tmp_path):
    (tmp_path / "nonograms_6.json").write_text("[]")
    assert resolve_preset(tmp_path).name == "default"


def test_embedded_example_study_uses_default_preset():
    example = REPO / "data" / "example-study"
    if not (example / "nonograms_6.json").exists():
        pytest.skip("data/example-study not generated yet")
    assert resolve_preset(example).name == "default"


def test_every_table_has_a_schema():
    for name in TABLES:
        props = table_schema(name)["properties"]
        assert props and all(isinstance(k, str) for k in props)


def test_validate_table_rejects_bad_tables():
    good = pd.DataFrame(
        [{"level": "line", "source": "a:1", "id": "x", "reason": "r", "action": "kept"}]
    )
    validate_table(coerce_table(good, "ledger"), "ledger")
    with pytest.raises(TableSchemaError, match="outside enum"):
        validate_table(coerce_table(good.assign(level="planet"), "ledger"), "ledger")
    with pytest.raises(TableSchemaError, match="columns"):
        validate_table(good.drop(columns="reason"), "ledger")
    with pytest.raises(TableSchemaError, match="missing values"):
        validate_table(coerce_table(good.assign(reason=None), "ledger"), "ledger")
    rat = pd.DataFrame(
        [
            {
                "participant_id": "a",
                "order": 1,
                "puzzle_id": "0",
                "puzzle_hash": "h",
                "initial_difficulty": 6,
            }
        ]
    )
    with pytest.raises(TableSchemaError, match="above 5"):
        validate_table(coerce_table(rat, "ratings"), "ratings")
    with pytest.raises(TableSchemaError, match="duplicate"):
        validate_table(
            coerce_table(pd.concat([rat, rat]).assign(initial_difficulty=3), "ratings"), "ratings"
        )
