"""nonolab.workers: results come back with their tags, a task's exception re-raises in the
caller, a dead worker is an error (not a wait without end), and closing kills busy workers
at once."""

from __future__ import annotations

import math
import os
import time

import pytest

from nonolab.workers import WorkerDied, Workers


def _sleep_then_return(seconds: float) -> float:
    time.sleep(seconds)
    return seconds


def _all(workers: Workers, timeout: float = 60.0) -> dict:
    out = {}
    while workers.busy:
        tag, value = workers.next_result(timeout)
        out[tag] = value
    return out


def test_results_come_back_with_their_tags():
    with Workers(2, math.factorial) as w:
        assert (w.idle, w.busy) == (2, 0)
        assert w.next_result(0.0) is None  # nothing in flight
        w.submit("a", 5)
        w.submit("b", 6)
        assert (w.idle, w.busy) == (0, 2)
        with pytest.raises(RuntimeError, match="every worker is busy"):
            w.submit("c", 7)
        assert _all(w) == {"a": 120, "b": 720}
        w.submit("c", 7)  # a worker serves task after task
        assert _all(w) == {"c": 5040}


def test_a_task_exception_reraises_in_the_caller():
    with Workers(1, math.sqrt) as w:
        w.submit(0, -1.0)
        with pytest.raises(ValueError, match="math domain error"):
            w.next_result(60)
        w.submit(1, 4.0)  # the worker survives its task's exception
        assert w.next_result(60) == (1, 2.0)


def test_a_worker_that_dies_is_reported_not_awaited():
    with Workers(2, os._exit) as w:
        w.submit("dies", 3)
        with pytest.raises(WorkerDied, match=r"exit code 3\) during task 'dies'"):
            w.next_result(60)


def test_a_timeout_returns_none_and_close_kills_busy_workers():
    w = Workers(2, time.sleep)
    procs = list(w._procs)
    w.submit("long", 600)
    t = time.monotonic()
    assert w.next_result(0.2) is None
    w.close()
    assert time.monotonic() - t < 30
    assert all(p.exitcode is not None for p in procs)
    w.close()  # idempotent
    assert (w.idle, w.busy) == (0, 0)


def test_jobs_must_be_positive():
    with pytest.raises(ValueError, match="at least 1"):
        Workers(0, abs)


def test_imap_keeps_input_order():
    args = [0.3, 0.0, 0.2, 0.0, 0.1, 0.0, 0.0]  # the later tasks finish first
    with Workers(3, _sleep_then_return) as w:
        assert list(w.imap(args)) == args
        assert list(w.imap([])) == []
        w.submit("x", 0.0)
        with pytest.raises(RuntimeError, match="idle workers"):
            next(w.imap([0.0]))


def test_leaving_imap_early_kills_its_workers():
    with Workers(2, _sleep_then_return) as w:
        procs = list(w._procs)
        gen = w.imap([0.0, 600.0, 600.0])
        assert next(gen) == 0.0
    assert all(p.exitcode is not None for p in procs)


def test_forked_workers_need_no_picklable_function():
    offset = 10
    with Workers(2, lambda x: x + offset, start_method="fork") as w:
        assert list(w.imap(range(5))) == [10, 11, 12, 13, 14]
