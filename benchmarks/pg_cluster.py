"""A throwaway PostgreSQL cluster on 127.0.0.1 for the study server's tests and load benchmark.

One function starts it for both users: the test fixture ``pg_server`` (tests/collect/conftest.py,
``durable=False``: fsync off, for speed) and ``benchmarks/serve_bench.py --postgres``
(``durable=True``: fsync and synchronous_commit on, the settings a study runs with). Debian's
binaries (``/usr/lib/postgresql/<version>/bin/initdb`` and ``pg_ctl``, else ``initdb`` on PATH);
as root the cluster runs as the ``postgres`` user (``runuser``). It listens on a random free port
of 127.0.0.1 only, with trust authentication, its data in a temporary folder that is removed
when the context ends (normally, on an error or on Ctrl-C).

Not part of the installed package: it is repository tooling, loaded by file path (the benchmark
scripts are not a package).
"""

from __future__ import annotations

import glob
import os
import shutil
import socket
import subprocess
import tempfile
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import NamedTuple


class ClusterUnavailable(RuntimeError):
    """PostgreSQL is not installed, or the cluster did not initialise or start."""


class Cluster(NamedTuple):
    """A running throwaway cluster."""

    url: str  # postgresql://postgres@127.0.0.1:PORT (the server, no database)
    port: int
    data: Path  # the data directory (postmaster.pid is in it)
    version: str  # the server's major version, e.g. "15"
    durable: bool  # fsync and synchronous_commit on

    def postmaster_pid(self) -> int | None:
        """Return the process id of the cluster's postmaster (None when it is not running)."""
        try:
            return int((self.data / "postmaster.pid").read_text().split("\n", 1)[0])
        except (OSError, ValueError):
            return None


def free_port() -> int:
    """Return a TCP port on 127.0.0.1 that is free now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _bindir() -> Path:
    bins = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"), key=_version_key)
    initdb = bins[-1] if bins else shutil.which("initdb")
    if not initdb:
        raise ClusterUnavailable("PostgreSQL (initdb) is not installed")
    return Path(initdb).parent


def _version_key(path: str) -> tuple[int, ...]:
    part = Path(path).parts[-3]
    return tuple(int(x) for x in part.split(".") if x.isdigit())


@contextmanager
def throwaway_cluster(*, durable: bool = True, stop_mode: str = "fast") -> Iterator[Cluster]:
    """Start a PostgreSQL cluster on 127.0.0.1 (random port, trust auth); yield it; stop it
    (``pg_ctl stop -m stop_mode``) and remove its folder at the end.

    ``durable=True`` sets ``fsync=on`` and ``synchronous_commit=on`` explicitly (a commit
    returns once its WAL is flushed to disk); ``durable=False`` sets ``fsync=off`` (tests only:
    a crash of the machine can corrupt the cluster). Raises :class:`ClusterUnavailable` when
    PostgreSQL is missing or the cluster does not start (with the end of its log).
    """
    bindir = _bindir()
    root = os.geteuid() == 0
    d = Path(tempfile.mkdtemp(prefix="nonolab-pg-"))
    try:
        os.chmod(d, 0o777)  # the postgres user writes its data and socket here
        data = d / "data"
        port = free_port()

        def run(cmd: list[str]) -> subprocess.CompletedProcess[str]:
            if root:
                cmd = ["runuser", "-u", "postgres", "--", *cmd]
            return subprocess.run(cmd, capture_output=True, text=True, check=False)

        r = run([str(bindir / "initdb"), "-D", str(data), "-U", "postgres", "--auth=trust",
                 "-E", "UTF8"])  # fmt: skip
        if r.returncode != 0:
            raise ClusterUnavailable(f"initdb failed: {r.stderr.strip()[-500:]}")
        sync = "-c fsync=on -c synchronous_commit=on" if durable else "-c fsync=off"
        opts = f"-c listen_addresses=127.0.0.1 -c port={port} -c unix_socket_directories={d} {sync}"
        try:
            r = run([str(bindir / "pg_ctl"), "-D", str(data), "-o", opts, "-l", str(d / "log"),
                     "-w", "-t", "60", "start"])  # fmt: skip
            if r.returncode != 0:
                log = (d / "log").read_text() if (d / "log").exists() else ""
                raise ClusterUnavailable(
                    f"PostgreSQL did not start: {r.stderr.strip()[-300:]} {log[-500:]}"
                )
            yield Cluster(f"postgresql://postgres@127.0.0.1:{port}", port, data,
                          bindir.parent.name, durable)  # fmt: skip
        finally:  # also after a failed or interrupted start: a postmaster may be running
            if (data / "postmaster.pid").exists():
                r = run([str(bindir / "pg_ctl"), "-D", str(data), "-m", stop_mode, "-w", "-t",
                         "60", "stop"])  # fmt: skip
                if r.returncode != 0:
                    run([str(bindir / "pg_ctl"), "-D", str(data), "-m", "immediate", "stop"])
    finally:
        shutil.rmtree(d, ignore_errors=True)


def create_database(server: str, name: str | None = None) -> str:
    """Create an empty database on ``server`` (a ``postgresql://`` URL without a database);
    return its URL. ``name`` defaults to a random ``t_`` + 12 hex digits."""
    import psycopg

    name = name or "t_" + uuid.uuid4().hex[:12]
    if not name.replace("_", "").isalnum():
        raise ValueError(f"database name {name!r}: letters, digits and _ only")
    with psycopg.connect(server + "/postgres", autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name}")
    return f"{server}/{name}"
