"""The study server: a Starlette application over a :class:`nonolab.collect.store.Store`.

Participant routes (the link token is the only credential; each reads and writes only its own
session):

* ``GET /`` the start page; ``POST /api/join`` creates a session (open enrollment only) and
  returns its link;
* ``GET /s/{token}`` the study page; ``GET /api/s/{token}/state`` the session to resume (step,
  board, current puzzle's clues, the study's texts and items, the server clock);
  ``POST /api/s/{token}/events`` a batch of numbered events, stored in one transaction before the
  answer (``acked`` = last stored event number).

Researcher routes (``Authorization: Bearer <researcher token>``): ``GET /admin`` the dashboard
page, ``GET /api/admin/summary``, ``GET /api/admin/participants``, ``GET /api/admin/validate``,
``POST /api/admin/export``, ``POST /api/admin/links``.

Every body is judged by the request contract (:mod:`nonolab.collect.contract`,
``workflow/schemas/request.schema.yaml``) before anything touches the store; every refusal is a
4xx with a message. Bounds: request bodies (``limits.max_body_bytes``) and the time they take to
arrive (``body_timeout_s``: 408), events per batch, events per second per participant (token
bucket: ``events_per_s``, ``event_burst``), sessions created per second, requests for unknown
links and wrong researcher tokens per client address (bounded tables, least recently used
dropped). Requests for unknown links write nothing. No CORS headers are sent (same origin
only); every page gets a strict Content-Security-Policy; :func:`log_config` keeps link and
researcher tokens out of every log record.
"""

from __future__ import annotations

import asyncio
import hmac
import logging
import re
import threading
import time
from collections import OrderedDict
from importlib import resources
from pathlib import Path
from typing import Any

from sqlalchemy.exc import OperationalError
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import FileResponse, JSONResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from nonolab.collect.contract import ContractError, check_body, parse_body
from nonolab.collect.export import export_study, validate_now
from nonolab.collect.plan import PlanError, StudyPlan
from nonolab.collect.session import public_state
from nonolab.collect.store import Store, StoreError

STATIC = Path(str(resources.files("nonolab.collect") / "static"))
CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'"
)


class TokenBucket:
    """Per-key token buckets (``rate`` tokens per second, at most ``burst``), in memory, for at
    most ``max_keys`` keys (least recently used dropped)."""

    def __init__(self, rate: float, burst: float, max_keys: int = 100_000):
        self.rate, self.burst, self.max_keys = rate, burst, max_keys
        self._b: OrderedDict[str, tuple[float, float]] = OrderedDict()
        self._lock = threading.Lock()

    def take(self, key: str, n: float = 1.0) -> float:
        """Take ``n`` tokens for ``key``; return 0 when granted, else the seconds to wait."""
        now = time.monotonic()
        with self._lock:
            tokens, last = self._b.pop(key, (self.burst, now))
            tokens = min(self.burst, tokens + (now - last) * self.rate)
            wait = 0.0
            if tokens >= n:
                tokens -= n
            else:
                wait = (n - tokens) / self.rate
            self._b[key] = (tokens, now)
            while len(self._b) > self.max_keys:
                self._b.popitem(last=False)
        return wait

    def waiting(self, key: str) -> float:
        """Return the seconds until ``key`` has a whole token again (0 when it has one now),
        taking nothing."""
        now = time.monotonic()
        with self._lock:
            tokens, last = self._b.get(key, (self.burst, now))
        tokens = min(self.burst, tokens + (now - last) * self.rate)
        return 0.0 if tokens >= 1.0 else (1.0 - tokens) / self.rate

    def __len__(self) -> int:
        return len(self._b)


class Limits:
    """Security headers, a request-body size bound and a body read timeout (``body_timeout_s``
    for the whole body: a client that sends it slower gets 408 and its connection is closed), as
    pure ASGI middleware."""

    def __init__(self, app: ASGIApp, max_body: int, body_timeout_s: float = 10.0):
        self.app, self.max_body, self.body_timeout_s = app, max_body, body_timeout_s

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        for k, v in scope.get("headers", []):
            if k == b"content-length" and v.isdigit() and int(v) > self.max_body:
                resp = JSONResponse({"error": "request too large"}, status_code=413)
                await resp(scope, receive, send)
                return
        seen = 0
        deadline: float | None = None

        async def bounded() -> Message:
            nonlocal seen, deadline
            loop = asyncio.get_running_loop()
            if deadline is None:
                deadline = loop.time() + self.body_timeout_s
            try:
                msg = await asyncio.wait_for(receive(), max(0.0, deadline - loop.time()))
            except TimeoutError:
                raise _TooSlow from None
            if msg["type"] == "http.request":
                seen += len(msg.get("body", b""))
                if seen > self.max_body:
                    raise _TooLarge
            return msg

        async def with_headers(msg: Message) -> None:
            if msg["type"] == "http.response.start":
                h = list(msg.get("headers", []))
                h += [
                    (b"content-security-policy", CSP.encode()),
                    (b"x-content-type-options", b"nosniff"),
                    (b"referrer-policy", b"no-referrer"),
                    (b"x-frame-options", b"DENY"),
                ]
                if scope["path"].startswith("/api/") or scope["path"].startswith("/s/"):
                    h.append((b"cache-control", b"no-store"))
                msg["headers"] = h
            await send(msg)

        try:
            await self.app(scope, bounded, with_headers)
        except _TooLarge:
            resp = JSONResponse({"error": "request too large"}, status_code=413)
            await resp(scope, receive, with_headers)
        except _TooSlow:
            resp = JSONResponse(
                {"error": f"the request body did not arrive within {self.body_timeout_s:g} s"},
                status_code=408,
                headers={"connection": "close"},
            )
            await resp(scope, receive, with_headers)


class _TooLarge(Exception):
    pass


class _TooSlow(Exception):
    pass


async def _json_body(request: Request, name: str) -> Any:
    """Return the request's JSON body checked against the request contract's ``name``
    definition; raise :class:`ContractError` (400) otherwise."""
    return check_body(name, parse_body(await request.body()))


#: what a link token can look like (``secrets.token_urlsafe``); anything else is unknown
_TOKEN_SHAPE = re.compile(r"[A-Za-z0-9_-]{1,100}")

#: a study link's token in a path (``/s/<token>``, ``/api/s/<token>/...``), and a bearer token
_SECRET_IN_TEXT = re.compile(r"(/s/)[^/\s?#'\"]+|(Bearer )[^\s'\"]+")


def redact(text: str) -> str:
    """Return ``text`` with study-link tokens and bearer tokens replaced by ``<token>``."""
    return _SECRET_IN_TEXT.sub(lambda m: (m.group(1) or m.group(2)) + "<token>", text)


class RedactTokens(logging.Filter):
    """A logging filter that removes link and researcher tokens from every record (the access
    log's paths, uvicorn's trace-level ASGI messages) before any handler writes it."""

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            text = record.getMessage()
        except Exception:  # a record that cannot format itself is left to its handler
            return True
        clean = redact(text)
        if clean != text:
            record.msg, record.args = clean, ()
        return True


def log_config(base: dict[str, Any]) -> dict[str, Any]:
    """Return uvicorn's logging configuration ``base`` (``uvicorn.config.LOGGING_CONFIG``) with
    :class:`RedactTokens` on every handler."""
    import copy

    cfg = copy.deepcopy(base)
    cfg.setdefault("filters", {})["redact_tokens"] = {"()": f"{__name__}.RedactTokens"}
    for h in cfg.get("handlers", {}).values():
        h["filters"] = [*h.get("filters", []), "redact_tokens"]
    return cfg


def create_app(
    plan: StudyPlan,
    store: Store,
    admin_token: str,
    export_dir: str | Path | None = None,
    *,
    body_timeout_s: float = 10.0,
) -> Starlette:
    """Return the study server for ``plan`` over ``store``; researcher routes need
    ``admin_token``; ``POST /api/admin/export`` writes to ``export_dir``; a request body must
    arrive within ``body_timeout_s`` seconds.

    Strangers pay nothing: a request naming an unknown link writes nothing to the database, and
    the rate-limit state is kept only for known links and (for failures) per client address,
    each in a bounded table that drops its least recently used entries.

    The app serves the plan the database is bound to (:meth:`Store.bind_plan`; an unbound
    database is bound to ``plan``): raises :class:`nonolab.collect.store.PlanMismatch` when the
    database serves another plan. A route that finds the binding changed under it (another
    process) answers 409, never 500."""
    plan, _ = store.bind_plan(plan)
    lim = plan.platform["limits"]
    events_bucket = TokenBucket(lim["events_per_s"], lim["event_burst"], max_keys=50_000)
    join_bucket = TokenBucket(5.0, 50.0)
    # failed researcher authentications and unknown-link requests, per client address
    admin_fail = TokenBucket(0.2, 10.0, max_keys=10_000)
    stranger_bucket = TokenBucket(20.0, 200.0, max_keys=10_000)
    known: OrderedDict[str, int] = OrderedDict()  # link token -> participant id (LRU)
    known_lock = threading.Lock()
    counters = {"rate_limited": 0, "unauthorised": 0, "too_large": 0, "refused_bodies": 0,
                "unknown_links": 0}  # fmt: skip
    export_lock = threading.Lock()

    def error(status: int, message: str, **extra: Any) -> JSONResponse:
        return JSONResponse({"error": message, **extra}, status_code=status)

    def client_key(request: Request) -> str:
        return request.client.host if request.client else "-"

    def admin_refusal(request: Request) -> JSONResponse | None:
        """None when the request carries the researcher token, else the answer: 401 (none or
        wrong, saying which) or 429 after too many wrong ones from this address."""
        who = client_key(request)
        wait = admin_fail.waiting(who)
        if wait:
            counters["rate_limited"] += 1
            return error(429, "too many wrong researcher tokens; wait and try again",
                         retry_after_s=round(wait, 1))  # fmt: skip
        auth = request.headers.get("authorization", "")
        if not auth.startswith("Bearer ") or not auth[7:].strip():
            counters["unauthorised"] += 1
            return error(401, "researcher token required (Authorization: Bearer <token>)")
        if hmac.compare_digest(auth[7:].encode(), admin_token.encode()):
            return None
        counters["unauthorised"] += 1
        admin_fail.take(who)
        return error(401, "wrong researcher token")

    async def participant_id(token: str) -> int | None:
        """The participant id of link ``token`` (None for an unknown link), cached for known
        links; a lookup writes nothing."""
        with known_lock:
            pid = known.get(token)
            if pid is not None:
                known.move_to_end(token)
                return pid
        if not _TOKEN_SHAPE.fullmatch(token):  # NUL, surrogates, spaces: never a link
            return None
        pid = await run_in_threadpool(store.participant_id, token)
        if pid is not None:
            with known_lock:
                known[token] = pid
                while len(known) > 50_000:
                    known.popitem(last=False)
        return pid

    def stranger(request: Request) -> JSONResponse:
        counters["unknown_links"] += 1
        if stranger_bucket.take(client_key(request)):
            counters["rate_limited"] += 1
            return error(429, "too many requests for unknown links")
        return error(404, "unknown participant link")

    # -- participant routes ---------------------------------------------------------------------

    async def start_page(request: Request) -> Response:
        return FileResponse(STATIC / "start.html")

    async def join(request: Request) -> Response:
        if plan.platform["enrollment"] != "open":
            return error(403, "this study admits participants only through their own links")
        if join_bucket.take("join"):
            counters["rate_limited"] += 1
            return error(429, "too many new sessions; try again in a moment")
        body = await _json_body(request, "join_body")
        ext = body.get("external_id")
        made = await store.create_participant_async(plan, ext or None)
        return JSONResponse({"url": f"/s/{made['token']}"})

    async def study_page(request: Request) -> Response:
        if await participant_id(request.path_params["token"]) is None:
            if stranger_bucket.take(client_key(request)):
                return error(429, "too many requests for unknown links")
            return Response("Unknown study link.", status_code=404, media_type="text/plain")
        return FileResponse(STATIC / "study.html")

    async def state(request: Request) -> Response:
        if await participant_id(request.path_params["token"]) is None:
            return stranger(request)
        row = await run_in_threadpool(store.participant, request.path_params["token"])
        if row is None:
            return stranger(request)
        pf = plan.platform
        out = {
            "server_now_ms": store.clock() * 1000.0,
            "last_seq": row["last_seq"],
            "session": public_state(plan, row["state"]),
            "study": {
                "title": pf["title"],
                "consent": pf["consent"],
                "tutorial": pf["tutorial"],
                "practice": pf["practice"],
                "warmup": pf["warmup"],
                "hint_limit": pf["hint_limit"],
                "surveys": {
                    "pre": plan.survey("pre"),
                    "post": plan.survey("post"),
                    "rate": [plan.survey(f"puzzle_{k}") for k in range(1, plan.per_session + 1)],
                },
            },
        }
        if row["state"]["step"] == "done":
            c = pf["completion"]
            url = c["redirect_url"]
            if url and c["code"]:
                url = url.replace("{code}", c["code"])
            out["completion"] = {"code": c["code"], "redirect_url": url, "message": c["message"]}
        return JSONResponse(out)

    async def events(request: Request) -> Response:
        token = request.path_params["token"]
        if await participant_id(token) is None:
            return stranger(request)
        try:
            body = await _json_body(request, "events_body")
        except ContractError as e:
            # a body outside the contract is answered, counted in memory, never stored
            counters["refused_bodies"] += 1
            return error(e.status, f'{e}; expected {{"events": [...]}}')
        evs = body["events"]
        if len(evs) > lim["max_batch_events"]:
            return error(413, f"at most {lim['max_batch_events']} events per batch")
        wait = events_bucket.take(token, len(evs))
        if wait:
            counters["rate_limited"] += 1
            return error(
                429,
                "too many events; slow down",
                retry_after_s=round(wait, 3),
            )
        try:
            out = await store.submit_async(plan, token, evs)
        except StoreError as e:
            return error(e.status, str(e))
        if "refused" in out:
            return JSONResponse({**out, "error": out["refused"]["error"]}, status_code=422)
        return JSONResponse(out)

    # -- researcher routes ----------------------------------------------------------------------

    async def admin_page(request: Request) -> Response:
        return FileResponse(STATIC / "admin.html")

    async def summary(request: Request) -> Response:
        if (refusal := admin_refusal(request)) is not None:
            return refusal
        out = await run_in_threadpool(store.summary, plan)
        out["server"] = dict(counters)
        out["plan"] = {"name": plan.name, "sessions": len(plan.sessions),
                       "per_session": plan.per_session,
                       "replace_after_s": plan.platform["replace_after_s"]}  # fmt: skip
        return JSONResponse(out)

    async def participants(request: Request) -> Response:
        if (refusal := admin_refusal(request)) is not None:
            return refusal

        def rows() -> list[dict[str, Any]]:
            import sqlalchemy as sa

            from nonolab.collect.store import PARTICIPANTS as P

            with store.read_engine.connect() as conn:
                got = conn.execute(
                    sa.select(P.c.label, P.c.external_id, P.c.schedule_idx, P.c.step,
                              P.c.last_seq, P.c.created_at, P.c.updated_at).order_by(P.c.id)
                ).mappings().all()  # fmt: skip
            return [dict(r) for r in got]

        return JSONResponse({"participants": await run_in_threadpool(rows)})

    async def validate(request: Request) -> Response:
        if (refusal := admin_refusal(request)) is not None:
            return refusal
        return JSONResponse(await run_in_threadpool(validate_now, store, plan))

    async def export(request: Request) -> Response:
        if (refusal := admin_refusal(request)) is not None:
            return refusal
        if export_dir is None:
            return error(409, "the server was started without --export-dir")

        def run() -> dict[str, Any]:
            with export_lock:
                return export_study(store, plan, export_dir)

        try:
            rec = await run_in_threadpool(run)
        except FileExistsError as e:
            return error(409, str(e))
        return JSONResponse({**rec, "folder": str(Path(export_dir).resolve())})

    async def links(request: Request) -> Response:
        if (refusal := admin_refusal(request)) is not None:
            return refusal
        body = await _json_body(request, "links_body")
        n = body.get("count", 1)
        made = [await store.create_participant_async(plan, None) for _ in range(n)]
        return JSONResponse(
            {"links": [{"label": m["label"], "url": f"/s/{m['token']}"} for m in made]}
        )

    async def on_store_error(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, StoreError | ContractError)
        return error(exc.status, str(exc))

    async def on_plan_error(request: Request, exc: Exception) -> Response:
        # the database serves another plan than this process (bound by another process since):
        # nothing is written; the researcher restarts with the database's plan
        return error(409, str(exc))

    async def on_database_down(request: Request, exc: Exception) -> Response:
        # the database itself is unreachable or locked beyond its timeout (not a request's
        # fault): 503, which the page retries; nothing of the request was committed
        return error(503, "the study database is unavailable; the page will retry",
                     retry_after_s=1.0)  # fmt: skip

    async def favicon(request: Request) -> Response:
        return Response(status_code=204)

    routes = [
        Route("/", start_page),
        Route("/favicon.ico", favicon),
        Route("/api/join", join, methods=["POST"]),
        Route("/s/{token}", study_page),
        Route("/api/s/{token}/state", state),
        Route("/api/s/{token}/events", events, methods=["POST"]),
        Route("/admin", admin_page),
        Route("/api/admin/summary", summary),
        Route("/api/admin/participants", participants),
        Route("/api/admin/validate", validate),
        Route("/api/admin/export", export, methods=["POST"]),
        Route("/api/admin/links", links, methods=["POST"]),
        Mount("/static", StaticFiles(directory=STATIC), name="static"),
    ]
    return Starlette(
        routes=routes,
        middleware=[
            Middleware(Limits, max_body=lim["max_body_bytes"], body_timeout_s=body_timeout_s)
        ],
        exception_handlers={
            StoreError: on_store_error,
            ContractError: on_store_error,
            PlanError: on_plan_error,
            OperationalError: on_database_down,
        },  # fmt: skip
    )
