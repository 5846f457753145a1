"""Fixtures of the study platform's tests: the example plan, stores on SQLite and on a throwaway
PostgreSQL cluster (Debian's postgresql; under CI=true a cluster that cannot start fails the
tests instead of skipping them), and a study server run by uvicorn in a child process."""

from __future__ import annotations

import glob
import os
import shutil
import subprocess
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from serve_helpers import PLAN, _truthy, free_port


def _unavailable(msg: str) -> None:
    if _truthy("CI"):
        pytest.fail(msg + " (under CI=true this is a failure, not a skip)")
    pytest.skip(msg)


@pytest.fixture(scope="session")
def plan():
    from nonolab.collect.plan import load_plan

    return load_plan(PLAN)


@pytest.fixture(scope="session")
def pg_server() -> Iterator[str]:
    """A throwaway PostgreSQL cluster on 127.0.0.1 (random port, trust auth); yields the URL of
    its server (no database)."""
    bins = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))
    initdb = bins[-1] if bins else shutil.which("initdb")
    if not initdb:
        _unavailable("PostgreSQL (initdb) is not installed")
    bindir = Path(initdb).parent
    root = os.geteuid() == 0
    d = tempfile.mkdtemp(prefix="nonolab-pg-")
    os.chmod(d, 0o777)
    data = Path(d) / "data"
    port = free_port()

    def run(cmd: list[str], **kw):
        if root:
            cmd = ["runuser", "-u", "postgres", "--", *cmd]
        return subprocess.run(cmd, capture_output=True, text=True, **kw)

    r = run(
        [str(bindir / "initdb"), "-D", str(data), "-U", "postgres", "--auth=trust", "-E", "UTF8"]
    )
    if r.returncode != 0:
        _unavailable(f"initdb failed: {r.stderr.strip()[-500:]}")
    opts = (
        f"-c listen_addresses=127.0.0.1 -c port={port} -c unix_socket_directories={d} -c fsync=off"
    )
    r = run(
        [
            str(bindir / "pg_ctl"),
            "-D",
            str(data),
            "-o",
            opts,
            "-l",
            f"{d}/log",
            "-w",
            "-t",
            "60",
            "start",
        ]
    )
    if r.returncode != 0:
        log = Path(f"{d}/log").read_text() if Path(f"{d}/log").exists() else ""
        _unavailable(f"PostgreSQL did not start: {r.stderr.strip()[-300:]} {log[-500:]}")
    try:
        yield f"postgresql://postgres@127.0.0.1:{port}"
    finally:
        run([str(bindir / "pg_ctl"), "-D", str(data), "-m", "immediate", "stop"])
        shutil.rmtree(d, ignore_errors=True)


def new_pg_database(server: str) -> str:
    """Create an empty database on ``server``; return its URL."""
    import psycopg

    name = "t_" + uuid.uuid4().hex[:12]
    with psycopg.connect(server + "/postgres", autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name}")
    return f"{server}/{name}"


@pytest.fixture(params=["sqlite", "postgresql"])
def db_url(request, tmp_path) -> str:
    """A fresh database URL: a SQLite file, or a new database on the PostgreSQL cluster."""
    if request.param == "sqlite":
        return str(tmp_path / "study.sqlite")
    return new_pg_database(request.getfixturevalue("pg_server"))
