"""Start-up cost of the workflow's jobs: what importing the modules every job uses pulls in, and
the plain-pandas schema check that lets a job read a valid table without importing pandera.

Each Snakemake ``script:`` job is a fresh Python process, so a heavy library imported at module
level by a module every job imports is paid by every job (benchmarks/import_bench.py measures
it). These tests pin which libraries stay out, in fresh subprocesses (``sys.modules``), so the
saving cannot silently regress; no timing is asserted.
"""

from __future__ import annotations

import ast
import datetime as dt
import json
import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from nonolab.study.schemas import (
    TableSchemaError,
    _pandera,
    _types,
    coerce_table,
    meets_schema,
    table_schema,
    validate_table,
)

ROOT = Path(__file__).resolve().parents[1]
HEAVY = ("pandera", "jsonschema", "scipy.stats", "statsmodels", "sklearn", "matplotlib")


def _loaded(*steps: str) -> list[list[str]]:
    """Return which of HEAVY are in ``sys.modules`` after each of ``steps`` (code run one after
    the other in one fresh Python)."""
    report = f"print(json.dumps([m for m in {HEAVY!r} if m in sys.modules]))"
    probe = "\n".join(["import json, sys", *(f"{step}\n{report}" for step in steps)])
    out = subprocess.run(
        [sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, check=True
    )
    return [json.loads(line) for line in out.stdout.strip().splitlines()[-len(steps) :]]


def test_modules_every_job_imports_pull_in_no_heavy_library():
    """The table reader/writer, presets, summaries, captions and ingest: none of pandera,
    jsonschema, scipy.stats, statsmodels, scikit-learn or matplotlib at import."""
    code = "\n".join(
        [
            "import nonolab.core.tables, nonolab.core.undefined",
            "import nonolab.study.schemas, nonolab.study.presets, nonolab.study.features",
            "import nonolab.study.ingest, nonolab.study.summaries, nonolab.study.codebook",
            "import nonolab.report.captions",
        ]
    )
    assert _loaded(code) == [[]]


def test_stats_modules_import_scipy_stats_statsmodels_and_sklearn_where_used():
    """Importing the correlation, theme and expertise modules (what the figure, codebook and
    sensitivity jobs take from them) loads none of scipy.stats, statsmodels or scikit-learn;
    calling a function that needs one loads it."""
    code = "import nonolab.stats.correlations, nonolab.stats.themes, nonolab.stats.expertise"
    called = "nonolab.stats.correlations.bh_fdr([0.01, 0.2])"
    assert _loaded(code, called) == [[], ["scipy.stats", "statsmodels"]]


#: the scripts whose own top-level imports must stay free of a heavy library (figure scripts
#: may load matplotlib, nothing else of HEAVY); checked by reading each script's imports
LIGHT_SCRIPTS = {
    "features.py": (),
    "ingest.py": (),
    "trajectories.py": (),
    "codebook_examples.py": (),
    "power_merge.py": (),
    "fig_ratings.py": ("matplotlib",),
    "fig_strengths.py": ("matplotlib",),
    "fig_trajectories.py": ("matplotlib",),
    "fig_theme_prevalence.py": ("matplotlib",),
}


def _top_level_imports(script: Path) -> str:
    tree = ast.parse(script.read_text(encoding="utf-8"))
    return "\n".join(
        ast.unparse(n) for n in tree.body if isinstance(n, ast.Import | ast.ImportFrom)
    )


@pytest.mark.slow
@pytest.mark.parametrize("script", sorted(LIGHT_SCRIPTS))
def test_light_job_scripts_import_only_what_they_use(script):
    loaded = _loaded(_top_level_imports(ROOT / "scripts" / script))
    assert loaded == [list(LIGHT_SCRIPTS[script])]


def test_every_reader_of_tables_imports_schemas_without_pandera(tmp_path):
    """The jobs read tables through nonolab.study.schemas: a valid table read back does not
    import pandera; a bad one does and is refused as before."""
    code = "\n".join(
        [
            "import pandas as pd",
            "from pathlib import Path",
            "from nonolab.study.schemas import read_table, write_checked_table",
            "row = dict(puzzle_hash='h', puzzle_id='007', encoding='block_start',",
            "           solver='cadical195', variables=1, clauses=2, decisions=3,",
            "           propagations=4, conflicts=0, restarts=0, status='SAT')",
            f"p = Path({str(tmp_path / 'm.csv')!r})",
            "write_checked_table(pd.DataFrame([row]), p, 'sat_metrics')",
            "assert read_table(p, 'sat_metrics').loc[0, 'puzzle_id'] == '007'",
        ]
    )
    bad = "\n".join(
        [
            "try:",
            "    write_checked_table(pd.DataFrame([row | {'conflicts': -1}]), p, 'sat_metrics')",
            "except ValueError as e:",
            "    assert 'conflicts' in str(e)",
            "else:",
            "    raise AssertionError('a negative conflict count was written')",
        ]
    )
    assert _loaded(code, bad) == [[], ["pandera"]]


# --- the plain check never accepts what pandera refuses --------------------------------------

TABLES = (
    "attempts",
    "bt_strengths",
    "events",
    "features",
    "gaps",
    "ledger",
    "participants",
    "puzzles",
    "ratings",
    "sat_metrics",
    "survey_texts",
)
MODES = ("coerced", "read", "write")


def _value(prop: dict) -> st.SearchStrategy:
    """Return a strategy of raw values valid for one schema property (not missing)."""
    typ, _ = _types(prop)
    if "enum" in prop:
        return st.sampled_from([v for v in prop["enum"] if v is not None])
    if prop.get("format") == "date-time":
        return st.datetimes(
            min_value=dt.datetime(2020, 1, 1), max_value=dt.datetime(2030, 1, 1)
        ).map(lambda t: t.replace(microsecond=0, tzinfo=dt.UTC).isoformat())
    lo, hi = prop.get("minimum"), prop.get("maximum")
    if typ == "integer":
        return st.integers(min_value=lo if lo is not None else -1000, max_value=hi or 1000)
    if typ == "number":
        return st.floats(
            min_value=lo if lo is not None else -1e6,
            max_value=hi if hi is not None else 1e6,
            allow_nan=False,
        )
    if typ == "boolean":
        return st.booleans()
    return st.text(alphabet="ab07 -", min_size=1, max_size=4)


@st.composite
def _table(draw, name: str) -> pd.DataFrame:
    """Return a coerced table of ``name`` (0-4 rows of valid values, missing where nullable;
    keys may repeat)."""
    props = table_schema(name)["properties"]
    rows = []
    for _ in range(draw(st.integers(0, 4))):
        row = {}
        for col, prop in props.items():
            nullable = _types(prop)[1]
            none = nullable and draw(st.booleans())
            row[col] = None if none else draw(_value(prop))
        rows.append(row)
    return coerce_table(pd.DataFrame(rows, columns=list(props)), name)


MUTATIONS = (
    "none",
    "drop",
    "swap",
    "extra",
    "missing",
    "below",
    "above",
    "as_text",
    "as_float",
    "duplicate",
    "outside_enum",
)


def _mutate(df: pd.DataFrame, name: str, how: str, pick: int) -> pd.DataFrame:
    """Return ``df`` changed in one way (``how``) at the column ``pick`` selects."""
    props = table_schema(name)["properties"]
    cols = list(df.columns)
    col = cols[pick % len(cols)]
    prop = props[col]
    df = df.copy()
    if how == "drop":
        return df.drop(columns=col)
    if how == "swap":
        other = cols[(pick + 1) % len(cols)]
        order = [other if c == col else col if c == other else c for c in cols]
        return df[order]
    if how == "extra":
        return df.assign(unexpected=1)
    if len(df) == 0:
        return df
    if how == "missing":
        df[col] = df[col].astype(object)
        df.iloc[0, cols.index(col)] = None
    elif how in ("below", "above") and ("minimum" in prop or "maximum" in prop):
        bound = prop.get("minimum" if how == "below" else "maximum")
        if bound is not None:
            df[col] = df[col].astype(object)
            df.iloc[0, cols.index(col)] = bound - 1 if how == "below" else bound + 1
    elif how == "as_text":
        df[col] = df[col].astype(str)
    elif how == "as_float":
        df[col] = pd.to_numeric(df[col], errors="coerce").astype(float)
    elif how == "duplicate":
        df = pd.concat([df, df.iloc[:1]], ignore_index=True)
    elif how == "outside_enum" and "enum" in prop:
        df[col] = df[col].astype(object)
        df.iloc[0, cols.index(col)] = "not-in-enum"
    return df


def _pandera_accepts(df: pd.DataFrame, name: str, mode: str) -> bool:
    from pandera.errors import SchemaError, SchemaErrors

    try:
        _pandera(name, mode).validate(df.reset_index(drop=True))
    except (SchemaError, SchemaErrors):
        return False
    return True


@pytest.mark.parametrize("name", TABLES)
@settings(
    max_examples=60 if os.environ.get("NONOLAB_SLOW") else 10,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(data=st.data())
def test_plain_check_accepts_only_what_pandera_accepts(name, data):
    """Generated tables of every schema, valid or changed in one way: whenever the plain check
    passes a table pandera accepts it too (so skipping pandera never lets a bad table through),
    and an unchanged coerced table with unique keys passes the plain check (so the jobs' valid
    tables take the fast path)."""
    df = data.draw(_table(name))
    how = data.draw(st.sampled_from(MUTATIONS))
    bad = _mutate(df, name, how, data.draw(st.integers(0, 100)))
    for mode in MODES:
        if meets_schema(bad, name, mode=mode):
            assert _pandera_accepts(bad, name, mode), (mode, how, bad)
    unique = table_schema(name).get("x-unique")
    if how == "none" and not (unique and df.duplicated(subset=unique).any()):
        assert meets_schema(df, name, mode="coerced")
        assert _pandera_accepts(df, name, "coerced")


def test_validate_table_refuses_through_pandera_with_the_same_words():
    """A table the plain check does not pass is judged by pandera and explained as before."""
    row = {
        "puzzle_hash": "h",
        "puzzle_id": "1",
        "encoding": "block_start",
        "solver": "cadical195",
        "variables": 1,
        "clauses": 2,
        "decisions": 3,
        "propagations": 4,
        "conflicts": 0,
        "restarts": 0,
        "status": "SAT",
    }
    ok = coerce_table(pd.DataFrame([row]), "sat_metrics")
    assert meets_schema(ok, "sat_metrics")
    validate_table(ok, "sat_metrics")
    with pytest.raises(TableSchemaError, match="duplicate rows for key"):
        validate_table(pd.concat([ok, ok]), "sat_metrics")
    with pytest.raises(TableSchemaError, match=r"columns \[.*\] != schema"):
        validate_table(ok.drop(columns="status"), "sat_metrics")
