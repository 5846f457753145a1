"""File hashes for provenance records and study fingerprints."""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterable
from functools import lru_cache
from pathlib import Path


def file_sha256(path: str | os.PathLike) -> str:
    """Return the hex sha256 of a file's bytes.

    A file is read once per process while its identity and state (device, inode, size,
    modification time in ns) stay the same: the ingest's provenance sidecars and the study
    fingerprint name the same log files, and large studies would otherwise be hashed once per
    table. Any write to the file changes its modification time and so is hashed again.
    """
    st = os.stat(path)
    key = (os.path.realpath(path), st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)
    return _sha256_of(*key)


@lru_cache(maxsize=1 << 16)
def _sha256_of(real_path: str, dev: int, ino: int, size: int, mtime_ns: int) -> str:
    """Hex sha256 of the file at ``real_path`` (the other arguments key the cache)."""
    h = hashlib.sha256()
    with open(real_path, "rb") as fh:
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
