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

Bounds: request bodies (``limits.max_body_bytes``), events per batch, events per second per
participant (token bucket: ``events_per_s``, ``event_burst``), sessions created per second.
No CORS headers are sent (same origin only); every page gets a strict Content-Security-Policy.
"""

from __future__ import annotations

import hmac
import json
import threading
import time
from collections import OrderedDict
from importlib import resources
from pathlib import Path
from typing import Any

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import FileResponse, JSONResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from nonolab.collect.export import export_study, validate_now
from nonolab.collect.plan import StudyPlan
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


class Limits:
    """Security headers and a request-body size bound, as pure ASGI middleware."""

    def __init__(self, app: ASGIApp, max_body: int):
        self.app, self.max_body = app, max_body

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

        async def bounded() -> Message:
            nonlocal seen
            msg = await receive()
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


class _TooLarge(Exception):
    pass


def _no_constant(name: str) -> float:
    raise ValueError(f"{name} is not JSON")


async def _json_body(request: Request) -> Any:
    body = await request.body()
    try:
        return json.loads(body or b"{}", parse_constant=_no_constant)
    except (ValueError, UnicodeDecodeError) as e:
        raise StoreError(400, f"the body is not JSON: {e}") from None


def create_app(
    plan: StudyPlan,
    store: Store,
    admin_token: str,
    export_dir: str | Path | None = None,
) -> Starlette:
    """Return the study server for ``plan`` over ``store``; researcher routes need
    ``admin_token``; ``POST /api/admin/export`` writes to ``export_dir``."""
    lim = plan.platform["limits"]
    events_bucket = TokenBucket(lim["events_per_s"], lim["event_burst"])
    join_bucket = TokenBucket(5.0, 50.0)
    counters = {"rate_limited": 0, "unauthorised": 0, "too_large": 0}
    export_lock = threading.Lock()

    def error(status: int, message: str, **extra: Any) -> JSONResponse:
        return JSONResponse({"error": message, **extra}, status_code=status)

    def is_admin(request: Request) -> bool:
        auth = request.headers.get("authorization", "")
        ok = auth.startswith("Bearer ") and hmac.compare_digest(
            auth[7:].encode(), admin_token.encode()
        )
        if not ok:
            counters["unauthorised"] += 1
        return ok

    # -- participant routes ---------------------------------------------------------------------

    async def start_page(request: Request) -> Response:
        return FileResponse(STATIC / "start.html")

    async def join(request: Request) -> Response:
        if plan.platform["enrollment"] != "open":
            return error(403, "this study admits participants only through their own links")
        if join_bucket.take("join"):
            counters["rate_limited"] += 1
            return error(429, "too many new sessions; try again in a moment")
        body = await _json_body(request)
        ext = body.get("external_id") if isinstance(body, dict) else None
        if ext is not None and (not isinstance(ext, str) or len(ext) > 200):
            return error(400, "external_id must be text of at most 200 characters")
        made = await store.create_participant_async(plan, ext or None)
        return JSONResponse({"url": f"/s/{made['token']}"})

    async def study_page(request: Request) -> Response:
        row = await run_in_threadpool(store.participant, request.path_params["token"])
        if row is None:
            return Response("Unknown study link.", status_code=404, media_type="text/plain")
        return FileResponse(STATIC / "study.html")

    async def state(request: Request) -> Response:
        row = await run_in_threadpool(store.participant, request.path_params["token"])
        if row is None:
            return error(404, "unknown participant link")
        pf = plan.platform
        out = {
            "server_now_ms": time.time() * 1000.0,
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
        body = await _json_body(request)
        evs = body.get("events") if isinstance(body, dict) else None
        if not isinstance(evs, list) or not evs:
            await store.reject_async(None, None, "batch without events")
            return error(400, 'the body must be {"events": [...]} with at least one event')
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
        if not is_admin(request):
            return error(401, "researcher token required")
        out = await run_in_threadpool(store.summary, plan)
        out["server"] = dict(counters)
        out["plan"] = {"name": plan.name, "sessions": len(plan.sessions),
                       "per_session": plan.per_session}  # fmt: skip
        return JSONResponse(out)

    async def participants(request: Request) -> Response:
        if not is_admin(request):
            return error(401, "researcher token required")

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
        if not is_admin(request):
            return error(401, "researcher token required")
        return JSONResponse(await run_in_threadpool(validate_now, store, plan))

    async def export(request: Request) -> Response:
        if not is_admin(request):
            return error(401, "researcher token required")
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
        if not is_admin(request):
            return error(401, "researcher token required")
        body = await _json_body(request)
        n = body.get("count", 1) if isinstance(body, dict) else None
        if isinstance(n, bool) or not isinstance(n, int) or not 1 <= n <= 1000:
            return error(400, "count must be an integer 1-1000")
        made = [await store.create_participant_async(plan, None) for _ in range(n)]
        return JSONResponse(
            {"links": [{"label": m["label"], "url": f"/s/{m['token']}"} for m in made]}
        )

    async def on_store_error(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, StoreError)
        return error(exc.status, str(exc))

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
        middleware=[Middleware(Limits, max_body=lim["max_body_bytes"])],
        exception_handlers={StoreError: on_store_error},
    )
