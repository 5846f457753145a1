"""nonolab: reproducible analysis of human-perceived Nonogram difficulty, and a Nonogram SAT
toolkit.

The main entry points are importable from here (:mod:`nonolab.api`, loaded on first use, so
``import nonolab`` costs no pandas, scipy or Snakemake):

* a study: :func:`ingest_study`, :func:`interaction_gaps`, :func:`fit_pause_model`,
  :func:`attempt_features`, :func:`bt_ranking`, :func:`sat_metrics`, :func:`table1`,
  :func:`fit_mixed_model`;
* puzzles: :func:`solve`, :func:`generate_puzzles`, :func:`load_puzzles`, :class:`Puzzle`.

The command line (``nonolab --help``) and the workflow (``nonolab run``) use the same code.
"""

from __future__ import annotations

from typing import Any

#: the names of :mod:`nonolab.api` that ``nonolab`` gives (loaded on first use)
API = (
    "Puzzle",
    "attempt_features",
    "bt_ranking",
    "fit_mixed_model",
    "fit_pause_model",
    "generate_puzzles",
    "ingest_study",
    "interaction_gaps",
    "load_puzzles",
    "sat_metrics",
    "solve",
    "study_puzzles",
    "table1",
)

__all__ = ["__version__", *API]


def __getattr__(name: str) -> Any:
    """Return ``__version__`` (the installed distribution's version, or ``0.0.0+unknown`` in a
    source tree) or an entry point of :mod:`nonolab.api`, looked up on first use:
    importlib.metadata costs ~25 ms to import, the analysis entry points pandas and scipy."""
    if name in API:
        from nonolab import api

        value = getattr(api, name)
        globals()[name] = value
        return value
    if name != "__version__":
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from importlib import metadata

    try:
        version = metadata.version("nonolab")
    except metadata.PackageNotFoundError:  # running from a source tree
        version = "0.0.0+unknown"
    globals()["__version__"] = version
    return version


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
