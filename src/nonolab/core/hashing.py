"""File hashes for provenance records and study fingerprints."""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterable
from pathlib import Path


def file_sha256(path: str | os.PathLike) -> str:
    """Return the hex sha256 of a file's bytes."""
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def input_hashes(inputs: Iterable[str | os.PathLike]) -> dict[str, str]:
    """Return ``{POSIX path: hex sha256}`` of the given files, sorted by path.

    A folder contributes every file below it; a path that does not exist is left out.
    """
    out = {}
    for p in inputs:
        p = Path(p)
        if p.is_dir():
            for f in sorted(x for x in p.rglob("*") if x.is_file()):
                out[f.as_posix()] = file_sha256(f)
        elif p.exists():
            out[p.as_posix()] = file_sha256(p)
    return dict(sorted(out.items()))
