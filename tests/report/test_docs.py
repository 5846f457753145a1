"""The user documentation stays a front door, not a lab diary.

README.md stays short; prose docs carry no commit hashes, times of day or issue numbers (those
belong in version control, not in documentation that outlives them); LICENSE and CITATION.cff
exist and parse; every entry of docs/decisions.md has the four fields of a decision record.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
DECISIONS = ROOT / "docs" / "decisions.md"
PROSE_DOCS = sorted(
    [README, ROOT / "benchmarks" / "RESULTS.md", *(ROOT / "docs").glob("*.md")],
    key=lambda p: str(p),
)

# a commit-hash-like token: 7-40 hex digits with at least one letter and one digit (so plain
# numbers such as seeds and English words such as "defaced" do not count)
HASH = re.compile(r"\b(?=[0-9a-f]*[a-f])(?=[0-9a-f]*[0-9])[0-9a-f]{7,40}\b")
# HH:MM, but not a UTC offset such as +00:00
TIME_OF_DAY = re.compile(r"(?<![+-])\b(?:[01]?\d|2[0-3]):[0-5]\d\b")
ISSUE = re.compile(r"\bissue\s*#?\d+", re.IGNORECASE)
FIELDS = ("**Context.**", "**Decision.**", "**Evidence.**", "**Consequence.**")


ISO_TIMESTAMP = re.compile(
    r"\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?"
)


def _offences(path: Path, pattern: re.Pattern[str]) -> list[str]:
    """Return ``"file:line: match"`` for every match of ``pattern`` in ``path``: prose only,
    so ISO-8601 timestamps (data, as in a log line) are not times of day of a diary."""
    found = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        line = ISO_TIMESTAMP.sub("", line)
        found += [
            f"{path.relative_to(ROOT)}:{number}: {m.group(0)}" for m in pattern.finditer(line)
        ]
    return found


def test_readme_is_at_most_200_lines() -> None:
    lines = README.read_text(encoding="utf-8").splitlines()
    assert len(lines) <= 200, f"README.md has {len(lines)} lines; move details to docs/"


@pytest.mark.parametrize("path", PROSE_DOCS, ids=lambda p: str(p.relative_to(ROOT)))
@pytest.mark.parametrize(
    "pattern",
    [HASH, TIME_OF_DAY, ISSUE],
    ids=["commit-hash", "time-of-day", "issue-number"],
)
def test_prose_docs_have_no_diary_tokens(path: Path, pattern: re.Pattern[str]) -> None:
    assert path.exists()
    assert _offences(path, pattern) == []


def test_license_is_mit() -> None:
    text = (ROOT / "LICENSE").read_text(encoding="utf-8")
    assert text.startswith("MIT License")
    assert "2026 the nonolab authors" in text


def test_citation_cff_parses_with_the_expected_keys() -> None:
    cff = yaml.safe_load((ROOT / "CITATION.cff").read_text(encoding="utf-8"))
    assert cff["cff-version"] == "1.2.0"
    assert cff["title"] == "nonolab"
    for key in ("message", "authors", "type", "license", "preferred-citation", "references"):
        assert key in cff, key
    paper = cff["preferred-citation"]
    assert paper["title"] == (
        "Evaluating SAT Solver Metrics as Predictors of Human-Perceived Nonogram Difficulty"
    )
    assert [a["family-names"] for a in paper["authors"]] == ["He", "Ju", "Calver", "Gao"]
    assert paper["year"] == 2026
    assert any(ref["title"] == paper["title"] for ref in cff["references"])


def _decision_entries() -> list[tuple[str, str]]:
    """Return ``(heading, body)`` for every ``### `` entry of docs/decisions.md."""
    parts = re.split(r"^### (.+)$", DECISIONS.read_text(encoding="utf-8"), flags=re.MULTILINE)
    # parts = [preamble, heading1, body1, heading2, body2, ...]; a body ends at the next heading
    return [
        (heading, re.split(r"^## ", body, flags=re.MULTILINE)[0])
        for heading, body in zip(parts[1::2], parts[2::2], strict=True)
    ]


def test_decisions_has_entries() -> None:
    assert len(_decision_entries()) >= 20


@pytest.mark.parametrize("heading, body", _decision_entries(), ids=lambda v: v[:40])
def test_each_decision_has_context_decision_evidence_consequence(heading: str, body: str) -> None:
    positions = [body.find(field) for field in FIELDS]
    assert -1 not in positions, (
        f"{heading!r} lacks {[f for f, p in zip(FIELDS, positions, strict=True) if p < 0]}"
    )
    assert positions == sorted(positions), f"{heading!r}: fields out of order"
