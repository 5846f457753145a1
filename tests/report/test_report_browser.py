"""The study report in a real browser: headless Chromium (Debian's /usr/bin/chromium) driven by
Playwright. The page loads offline without console errors or network requests, no script from
the study runs, Table 1 is a table, sorting a column reorders it, every figure has its caption;
screenshots go to the test's output folder (``screenshots/`` beside the report).

Without Playwright or Chromium the tests skip, except under ``CI=true`` where they fail."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from report_study import (
    HOSTILE,
    HOSTILE_IMG,
    HOSTILE_WORKFLOW,
    analyse,
    check_page,
    hostile_study,
    ingest_results,
    simulate,
)

from nonolab.report.html import build_report

CHROMIUM = Path(os.environ.get("NONOLAB_CHROMIUM", "/usr/bin/chromium"))
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


def _missing(what: str) -> None:
    msg = f"{what} is needed for the browser test of the report"
    if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
        pytest.fail(msg + "; under CI=true this is a failure, not a skip")
    pytest.skip(msg)


@pytest.fixture(scope="module")
def browser():
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        _missing("the playwright package (pip install playwright; dev extra)")
    if not CHROMIUM.is_file():
        _missing(f"Chromium at {CHROMIUM} (apt-get install chromium)")
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=str(CHROMIUM), args=FLAGS, headless=True)
        yield b
        b.close()


class Visit:
    """A page opened on a report file: console errors, page errors, dialogs (alert) and
    network requests (anything but file:, data:, blob:) are recorded and refused."""

    def __init__(self, browser, report: Path) -> None:
        self.problems: list[str] = []
        self.page = browser.new_page(viewport={"width": 1400, "height": 1000})
        page = self.page
        page.on(
            "console",
            lambda m: (
                self.problems.append(f"console {m.type}: {m.text}")
                if m.type in ("error", "warning")
                else None
            ),
        )
        page.on("pageerror", lambda e: self.problems.append(f"page error: {e}"))
        page.on("dialog", lambda d: (self.problems.append(f"dialog: {d.message}"), d.dismiss()))

        def route(r):
            url = r.request.url
            if url.startswith(("file:", "data:", "blob:")):
                r.continue_()
            else:
                self.problems.append(f"network request: {url}")
                r.abort()

        page.route("**/*", route)
        page.goto(report.as_uri())
        page.wait_for_selector("body[data-tables=ready]", timeout=60_000)

    def shot(self, folder: Path, name: str, selector: str | None = None) -> Path:
        folder.mkdir(parents=True, exist_ok=True)
        if selector:
            self.page.locator(selector).scroll_into_view_if_needed()
        path = folder / f"{name}.png"
        self.page.screenshot(path=str(path))
        return path


@pytest.fixture(scope="module")
def ingest_only(tmp_path_factory):
    base = tmp_path_factory.mktemp("browser")
    study, preset = hostile_study(base)
    root = ingest_results(study, preset, base / "out" / "results")
    return study, build_report(root.parent)


def test_ingest_only_report_loads_offline_and_runs_nothing_from_the_study(browser, ingest_only):
    study, report = ingest_only
    v = Visit(browser, report)
    assert v.problems == []
    assert v.page.title() == f"{study.name}: nonolab report"
    # the study summary shows the hostile folder and preset as text
    study = v.page.locator("#study").inner_text()
    assert HOSTILE in study and HOSTILE_IMG in study
    # the long ingest tables are DataTables with a search box; the ledger link works
    assert v.page.locator("#f-ingest-attempts .dt-search input").count() == 1
    v.shot(report.parent / "screenshots", "ingest-only-top")
    assert v.problems == []
    v.page.close()


# ---------------------------------------------------------------- the whole workflow


@pytest.fixture(scope="module")
def full_report(tmp_path_factory):
    """The whole workflow on a copy of the example study whose folder path and preset name are
    hostile (``nonolab run``, which ends by building the report), then the report again by
    ``nonolab report``."""
    base = tmp_path_factory.mktemp("full")
    study, preset = hostile_study(base, folder=HOSTILE_WORKFLOW)
    out = base / "out"
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "nonolab",
            "run",
            "--study",
            str(study),
            "--results",
            str(out),
            "--preset",
            str(preset),
            "--cores",
            "2",
        ],
        capture_output=True,
        text=True,
        timeout=3600,
    )
    assert run.returncode == 0, (run.stdout + run.stderr)[-4000:]
    rep = subprocess.run(
        [sys.executable, "-m", "nonolab", "report", "--results", str(out)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert rep.returncode == 0, rep.stderr
    return study, out / "results" / "report.html"


@pytest.mark.slow
def test_full_report_escapes_the_study_and_names_only_it(full_report):
    study, report = full_report
    page = report.read_text(encoding="utf-8")
    parsed = check_page(page, [HOSTILE, HOSTILE_WORKFLOW, HOSTILE_IMG, str(study)])
    texts = "".join(parsed.texts)
    assert str(study) in texts and HOSTILE + HOSTILE_IMG in texts
    assert "example-study" not in texts


@pytest.mark.slow
def test_full_report_in_the_browser(browser, full_report):
    _, report = full_report
    shots = report.parent / "screenshots"
    v = Visit(browser, report)
    page = v.page
    v.shot(shots, "summary")
    # headline sentences are there
    assert page.locator("#headline li").count() >= 4
    # Table 1 is a visible table with rows
    t1 = page.locator("#f-tables-table1_spearman table.nl-table")
    assert t1.is_visible()
    assert t1.locator("tbody tr").count() > 3
    headers = t1.locator("thead th").all_inner_texts()
    assert "bt_rho" in headers
    col = headers.index("bt_rho")

    def column() -> list[str]:
        return t1.locator(f"tbody tr td:nth-child({col + 1})").evaluate_all(
            "cells => cells.map(c => c.dataset.order ?? c.textContent)"
        )

    def numbers(cells: list[str]) -> list[float]:
        return [float(x) for x in cells if x.strip()]  # blanks apart

    header = t1.locator("thead th").nth(col)

    def click_and_settle(direction: str) -> list[str]:
        """Click the header, then wait (up to 10 s) for DataTables to mark the column sorted in
        ``direction`` and redraw: with its processing indicator on, DataTables orders the rows in
        a timer after the click, so the rows read right after ``click()`` may still be the old
        order. Returns the column as it then stands (the caller asserts its order)."""
        header.click()
        deadline = time.monotonic() + 10.0
        cells = column()
        while time.monotonic() < deadline:
            nums = numbers(cells)
            want = sorted(nums, reverse=direction == "descending")
            if header.get_attribute("aria-sort") == direction and nums == want:
                break
            page.wait_for_timeout(50)
            cells = column()
        return cells

    before = column()
    up = click_and_settle("ascending")
    down = click_and_settle("descending")
    assert up != before or down != before
    # one page of rows each way: undefined (blank) cells sort first ascending, so the two pages
    # need not hold the same numbers; each is in its order, and descending starts at the top
    nums_up, nums_down = numbers(up), numbers(down)
    assert nums_up and nums_down
    assert nums_up == sorted(nums_up)  # ascending
    assert nums_down == sorted(nums_down, reverse=True)  # descending
    assert nums_down[0] >= max(nums_up) and min(nums_down) >= nums_up[0]
    assert header.get_attribute("aria-sort") == "descending"
    v.shot(shots, "table1-sorted", "#f-tables-table1_spearman")
    # every figure: an image that decoded, with a caption under it
    figures = page.locator("section.figure")
    assert figures.count() >= 5
    for i in range(figures.count()):
        fig = figures.nth(i)
        img = fig.locator("figure img")
        assert img.evaluate("i => i.complete && i.naturalWidth > 0")
        cap = fig.locator("figure figcaption")
        assert len(cap.inner_text().strip()) > 20
        box_img, box_cap = img.bounding_box(), cap.bounding_box()
        assert box_cap["y"] >= box_img["y"] + box_img["height"] - 1  # under the figure
    v.shot(shots, "figure-pauses", "#f-figures-pause_gaps")
    # the errata and provenance sections and the contents are there
    assert page.locator("nav.toc a").count() > 20
    assert page.locator("#provenance table").count() == 2
    assert v.problems == []
    page.close()
    keep = os.environ.get("NONOLAB_SCREENSHOTS")
    if keep:  # copy them somewhere to look at (e.g. a CI artefact folder)
        shutil.copytree(shots, keep, dirs_exist_ok=True)


# ---------------------------------------------------------------- a small lab's own study

#: words of other studies and of the paper that must not show on a small lab's report: the
#: example study's folder, the paper's sample, citations of documents the reader does not have,
#: the drag wording of the published platform, and undefined numbers printed as words
FOREIGN = re.compile(
    r"example-study|\b67 participants\b|\b201 attempts\b|METHODS \d|fast \(drag\)|"
    r"one event per cell|\bNone\b|\bnan\b|\bNaN\b"
)


@pytest.fixture(scope="module")
def small_lab(tmp_path_factory):
    """A 3-participant simulated study (4 of 5 puzzles per session) in a folder whose name has
    a space, analysed up to Table 1 with a pause record, and its report."""
    base = tmp_path_factory.mktemp("lab")
    study = simulate(base / "my lab study", 3, 5, "4", 11)
    t1, _, _ = analyse(study, base / "out" / "results")
    from nonolab.core.tables import write_json

    write_json(
        {
            "threshold_used_s": 2.4,
            "threshold_s": 2.4,
            "threshold_source": "fitted",
            "n_gaps": 500,
            "means_log": [-4.0, -0.1, 2.0],
            "means_s": [0.018, 0.9, 7.4],
            "sds_log": [1.0, 0.7, 0.8],
            "weights": [0.1, 0.6, 0.3],
            "bic": {"1": 2480.0, "2": 2401.0, "3": 2324.0},
            "delta_bic_vs_1": {"2": 79.2, "3": 156.5},
        },
        base / "out" / "results" / "pauses" / "threshold.json",
    )
    return study, build_report(base / "out"), t1


def test_small_lab_report_shows_its_own_study_and_is_not_blank(browser, small_lab):
    study, report, _ = small_lab
    shots = report.parent / "screenshots"
    v = Visit(browser, report)
    page = v.page
    body = page.locator("body").inner_text()
    assert len(body) > 2000, body[:500]  # not blank
    assert page.locator("#headline li").count() >= 3
    assert study.name in page.locator("#study").inner_text()
    assert page.locator("#study").inner_text().count("\n") > 6
    hits = FOREIGN.findall(body)
    assert not hits, hits
    # no errata section for a study whose preset publishes nothing; no out-of-date banner
    assert page.locator("#s-errata").count() == 0
    assert page.locator("#out-of-date").count() == 0
    # the pause record is tables, not a dump of dotted keys
    rec = page.locator("#f-pauses-threshold")
    assert rec.locator("table").count() >= 3 and "bic.1" not in rec.inner_text()
    v.shot(shots, "lab-top")
    v.shot(shots, "lab-headline", "#headline")
    v.shot(shots, "lab-pauses", "#f-pauses-threshold")
    assert v.problems == []
    page.close()


def test_small_lab_report_after_a_failed_run_says_so_at_the_top(browser, small_lab, tmp_path):
    from nonolab.report.consistency import mark_run_complete, mark_run_failed

    _, report, _ = small_lab
    copy = tmp_path / "report.html"
    root = report.parent
    mark_run_failed(root, "job pauses failed")
    try:
        shutil.copy(report, copy)
        v = Visit(browser, copy)
        banner = v.page.locator("#out-of-date")
        assert banner.is_visible() and "job pauses failed" in banner.inner_text()
        header = v.page.locator("header").bounding_box()
        assert banner.bounding_box()["y"] < header["y"]  # above everything else
        v.shot(root / "screenshots", "lab-failed-run")
        assert v.problems == []
        v.page.close()
    finally:
        mark_run_complete(root)
