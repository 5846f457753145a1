"""Deterministic table output with provenance sidecars.

Every table nonolab writes goes through :func:`write_table`: CSV with fixed float formatting
(byte-identical for identical inputs), optionally Markdown and LaTeX (booktabs), and a sidecar
``<name>.provenance.json`` recording input file hashes, package versions, parameters and seeds.
Nothing time- or host-dependent is written into a table or its sidecar, so reruns are
byte-identical.

The core layer imports no table library: a table is any object with the pandas ``DataFrame``
interface used here (``to_csv``, ``to_parquet``, ``columns``, ``itertuples``, ``dtype`` of a
column), so the writers serve every layer above.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping
from importlib import metadata
from pathlib import Path
from typing import Any, Protocol

from nonolab.core.hashing import input_hashes

FLOAT_FORMAT = "%.10g"
PACKAGES = (
    "nonolab",
    "numpy",
    "pandas",
    "scipy",
    "scikit-learn",
    "statsmodels",
    "choix",
    "python-sat",
    "matplotlib",
    "snakemake",
)


class Table(Protocol):
    """The part of the pandas ``DataFrame`` interface the writers use."""

    columns: Any

    def __len__(self) -> int: ...

    def __getitem__(self, key: Any) -> Any: ...

    def to_csv(self, *args: Any, **kwargs: Any) -> Any: ...

    def to_parquet(self, *args: Any, **kwargs: Any) -> Any: ...

    def itertuples(self, *args: Any, **kwargs: Any) -> Any: ...


def package_versions(names: Iterable[str] = PACKAGES) -> dict[str, str]:
    """Return ``{package: version}`` for the installed packages among ``names``."""
    out = {}
    for n in names:
        try:
            out[n] = metadata.version(n)
        except metadata.PackageNotFoundError:
            out[n] = "not installed"
    return out


def provenance(
    inputs: Iterable[str | os.PathLike] = (),
    params: Mapping[str, Any] | None = None,
    seeds: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """Return a provenance record: input sha256s, package versions, parameters and seeds."""
    return {
        "inputs": input_hashes(inputs),
        "versions": package_versions(),
        "params": dict(params or {}),
        "seeds": dict(seeds or {}),
    }


def write_json(obj: Any, path: str | os.PathLike) -> None:
    """Write ``obj`` as sorted, indented JSON (byte-stable) to ``path``."""
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", encoding="utf-8", newline="\n") as fh:
        json.dump(obj, fh, indent=2, sort_keys=True, default=_json_default)
        fh.write("\n")


def _json_default(o: Any) -> Any:
    import numpy as np

    if isinstance(o, np.integer):
        return int(o)
    if isinstance(o, np.floating):
        return float(o)
    if isinstance(o, np.bool_):
        return bool(o)
    if isinstance(o, np.ndarray):
        return o.tolist()
    if isinstance(o, Path):
        return o.as_posix()
    raise TypeError(f"not JSON serialisable: {type(o).__name__}")


def table_record(
    df: Table,
    file_name: str,
    *,
    inputs: Iterable[str | os.PathLike] = (),
    params: Mapping[str, Any] | None = None,
    seeds: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """Return the provenance sidecar record of table ``df`` written as ``file_name``:
    :func:`provenance` plus ``table`` (file name, row count, column names)."""
    rec = provenance(inputs, params, seeds)
    rec["table"] = {"file": file_name, "rows": int(len(df)), "columns": list(map(str, df.columns))}
    return rec


def write_table(
    df: Table,
    path: str | os.PathLike,
    *,
    inputs: Iterable[str | os.PathLike] = (),
    params: Mapping[str, Any] | None = None,
    seeds: Mapping[str, Any] | None = None,
    formats: Iterable[str] = ("csv",),
    caption: str | None = None,
) -> None:
    """Write ``df`` to ``path`` (a ``.csv`` path) and its provenance sidecar.

    ``formats`` may add ``"md"`` (Markdown) and ``"tex"`` (LaTeX booktabs) next to the CSV, and
    ``"parquet"``. The sidecar ``<stem>.provenance.json`` holds :func:`table_record`. Floats are
    written with ``%.10g`` so output is byte-identical across reruns.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    formats = set(formats) | {"csv"}
    df.to_csv(path, index=False, float_format=FLOAT_FORMAT, lineterminator="\n")
    if "parquet" in formats:
        df.to_parquet(path.with_suffix(".parquet"), index=False)
    if "md" in formats:
        path.with_suffix(".md").write_text(to_markdown(df, caption), encoding="utf-8")
    if "tex" in formats:
        path.with_suffix(".tex").write_text(to_latex(df, caption), encoding="utf-8")
    rec = table_record(df, path.name, inputs=inputs, params=params, seeds=seeds)
    write_json(rec, path.with_name(path.stem + ".provenance.json"))


def write_parquet_table(
    df: Table,
    path: str | os.PathLike,
    *,
    inputs: Iterable[str | os.PathLike] = (),
    params: Mapping[str, Any] | None = None,
    seeds: Mapping[str, Any] | None = None,
) -> None:
    """Write ``df`` as Parquet only to ``path`` (a ``.parquet`` path) and its provenance
    sidecar ``<stem>.provenance.json`` (:func:`table_record`)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    df.to_parquet(path, index=False)
    rec = table_record(df, path.name, inputs=inputs, params=params, seeds=seeds)
    write_json(rec, path.with_name(path.stem + ".provenance.json"))


def _fmt(v: Any) -> str:
    if isinstance(v, float):
        if v != v:  # NaN
            return ""
        return f"{v:.4g}" if abs(v) < 1e-3 and v != 0 else f"{v:.3f}".rstrip("0").rstrip(".")
    if v is None or (isinstance(v, float) and v != v):
        return ""
    return str(v)


def to_markdown(df: Table, caption: str | None = None) -> str:
    """Return ``df`` as a GitHub Markdown table (pandas ``DataFrame.to_markdown``, which uses
    tabulate), numbers as :func:`_fmt` writes them (3 decimals; 4 significant digits below
    0.001), with an optional caption line."""
    cells = df.astype(object).map(_fmt)
    text = cells.to_markdown(index=False, tablefmt="github", disable_numparse=True)
    return (f"{caption}\n\n" if caption else "") + text + "\n"


def _tex_escape(s: str) -> str:
    """Return ``s`` with LaTeX's special characters escaped (for the caption, which Styler
    passes through as it is)."""
    for a, b in (
        ("\\", r"\textbackslash{}"),
        ("_", r"\_"),
        ("%", r"\%"),
        ("&", r"\&"),
        ("#", r"\#"),
        ("$", r"\$"),
    ):
        s = s.replace(a, b)
    return s


def _is_numeric(dtype: Any) -> bool:
    """Return True for boolean, integer, float and complex dtypes (numpy or pandas nullable),
    as ``pandas.api.types.is_numeric_dtype`` decides them."""
    return getattr(dtype, "kind", "O") in "biufc"


def to_latex(df: Table, caption: str | None = None) -> str:
    """Return ``df`` as a LaTeX booktabs ``tabular`` in a ``table`` float (pandas
    ``Styler.to_latex(hrules=True)``), numbers as :func:`_fmt` writes them, text escaped for
    LaTeX; numeric columns right-aligned."""
    align = "".join("r" if _is_numeric(df[c].dtype) else "l" for c in df.columns)
    styler = (
        df.style.hide(axis="index")
        .format(_fmt, escape="latex")
        .format_index(escape="latex", axis=1)
    )
    return styler.to_latex(
        hrules=True,
        column_format=align,
        position="htbp",
        position_float="centering",
        caption=_tex_escape(caption) if caption else None,
    )
