"""Fixtures of the study platform's tests: the example plan, and stores on SQLite and on a
throwaway PostgreSQL cluster (benchmarks/pg_cluster.py, the one the load benchmark starts too;
Debian's postgresql; under CI=true a cluster that cannot start fails the tests instead of
skipping them)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from serve_helpers import PLAN, _truthy


def _unavailable(msg: str) -> None:
    if _truthy("CI"):
        pytest.fail(msg + " (under CI=true this is a failure, not a skip)")
    pytest.skip(msg)


@pytest.fixture(scope="session")
def plan():
    from nonolab.collect.plan import load_plan

    return load_plan(PLAN)


@pytest.fixture(scope="session")
def pg_cluster_module(benchmark_script):
    """benchmarks/pg_cluster.py: the throwaway cluster the load benchmark starts too."""
    return benchmark_script("pg_cluster")


@pytest.fixture(scope="session")
def pg_server(pg_cluster_module) -> Iterator[str]:
    """A throwaway PostgreSQL cluster on 127.0.0.1 (random port, trust auth, fsync off); yields
    the URL of its server (no database)."""
    try:
        with pg_cluster_module.throwaway_cluster(durable=False, stop_mode="immediate") as c:
            yield c.url
    except pg_cluster_module.ClusterUnavailable as e:
        _unavailable(str(e))


@pytest.fixture(params=["sqlite", "postgresql"])
def db_url(request, tmp_path) -> str:
    """A fresh database URL: a SQLite file, or a new database on the PostgreSQL cluster."""
    if request.param == "sqlite":
        return str(tmp_path / "study.sqlite")
    pg = request.getfixturevalue("pg_cluster_module")
    return pg.create_database(request.getfixturevalue("pg_server"))
