"""Deterministic table output with provenance sidecars, for report-layer callers.

The writers live in :mod:`nonolab.core.tables` (and the file hash in
:mod:`nonolab.core.hashing`), so that every layer can write tables; this module re-exports them
under their established names.
"""

from __future__ import annotations

from nonolab.core.hashing import file_sha256
from nonolab.core.tables import (
    FLOAT_FORMAT,
    PACKAGES,
    package_versions,
    provenance,
    table_record,
    to_latex,
    to_markdown,
    write_json,
    write_parquet_table,
    write_table,
)

__all__ = [
    "FLOAT_FORMAT",
    "PACKAGES",
    "file_sha256",
    "package_versions",
    "provenance",
    "table_record",
    "to_latex",
    "to_markdown",
    "write_json",
    "write_parquet_table",
    "write_table",
]
