"""Browser tests: Playwright drives Debian's headless Chromium through whole sessions served by
``nonolab serve`` in a child process.

A scripted participant completes a session (fills, drags, crosses, undoes, resets, asks for a
hint, checks, skips, rates, answers the surveys, uses mouse, right button and keyboard); the page
is reloaded mid-puzzle with unsent events and resumes with the same board; the server is killed
(SIGKILL) mid-session, the participant keeps playing while it is down, and after the restart
nothing is lost. The export then passes ``nonolab validate`` with zero problems and its features
equal what the script did (counts exactly; every logged time within the window the script
measured around its action, features' times within 50 ms).

Set ``NONOLAB_SCREENSHOTS=docs/img`` to write the documentation's screenshots.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import numpy as np
import pytest
from serve_helpers import PLAN, Scripted, Server, _truthy, join, post_answers, rating

from nonolab.study.board import Board

CHROMIUM = "/usr/bin/chromium"
THRESHOLD_S = 2.0  # pause threshold of the round trip; scripted pauses are 3 s
SLACK_S = 0.02  # a logged time may precede/follow the script's window by this much


@pytest.fixture(scope="module")
def browser():
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        if _truthy("CI"):
            pytest.fail("playwright is not installed (pip install playwright)")
        pytest.skip("playwright is not installed")
    if not Path(CHROMIUM).exists():
        if _truthy("CI"):
            pytest.fail(f"{CHROMIUM} is missing (apt-get install chromium)")
        pytest.skip(f"{CHROMIUM} is missing")
    with sync_playwright() as pw:
        b = pw.chromium.launch(
            executable_path=CHROMIUM,
            args=["--no-sandbox", "--disable-gpu", "--disable-background-networking",
                  "--disable-component-update", "--disable-sync", "--no-first-run"],
        )  # fmt: skip
        yield b
        b.close()


@pytest.fixture
def server(tmp_path):
    srv = Server(PLAN, str(tmp_path / "study.sqlite"), tmp_path / "export")
    srv.start()
    yield srv
    srv.stop()


def shot(page, name: str) -> None:
    out = os.environ.get("NONOLAB_SCREENSHOTS")
    if out:
        Path(out).mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(Path(out) / f"serve-{name}.png"))


class Participant:
    """Drives the study page and records, per attempt, what it did and when (its own clock:
    ``time.time()`` windows around each action)."""

    def __init__(self, page, plan):
        self.page, self.plan = page, plan
        self.attempts: list[dict] = []
        self.board: Board | None = None
        self.sol: np.ndarray | None = None

    # -- recording ---------------------------------------------------------------------------
    def act(self, fn, kind: str) -> None:
        tb = time.time()
        fn()
        ta = time.time()
        self.cur["actions"].append((kind, tb, ta))

    @property
    def cur(self) -> dict:
        return self.attempts[-1]

    def start_attempt(self) -> None:
        self.attempts.append({"actions": [], "moves": 0, "errors": 0, "hints": 0, "checks": 0,
                              "solved": False, "pid": None})  # fmt: skip

    def cell(self, r: int, c: int) -> str:
        return f'.grid .cell[data-r="{r}"][data-c="{c}"]'

    def dom_board(self) -> np.ndarray:
        vals = self.page.eval_on_selector_all(
            ".grid .cell",
            "els => els.map(e => e.classList.contains('filled') ? 1 : "
            "e.classList.contains('crossed') ? -1 : 0)",
        )
        return np.array(vals).reshape(self.sol.shape)

    # -- actions -----------------------------------------------------------------------------
    def click(self, r: int, c: int, button: str = "left") -> None:
        old = int(self.board.cells[r, c])
        if button == "right":
            v = 0 if old == -1 else -1
        elif self.page.get_attribute("#tool-cross", "aria-pressed") == "true":
            v = 0 if old == -1 else -1
        else:
            v = 0 if old == 1 else 1
        self.act(lambda: self.page.click(self.cell(r, c), button=button), "move")
        self.board.move(r, c, v)
        self.cur["moves"] += 1
        self.cur["errors"] += int(v == 1 and self.sol[r, c] == 0)

    def key_fill(self, r: int, c: int) -> None:
        """Move the keyboard cursor from (0, 0) to (r, c) and press Space (fill tool)."""
        self.page.focus(".grid")
        self.page.keyboard.press("Home")  # no-op key: focus settles
        for _ in range(self.sol.shape[0]):
            self.page.keyboard.press("ArrowUp")
        for _ in range(self.sol.shape[1]):
            self.page.keyboard.press("ArrowLeft")
        for _ in range(r):
            self.page.keyboard.press("ArrowDown")
        for _ in range(c):
            self.page.keyboard.press("ArrowRight")
        old = int(self.board.cells[r, c])
        v = 0 if old == 1 else 1
        self.act(lambda: self.page.keyboard.press("Space"), "move")
        self.board.move(r, c, v)
        self.cur["moves"] += 1
        self.cur["errors"] += int(v == 1 and self.sol[r, c] == 0)

    def drag(self, a: tuple[int, int], b: tuple[int, int], mode: str = "flip") -> None:
        ba = self.page.locator(self.cell(*a)).bounding_box()
        bb = self.page.locator(self.cell(*b)).bounding_box()
        m = self.page.mouse
        m.move(ba["x"] + ba["width"] / 2, ba["y"] + ba["height"] / 2)
        m.down()
        m.move(bb["x"] + bb["width"] / 2, bb["y"] + bb["height"] / 2, steps=4)
        self.act(m.up, "drag")
        rows = range(min(a[0], b[0]), max(a[0], b[0]) + 1)
        cols = range(min(a[1], b[1]), max(a[1], b[1]) + 1)
        self.board.drag(mode, [(r, c) for r in rows for c in cols])

    def button(self, sel: str, kind: str) -> None:
        self.act(lambda: self.page.click(sel), kind)

    def undo(self) -> None:
        self.button("#undo", "undo")
        self.board.undo()

    def reset(self) -> None:
        self.button("#reset", "reset")
        self.board.reset()

    def hint(self) -> tuple[int, int] | None:
        self.button("#hint", "hint")
        self.page.wait_for_function(
            "() => !document.querySelector('#message').textContent.startsWith('Looking')"
        )
        h = self.page.query_selector(".cell.hinted")
        if h is None:
            return None
        self.cur["hints"] += 1
        r, c = int(h.get_attribute("data-r")), int(h.get_attribute("data-c"))
        assert int(self.board.cells[r, c] == 1) != self.sol[r, c]
        return r, c

    def check(self) -> bool:
        solved = bool(((self.board.cells == 1).astype(int) == self.sol).all())
        self.button("#check", "check")
        self.cur["checks"] += 1
        if solved:
            self.cur["solved"] = True
            self.cur["solve_t"] = self.cur["actions"][-1][1:]
            self.page.wait_for_selector("#survey-submit")
        else:
            self.page.wait_for_function(
                "() => document.querySelector('#message').textContent.startsWith('Not solved')"
            )
        return solved

    def skip(self) -> None:
        self.button("#skip", "skip")
        self.page.wait_for_selector("#survey-submit")

    def solve_rest(self) -> None:
        for r, c in zip(*np.nonzero((self.board.cells == 1).astype(int) != self.sol), strict=True):
            self.click(int(r), int(c))

    def wait_saved(self) -> None:
        """Wait until the page holds no unacknowledged event."""
        self.page.wait_for_function(
            "() => document.querySelector('#save-status').dataset.state === 'saved' && "
            "Object.keys(localStorage).filter(k => k.endsWith(':pending'))"
            ".every(k => localStorage.getItem(k) === '[]')",
            timeout=30000,
        )

    # -- surveys -----------------------------------------------------------------------------
    def answer(self, answers: dict) -> None:
        for key, v in answers.items():
            if isinstance(v, list):
                for x in v:
                    self.page.check(f'input[name="{key}"][value="{x}"]')
            elif isinstance(v, int):
                self.page.check(f'input[name="{key}"][value="{v}"]')
            elif key.endswith("_other") or self.page.query_selector(f'textarea[name="{key}"]'):
                self.page.fill(f'[name="{key}"]', v)
            else:
                self.page.check(f'input[name="{key}"][value="{v}"]')
        self.page.click("#survey-submit")


def puzzle_of(server: Server, token: str) -> int:
    import httpx

    return httpx.get(f"{server.url}/api/s/{token}/state").json()["session"]["puzzle"]["id"]


def server_board(server: Server, token: str) -> list[int]:
    import httpx

    return httpx.get(f"{server.url}/api/s/{token}/state").json()["session"]["board"]


def test_a_scripted_participant_completes_a_session(browser, server, plan, tmp_path):
    from nonolab.cli.commands.validate import validate_study
    from nonolab.study.features import attempt_features
    from nonolab.study.ingest import ingest_study
    from nonolab.study.presets import resolve_preset

    ctx = browser.new_context(viewport={"width": 900, "height": 820})
    page = ctx.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.on("dialog", lambda d: d.accept())
    me = Participant(page, plan)

    page.goto(server.url + "/?PROLIFIC_PID=abc123")
    shot(page, "start")
    page.click("#start")
    page.wait_for_selector("#agree")
    token = page.url.rsplit("/", 1)[1]
    shot(page, "consent")
    assert page.is_disabled("#consent-continue")
    page.check("#agree")
    page.click("#consent-continue")
    # tutorial: solve the practice puzzle with clicks and check it (not logged)
    page.wait_for_selector("#tutorial-continue")
    prac = np.array(plan.platform["practice"]["solution"])
    for r, c in zip(*np.nonzero(prac), strict=True):
        page.click(f'.grid .cell[data-r="{r}"][data-c="{c}"]')
    page.click("#tutorial-check")
    assert page.text_content(".message").startswith("Solved")
    shot(page, "tutorial")
    page.click("#tutorial-continue")
    page.wait_for_selector("#warmup-continue")
    assert page.text_content(".timer").startswith("Time left: 5:00") or "4:5" in page.text_content(
        ".timer"
    )
    page.click("#warmup-continue")
    page.wait_for_selector("#survey-submit")
    page.click("#survey-submit")  # nothing answered: the page asks for the answers
    assert page.locator(".error:not(:empty)").count() == 4
    me.answer({"played_before": "few", "skill_nonogram": 6, "nonogram_size_experience": ["10*10"],
               "logic_experience": ["sudoku", "minesweeper"], "puzzle_played_frequency": "many",
               "skill_puzzles": 7})  # fmt: skip

    # puzzle 1: every tool, then solve
    page.wait_for_selector(".grid")
    me.start_attempt()
    me.cur["pid"] = puzzle_of(server, token)
    me.sol = np.array(plan.puzzles[me.cur["pid"]].solution)
    me.board = Board(*me.sol.shape)
    wrong = list(zip(*np.nonzero(me.sol == 0), strict=True))
    right = list(zip(*np.nonzero(me.sol == 1), strict=True))
    me.click(*map(int, right[0]))
    me.click(*map(int, wrong[0]))  # an error
    me.drag((0, 0), (1, 1), "flip")
    me.click(*map(int, wrong[1]), button="right")  # cross with the right button
    page.click("#tool-cross")
    me.click(*map(int, wrong[2]))  # cross with the cross tool
    page.click("#tool-fill")
    time.sleep(3.0)  # a scripted pause
    me.undo()
    me.hint()
    shot(page, "puzzle-hint")
    me.check()  # not solved
    me.reset()
    me.key_fill(*map(int, right[1]))
    time.sleep(3.0)
    me.solve_rest()
    assert (me.dom_board() == me.board.cells).all()
    assert me.check()
    shot(page, "rating")
    page.wait_for_selector("#survey-submit")
    me.answer({"difficulty": 4, "puzzle_1_guesses": "few"})
    me.cur["rating"] = 4

    # puzzle 2: some moves, reload at once (events unsent), resume with the same board
    page.wait_for_selector(".grid")
    me.start_attempt()
    me.cur["pid"] = puzzle_of(server, token)
    me.sol = np.array(plan.puzzles[me.cur["pid"]].solution)
    me.board = Board(*me.sol.shape)
    me.click(0, 0)
    me.click(2, 3)
    me.drag((4, 4), (3, 2), "flip")
    page.reload()
    page.wait_for_selector(".grid")
    assert (me.dom_board() == me.board.cells).all()
    me.wait_saved()
    assert server_board(server, token) == me.board.cells.ravel().tolist()
    # the server is killed; the participant keeps playing while it is down
    server.kill()
    me.click(1, 1)
    me.click(1, 2, button="right")
    page.wait_for_function(
        "() => document.querySelector('#save-status').dataset.state === 'offline'", timeout=15000
    )
    shot(page, "offline")
    server.start()
    me.wait_saved()
    assert server_board(server, token) == me.board.cells.ravel().tolist()
    me.undo()
    me.skip()
    me.answer({"difficulty": -1, "puzzle_2_guesses": "n/a"})
    me.cur["rating"] = None  # -1: skipped, read as missing

    # puzzle 3: solve with the keyboard only
    page.wait_for_selector(".grid")
    me.start_attempt()
    me.cur["pid"] = puzzle_of(server, token)
    me.sol = np.array(plan.puzzles[me.cur["pid"]].solution)
    me.board = Board(*me.sol.shape)
    for r, c in zip(*np.nonzero(me.sol), strict=True):
        me.key_fill(int(r), int(c))
    assert me.check()
    me.answer({"difficulty": 2, "puzzle_3_guesses": "never"})
    me.cur["rating"] = 2

    # post-survey: the revised ratings are preset to the first ones
    page.wait_for_selector('input[name="puzzle_1_rate_again"]')
    assert page.is_checked('input[name="puzzle_1_rate_again"][value="4"]')
    shot(page, "post")
    me.answer({"puzzle_1_rate_again": 5, "puzzle_1_guesses": "few", "puzzle_2_guesses": "n/a",
               "puzzle_3_guesses": "never", "puzzle_2_rate_again": 3, "puzzle_3_rate_again": 2,
               "strategy": "<script>window.__x=1</script> lines first",
               "puzzle_1_rating_reason": "many wrong guesses"})  # fmt: skip
    page.wait_for_selector("#completion-code")
    assert page.text_content("#completion-code") == plan.platform["completion"]["code"]
    assert page.evaluate("(k) => JSON.parse(localStorage.getItem(k) || '[]')",
                         f"nonolab:{token}:pending") == []  # fmt: skip
    shot(page, "done")
    assert errors == []
    ctx.close()

    # the export validates and round-trips
    import httpx

    r = httpx.post(f"{server.url}/api/admin/export",
                   headers={"Authorization": f"Bearer {server.token}"})  # fmt: skip
    assert r.status_code == 200, r.text
    study = server.export_dir
    assert validate_study(study)["problems"] == []
    lines = [
        json.loads(x) for x in next((study / "backend/logs").iterdir()).read_text().splitlines()
    ]
    assert [ln["seq"] for ln in lines] == sorted(ln["seq"] for ln in lines)
    assert len({(ln["seq"], ln["type"]) for ln in lines}) == len(lines)  # nothing twice
    res = ingest_study(study, resolve_preset(study, "default"))
    feats = attempt_features(res.tables, THRESHOLD_S).to_dict("records")
    assert len(feats) == 3
    ev = res.tables["events"].drop_duplicates(["participant_id", "line_no"])
    for k, (row, did) in enumerate(zip(feats, me.attempts, strict=True), start=1):
        assert int(row["puzzle_id"]) == did["pid"]
        assert row["check_count"] == did["checks"]
        assert row["hint_count"] == did["hints"]
        assert row["error_count"] == did["errors"]
        assert bool(row["solved"]) == did["solved"]
        mine = ev[(ev["order"] == k) & (ev["role"] != "survey")]
        assert (mine["type"] == "move").sum() == did["moves"]
        # each action's logged time lies in the window the script measured around it
        acts = did["actions"]
        # the lines one action writes (a check and its puzzle_advanced) share its time
        us = mine["t"].astype("datetime64[us, UTC]").astype("int64")
        first_of_action = sorted(set((us / 1e6).tolist()))
        assert len(first_of_action) == len(acts)
        for tval, (kind, tb, ta) in zip(first_of_action, acts, strict=True):
            assert tb - SLACK_S <= tval <= ta + SLACK_S, (k, kind, tb, tval, ta)
        mids = [(tb + ta) / 2 for _, tb, ta in acts]
        assert row["total_time_s"] == pytest.approx(mids[-1] - mids[0], abs=0.05)
        gaps = np.diff(mids)
        assert not ((np.abs(gaps - THRESHOLD_S)) < 0.05).any()  # no gap too close to call
        assert row["pause_count"] == int((gaps >= THRESHOLD_S).sum())
    assert feats[0]["pause_count"] >= 2  # the scripted waits
    assert feats[0]["initial_difficulty"] == 4 and feats[0]["final_difficulty"] == 5
    texts = res.tables["survey_texts"]
    assert texts["text"].str.contains("<script>").any()  # stored as typed, shown escaped


def test_the_dashboard_shows_participant_text_escaped(browser, server, plan):
    from urllib.parse import quote

    ctx = browser.new_context(viewport={"width": 1000, "height": 900})
    page = ctx.new_page()
    page.on("dialog", lambda d: d.accept())
    evil = '<img src=x onerror="window.__pwned=1">'
    page.goto(server.url + "/?PROLIFIC_PID=" + quote(evil))
    page.click("#start")
    page.wait_for_selector("#agree")
    # one session finished through the API, so that the dashboard has data to check
    import httpx

    with httpx.Client(base_url=server.url) as client:
        p = Scripted(client, join(client))
        p.setup()
        for k in range(1, plan.per_session + 1):
            p.send({"kind": "skip"}, rating(k, difficulty=-1))
        p.send({"kind": "survey", "survey_type": "post", "answers": post_answers(3)})
    page.goto(server.url + "/admin")
    page.fill("#admin-token", "wrong")
    page.click("#login-go")
    page.wait_for_function("() => document.querySelector('#login-error').textContent !== ''")
    page.fill("#admin-token", server.token)
    page.click("#login-go")
    page.wait_for_selector("#participants td")
    assert evil in page.text_content("#participants")
    assert page.evaluate("() => window.__pwned") is None
    page.click("#validate")
    page.wait_for_function(
        "() => !document.querySelector('#validate-result').textContent.startsWith('Running')"
    )
    assert (
        page.text_content("#validate-result") == "1 finished session: 0 problems — usable as it is."
    )
    page.click("#export")
    page.wait_for_function(
        "() => document.querySelector('#export-result').textContent.startsWith('Wrote')"
    )
    assert (server.export_dir / "backend" / "logs").is_dir()
    page.evaluate("() => window.scrollTo(0, 0)")
    shot(page, "dashboard")
    ctx.close()


def test_the_dashboard_shows_owed_and_excluded_sessions(browser, server, tmp_path):
    """An abandoned session (its last activity moved back past ``replace_after_s``) and an
    excluded one: the dashboard shows both entries owed a replacement and one excluded session,
    as text, with the plan's abandon time."""
    import httpx
    import sqlalchemy as sa

    from nonolab.collect.store import PARTICIPANTS, Store

    with httpx.Client(base_url=server.url) as client:
        people = [Scripted(client, join(client)) for _ in range(3)]
        for p in people:
            p.send({"kind": "step", "from": "consent"})
    store = Store(server.database)
    try:
        labels = [store.participant(p.token)["label"] for p in people]
        with store.engine.begin() as conn:
            conn.execute(PARTICIPANTS.update().where(PARTICIPANTS.c.label == labels[0])
                         .values(updated_at=sa.literal(time.time() - 3600)))  # fmt: skip
        store.exclude([labels[1]], "<b>failed</b> the attention check")
    finally:
        store.close()
    ctx = browser.new_context(viewport={"width": 1000, "height": 900})
    page = ctx.new_page()
    page.goto(server.url + "/admin")
    page.fill("#admin-token", server.token)
    page.click("#login-go")
    page.wait_for_selector("#stat-owed")
    assert page.text_content("#stat-owed b") == "2"
    assert page.text_content("#stat-excluded b") == "1"
    assert page.text_content("#stat-dropped") == "1dropped (idle 30 min)"
    assert page.text_content("#owed-note") == (
        "Schedule entries 0, 1 (counted from 0) are owed a replacement: served to the next "
        "participants who start. 1 session excluded by the researcher."
    )
    page.screenshot(path=str(tmp_path / "dashboard-owed.png"), full_page=True)
    ctx.close()


def test_touch_taps_on_a_phone_sized_screen(browser, server, plan):
    """Taps (touch pointer events) fill and clear cells; the grid fits a 390 px wide screen."""
    import httpx

    ctx = browser.new_context(viewport={"width": 390, "height": 760}, has_touch=True,
                              is_mobile=True)  # fmt: skip
    page = ctx.new_page()
    with httpx.Client(base_url=server.url) as client:
        tok = join(client)
        Scripted(client, tok).setup()
    page.goto(f"{server.url}/s/{tok}")
    page.wait_for_selector(".grid .cell")
    for r, c in ((2, 3), (0, 0), (0, 0)):  # a second tap clears
        page.tap(f'.grid .cell[data-r="{r}"][data-c="{c}"]')
    # every event acknowledged: nothing left in the page's storage
    page.wait_for_function(
        "(k) => (localStorage.getItem(k) || '[]') === '[]'",
        arg=f"nonolab:{tok}:pending",
        timeout=30000,
    )
    board = server_board(server, tok)
    assert board[2 * 5 + 3] == 1 and board[0] == 0
    box = page.locator(".grid").bounding_box()
    assert box["x"] >= 0 and box["x"] + box["width"] <= 390
    shot(page, "phone")
    # the tab is closed with a move not yet sent, then the link is opened again
    page.tap('.grid .cell[data-r="4"][data-c="4"]')
    page.close()
    page = ctx.new_page()
    page.goto(f"{server.url}/s/{tok}")
    page.wait_for_selector(".grid .cell")
    page.wait_for_function(
        "(k) => (localStorage.getItem(k) || '[]') === '[]'",
        arg=f"nonolab:{tok}:pending",
        timeout=30000,
    )
    board = server_board(server, tok)
    assert board[2 * 5 + 3] == 1 and board[0] == 0 and board[4 * 5 + 4] == 1
    assert page.eval_on_selector_all(".grid .cell.filled", "els => els.length") == 2
    ctx.close()


def test_the_warmup_ends_at_its_time_limit(browser, plan, tmp_path):
    """With `warmup.time_limit_s`, the warm-up moves on by itself (and a reload does not restart
    its clock)."""
    import yaml

    raw = {**plan.raw, "platform": {"warmup": {"time_limit_s": 4}, "tutorial": False}}
    f = tmp_path / "plan.yaml"
    f.write_text(yaml.safe_dump(raw))
    srv = Server(f, str(tmp_path / "s.sqlite"), tmp_path / "export")
    srv.start()
    try:
        page = browser.new_page()
        page.goto(srv.url + "/")
        page.click("#start")
        page.check("#agree")
        page.click("#consent-continue")  # no tutorial: straight to the warm-up
        page.wait_for_selector("#warmup-continue")
        t0 = time.monotonic()
        page.wait_for_timeout(1500)
        page.reload()
        page.wait_for_selector("#survey-submit", timeout=20000)
        assert 3.5 <= time.monotonic() - t0 <= 10
        page.close()
    finally:
        srv.stop()


def test_keyboard_selection_is_a_drag(browser, server, plan):
    """Shift with the arrow keys selects a rectangle; Space fills it and X crosses it, each as
    one `drag` action from the anchor to the cursor (what a mouse drag over the same rectangle
    sends); Escape and a plain arrow key drop a selection. The server's board equals the ingest's
    replay of the same drags (nonolab.study.board.Board)."""
    import httpx

    ctx = browser.new_context(viewport={"width": 900, "height": 820})
    page = ctx.new_page()
    sent: list[dict] = []

    def on_request(req) -> None:
        if req.method == "POST" and req.url.endswith("/events"):
            sent.extend(json.loads(req.post_data or "{}").get("events", []))

    page.on("request", on_request)
    with httpx.Client(base_url=server.url) as client:
        tok = join(client)
        Scripted(client, tok).setup()
        state = client.get(f"/api/s/{tok}/state").json()["session"]
    page.goto(f"{server.url}/s/{tok}")
    page.wait_for_selector(".grid .cell")
    h, w = page.eval_on_selector(
        ".grid", "g => [Number(g.style.getPropertyValue('--rows')), "
        "Number(g.style.getPropertyValue('--cols'))]"
    )  # fmt: skip
    assert len(state["board"]) == h * w and h >= 3 and w >= 3
    kb = page.keyboard
    page.focus(".grid")
    for _ in range(max(h, w)):  # the cursor to (0, 0)
        kb.press("ArrowUp")
        kb.press("ArrowLeft")
    # Shift+Right twice, Shift+Down once, Space: fill rows 0-1, columns 0-2
    for key in ("Shift+ArrowRight", "Shift+ArrowRight", "Shift+ArrowDown"):
        kb.press(key)
    assert page.eval_on_selector_all(".grid .cell.preview", "e => e.length") == 6
    shot(page, "keyboard-selection")
    kb.press("Space")
    assert page.eval_on_selector_all(".grid .cell.preview", "e => e.length") == 0
    # a selection dropped by Escape, then one dropped by a plain arrow key: nothing sent
    kb.press("Shift+ArrowDown")
    kb.press("Escape")
    kb.press("Shift+ArrowLeft")
    kb.press("ArrowLeft")  # drops the selection: cursor (2, 0)
    kb.press("ArrowRight")  # cursor (2, 1), no selection
    assert page.eval_on_selector_all(".grid .cell.preview", "e => e.length") == 0
    # Shift+Up twice from (2, 1) then X: cross rows 0-2 of column 1 (a line, as a drag)
    kb.press("Shift+ArrowUp")
    kb.press("Shift+ArrowUp")
    kb.press("x")
    # one cell selected and back: a Space on it is a click
    kb.press("Shift+ArrowRight")
    kb.press("Shift+ArrowLeft")
    kb.press("Space")
    page.wait_for_function(
        "(k) => (localStorage.getItem(k) || '[]') === '[]'",
        arg=f"nonolab:{tok}:pending",
        timeout=30000,
    )
    actions = [
        {k: e[k] for k in ("kind", "mode", "start", "end", "r", "c", "value") if k in e}
        for e in sent
        if e.get("kind") in ("move", "drag")
    ]
    assert actions == [
        {"kind": "drag", "mode": "flip", "start": {"r": 0, "c": 0}, "end": {"r": 1, "c": 2}},
        {"kind": "drag", "mode": "cross", "start": {"r": 2, "c": 1}, "end": {"r": 0, "c": 1}},
        {"kind": "move", "r": 0, "c": 1, "value": 1},
    ], actions
    ref = Board(h, w)
    ref.drag("flip", [(r, c) for r in range(2) for c in range(3)])
    ref.drag("cross", [(r, 1) for r in range(3)])
    ref.move(0, 1, 1)
    assert server_board(server, tok) == ref.cells.ravel().tolist()
    ctx.close()
