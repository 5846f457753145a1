"""Table schemas: each table that crosses a stage boundary is declared once, as the JSON Schema of
one row in ``workflow/schemas/<table>.schema.yaml``, and used for writing and for reading.

* :func:`coerce_table` turns raw values (as parsed from the logs) into the declared dtypes;
* :func:`validate_table` checks a frame against the schema with pandera (columns and order,
  dtypes, missing values, ``enum``/``minimum``/``maximum``, unique keys ``x-unique``);
* :func:`read_table` reads a CSV or Parquet table with its declared dtypes and validates it, so
  scripts do not repeat ``dtype={"puzzle_id": str}``;
* :func:`write_checked_table` validates before writing (CSV + provenance sidecar).

Coercion stays a small function of ours: pandera's own coercion turns missing strings into the
pandas ``str`` dtype and refuses mixed ISO-8601 precisions, both of which would change the
Parquet tables (docs/decisions.md, "Table schemas").
"""

from __future__ import annotations

import os
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd
import yaml

from nonolab.core.tables import csv_read_options, is_text_column, restore_cells, write_table
from nonolab.study.presets import SCHEMA_DIR

if TYPE_CHECKING:  # pandera is imported where a table fails the plain check (validate_table)
    import pandera.pandas as pa
    from pandera.errors import SchemaError, SchemaErrors


class TableSchemaError(ValueError):
    """A table does not match its schema in ``workflow/schemas/<table>.schema.yaml``."""


@cache
def table_schema(name: str) -> dict[str, Any]:
    """Return the row schema of table ``name`` (a JSON Schema ``object`` with properties).

    Cached: callers must not modify the returned mapping.
    """
    return yaml.safe_load((SCHEMA_DIR / f"{name}.schema.yaml").read_text(encoding="utf-8"))


def columns(name: str) -> list[str]:
    """Return the column names of table ``name`` in schema order."""
    return list(table_schema(name)["properties"])


def _types(prop: dict[str, Any]) -> tuple[str, bool]:
    t = prop.get("type", "string")
    ts = [t] if isinstance(t, str) else list(t)
    nullable = "null" in ts
    main = [x for x in ts if x != "null"]
    return (main[0] if main else "string"), nullable


def coerce_table(df: pd.DataFrame, name: str) -> pd.DataFrame:
    """Return ``df`` with the column order and dtypes its schema declares.

    integer -> nullable ``Int64``, number -> ``float64``, boolean -> nullable ``boolean``,
    string -> ``object`` of str/None, ``format: date-time`` -> ``datetime64[us, UTC]``
    (microseconds, as logged). Raises :class:`TableSchemaError` naming the table, the column
    and the first value it cannot hold (an integer outside 64 bits, text in a number column).
    """
    schema = table_schema(name)
    optional = set(schema.get("x-optional", ()))
    out = pd.DataFrame(index=df.index)
    for col, prop in schema["properties"].items():
        if col in optional and col not in df:
            continue
        s = df[col] if col in df else pd.Series([None] * len(df), index=df.index)
        try:
            out[col] = _coerce_column(s, prop)
        except (TypeError, ValueError, OverflowError) as exc:
            raise TableSchemaError(
                f"table {name}: column {col}: {_first_bad(s, prop)}{exc}"
            ) from exc
    return out.reset_index(drop=True)


def _first_bad(s: pd.Series, prop: dict[str, Any]) -> str:
    """Return ``"row i value v: "`` for the first value of ``s`` that its schema type cannot
    hold (an integer outside 64 bits, a non-number), or "" when none is found."""
    typ, _ = _types(prop)
    if typ not in ("integer", "number"):
        return ""
    for i, v in enumerate(s):
        if v is None or v is pd.NA or (isinstance(v, float) and v != v):
            continue
        try:
            ok = float(v) == float(v) and (typ == "number" or -(2**63) <= int(v) < 2**63)
        except (TypeError, ValueError, OverflowError):
            ok = False
        if not ok:
            return f"row {i} value {v!r}: "
    return ""


def _coerce_column(s: pd.Series, prop: dict[str, Any]) -> Any:
    """Return one column coerced to the dtype of its schema property (see :func:`coerce_table`)."""
    typ, _ = _types(prop)
    if prop.get("format") == "date-time":
        return pd.to_datetime(s, utc=True).astype("datetime64[us, UTC]")
    if typ == "integer":
        fast = _fast_int(s)
        return (
            fast
            if fast is not None
            else pd.array(
                [None if v is None or v is pd.NA or v != v else int(v) for v in s],
                dtype="Int64",
            )
        )
    if typ == "number":
        return pd.to_numeric(s, errors="raise").astype("float64")
    if typ == "boolean" and s.dtype == np.bool_:
        return pd.array(s.to_numpy(), dtype="boolean")
    if typ == "boolean":
        return pd.array(
            [None if v is None or v is pd.NA or v != v else bool(v) for v in s],
            dtype="boolean",
        )
    if pd.api.types.infer_dtype(s, skipna=True) in ("string", "empty"):
        return s.astype(object).where(s.notna(), None)
    return pd.Series(
        [
            None if v is None or v is pd.NA or (isinstance(v, float) and v != v) else str(v)
            for v in s
        ],
        index=s.index,
        dtype=object,
    )


def _fast_int(s: pd.Series) -> pd.arrays.IntegerArray | None:
    """Return the ``Int64`` array of a plain int64 column, or of a float64 column whose
    non-missing values are finite and within int64 (truncated as ``int(v)`` does); None for
    anything else (the caller converts value by value)."""
    if s.dtype == np.int64:
        return pd.array(s.to_numpy(), dtype="Int64")
    if s.dtype != np.float64:
        return None
    v = s.to_numpy()
    na = np.isnan(v)
    ok = v[~na]
    if not (np.isfinite(ok).all() and (np.abs(ok) < 2.0**62).all()):
        return None
    return pd.arrays.IntegerArray(np.where(na, 0, np.trunc(v)).astype(np.int64), na)


Mode = str  # "coerced" (as coerce_table makes it), "read" (as read_table reads it), "write"


def _dtype(prop: dict[str, Any], mode: Mode = "coerced") -> Any:
    """Return the pandas dtype a column of this schema property has in ``mode`` (None: checked
    by value). Before writing only values count: an ``Int64`` and an ``int64`` column give the
    same CSV text."""
    typ, nullable = _types(prop)
    if mode == "write" and typ in ("integer", "boolean", "number"):
        return None
    if prop.get("format") == "date-time":
        return "datetime64[us, UTC]" if mode == "coerced" else None
    if typ == "integer" and mode == "read" and nullable:
        return None  # as pandas reads it: int64, or float64 holding whole numbers when missing
    if typ == "integer":
        return "int64" if mode == "read" else "Int64"
    if typ == "number":
        return "float64"
    if typ == "boolean":
        return "bool" if mode == "read" and not nullable else "boolean"
    return None


def _whole(s: pd.Series) -> bool:
    v = pd.to_numeric(s.dropna(), errors="coerce")
    return bool(v.notna().all() and (v == v.round()).all())


def _numeric(s: pd.Series) -> bool:
    return bool(pd.to_numeric(s.dropna(), errors="coerce").notna().all())


def _boolean(s: pd.Series) -> bool:
    return bool(s.dropna().isin([True, False]).all())


@cache
def _pandera(name: str, mode: Mode) -> pa.DataFrameSchema:
    import pandera.pandas as pa

    schema = table_schema(name)
    optional = set(schema.get("x-optional", ()))
    cols = {}
    for col, prop in schema["properties"].items():
        checks = []
        if "enum" in prop:
            checks.append(pa.Check.isin(prop["enum"], error="outside enum"))
        if "minimum" in prop:
            checks.append(pa.Check.ge(prop["minimum"], error=f"below {prop['minimum']}"))
        if "maximum" in prop:
            checks.append(pa.Check.le(prop["maximum"], error=f"above {prop['maximum']}"))
        typ, nullable = _types(prop)
        dtype = _dtype(prop, mode)
        if typ == "integer" and dtype is None:
            checks.append(pa.Check(_whole, error="not whole numbers"))
        if typ == "number" and dtype is None:
            checks.append(pa.Check(_numeric, error="not numbers"))
        if typ == "boolean" and dtype is None:
            checks.append(pa.Check(_boolean, error="not true/false"))
        cols[col] = pa.Column(dtype, checks=checks, nullable=nullable, required=col not in optional)
    return pa.DataFrameSchema(
        cols, strict=True, ordered=True, unique=schema.get("x-unique"), name=name
    )


def validate_table(df: pd.DataFrame, name: str, *, mode: Mode = "coerced") -> None:
    """Raise :class:`TableSchemaError` if ``df`` does not match the schema of table ``name``.

    Checks (pandera): exactly the declared columns in order (a column the schema lists under
    ``x-optional`` may be absent); the declared dtypes (``mode``
    "coerced": as :func:`coerce_table` makes them; "read": as :func:`read_table` reads them;
    "write": only the values, as they will be written); no
    missing values in non-nullable columns; ``enum``, ``minimum`` and ``maximum``; unique keys.

    A table that meets every rule in the plain pandas check :func:`meets_schema` is accepted
    without pandera (importing pandera costs a job about 0.2 s of CPU); any other table is
    judged, and its error worded, by pandera.
    """
    if meets_schema(df, name, mode=mode):
        return
    from pandera.errors import SchemaError, SchemaErrors

    try:
        _pandera(name, mode).validate(df.reset_index(drop=True))
    except (SchemaError, SchemaErrors) as e:
        raise TableSchemaError(f"table {name}: {_explain(e, df, name)}") from e


def meets_schema(df: pd.DataFrame, name: str, *, mode: Mode = "coerced") -> bool:
    """Return True when ``df`` meets every rule :func:`validate_table` checks for table ``name``
    in ``mode`` (the columns in order, dtypes, no missing values where not nullable, ``enum`` /
    ``minimum`` / ``maximum`` on the values present, unique keys), checked with pandas alone.

    False means "not shown to meet them" (a rule fails, or a check could not be evaluated): the
    caller asks pandera, which decides. Never True for a table pandera refuses
    (``tests/test_import_cost.py`` generates tables to check this).
    """
    try:
        return _meets_schema(df, name, mode)
    except Exception:  # noqa: BLE001 (anything unexpected: let pandera decide)
        return False


def _meets_schema(df: pd.DataFrame, name: str, mode: Mode) -> bool:
    schema = table_schema(name)
    props = schema["properties"]
    optional = set(schema.get("x-optional", ()))
    if list(df.columns) != [c for c in props if c not in optional or c in df.columns]:
        return False
    for col, prop in props.items():
        if col not in df.columns:
            continue
        s = df[col]
        typ, nullable = _types(prop)
        dtype = _dtype(prop, mode)
        if dtype is not None and str(s.dtype) != dtype:
            return False
        missing = s.isna()
        if missing.any() and not nullable:
            return False
        present = s[~missing]
        if "enum" in prop and not present.isin(prop["enum"]).all():
            return False
        if "minimum" in prop and not bool((present >= prop["minimum"]).all()):
            return False
        if "maximum" in prop and not bool((present <= prop["maximum"]).all()):
            return False
        check = {"integer": _whole, "number": _numeric, "boolean": _boolean}.get(typ)
        if dtype is None and check is not None and not check(s):
            return False
    unique = schema.get("x-unique")
    return not (unique and df.duplicated(subset=unique).any())


def _explain(e: SchemaError | SchemaErrors, df: pd.DataFrame, name: str) -> str:
    """Return pandera's finding in the terms of the schema file: the columns against the
    declared ones, the column with missing values, or the duplicated key; else pandera's text."""
    from pandera.errors import SchemaErrorReason, SchemaErrors

    column_reasons = {
        SchemaErrorReason.COLUMN_NOT_IN_DATAFRAME,
        SchemaErrorReason.COLUMN_NOT_IN_SCHEMA,
        SchemaErrorReason.COLUMN_NOT_ORDERED,
    }
    errors = e.schema_errors if isinstance(e, SchemaErrors) else [e]
    reasons = {err.reason_code for err in errors}
    if reasons & column_reasons:
        return f"columns {list(df.columns)} != schema {columns(name)}"
    nulls = [err for err in errors if err.reason_code == SchemaErrorReason.SERIES_CONTAINS_NULLS]
    if nulls:
        return f"column {nulls[0].schema.name} has missing values"
    if "not unique" in str(e):
        return f"duplicate rows for key {table_schema(name).get('x-unique')}: {e}"
    return str(e)


def read_csv(
    path: str | os.PathLike,
    text: Any = (),
    dtype: dict[str, Any] | None = None,
    usecols: Any = None,
) -> pd.DataFrame:
    """Return a CSV table written by :func:`nonolab.core.tables.write_table`, read back as it
    was written: id columns (``id``, ``*_id``) and the columns named in ``text`` are text with
    no missing values (``NA``, ``null``, ``nan``, ``None`` and the empty cell stay text), the
    other columns as pandas infers them (``dtype`` overrides), and cells neutralised for
    spreadsheets are restored (:func:`nonolab.core.tables.restore_cell`). The one reader of
    our CSV tables (:func:`nonolab.core.tables.csv_read_options`)."""
    header = pd.read_csv(path, nrows=0, usecols=usecols).columns
    opts = csv_read_options(header, text)
    opts["dtype"] = dict(dtype or {}) | opts["dtype"]
    return restore_cells(pd.read_csv(path, usecols=usecols, **opts))


def read_table(path: str | os.PathLike, name: str) -> pd.DataFrame:
    """Return table ``name`` read from ``path`` (``.csv`` or ``.parquet``), validated.

    CSV columns get the declared dtypes: strings stay strings (``"007"`` is not 7), integers
    ``int64`` (when nullable: as pandas reads them, checked to be whole numbers), numbers ``float64``, booleans ``bool`` (``boolean``
    when nullable), date-times UTC. Raises :class:`TableSchemaError` when the file does not
    match the schema.
    """
    path = Path(path)
    props = table_schema(name)["properties"]
    if path.suffix == ".parquet":
        df = pd.read_parquet(path)
        validate_table(df, name)
        return df
    strings = [
        c for c, p in props.items() if _types(p) == ("string", False) and not p.get("format")
    ]
    nullable = {
        c for c, p in props.items() if _types(p) == ("string", True) and not p.get("format")
    }
    df = read_csv(path, text=strings, dtype=dict.fromkeys(nullable, str))
    for col in strings:  # an empty cell is missing (refused below), but not in an id column
        if col in df and not is_text_column(col):
            df[col] = df[col].mask(df[col] == "")
    for col, prop in props.items():
        dt = _dtype(prop, "read")
        if col in df and dt is not None and str(df[col].dtype) != dt:
            try:
                df[col] = df[col].astype(dt)
            except (TypeError, ValueError) as e:
                raise TableSchemaError(f"table {name} ({path}): column {col}: {e}") from e
        elif col in df and prop.get("format") == "date-time":
            df[col] = pd.to_datetime(df[col], utc=True).astype("datetime64[us, UTC]")
    validate_table(df, name, mode="read")
    return df


def write_checked_table(df: pd.DataFrame, path: str | os.PathLike, name: str, **kw: Any) -> None:
    """Validate ``df`` against the schema of table ``name`` (as read back from CSV) and write it
    with :func:`nonolab.core.tables.write_table` (``kw``: its provenance and format options)."""
    validate_table(df, name, mode="write")
    write_table(df, path, **kw)


__all__ = [
    "TableSchemaError",
    "coerce_table",
    "columns",
    "meets_schema",
    "read_csv",
    "read_table",
    "table_schema",
    "validate_table",
    "write_checked_table",
]
