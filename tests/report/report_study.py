"""Helpers of the report tests: hostile strings, a study whose folder path and preset name
carry them, and a results folder made from it (library calls, as the workflow's ingest rule)."""

from __future__ import annotations

import shutil
from html.parser import HTMLParser
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "data" / "example-study"
#: the string of issue 25: closes a script block and opens another
HOSTILE = "</script><script>alert(1)</script>"
#: the same in a form Snakemake (9.x) accepts in a path: it reads ``<name>`` with a lower-case
#: name as a path variable and stops; HTML tag names are case-insensitive, so this is as hostile
HOSTILE_WORKFLOW = "</script><SCRIPT>alert(1)</script>"
#: a second one for attributes and event handlers
HOSTILE_IMG = '"><img src=x onerror=alert(5)>'


def hostile_study(base: Path, name: str = HOSTILE, folder: str | None = None) -> tuple[Path, Path]:
    """Copy the example study under ``base`` to a folder whose path contains ``folder``
    (default ``name``; the slashes in it make nested folders) and write a preset
    (``extends: default``) whose name is ``name``; return ``(study folder, preset file)``."""
    folder = name if folder is None else folder
    study = base / ("s" + folder + "'&x" + HOSTILE_IMG.replace("/", "_"))
    shutil.copytree(EXAMPLE, study)
    preset = base / "hostile-preset.yaml"
    # a YAML double-quoted string: escape backslashes and quotes
    quoted = (
        '"' + name.replace("\\", "\\\\").replace('"', '\\"') + HOSTILE_IMG.replace('"', '\\"') + '"'
    )
    preset.write_text(f"extends: default\nname: {quoted}\n", encoding="utf-8")
    return study, preset


def ingest_results(study: Path, preset_file: Path, results: Path) -> Path:
    """Write ``results/ingest/`` (tables, summary.json, study.json) for ``study`` as the
    workflow's ingest rule does; return the results folder."""
    from nonolab.core.tables import write_json
    from nonolab.study.identity import study_identity
    from nonolab.study.ingest import ingest_study, write_ingest
    from nonolab.study.presets import load_preset

    preset = load_preset(preset_file)
    result = ingest_study(study, preset)
    write_ingest(result, results / "ingest", params={"preset": preset.name})
    summary = result.summary
    counts = {
        "participants": summary["participants"],
        "attempts": summary["attempts"],
        "puzzles": len(summary["attempts_per_puzzle"]),
        "published": bool(preset.data.get("published")),
    }
    write_json(study_identity(study, preset) | counts, results / "ingest" / "study.json")
    return results


class Page(HTMLParser):
    """Parsed page: every start tag with its attributes, the text of every script block, and
    every text node outside scripts (entities decoded)."""

    def __init__(self, page: str) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.scripts: list[tuple[dict[str, str | None], str]] = []
        self.texts: list[str] = []
        self._in_script: dict[str, str | None] | None = None
        self._script_text: list[str] = []
        self.feed(page)
        self.close()

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))
        if tag == "script":
            self._in_script = dict(attrs)
            self._script_text = []

    def handle_endtag(self, tag):
        if tag == "script" and self._in_script is not None:
            self.scripts.append((self._in_script, "".join(self._script_text)))
            self._in_script = None

    def handle_data(self, data):
        if self._in_script is not None:
            self._script_text.append(data)
        else:
            self.texts.append(data)


#: the script blocks the report writes, by (type, id)
REPORT_SCRIPTS = {
    ("application/json", "report-metadata"),
    ("application/json", "report-settings"),
    ("text/plain", "datatables-bundle"),
    ("module", None),
}


def check_page(page: str, hostile: list[str]) -> Page:
    """Assert that ``page`` holds no unescaped copy of any string in ``hostile``: no raw copy in
    the source, only the report's own script blocks (the data ones free of ``< > &`` and
    U+2028/2029, the code one the report's static code),
    no event-handler attribute, no ``img`` outside the figures' data URIs; return the parsed
    page."""
    for s in hostile:
        if "<" in s:  # quotes, & and > alone are also ordinary text in a page
            assert s not in page, f"raw copy of {s!r} in the page"
    parsed = Page(page)
    kinds = {(a.get("type"), a.get("id")) for a, _ in parsed.scripts}
    assert kinds <= REPORT_SCRIPTS and len(parsed.scripts) == len(REPORT_SCRIPTS), kinds
    from nonolab.report.html import INIT_JS

    for attrs, body in parsed.scripts:
        if attrs.get("type") == "module":
            assert body == INIT_JS  # static code: nothing from the study in it
        else:  # data: no character that could end or change the script, so no hostile string
            assert not set(body) & set("<>&\u2028\u2029"), attrs
    for tag, attrs in parsed.tags:
        assert not any(k.startswith("on") for k in attrs), (tag, attrs)
        if tag == "img":
            assert (attrs.get("src") or "").startswith("data:image/png;base64,"), attrs
    return parsed


# ---------------------------------------------------------------- tiny simulated studies


def simulate(out: Path, participants: int, puzzles: int, per_session: str, seed: int) -> Path:
    """Write a simulated study (``nonolab simulate``, 5x5 puzzles) to ``out``; return it."""
    from nonolab.cli import main

    assert (
        main(
            [
                "simulate",
                str(out),
                "--participants",
                str(participants),
                "--puzzles",
                str(puzzles),
                "--size",
                "5x5",
                "--per-session",
                per_session,
                "--seed",
                str(seed),
            ]
        )
        == 0
    )
    return out


def analyse(study: Path, results: Path) -> tuple:
    """Write ingest, features, BT and Table 1 outputs for ``study`` into ``results`` (as the
    workflow's rules do, with made-up SAT metrics: conflicts the same for every puzzle);
    return (Table 1, the BT strengths, Table 1's points for the rank figure)."""
    import numpy as np
    import pandas as pd

    from nonolab.core.tables import write_json, write_table
    from nonolab.core.undefined import NOT_CONNECTED
    from nonolab.stats.correlations import raw_mean_rating, table1, table1_points
    from nonolab.stats.ranking import (
        NotStronglyConnectedError,
        lr_test,
        pairwise_comparisons,
        strengths_table,
    )
    from nonolab.study.features import attempt_features
    from nonolab.study.ingest import read_ingest

    preset = study / "preset.yaml"
    if not preset.is_file():
        preset = Path(__file__).resolve().parents[2] / "config" / "studies" / "default.yaml"
    ingest_results(study, preset, results)
    tables = read_ingest(results / "ingest")
    feats = attempt_features(tables, 2.5)
    (results / "features").mkdir(parents=True, exist_ok=True)
    write_table(feats, results / "features" / "attempts.csv")
    items = sorted(feats["puzzle_id"].astype(str).unique(), key=lambda s: (len(s), s))
    comps = pairwise_comparisons(feats.assign(puzzle_id=feats["puzzle_id"].astype(str)))
    (results / "ranking").mkdir(exist_ok=True)
    write_table(comps, results / "ranking" / "bt_comparisons.csv")
    try:
        test = lr_test(comps, items)
    except (NotStronglyConnectedError, ValueError):
        test = {
            "chi2": None,
            "df": len(items) - 1,
            "p": None,
            "n_comparisons": float(comps["weight"].sum()) if len(comps) else 0.0,
            "undefined": NOT_CONNECTED,
        }
    (results / "tables").mkdir(exist_ok=True)
    write_json(test, results / "tables" / "bt_lr_test.json")
    strengths = strengths_table(comps, items)
    write_table(strengths, results / "tables" / "bt_strengths.csv")
    rng = np.random.default_rng(len(items))
    metrics = pd.DataFrame(
        {
            "puzzle_id": items,
            "solver": "minisat22",
            "encoding": "block_start",
            "decisions": rng.integers(0, 50, len(items)),
            "propagations": rng.integers(0, 500, len(items)),
            "conflicts": 0,  # the same for every puzzle: its rho is not defined
        }
    )
    raw = raw_mean_rating(feats.assign(puzzle_id=feats["puzzle_id"].astype(str)))
    t1 = table1(strengths, raw, {"corrected": metrics}, n_perm=200)
    write_table(t1, results / "tables" / "table1_spearman.csv")
    points = table1_points({"corrected": metrics}, strengths, raw)
    return t1, strengths, points
