"""Browser tests of what a participant sees when the server refuses an action, in headless
Chromium (the fixtures of test_browser.py): the refused event is never resent, the page says so
plainly and goes on from what is saved; a hint's message goes once its cell is changed; touch
targets are at least 44 px on a phone-sized screen.

Screenshots go to the test's temporary folder (and, with ``NONOLAB_SCREENSHOTS=docs/img``, to the
documentation's images).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from serve_helpers import Scripted, join
from test_browser import browser, server, server_board  # noqa: F401  (fixtures)

from nonolab.collect.contract import limits


def shot(page, tmp_path: Path, name: str) -> Path:
    path = tmp_path / f"serve-{name}.png"
    page.screenshot(path=str(path), full_page=True)
    out = os.environ.get("NONOLAB_SCREENSHOTS")
    if out:
        Path(out).mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(Path(out) / f"serve-{name}.png"), full_page=True)
    return path


def at_puzzle(server) -> str:  # noqa: F811
    import httpx

    with httpx.Client(base_url=server.url) as client:
        tok = join(client)
        Scripted(client, tok).setup()
    return tok


def test_a_refused_event_is_not_resent_and_the_participant_goes_on(browser, server, tmp_path):  # noqa: F811
    """The third move's client time is pushed far ahead on the wire (as a page with a broken
    clock would send it): the server stores the two before it and refuses it; the page shows
    the notice, sends nothing more, and after "Continue" the participant plays on."""
    ctx = browser.new_context(viewport={"width": 390, "height": 760}, has_touch=True,
                              is_mobile=True)  # fmt: skip
    page = ctx.new_page()
    tok = at_puzzle(server)
    posts: list[list[dict]] = []
    poisoned: list[int] = []
    seen: list[int] = []
    ahead_ms = 10 * float(limits()["client_time_tolerance_ms"])

    def route(r):
        evs = json.loads(r.request.post_data or "{}").get("events", [])
        for e in evs:
            if e["seq"] not in seen:
                seen.append(e["seq"])
            if not poisoned and len(seen) >= 3 and e["seq"] == seen[2]:
                e["t"] += ahead_ms
                poisoned.append(e["seq"])
        posts.append(evs)
        r.continue_(post_data=json.dumps({"events": evs}))

    page.route("**/api/s/*/events", route)
    page.goto(f"{server.url}/s/{tok}")
    page.wait_for_selector(".grid .cell")
    for r, c in ((0, 0), (0, 1), (1, 1)):
        page.tap(f'.grid .cell[data-r="{r}"][data-c="{c}"]')
        page.wait_for_timeout(400)  # one batch per move
    notice = page.wait_for_selector("#refused-notice", timeout=20000)
    text = notice.inner_text()
    assert "could not be saved" in text and "before it is saved" in text
    assert "ahead of the server clock" in text  # the server's reason, shown plainly
    shot(page, tmp_path, "refused-event")
    n = len(posts)
    page.wait_for_timeout(3000)
    assert len(posts) == n, "the page sent again after a refusal"
    board = server_board(server, tok)
    assert board[0] != 0 and board[1] != 0 and board[6] == 0  # the prefix is stored
    page.click("#refused-continue")
    page.wait_for_selector(".grid .cell")
    page.tap('.grid .cell[data-r="2"][data-c="2"]')
    page.wait_for_function(
        "(k) => (localStorage.getItem(k) || '[]') === '[]'",
        arg=f"nonolab:{tok}:pending",
        timeout=30000,
    )
    assert server_board(server, tok)[12] != 0
    shot(page, tmp_path, "after-refusal-continue")
    ctx.close()


def test_repeated_refusals_offer_a_way_out(browser, server, tmp_path):  # noqa: F811
    """Every batch refused (a wrong body): after three refusals the notice says the participant
    may stop, and nothing is resent in a loop."""
    ctx = browser.new_context(viewport={"width": 900, "height": 760})
    page = ctx.new_page()
    tok = at_puzzle(server)
    posts = []

    def route(r):
        posts.append(1)
        r.continue_(post_data="[1, 2]")  # refused as a whole: 400

    page.route("**/api/s/*/events", route)
    page.goto(f"{server.url}/s/{tok}")
    for _ in range(3):
        page.wait_for_selector(".grid .cell")
        page.click('.grid .cell[data-r="0"][data-c="0"]')
        page.wait_for_selector("#refused-notice", timeout=20000)
        if _ < 2:
            page.click("#refused-continue")
    assert "You may stop here" in page.inner_text("#refused-notice")
    shot(page, tmp_path, "refused-three-times")
    page.wait_for_timeout(2000)
    assert len(posts) == 3
    ctx.close()


def test_the_hint_message_goes_when_the_cell_is_fixed(browser, server, tmp_path):  # noqa: F811
    page = browser.new_page()
    tok = at_puzzle(server)
    page.goto(f"{server.url}/s/{tok}")
    page.wait_for_selector(".grid .cell")
    page.click("#hint")
    page.wait_for_selector(".cell.hinted", timeout=20000)
    assert page.inner_text("#message").startswith("Hint:")
    cell = page.query_selector(".cell.hinted")
    cell.click()
    assert page.query_selector(".cell.hinted") is None
    assert page.inner_text("#message") == ""
    page.close()


def test_touch_targets_are_at_least_44_px(browser, server, tmp_path):  # noqa: F811
    import httpx

    ctx = browser.new_context(viewport={"width": 390, "height": 760}, has_touch=True,
                              is_mobile=True)  # fmt: skip
    page = ctx.new_page()
    with httpx.Client(base_url=server.url) as client:
        tok = join(client)
        Scripted(client, tok).send({"kind": "step", "from": "consent"},
                                   {"kind": "step", "from": "tutorial"},
                                   {"kind": "step", "from": "warmup"})  # fmt: skip
    page.goto(f"{server.url}/s/{tok}")
    page.wait_for_selector("#survey-submit")
    boxes = page.eval_on_selector_all(
        "label.opt, button",
        "els => els.map(e => { const b = e.getBoundingClientRect(); "
        "return [e.textContent.trim().slice(0, 20), b.width, b.height]; })",
    )
    assert len(boxes) > 10
    small = [b for b in boxes if b[1] < 44 or b[2] < 44]
    assert not small, small
    shot(page, tmp_path, "survey-phone")
    ctx.close()
