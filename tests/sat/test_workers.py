"""nonolab.core.workers: results come back with their tags, a task's exception re-raises in the
caller, a dead worker is an error (not a wait without end), and closing kills busy workers
at once."""

from __future__ import annotations

import math
import os
import signal
import subprocess
import sys
import time

import pytest

from nonolab.core.workers import WorkerDied, Workers


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


def test_imap_unordered_gives_each_result_with_its_input_index():
    args = [0.3, 0.0, 0.2, 0.0]
    with Workers(2, _sleep_then_return) as w:
        got = list(w.imap_unordered(args))
        assert sorted(got) == sorted(enumerate(args)) and w.busy == 0
        assert got[0] == (1, 0.0)  # the first short task finishes before the long one


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


_ORPHAN_SCRIPT = r"""
import os, subprocess, sys, time
from nonolab.core.workers import Workers

if __name__ == "__main__":
    w = Workers(1, time.sleep)
    w.submit("long", 600)
    # a Kissat child as hardsolve starts it, on a formula it cannot finish (pigeonhole 12 -> 11)
    kissat = subprocess.Popen(
        [sys.executable, "-m", "nonolab.sat.hardsolve", str(os.getpid())],
        stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    import pickle
    from pysat.examples.genhard import PHP
    kissat.stdin.write(pickle.dumps([tuple(c) for c in PHP(11).clauses]))
    kissat.stdin.close()
    time.sleep(1.0)
    print(w._procs[0].pid, kissat.pid, flush=True)
    os._exit(0)  # no cleanup: as when pytest-timeout or a crash ends the caller
"""


def _running(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] != "Z"  # a zombie has ended
    except FileNotFoundError:
        return False


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="prctl is Linux-only")
def test_workers_and_the_kissat_child_die_with_their_caller():
    caller = subprocess.Popen(
        [sys.executable, "-c", _ORPHAN_SCRIPT], stdout=subprocess.PIPE, text=True
    )
    pids = [int(x) for x in caller.stdout.readline().split()]
    caller.wait(timeout=60)
    try:
        assert len(pids) == 2
        end = time.monotonic() + 20
        while any(map(_running, pids)) and time.monotonic() < end:
            time.sleep(0.1)
        assert not any(map(_running, pids))
    finally:
        for pid in pids:  # a failing run leaves no orphan behind
            if _running(pid):
                os.kill(pid, signal.SIGKILL)
        caller.stdout.close()


def test_die_with_parent_exits_when_the_parent_is_already_gone():
    code = (
        "import os; from nonolab.core.workers import die_with_parent; "
        "die_with_parent(os.getppid() + 10**6); print('survived')"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 1 and "survived" not in out.stdout
