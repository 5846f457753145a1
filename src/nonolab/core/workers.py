"""Worker processes that can always be stopped, for the solver's portfolios.

:class:`Workers` runs ``jobs`` spawned processes, each with a pipe of its own to the caller,
and no lock or queue shared between them. It replaces ``multiprocessing.Pool`` where the
caller abandons work in flight (the first model found ends a BP portfolio; two solutions end
a cube search): ``Pool.terminate()`` can deadlock on the lock of the task queue it shares
with its workers (CPython issues 73945 and 78178, open), and a Pool whose worker dies waits
for its result forever. Here the caller kills the workers (SIGKILL) when it is done, and a
worker that dies is reported as :class:`WorkerDied` at once. See docs/decisions.md
("Worker processes").
"""

from __future__ import annotations

import multiprocessing as mp
import multiprocessing.connection as mpc
import os
import time
import traceback
from collections.abc import Callable, Hashable, Iterable, Iterator
from typing import Any

#: seconds :meth:`Workers.close` waits for each killed process to be reaped
JOIN_AFTER_KILL_S = 5.0


class WorkerDied(RuntimeError):
    """A worker process ended while it had a task (killed by a signal, or ``os._exit``)."""


class WorkerError(RuntimeError):
    """A task raised an exception that could not be sent back as itself; the message holds
    the worker's traceback."""


def die_with_parent(parent_pid: int) -> bool:
    """Ask Linux to SIGKILL this process when its parent ``parent_pid`` ends
    (``prctl(PR_SET_PDEATHSIG)``), so that a worker or solver child does not run on after its
    caller crashed, was killed or left by ``os._exit``. Call it first thing in the child. The
    signal follows the thread that started the child; every caller here keeps that thread
    until the child is done. Returns True when set, False where ``prctl`` is not available
    (other systems); exits at once when the parent has already gone."""
    import ctypes
    import signal
    import sys

    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        if libc.prctl(1, int(signal.SIGKILL), 0, 0, 0) != 0:  # 1 = PR_SET_PDEATHSIG
            return False
    except (OSError, AttributeError):
        return False
    if os.getppid() != parent_pid:  # the parent ended before the request took effect
        os._exit(1)
    return True


def _serve(conn: mpc.Connection, fn: Callable[[Any], Any], parent_pid: int) -> None:
    """A worker's loop: receive a task argument, send back ``("ok", fn(arg))`` or
    ``("error", exception)``; return when the caller's end of the pipe closes, and die with
    the caller (:func:`die_with_parent`)."""
    die_with_parent(parent_pid)
    while True:
        try:
            arg = conn.recv()
        except (EOFError, OSError):
            return
        try:
            reply: tuple[str, Any] = ("ok", fn(arg))
        except BaseException as exc:  # noqa: BLE001 - every failure goes back to the caller
            reply = ("error", exc, traceback.format_exc())
        try:
            conn.send(reply)
        except Exception:  # the exception or result did not pickle: send its text instead
            conn.send(("error", None, traceback.format_exc()))


class Workers:
    """``jobs`` worker processes running ``fn`` on one task at a time each: spawned (``fn``
    a module-level function, so that it pickles), or started by ``start_method`` ("fork",
    "forkserver").

    Use as a context manager: leaving it kills every worker, whatever it is doing, and reaps
    it. :meth:`submit` gives a task to an idle worker under a caller's ``tag``;
    :meth:`next_result` returns ``(tag, result)`` of the next task to finish, re-raising a
    task's exception in the caller."""

    def __init__(self, jobs: int, fn: Callable[[Any], Any], start_method: str = "spawn") -> None:
        if jobs < 1:
            raise ValueError(f"jobs={jobs!r}: needs at least 1")
        # spawn by default: a forked child inherits the locks the caller's other threads hold
        ctx = mp.get_context(start_method)
        self._procs: list[Any] = []
        self._conns: list[mpc.Connection] = []
        self._busy: dict[int, Hashable] = {}  # worker index -> tag of its task
        try:
            for _ in range(jobs):
                mine, theirs = ctx.Pipe(duplex=True)
                proc = ctx.Process(target=_serve, args=(theirs, fn, os.getpid()), daemon=True)
                proc.start()
                theirs.close()
                self._procs.append(proc)
                self._conns.append(mine)
        except BaseException:
            self.close()
            raise

    def __enter__(self) -> Workers:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def idle(self) -> int:
        """Return the number of workers without a task."""
        return len(self._procs) - len(self._busy)

    @property
    def busy(self) -> int:
        """Return the number of tasks given out and not yet returned."""
        return len(self._busy)

    def submit(self, tag: Hashable, arg: Any) -> None:
        """Give ``arg`` to an idle worker; ``tag`` comes back with its result. Raises
        RuntimeError when every worker is busy."""
        free = [i for i in range(len(self._procs)) if i not in self._busy]
        if not free:
            raise RuntimeError("every worker is busy: take a result first")
        proc = self._procs[free[0]]
        if proc.exitcode is not None:
            raise WorkerDied(f"idle worker {proc.pid} ended (exit code {proc.exitcode})")
        self._conns[free[0]].send(arg)
        self._busy[free[0]] = tag

    def next_result(self, timeout: float | None = None) -> tuple[Hashable, Any] | None:
        """Wait up to ``timeout`` seconds (None: for as long as it takes) for a task to finish
        and return ``(tag, result)``; None when none finished in time or none is in flight.
        Re-raises the task's exception (or :class:`WorkerError` with the worker's traceback
        when the exception did not pickle); raises :class:`WorkerDied` when a worker with a
        task ended."""
        if not self._busy:
            return None
        end = None if timeout is None else time.monotonic() + max(timeout, 0.0)
        while True:
            left = None if end is None else max(end - time.monotonic(), 0.0)
            by_conn = {self._conns[i]: i for i in self._busy}
            by_sentinel = {self._procs[i].sentinel: i for i in self._busy}
            ready = mpc.wait([*by_conn, *by_sentinel], timeout=left)
            if not ready:
                return None
            for obj in ready:  # a pipe with a reply first: a worker may reply, then die
                if obj in by_conn:
                    i = by_conn[obj]
                    try:
                        reply = obj.recv()
                    except (EOFError, OSError):
                        continue  # the worker died mid-reply: its sentinel tells
                    tag = self._busy.pop(i)
                    if reply[0] == "ok":
                        return tag, reply[1]
                    if reply[1] is not None:
                        raise reply[1]
                    raise WorkerError(f"task {tag!r} failed in its worker:\n{reply[2]}")
            for obj in ready:
                if obj in by_sentinel:
                    i = by_sentinel[obj]
                    proc = self._procs[i]
                    proc.join(JOIN_AFTER_KILL_S)
                    raise WorkerDied(
                        f"worker {proc.pid} ended (exit code {proc.exitcode}) during task "
                        f"{self._busy[i]!r}"
                    )

    def imap_unordered(self, args: Iterable[Any]) -> Iterator[tuple[Hashable, Any]]:
        """Yield ``(i, fn(args[i]))`` as tasks finish, keeping every worker busy until ``args``
        runs out. Needs no task of the caller's in flight; leaving the loop early leaves the
        tasks in flight to :meth:`close`."""
        if self._busy:
            raise RuntimeError("imap needs idle workers: take the results in flight first")
        todo = iter(enumerate(args))
        while True:
            while self.idle and (item := next(todo, None)) is not None:
                self.submit(*item)
            done = self.next_result()
            if done is None:  # nothing in flight: every task is done
                return
            yield done

    def imap(self, args: Iterable[Any]) -> Iterator[Any]:
        """Yield ``fn(arg)`` for every ``arg``, in input order, keeping every worker busy (at
        most ``jobs`` results wait out of order). Needs no task of the caller's in flight."""
        waiting: dict[Hashable, Any] = {}
        next_out = 0
        for i, value in self.imap_unordered(args):
            waiting[i] = value
            while next_out in waiting:
                yield waiting.pop(next_out)
                next_out += 1

    def close(self) -> None:
        """Kill every worker (SIGKILL, whether idle or busy) and reap it; idempotent."""
        for proc in self._procs:
            if proc.exitcode is None:
                proc.kill()
        for proc in self._procs:
            proc.join(JOIN_AFTER_KILL_S)
        for conn in self._conns:
            conn.close()
        self._procs, self._conns, self._busy = [], [], {}
