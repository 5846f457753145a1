"""``nonolab serve``: run the web study platform for a plan (nonolab.collect)."""

from __future__ import annotations

import argparse
import os
import secrets
import sys

#: the shortest researcher token ``nonolab serve`` accepts (characters)
MIN_ADMIN_TOKEN = 16


def admin_token_from_env(env: dict[str, str]) -> tuple[str | None, str]:
    """Return ``(token, message)`` for ``$NONOLAB_ADMIN_TOKEN`` in ``env``: the token and ""
    when it is set and long enough; a new random token and a message showing it when unset;
    ``None`` and the refusal when it is set but empty or shorter than :data:`MIN_ADMIN_TOKEN`."""
    if "NONOLAB_ADMIN_TOKEN" not in env:
        token = secrets.token_urlsafe(24)
        return token, f"researcher token (set NONOLAB_ADMIN_TOKEN to choose it): {token}"
    token = env["NONOLAB_ADMIN_TOKEN"]
    if not token.strip():
        return None, (
            "error: NONOLAB_ADMIN_TOKEN is set but empty; set it to a secret of at least "
            f"{MIN_ADMIN_TOKEN} characters, or unset it to have one made and shown"
        )
    if len(token) < MIN_ADMIN_TOKEN or token != token.strip():
        return None, (
            f"error: NONOLAB_ADMIN_TOKEN has {len(token)} characters"
            + (" with spaces at its ends" if token != token.strip() else "")
            + f"; a researcher token needs at least {MIN_ADMIN_TOKEN} (e.g. python -c "
            "'import secrets; print(secrets.token_urlsafe(24))')"
        )
    return token, ""


def connection_cap() -> int:
    """Return the default connection cap: half the soft file-descriptor limit (the rest for the
    database, logs and the threads' files), between 16 and 1000."""
    try:
        import resource

        soft = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    except (ImportError, OSError, ValueError):
        return 500
    if soft == resource.RLIM_INFINITY:
        return 1000
    return max(16, min(1000, soft // 2))


def _serve(args: argparse.Namespace) -> int:
    from nonolab.collect.plan import PlanError, load_plan
    from nonolab.collect.store import PlanMismatch, Store

    token, token_message = admin_token_from_env(dict(os.environ))
    if token is None and not args.export:
        print(token_message, file=sys.stderr)
        return 2
    try:
        plan = load_plan(args.plan)
    except PlanError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    store = Store(args.database, synchronous=args.sqlite_synchronous)
    try:
        # the database keeps the plan it was made with; another plan is refused
        plan, how = store.bind_plan(plan)
    except PlanMismatch as e:
        kept = store.bound_plan() if args.export else None
        if kept is None:
            print(f"error: {e}", file=sys.stderr)
            store.close()
            return 2
        # an export is written from the database's own plan whatever file is named
        print(f"note: {e}; the export uses the database's own plan", file=sys.stderr)
        plan, how = kept, "same"
    except PlanError as e:
        print(f"error: {e}", file=sys.stderr)
        store.close()
        return 2
    if how == "adopted":
        print(
            f"note: {args.database} was made before a database kept its plan; its sessions fit "
            f"{args.plan}, so it is now bound to that plan (sha256 {plan.digest}); a start with "
            "another plan will be refused",
            file=sys.stderr,
        )
    if args.exclude:
        if not args.reason:
            print(
                "error: --exclude needs --reason (why the sessions are excluded)", file=sys.stderr
            )
            return 2
        from nonolab.collect.store import StoreError

        try:
            new = store.exclude(args.exclude, args.reason)
        except StoreError as e:
            print(f"error: {e}", file=sys.stderr)
            return 2
        finally:
            store.close()
        print(
            f"excluded {', '.join(new) or 'nothing new'}; their schedule entries are served "
            "to the next participants who start"
        )
        return 0
    if args.export:
        from nonolab.collect.export import export_study

        try:
            rec = export_study(store, plan, args.export)
        except (FileExistsError, PlanError) as e:
            print(f"error: {e}", file=sys.stderr)
            return 2
        print(
            f"exported {rec['finished']} finished and {rec['incomplete']} unfinished sessions "
            f"({rec['lines']} log lines) to {args.export}"
        )
        return 0
    import uvicorn
    from uvicorn.config import LOGGING_CONFIG

    from nonolab.collect.app import create_app, log_config

    assert token is not None
    app = create_app(plan, store, token, export_dir=args.export_dir,
                     body_timeout_s=args.body_timeout)  # fmt: skip
    base = f"http://{args.host}:{args.port}"
    print(f"study '{plan.name}': {len(plan.sessions)} schedule sessions of {plan.per_session} "
          f"puzzles; store {store.url.split('@')[-1]}", file=sys.stderr)  # fmt: skip
    print(f"participants: {base}/   researcher dashboard: {base}/admin", file=sys.stderr)
    if token_message:
        print(token_message, file=sys.stderr)
    uvicorn.run(
        app,
        host=args.host,
        port=args.port,
        log_level=args.log_level,
        proxy_headers=args.behind_proxy,
        forwarded_allow_ips="127.0.0.1" if args.behind_proxy else None,
        timeout_graceful_shutdown=5,
        # slow or idle clients cannot hold the server: idle keep-alive connections close after
        # 5 s, a body must arrive within --body-timeout, and past --max-connections open
        # connections new ones get 503 at once (instead of the process running out of file
        # descriptors); access and trace logs never show a link or researcher token
        timeout_keep_alive=5,
        limit_concurrency=args.max_connections or connection_cap(),
        log_config=log_config(LOGGING_CONFIG),
    )
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    """Add ``serve`` to the CLI."""
    p = sub.add_parser(
        "serve",
        help="run the web study platform for a plan (participants' pages, dashboard, export)",
        description="Serve the study of PLAN (plan.yaml) to participants' browsers: consent, "
        "tutorial, warm-up, surveys and the scheduled puzzles, every interaction stored as a "
        "nonolab log event before it is acknowledged. The researcher dashboard is at /admin "
        "(token: $NONOLAB_ADMIN_TOKEN, at least 16 characters, else made and printed at start). See docs/running-a-study.md.",
    )
    p.add_argument("plan", help="the study plan (plan.yaml)")
    p.add_argument(
        "--database",
        default="study.sqlite",
        help="SQLite file (default study.sqlite, WAL mode) or postgresql://user@host/db",
    )
    p.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    p.add_argument("--port", type=int, default=8000, help="port (default 8000)")
    p.add_argument("--export-dir", help="folder the dashboard's export writes (atomically)")
    p.add_argument(
        "--export",
        metavar="DEST",
        help="do not serve: export the study folder to DEST (atomically) and exit",
    )
    p.add_argument(
        "--exclude",
        metavar="LABEL",
        action="append",
        help="do not serve: exclude session LABEL (e.g. P00003; repeatable) so that its "
        "schedule entry is served again, as the plan's stopping rule says, and exit",
    )
    p.add_argument("--reason", help="why the --exclude sessions are excluded (kept with them)")
    p.add_argument(
        "--behind-proxy",
        action="store_true",
        help="trust X-Forwarded-* headers from a reverse proxy on 127.0.0.1",
    )
    p.add_argument(
        "--sqlite-synchronous",
        default="FULL",
        choices=["FULL", "NORMAL"],
        help="SQLite durability: FULL (default) syncs every commit to disk",
    )
    p.add_argument("--log-level", default="warning", help="uvicorn log level (default warning)")
    p.add_argument(
        "--body-timeout",
        type=float,
        default=10.0,
        metavar="S",
        help="seconds a request body may take to arrive (default 10; slower clients get 408)",
    )
    p.add_argument(
        "--max-connections",
        type=int,
        default=None,
        metavar="N",
        help="open connections served at once (default: half the process's file-descriptor "
        "limit, at most 1000; more get 503 and retry)",
    )
    p.set_defaults(func=_serve)
