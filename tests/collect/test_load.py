"""A small version of the load benchmark (benchmarks/serve_bench.py): simulated participants
send events concurrently, then a burst; every event is acknowledged and stored exactly once,
on one server with SQLite and on two server processes sharing one PostgreSQL database.
Latency is reported by the benchmark, not asserted here (docs/running-a-study.md). The fast
tier runs each check with a short steady phase; ``NONOLAB_SLOW=1`` adds the longer runs."""

from __future__ import annotations

import pytest


def _check(res, n: int) -> None:
    integ = res["integrity"]
    assert integ["participants"] == n
    assert integ["lost"] == 0 and integ["duplicated"] == 0 and integ["unexpected"] == 0
    assert integ["acked_equals_sent"]
    assert res["steady"]["connection_errors"] == 0
    assert res["burst"][0]["achieved_per_s"] > 0


#: seconds of steady load: a short run in the fast tier, the longer one with NONOLAB_SLOW=1
DURATIONS = [4.0, pytest.param(8.0, marks=pytest.mark.slow)]


@pytest.mark.parametrize("duration", DURATIONS)
def test_concurrent_participants_lose_and_duplicate_nothing(benchmark_script, duration):
    bench = benchmark_script("serve_bench")
    res = bench.run(n=30, duration=duration, gap=0.5, burst=[5.0], burst_step=4.0)
    _check(res, 30)
    assert res["steady"]["events"] > 100
    assert res["store"] == "sqlite (WAL, synchronous=FULL)" and res["servers"] == 1


@pytest.mark.parametrize("duration", [2.5, pytest.param(5.0, marks=pytest.mark.slow)])
def test_two_servers_on_postgresql_lose_and_duplicate_nothing(
    benchmark_script, pg_server, duration
):
    """Two `nonolab serve` processes started together on one empty PostgreSQL database; each
    participant's requests alternate between them (a load balancer without sticky sessions),
    so consecutive events of one participant are stored by different processes."""
    bench = benchmark_script("serve_bench")
    database = benchmark_script("pg_cluster").create_database(pg_server)
    res = bench.run(n=20, duration=duration, gap=0.4, burst=[3.0], burst_step=3.0,
                    database=database, servers=2, spread="request")  # fmt: skip
    _check(res, 20)
    assert res["servers"] == 2 and res["store"].startswith("postgresql ")
    per = res["steady"]["per_server"]
    assert len(per) == 2 and all(s["server_cpu_ms_per_event"] > 0 for s in per)
    # the check reads the database: one event removed is one event lost
    sent = {tok: last for tok, last in _last_seqs(database)}
    assert bench.check_stored(database, sent)["lost"] == 0
    _delete_one_event(database)
    after = bench.check_stored(database, sent)
    assert after["lost"] == 1 and after["stored"] == res["integrity"]["stored"] - 1
    # and a database that holds participants is refused (never a study's database)
    with pytest.raises(bench.UsageError, match="already holds 20 participants"):
        bench.run(n=1, duration=1.0, gap=1.0, burst=[], burst_step=1.0, database=database)


def _last_seqs(database: str) -> list[tuple[str, int]]:
    import sqlalchemy as sa

    from nonolab.collect.store import PARTICIPANTS, database_url

    engine = sa.create_engine(database_url(database))
    with engine.connect() as conn:
        rows = conn.execute(sa.select(PARTICIPANTS.c.token, PARTICIPANTS.c.last_seq)).all()
    engine.dispose()
    return [tuple(r) for r in rows]


def _delete_one_event(database: str) -> None:
    import sqlalchemy as sa

    from nonolab.collect.store import EVENTS, database_url

    engine = sa.create_engine(database_url(database))
    with engine.begin() as conn:
        pid, seq = conn.execute(sa.select(EVENTS.c.participant_id, EVENTS.c.seq).limit(1)).one()
        conn.execute(EVENTS.delete().where(EVENTS.c.participant_id == pid, EVENTS.c.seq == seq))
    engine.dispose()


def test_several_servers_need_postgresql(benchmark_script):
    bench = benchmark_script("serve_bench")
    with pytest.raises(bench.UsageError, match="needs PostgreSQL"):
        bench.run(n=5, duration=1.0, gap=1.0, burst=[], burst_step=1.0, servers=2)


@pytest.mark.parametrize("duration", [3.0, pytest.param(6.0, marks=pytest.mark.slow)])
def test_hostile_clients_mixed_in_cost_honest_ones_nothing(benchmark_script, duration):
    """Hostile clients (poisoned batches, unknown links, bad and slow bodies) beside honest
    ones: no 5xx, every honest event acknowledged and stored once, the hostile sessions' stored
    events exactly their acknowledged prefixes."""
    bench = benchmark_script("serve_bench")
    res = bench.run(n=20, duration=duration, gap=0.5, burst=[], burst_step=1.0, hostile=4,
                    hostile_gap=0.05)  # fmt: skip
    integ = res["integrity"]
    assert integ["participants"] == 24 and integ["acked_equals_sent"]
    assert integ["lost"] == 0 and integ["duplicated"] == 0 and integ["unexpected"] == 0
    h = res["hostile"]
    assert h["server_errors_5xx"] == 0 and h["requests"] > 50
    assert {k.split(":")[0] for k in h["answers"]} >= {"poison", "unknown"}
    assert all(k.split(":")[1] in ("400", "404", "408", "422", "429") for k in h["answers"])
    assert res["steady"]["connection_errors"] == 0 and res["steady"]["events"] > 50
