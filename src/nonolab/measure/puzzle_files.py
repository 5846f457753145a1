"""Read any puzzle file: the formats of :mod:`nonolab.sat.formats` and puzzle tables.

Importing this module loads no pandas; a table file (``.csv``/``.parquet``, or ``fmt``
``table``) loads it when it is read, so ``nonolab solve`` on a ``.non`` or ``.cwd`` file works
with the core dependencies alone.
"""

from __future__ import annotations

from pathlib import Path

from nonolab.sat import formats
from nonolab.sat.puzzles import Puzzle

TABLE_SUFFIXES = {".csv": "table", ".parquet": "table"}


def read_puzzles(path: str | Path, fmt: str | None = None) -> list[Puzzle]:
    """Return every puzzle in the file ``path`` (``fmt``: a name in
    :data:`nonolab.sat.formats.FORMATS`, default from the extension): tables (``.csv``/
    ``.parquet``, or ``fmt`` ``table``) with :func:`nonolab.measure.tables.puzzles_from_table`,
    every other format with :func:`nonolab.sat.formats.read_puzzles` (same labels and errors)."""
    path = Path(path)
    ext = path.suffix.lower()
    if (fmt or TABLE_SUFFIXES.get(ext)) != "table":
        return formats.read_puzzles(path, fmt)
    if not path.exists():
        raise FileNotFoundError(f"puzzle table {path} does not exist")
    import pandas as pd

    from nonolab.measure.tables import puzzles_from_table

    df = pd.read_parquet(path) if ext == ".parquet" else pd.read_csv(path, dtype=str)
    return puzzles_from_table(df, str(path))


__all__ = ["TABLE_SUFFIXES", "read_puzzles"]
