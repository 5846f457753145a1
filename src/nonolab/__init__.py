"""nonolab: reproducible analysis of human-perceived Nonogram difficulty, and a Nonogram SAT toolkit."""

from importlib import metadata as _metadata

try:
    __version__ = _metadata.version("nonolab")
except _metadata.PackageNotFoundError:  # running from a source tree
    __version__ = "0.0.0+unknown"

__all__ = ["__version__"]
