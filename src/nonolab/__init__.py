"""nonolab: reproducible analysis of human-perceived Nonogram difficulty, and a Nonogram SAT toolkit."""

from __future__ import annotations

__all__ = ["__version__"]


def __getattr__(name: str) -> str:
    """Return ``__version__`` (the installed distribution's version, or ``0.0.0+unknown`` in a
    source tree), looked up on first use: importlib.metadata costs ~25 ms to import."""
    if name != "__version__":
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from importlib import metadata

    try:
        version = metadata.version("nonolab")
    except metadata.PackageNotFoundError:  # running from a source tree
        version = "0.0.0+unknown"
    globals()["__version__"] = version
    return version
