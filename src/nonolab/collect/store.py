"""The study platform's store: one SQL layer (SQLAlchemy Core) on SQLite or PostgreSQL.

Tables:

* ``participants``: one row per session: ``token`` (the link secret), ``label`` (the
  participant id of the exported log, ``P00001``), ``external_id`` (e.g. a recruitment site's
  id), ``schedule_idx``, ``state`` (JSON of :mod:`nonolab.collect.session`), ``step``,
  ``last_seq`` (the last acknowledged event number), times in epoch seconds;
* ``events``: one row per acknowledged page event ``(participant, seq)`` with the answer the page
  got (so a re-sent batch gets the same answers);
* ``lines``: the log lines the events wrote ``(participant, seq, sub)``, in log order;
* ``rejections``: every refused event or request with its reason;
* ``counters``: the next schedule position;
* ``plan_binding``: the plan the database serves (its content hash and its text), see
  :meth:`Store.bind_plan`;
* ``exclusions``: sessions the researcher excluded, whose schedule entries are served again
  (:meth:`Store.exclude`).

:meth:`Store.submit` stores one batch in one transaction (the participant's row locked: ``SELECT
... FOR UPDATE`` on PostgreSQL, ``BEGIN IMMEDIATE`` on SQLite) and returns only after the commit;
events already stored are acknowledged again and not re-applied (idempotent on
``(participant, seq)``).
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import queue
import secrets
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import Future
from typing import Any

import sqlalchemy as sa
from sqlalchemy import event as sa_event

from nonolab.collect.contract import check_event, schema
from nonolab.collect.plan import PlanError, StudyPlan, plan_from_text
from nonolab.collect.session import InvalidEvent, apply_event, dumps_line, new_state

META = sa.MetaData()
PARTICIPANTS = sa.Table(
    "participants",
    META,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("token", sa.String(64), nullable=False, unique=True),
    sa.Column("label", sa.String(32), unique=True),
    sa.Column("external_id", sa.String(200)),
    sa.Column("schedule_idx", sa.Integer, nullable=False),
    sa.Column("step", sa.String(16), nullable=False),
    sa.Column("state", sa.Text, nullable=False),
    sa.Column("last_seq", sa.Integer, nullable=False, default=0),
    sa.Column("created_at", sa.Float, nullable=False),
    sa.Column("updated_at", sa.Float, nullable=False),
)
EVENTS = sa.Table(
    "events",
    META,
    sa.Column("participant_id", sa.Integer, sa.ForeignKey("participants.id"), primary_key=True),
    sa.Column("seq", sa.Integer, primary_key=True),
    sa.Column("kind", sa.String(16), nullable=False),
    sa.Column("client_t", sa.Float, nullable=False),
    sa.Column("received_at", sa.Float, nullable=False),
    sa.Column("result", sa.Text, nullable=False),
    # sha256 of the event as sent: a re-sent number with other content is refused
    sa.Column("digest", sa.String(64), nullable=False),
)
LINES = sa.Table(
    "lines",
    META,
    sa.Column("participant_id", sa.Integer, sa.ForeignKey("participants.id"), primary_key=True),
    sa.Column("seq", sa.Integer, primary_key=True),
    sa.Column("sub", sa.Integer, primary_key=True),
    sa.Column("line", sa.Text, nullable=False),
)
REJECTIONS = sa.Table(
    "rejections",
    META,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("participant_id", sa.Integer),
    sa.Column("seq", sa.Integer),
    sa.Column("received_at", sa.Float, nullable=False),
    sa.Column("reason", sa.Text, nullable=False),
)
COUNTERS = sa.Table(
    "counters",
    META,
    sa.Column("name", sa.String(32), primary_key=True),
    sa.Column("value", sa.Integer, nullable=False),
)

# the plan the database serves: one row (id 1) written when the database is first bound
# (Store.bind_plan); a server over it with another plan refuses to start
PLAN_BINDING = sa.Table(
    "plan_binding",
    META,
    sa.Column("id", sa.Integer, primary_key=True),
    sa.Column("digest", sa.String(64), nullable=False),
    sa.Column("plan_text", sa.Text, nullable=False),
    sa.Column("source", sa.Text, nullable=False),
    sa.Column("bound_at", sa.Float, nullable=False),
    sa.Column("how", sa.String(16), nullable=False),
)

# sessions the researcher excluded (``nonolab serve --exclude``): their schedule entries are
# served again, as the plan's stopping rule promises for excluded sessions
EXCLUSIONS = sa.Table(
    "exclusions",
    META,
    sa.Column("participant_id", sa.Integer, sa.ForeignKey("participants.id"), primary_key=True),
    sa.Column("reason", sa.Text, nullable=False),
    sa.Column("excluded_at", sa.Float, nullable=False),
)


#: the largest event number (the request contract's bound: what the database's integer holds)
SEQ_MAX = int(schema()["$defs"]["event"]["properties"]["seq"]["maximum"])

# the PostgreSQL advisory lock key under which a starting process creates the tables
SCHEMA_LOCK = 0x6E6F6E6F6C6162  # "nonolab"


def event_digest(ev: dict[str, Any]) -> str:
    """Return the sha256 (hex) of page event ``ev`` as canonical JSON."""
    text = json.dumps(ev, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


class StoreError(Exception):
    """A request the store refuses: ``status`` is the HTTP status, the message says why."""

    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status = status


def _sqlite_setup(engine: sa.Engine, synchronous: str, immediate: bool = True) -> None:
    @sa_event.listens_for(engine, "connect")
    def _connect(dbapi_conn: Any, _rec: Any) -> None:
        dbapi_conn.isolation_level = None  # we issue BEGIN ourselves
        cur = dbapi_conn.cursor()
        cur.execute("PRAGMA journal_mode=WAL")
        cur.execute(f"PRAGMA synchronous={synchronous}")
        cur.execute("PRAGMA busy_timeout=10000")
        cur.execute("PRAGMA foreign_keys=ON")
        cur.close()

    if immediate:

        @sa_event.listens_for(engine, "begin")
        def _begin(conn: sa.Connection) -> None:
            conn.exec_driver_sql("BEGIN IMMEDIATE")


class GroupCommit:
    """One writer thread for a SQLite store: the work items queued while a commit runs are
    applied in order in one transaction and committed (one fsync) together; each caller gets its
    own item's result (or exception) only after that commit.

    An item that raises is rolled back to its own savepoint and gets its own exception; the
    others are committed (:func:`_run_group`). Only a failed commit is raised to every caller of
    the group (their pages retry).
    """

    def __init__(self, engine: sa.Engine, max_group: int = 512):
        self.engine, self.max_group = engine, max_group
        self._q: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._thread = threading.Thread(target=self._loop, name="nonolab-group-commit", daemon=True)
        self._thread.start()

    def run(self, fn: Callable[[sa.Connection], Any]) -> Any:
        """Run ``fn(connection)`` in the next group's transaction; return its result after the
        commit."""
        fut: Future[Any] = Future()
        self._q.put((fn, fut))
        return fut.result()

    def close(self) -> None:
        """Stop the writer thread after the queued items."""
        self._q.put(None)
        self._thread.join(30)

    def _loop(self) -> None:
        while True:
            item = self._q.get()
            if item is None:
                return
            items = [item]
            stop = False
            while len(items) < self.max_group:
                try:
                    nxt = self._q.get_nowait()
                except queue.Empty:
                    break
                if nxt is None:
                    stop = True
                    break
                items.append(nxt)
            _commit_group(self.engine, items)
            if stop:
                return


def _run_group(
    engine: sa.Engine, items: list[tuple[Callable[[sa.Connection], Any], Any]]
) -> list[tuple[Any, BaseException | None]]:
    """Apply ``items`` (``(fn, handle)``) in one transaction; return ``(result, error)`` per item.

    Each item runs under its own savepoint: an item that raises (a :class:`StoreError`, or
    anything the database refuses) is rolled back to its savepoint and gets its own error, and
    the others are committed: one participant's request never decides another's. Only a failure
    of the commit itself is raised (the group rolled back)."""
    done: list[tuple[Any, BaseException | None]] = []
    with engine.begin() as conn:
        for fn, _ in items:
            sp = conn.begin_nested()
            try:
                res = fn(conn)
            except Exception as e:
                sp.rollback()
                done.append((None, e))
            else:
                sp.commit()
                done.append((res, None))
    return done


def _commit_group(
    engine: sa.Engine, items: list[tuple[Callable[[sa.Connection], Any], Any]]
) -> None:
    """Run ``items`` (``(fn, future)``; thread or asyncio futures) as one group and settle each
    future with its item's result or error, or all with the group's error (rolled back)."""
    try:
        done = _run_group(engine, items)
    except BaseException as e:
        for _, fut in items:
            if not fut.done():
                fut.set_exception(e)
        return
    for (_, fut), (res, err) in zip(items, done, strict=True):
        if fut.done():  # an asyncio caller that went away
            continue
        if err is None:
            fut.set_result(res)
        else:
            fut.set_exception(err)


class AsyncGroupCommit:
    """The asyncio form of :class:`GroupCommit`: a task of the server's event loop commits the
    queued items in groups, in the loop's own thread (no thread hand-offs, which cost
    milliseconds each on a busy machine); the loop waits for the commit (a few ms per group)."""

    def __init__(self, engine: sa.Engine, max_group: int = 512):
        self.engine, self.max_group = engine, max_group
        self._q: asyncio.Queue[Any] | None = None
        self._task: asyncio.Task[None] | None = None

    async def run(self, fn: Callable[[sa.Connection], Any]) -> Any:
        """Run ``fn(connection)`` in the next group's transaction; return its result after the
        commit."""
        loop = asyncio.get_running_loop()
        if self._q is None or self._task is None or self._task.done():
            self._q = asyncio.Queue()
            self._task = loop.create_task(self._loop(self._q))
        fut: asyncio.Future[Any] = loop.create_future()
        self._q.put_nowait((fn, fut))
        return await fut

    async def _loop(self, q: asyncio.Queue[Any]) -> None:
        while True:
            items = [await q.get()]
            while not q.empty() and len(items) < self.max_group:
                items.append(q.get_nowait())
            _commit_group(self.engine, items)
            await asyncio.sleep(0)


def database_url(value: str) -> str:
    """Return the SQLAlchemy URL for ``--database`` ``value``: a ``postgresql://`` URL (run with
    psycopg 3), another SQLAlchemy URL, or a file path (SQLite)."""
    if value.startswith("postgresql://") or value.startswith("postgres://"):
        return "postgresql+psycopg://" + value.split("://", 1)[1]
    if "://" in value:
        return value
    return f"sqlite:///{value}"


class Store:
    """The study's database at ``url`` (see :func:`database_url`); creates its tables.

    ``clock`` (epoch seconds; default :func:`time.time`) is the server clock sessions are
    created and events received by (tests replaying scripted sessions at other times set it)."""

    def __init__(
        self, url: str, *, synchronous: str = "FULL", clock: Callable[[], float] = time.time
    ):
        self.clock = clock
        self.url = database_url(url)
        self.sqlite = self.url.startswith("sqlite")
        # SQLite has one writer at a time: this process's writes go through one thread that
        # commits them in groups (one fsync per group, see GroupCommit); other processes wait
        # on the database lock (busy_timeout). Readers use their own connections.
        if self.sqlite:
            self.engine = sa.create_engine(self.url, pool_size=4, max_overflow=4)
            _sqlite_setup(self.engine, synchronous)
            self.read_engine = sa.create_engine(self.url, pool_size=8, max_overflow=16)
            _sqlite_setup(self.read_engine, synchronous, immediate=False)
            self._group: GroupCommit | None = GroupCommit(self.engine)
            self._agroup: AsyncGroupCommit | None = AsyncGroupCommit(self.engine)
        else:
            self.engine = sa.create_engine(
                self.url, pool_size=10, max_overflow=20, pool_pre_ping=True
            )
            self.read_engine = self.engine
            self._group = None
            self._agroup = None
        with self.engine.begin() as conn:
            if not self.sqlite:
                # processes starting together on an empty database take turns (PostgreSQL's DDL
                # is transactional: the next one sees the tables the first committed); SQLite's
                # BEGIN IMMEDIATE already serialises them
                conn.execute(sa.select(sa.func.pg_advisory_xact_lock(SCHEMA_LOCK)))
            META.create_all(conn)
            have = conn.execute(sa.select(COUNTERS.c.name)).scalars().all()
            if "schedule" not in have:
                conn.execute(COUNTERS.insert().values(name="schedule", value=0))

    def _transact(self, fn: Callable[[sa.Connection], Any]) -> Any:
        """Run ``fn(connection)`` in a committed transaction (grouped on SQLite); return its
        result once committed."""
        if self._group is not None:
            return self._group.run(fn)
        with self.engine.begin() as conn:
            return fn(conn)

    async def _atransact(self, fn: Callable[[sa.Connection], Any]) -> Any:
        """:meth:`_transact` for the server's event loop (grouped in the loop on SQLite, in a
        worker thread on PostgreSQL)."""
        if self._agroup is not None:
            return await self._agroup.run(fn)
        return await asyncio.to_thread(self._transact, fn)

    def close(self) -> None:
        """Stop the writer and release the connection pools."""
        if self._group is not None:
            self._group.close()
        self.engine.dispose()
        self.read_engine.dispose()

    # -- participants -------------------------------------------------------------------------

    def create_participant(self, plan: StudyPlan, external_id: str | None = None) -> dict[str, Any]:
        """Create a session; return ``{token, label, schedule_idx, replaces}``. The session gets
        the schedule entry of an abandoned session when one is owed (see
        :func:`owed_entries`; ``replaces`` is then True), else the next schedule position
        (served in order, starting again after the schedule's end)."""
        return self._transact(self._creator(plan, external_id))

    async def create_participant_async(
        self, plan: StudyPlan, external_id: str | None = None
    ) -> dict[str, Any]:
        """:meth:`create_participant` for the server's event loop."""
        return await self._atransact(self._creator(plan, external_id))

    def _creator(
        self, plan: StudyPlan, external_id: str | None
    ) -> Callable[[sa.Connection], dict[str, Any]]:
        token = secrets.token_urlsafe(32)
        now = self.clock()

        def make(conn: sa.Connection) -> dict[str, Any]:
            # the counter row is the schedule's lock: joins take turns (FOR UPDATE on
            # PostgreSQL; SQLite's BEGIN IMMEDIATE already serialises writers)
            q = sa.select(COUNTERS.c.value).where(COUNTERS.c.name == "schedule")
            if not self.sqlite:
                q = q.with_for_update()
            served = conn.execute(q).scalar_one()
            owed = owed_entries(conn, plan, served, now)
            if owed:
                sidx, replaces = owed[0], True
            else:
                served += 1
                conn.execute(
                    COUNTERS.update().where(COUNTERS.c.name == "schedule").values(value=served)
                )
                sidx, replaces = (served - 1) % len(plan.sessions), False
            state = new_state(plan, plan.sessions[sidx], sidx)
            pid = conn.execute(
                PARTICIPANTS.insert()
                .values(
                    token=token,
                    external_id=external_id,
                    schedule_idx=sidx,
                    step=state["step"],
                    state=json.dumps(state),
                    last_seq=0,
                    created_at=now,
                    updated_at=now,
                )
                .returning(PARTICIPANTS.c.id)
            ).scalar_one()
            label = f"P{pid:05d}"
            conn.execute(PARTICIPANTS.update().where(PARTICIPANTS.c.id == pid).values(label=label))
            return {"token": token, "label": label, "schedule_idx": sidx, "replaces": replaces}

        return make

    def participant(self, token: str) -> dict[str, Any] | None:
        """Return the participant row of link ``token`` (``state`` decoded), or None."""
        with self.read_engine.connect() as conn:
            row = (
                conn.execute(sa.select(PARTICIPANTS).where(PARTICIPANTS.c.token == token))
                .mappings()
                .one_or_none()
            )
        if row is None:
            return None
        out = dict(row)
        out["state"] = json.loads(out["state"])
        return out

    def participant_id(self, token: str) -> int | None:
        """Return the participant id of link ``token``, or None (reads one indexed row)."""
        with self.read_engine.connect() as conn:
            return conn.execute(
                sa.select(PARTICIPANTS.c.id).where(PARTICIPANTS.c.token == token)
            ).scalar_one_or_none()

    def reject(self, participant_id: int | None, seq: int | None, reason: str) -> None:
        """Count a refused event or request (``reason`` is stored, at most 1000 chars)."""
        row = {"participant_id": participant_id, "seq": seq, "received_at": self.clock(),
               "reason": reason[:1000]}  # fmt: skip
        self._transact(lambda conn: conn.execute(REJECTIONS.insert().values(**row)))

    async def reject_async(self, participant_id: int | None, seq: int | None, reason: str) -> None:
        """:meth:`reject` for the server's event loop."""
        row = {"participant_id": participant_id, "seq": seq, "received_at": self.clock(),
               "reason": reason[:1000]}  # fmt: skip
        await self._atransact(lambda conn: conn.execute(REJECTIONS.insert().values(**row)))

    # -- events -------------------------------------------------------------------------------

    def submit(self, plan: StudyPlan, token: str, events: list[Any]) -> dict[str, Any]:
        """Store the batch ``events`` of link ``token`` in one transaction; return the answer.

        Keys: ``acked`` (the last stored ``seq``), ``results`` (``{seq: answer}`` for every event of
        the batch that is stored, including re-sent ones), ``step``, and ``refused`` (``{seq,
        index, error}``: its number, its position in the batch, why) when an event was refused:
        the events before it are stored, it and the rest are not. Raises :class:`StoreError` for an unknown token (404).
        """
        now_ms = self.clock() * 1000.0
        return self._transact(lambda conn: self._submit(conn, plan, token, events, now_ms))

    async def submit_async(self, plan: StudyPlan, token: str, events: list[Any]) -> dict[str, Any]:
        """:meth:`submit` for the server's event loop (the answer comes after the commit)."""
        now_ms = self.clock() * 1000.0
        return await self._atransact(lambda conn: self._submit(conn, plan, token, events, now_ms))

    def _submit(
        self, conn: sa.Connection, plan: StudyPlan, token: str, events: list[Any], now_ms: float
    ) -> dict[str, Any]:
        refused: dict[str, Any] | None = None
        results: dict[int, Any] = {}
        q = sa.select(PARTICIPANTS).where(PARTICIPANTS.c.token == token)
        if not self.sqlite:
            q = q.with_for_update()
        row = conn.execute(q).mappings().one_or_none()
        if row is None:
            raise StoreError(404, "unknown participant link")
        pid, last = row["id"], row["last_seq"]
        state = json.loads(row["state"])
        start_ms = float(row["created_at"]) * 1000.0
        seqs = [e.get("seq") for e in events if isinstance(e, dict)]
        old = [s for s in seqs if isinstance(s, int) and not isinstance(s, bool) and 1 <= s <= last]
        stored: dict[int, str] = {}
        if old:
            got = conn.execute(
                sa.select(EVENTS.c.seq, EVENTS.c.result, EVENTS.c.digest).where(
                    EVENTS.c.participant_id == pid, EVENTS.c.seq.in_(old)
                )
            ).all()
            results.update({s: json.loads(r) for s, r, _ in got})
            stored = {s: d for s, _, d in got}
        ev_rows, line_rows = [], []
        k_refused = 0
        for k_refused, ev in enumerate(events):  # noqa: B007 (read after a break)
            seq = ev.get("seq") if isinstance(ev, dict) else None
            if isinstance(seq, bool) or not isinstance(seq, int) or not 1 <= seq <= SEQ_MAX:
                refused = {"seq": None, "error": f"seq must be an integer 1-{SEQ_MAX}"}
                break
            if seq <= last:
                if stored.get(seq) != event_digest(ev):
                    results.pop(seq, None)
                    refused = {"seq": seq, "error": f"event {seq} was stored with other content "
                               "(is the study open in another tab?)"}  # fmt: skip
                    break
                continue  # already stored: acknowledged again, not re-applied
            if seq != last + 1:
                refused = {"seq": seq, "error": f"event {last + 1} is missing (got {seq})"}
                break
            try:
                check_event(ev, start_ms, now_ms)
                state, lines, result = apply_event(plan, state, ev, now_ms, who=token)
            except InvalidEvent as e:
                refused = {"seq": seq, "error": str(e)}
                break
            last = seq
            results[seq] = result
            ev_rows.append(
                {"participant_id": pid, "seq": seq, "kind": ev["kind"],
                 "client_t": float(state["last_t"]), "received_at": now_ms / 1000.0,
                 "result": json.dumps(result), "digest": event_digest(ev)}
            )  # fmt: skip
            line_rows += [
                {"participant_id": pid, "seq": seq, "sub": k,
                 "line": dumps_line(line, seq, now_ms)}
                for k, line in enumerate(lines)
            ]  # fmt: skip
        if ev_rows:
            conn.execute(EVENTS.insert(), ev_rows)
            if line_rows:
                conn.execute(LINES.insert(), line_rows)
            conn.execute(
                PARTICIPANTS.update()
                .where(PARTICIPANTS.c.id == pid)
                .values(state=json.dumps(state), step=state["step"], last_seq=last,
                        updated_at=now_ms / 1000.0)
            )  # fmt: skip
        if refused is not None:
            conn.execute(
                REJECTIONS.insert().values(
                    participant_id=pid, seq=refused["seq"], received_at=now_ms / 1000.0, reason=refused["error"][:1000],
                )
            )  # fmt: skip
        out: dict[str, Any] = {"acked": last, "results": results, "step": state["step"]}
        if refused is not None:
            # ``index``: the refused event's position in the batch (0-based), also when its
            # ``seq`` is not a usable number (then ``seq`` is None)
            out["refused"] = {**refused, "index": k_refused}
        return out

    # -- reading ------------------------------------------------------------------------------

    @contextlib.contextmanager
    def snapshot(self) -> Iterator[sa.Connection]:
        """Yield a read-only connection inside one transaction: every read through it sees the
        database as it was at its first read (SQLite: one WAL read snapshot; PostgreSQL:
        ``REPEATABLE READ``), however many sessions finish meanwhile."""
        with self.read_engine.connect() as conn:
            if self.sqlite:
                conn.exec_driver_sql("BEGIN")
            else:
                conn.exec_driver_sql("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY")
            try:
                yield conn
            finally:
                if self.sqlite:
                    conn.exec_driver_sql("ROLLBACK")
                else:
                    conn.rollback()

    def logs(
        self, finished_only: bool = False, conn: sa.Connection | None = None
    ) -> Iterator[tuple[dict[str, Any], list[str]]]:
        """Yield ``(participant row, log lines)`` for every participant with at least one log
        line (only finished sessions with ``finished_only``), in participant order, all read
        in one transaction (:meth:`snapshot`; through ``conn`` when given, one of its
        snapshots), so a session's step and its lines always agree."""
        if conn is None:
            with self.snapshot() as c:
                yield from self.logs(finished_only, c)
            return
        rows = conn.execute(sa.select(PARTICIPANTS).order_by(PARTICIPANTS.c.id)).mappings().all()
        for row in rows:
            if finished_only and row["step"] != "done":
                continue
            lines = (
                conn.execute(
                    sa.select(LINES.c.line)
                    .where(LINES.c.participant_id == row["id"])
                    .order_by(LINES.c.seq, LINES.c.sub)
                )
                .scalars()
                .all()
            )
            if lines:
                yield dict(row), list(lines)

    def summary(self, plan: StudyPlan) -> dict[str, Any]:
        """Return the dashboard's counts: participants ``started`` (any event), ``finished``,
        ``dropped`` (started and :func:`abandoned`: unfinished, idle for the plan's
        ``platform.replace_after_s`` seconds), ``in_progress``, ``owed`` (schedule entries
        waiting to be served again, :func:`owed_entries`), ``excluded`` (sessions the
        researcher excluded), ``per_step``,
        ``events``, ``rejections`` (with the latest reasons) and ``balance`` (per schedule
        session and per puzzle x position: sessions started and finished). "Now" is the
        store's clock, the one sessions are created and served by."""
        now = self.clock()
        with self.read_engine.connect() as conn:
            rows = conn.execute(
                sa.select(PARTICIPANTS.c.step, PARTICIPANTS.c.schedule_idx,
                          PARTICIPANTS.c.last_seq, PARTICIPANTS.c.updated_at)
            ).all()  # fmt: skip
            served = conn.execute(
                sa.select(COUNTERS.c.value).where(COUNTERS.c.name == "schedule")
            ).scalar_one()
            owed = owed_entries(conn, plan, served, now)
            n_excluded = conn.execute(
                sa.select(sa.func.count()).select_from(EXCLUSIONS)
            ).scalar_one()
            n_events = conn.execute(sa.select(sa.func.count()).select_from(EVENTS)).scalar_one()
            n_rej = conn.execute(sa.select(sa.func.count()).select_from(REJECTIONS)).scalar_one()
            latest = (
                conn.execute(
                    sa.select(REJECTIONS.c.reason).order_by(REJECTIONS.c.id.desc()).limit(10)
                )
                .scalars()
                .all()
            )
        per_step: dict[str, int] = {}
        started = finished = dropped = 0
        per_session = [{"session": i, "puzzles": s, "started": 0, "finished": 0}
                       for i, s in enumerate(plan.sessions)]  # fmt: skip
        pos = {pid: [0] * plan.per_session for pid in plan.puzzles}
        for step, sidx, last_seq, upd in rows:
            per_step[step] = per_step.get(step, 0) + 1
            if last_seq > 0:
                started += 1
                per_session[sidx]["started"] += 1
            if step == "done":
                finished += 1
                per_session[sidx]["finished"] += 1
                for k, p in enumerate(plan.sessions[sidx]):
                    pos[p][k] += 1
            elif last_seq > 0 and abandoned(step, last_seq, upd, now, plan):
                dropped += 1
        counts = [c for v in pos.values() for c in v]
        return {
            "links": len(rows),
            "started": started,
            "finished": finished,
            "dropped": dropped,
            "in_progress": started - finished - dropped,
            "owed": owed,
            "excluded": n_excluded,
            "per_step": per_step,
            "events": n_events,
            "rejections": n_rej,
            "latest_rejections": latest,
            "balance": {
                "sessions": per_session,
                "finished_per_puzzle_position": {str(k): v for k, v in pos.items()},
                "position_count_range": [min(counts), max(counts)] if counts else [0, 0],
            },
        }

    # -- the plan the database serves ---------------------------------------------------------

    def bind_plan(self, plan: StudyPlan) -> tuple[StudyPlan, str]:
        """Bind the database to ``plan`` or check that it is bound to it; return ``(the plan as
        the database keeps it, how)``; ``how`` is ``created`` (a new database: the plan's hash
        and text are stored), ``same`` (bound to this plan) or ``adopted`` (a database made
        before plans were bound, whose sessions all fit ``plan``: bound to it now, once).

        Raises :class:`PlanMismatch` naming both hashes and files when the database serves
        another plan, or, for an unbound database with sessions, when a session does not fit
        ``plan`` (its schedule entry or puzzles differ).
        """
        # a bound database is only read (an export binds too: no write lock on a busy server)
        with self.read_engine.connect() as conn:
            row = conn.execute(sa.select(PLAN_BINDING)).mappings().one_or_none()
        how = "same"
        if row is None:  # not bound yet: bind under the writer's lock, reading again
            with self.engine.begin() as conn:
                if not self.sqlite:
                    conn.execute(sa.select(sa.func.pg_advisory_xact_lock(SCHEMA_LOCK)))
                row = conn.execute(sa.select(PLAN_BINDING)).mappings().one_or_none()
                if row is None:
                    how = self._bind(conn, plan)
                    row = {"digest": plan.digest, "plan_text": plan.text}
        if row["digest"] != plan.digest:
            raise PlanMismatch(
                f"the database {self._where()} serves another plan: it was bound on "
                f"{_utc(row['bound_at'])} to {row['source']} (sha256 {row['digest']}); "
                f"{plan.path or plan.name} has sha256 {plan.digest}. Serve the plan "
                "the database was made with (an export, `nonolab serve PLAN --database DB "
                "--export DEST`, writes it to DEST/plan.yaml whatever PLAN is), or start "
                "a new database for the new plan"
            )
        bound = plan_from_text(row["plan_text"], f"the plan kept in {self._where()}", plan.path)
        return bound, how

    def _bind(self, conn: sa.Connection, plan: StudyPlan) -> str:
        """Store ``plan`` as the database's plan (in ``conn``'s transaction); return
        ``created`` or ``adopted`` (sessions stored before: each must fit ``plan``)."""
        misfit = _misfits(conn, plan)
        if misfit:
            raise PlanMismatch(
                f"the database {self._where()} was made before plans were bound and "
                f"its sessions do not fit {plan.path or plan.name} (sha256 "
                f"{plan.digest}): {misfit}"
            )
        n = conn.execute(sa.select(sa.func.count()).select_from(PARTICIPANTS)).scalar_one()
        how = "adopted" if n else "created"
        conn.execute(
            PLAN_BINDING.insert().values(
                id=1, digest=plan.digest, plan_text=plan.text,
                source=str(plan.path or plan.name), bound_at=self.clock(), how=how,
            )
        )  # fmt: skip
        return how

    def bound_plan(self) -> StudyPlan | None:
        """Return the plan the database is bound to (read from its own copy), or None."""
        with self.read_engine.connect() as conn:
            row = conn.execute(sa.select(PLAN_BINDING)).mappings().one_or_none()
        if row is None:
            return None
        return plan_from_text(row["plan_text"], f"the plan kept in {self._where()}")

    def exclude(self, labels: list[str], reason: str) -> list[str]:
        """Exclude the sessions ``labels`` (``P00003``) with ``reason``: their schedule entries
        are served again to the next participants (:func:`owed_entries`); their data stay in
        the database and the export. Return the labels newly excluded (one already excluded
        keeps its first reason); raise :class:`StoreError` (404) naming unknown labels."""
        now = self.clock()

        def run(conn: sa.Connection) -> list[str]:
            got = dict(
                conn.execute(
                    sa.select(PARTICIPANTS.c.label, PARTICIPANTS.c.id).where(
                        PARTICIPANTS.c.label.in_(labels)
                    )
                ).all()
            )
            unknown = sorted(set(labels) - set(got))
            if unknown:
                raise StoreError(404, f"no session {', '.join(unknown)} in the database")
            done = set(
                conn.execute(
                    sa.select(EXCLUSIONS.c.participant_id).where(
                        EXCLUSIONS.c.participant_id.in_(list(got.values()))
                    )
                ).scalars()
            )
            new = [lab for lab in dict.fromkeys(labels) if got[lab] not in done]
            if new:
                conn.execute(
                    EXCLUSIONS.insert(),
                    [{"participant_id": got[lab], "reason": reason[:1000], "excluded_at": now}
                     for lab in new],
                )  # fmt: skip
            return new

        return self._transact(run)

    def exclusions(self, conn: sa.Connection | None = None) -> dict[str, str]:
        """Return ``{label: reason}`` of the excluded sessions (through ``conn`` when given)."""
        q = sa.select(PARTICIPANTS.c.label, EXCLUSIONS.c.reason).join(
            EXCLUSIONS, EXCLUSIONS.c.participant_id == PARTICIPANTS.c.id
        )
        if conn is not None:
            return dict(conn.execute(q).all())
        with self.read_engine.connect() as c:
            return dict(c.execute(q).all())

    def _where(self) -> str:
        return self.url.split("@")[-1].removeprefix("sqlite:///")


def abandoned(step: str, last_seq: int, updated_at: float, now: float, plan: StudyPlan) -> bool:
    """Return True when a session (its ``step``, ``last_seq``, last activity ``updated_at`` in
    epoch seconds) is abandoned at ``now``: unfinished and without an event for the plan's
    ``platform.replace_after_s`` seconds. A researcher-made link nobody has opened yet (no
    event, ``enrollment: links``) is never abandoned: it waits for its participant."""
    if step == "done":
        return False
    if last_seq == 0 and plan.platform["enrollment"] == "links":
        return False
    return now - updated_at > plan.platform["replace_after_s"]


def owed_entries(conn: sa.Connection, plan: StudyPlan, served: int, now: float) -> list[int]:
    """Return the schedule entries owed a replacement at ``now``, in schedule order.

    After ``served`` positions were handed out in order, entry ``e`` has been issued
    ``served // n + (e < served % n)`` times (``n`` entries). Each issue is kept by a finished
    session or a live one (unfinished, not :func:`abandoned`) that the researcher has not
    excluded (:meth:`Store.exclude`); the entry is owed one session per issue that none keeps. This keeps the plan's stopping rule: a session that ends
    incomplete is replaced by serving its schedule entry to the next participant, never a
    finished or live one's; an abandoned participant who comes back still finishes.
    """
    n = len(plan.sessions)
    kept = [0] * n
    rows = conn.execute(
        sa.select(PARTICIPANTS.c.schedule_idx, PARTICIPANTS.c.step, PARTICIPANTS.c.last_seq,
                  PARTICIPANTS.c.updated_at)
        .outerjoin(EXCLUSIONS, EXCLUSIONS.c.participant_id == PARTICIPANTS.c.id)
        .where(EXCLUSIONS.c.participant_id.is_(None))
    ).all()  # fmt: skip
    for sidx, step, last_seq, upd in rows:
        if 0 <= sidx < n and not abandoned(step, last_seq, upd, now, plan):
            kept[sidx] += 1
    issued = [served // n + (e < served % n) for e in range(n)]
    return [e for e in range(n) if issued[e] > kept[e]]


class PlanMismatch(PlanError):
    """The database serves another plan than the one given; the message names both."""


def _utc(t: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(t))


def _misfits(conn: sa.Connection, plan: StudyPlan) -> str:
    """Return why the sessions stored so far do not fit ``plan`` (the first one that does not:
    a schedule entry beyond the plan's or puzzles other than its entry's), or ""."""
    rows = conn.execute(
        sa.select(PARTICIPANTS.c.label, PARTICIPANTS.c.schedule_idx, PARTICIPANTS.c.state)
    ).all()
    for label, sidx, state in rows:
        if not 0 <= sidx < len(plan.sessions):
            return f"session {label} was served schedule entry {sidx}, the plan has {len(plan.sessions)}"
        queue = json.loads(state).get("queue")
        if queue != plan.sessions[sidx]:
            return (
                f"session {label} plays puzzles {queue}, the plan's entry {sidx} is "
                f"{plan.sessions[sidx]}"
            )
    return ""
