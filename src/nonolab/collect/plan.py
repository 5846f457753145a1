"""Reading the study plan (``plan.yaml``) as the study platform needs it.

The plan's format is ``workflow/schemas/plan.schema.yaml`` (written by ``nonolab design``; a
hand-written plan works too). The platform reads the puzzles (id, clues, solution), the schedule
(``schedule.sessions[i].puzzles``: the puzzle ids served to the i-th participant, in order),
``puzzles_per_session`` and the optional ``platform`` section, whose format is
``workflow/schemas/platform.schema.yaml`` (consent text, practice and warm-up puzzles, warm-up
time limit, hint limit, survey items, completion code and redirect).

:func:`load_plan` validates both schemas (when the plan schema is present), then checks what a
schema cannot (clues match solutions via :class:`nonolab.sat.puzzles.Puzzle`, schedule ids known
and distinct, sessions of the right length) and returns a :class:`StudyPlan`.
"""

from __future__ import annotations

import copy
import hashlib
import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from nonolab.core.paths import workflow_root
from nonolab.sat.puzzles import Puzzle, PuzzleError

SCHEMA_DIR = workflow_root() / "workflow" / "schemas"
PLAN_SCHEMA = SCHEMA_DIR / "plan.schema.yaml"
PLATFORM_SCHEMA = SCHEMA_DIR / "platform.schema.yaml"


class PlanError(ValueError):
    """The plan file cannot be served; the message names the file and the problem."""


def _guess_options() -> list[dict[str, str]]:
    return [
        {"value": "n/a", "label": "Not applicable"},
        {"value": "never", "label": "Never"},
        {"value": "few", "label": "A few times"},
        {"value": "many", "label": "Many times"},
        {"value": "all", "label": "Every time"},
    ]


_FREQ = [
    {"value": "never", "label": "Never"},
    {"value": "few", "label": "A few times"},
    {"value": "many", "label": "Many times"},
    {"value": "regular", "label": "Regularly"},
]

#: the public study's pre-survey items (ids and answer values as the ingest reads them,
#: docs/data-format.md; the wording is the platform's own)
DEFAULT_PRE_SURVEY: list[dict[str, Any]] = [
    {
        "id": "played_before",
        "prompt": "Have you played Nonograms before?",
        "type": "single",
        "options": _FREQ,
    },
    {
        "id": "skill_nonogram",
        "prompt": "How would you rate your Nonogram skill (1 = beginner, 10 = expert)?",
        "type": "scale",
        "min": 1,
        "max": 10,
    },
    {
        "id": "nonogram_size_experience",
        "prompt": "Which Nonogram sizes have you solved? (tick all that apply)",
        "type": "multi",
        "options": [
            {"value": "<=10*10", "label": "Smaller than 10 by 10"},
            {"value": "10*10", "label": "10 by 10"},
            {"value": ">=10*10", "label": "Larger than 10 by 10"},
            {"value": "N/A", "label": "Not sure / not applicable"},
        ],
        "allow_other": True,
    },
    {
        "id": "logic_experience",
        "prompt": "Which other logic puzzles have you played? (tick all that apply)",
        "type": "multi",
        "options": [
            {"value": "sudoku", "label": "Sudoku"},
            {"value": "minesweeper", "label": "Minesweeper"},
            {"value": "norinori", "label": "Norinori"},
            {"value": "battleships", "label": "Battleships"},
        ],
        "allow_other": True,
    },
    {
        "id": "puzzle_played_frequency",
        "prompt": "How often do you play logic puzzles?",
        "type": "single",
        "options": _FREQ,
    },
    {
        "id": "skill_puzzles",
        "prompt": "How would you rate your logic-puzzle skill (1 = beginner, 10 = expert)?",
        "type": "scale",
        "min": 1,
        "max": 10,
    },
]


def rating_items(k: int) -> list[dict[str, Any]]:
    """Return the items asked after attempt ``k`` (1-based): the 1-5 difficulty rating and the
    guessing report (ids ``difficulty`` and ``puzzle_K_guesses``, as the ingest reads them)."""
    return [
        {
            "id": "difficulty",
            "prompt": f"How difficult was puzzle {k} (1 = very easy, 5 = very hard)?",
            "type": "scale",
            "min": 1,
            "max": 5,
            "na": -1,
        },
        {
            "id": f"puzzle_{k}_guesses",
            "prompt": f"How often did you guess a cell (not deduce it) in puzzle {k}?",
            "type": "single",
            "options": _guess_options(),
        },
    ]


def post_items(n: int) -> list[dict[str, Any]]:
    """Return the post-survey items for ``n`` attempts: per attempt a revised rating
    (``puzzle_K_rate_again``, preset in the page to the first rating), the reason and the
    guessing report, then ``strategy`` and ``comments``."""
    out: list[dict[str, Any]] = []
    for k in range(1, n + 1):
        out += [
            {
                "id": f"puzzle_{k}_rate_again",
                "prompt": f"Puzzle {k}: your difficulty rating (1-5); change it if you wish.",
                "type": "scale",
                "min": 1,
                "max": 5,
                "na": -1,
                "prefill": f"puzzle_{k}",
            },
            {
                "id": f"puzzle_{k}_rating_reason",
                "prompt": f"Puzzle {k}: what made it easy or hard?",
                "type": "text",
            },
            {
                "id": f"puzzle_{k}_guesses",
                "prompt": f"Puzzle {k}: how often did you guess a cell?",
                "type": "single",
                "options": _guess_options(),
            },
        ]
    out += [
        {"id": "strategy", "prompt": "Which strategies did you use?", "type": "text"},
        {"id": "comments", "prompt": "Anything else you want to tell us?", "type": "text"},
    ]
    return out


DEFAULT_CONSENT = (
    "You are invited to take part in a study of how people solve Nonogram puzzles. You will "
    "solve a practice puzzle, a short warm-up, and then a few puzzles, rating each one, and "
    "answer some questions. Every action on the puzzles is recorded with its time. No name or "
    "contact detail is asked. You may stop at any time."
)


@dataclass(frozen=True)
class StudyPlan:
    """A plan as served: ``puzzles`` by id, ``sessions`` (puzzle-id lists in serving order),
    ``per_session``, ``platform`` (the platform section with every default filled in) and
    ``raw`` (the plan as read)."""

    name: str
    puzzles: dict[int, Puzzle]
    sessions: list[list[int]]
    per_session: int
    platform: dict[str, Any]
    raw: dict[str, Any] = field(repr=False)
    path: Path | None = None
    #: the plan file's text as read (what the database keeps and an export writes)
    text: str = field(default="", repr=False)
    #: :func:`plan_digest` of ``raw``: the plan's content hash
    digest: str = ""

    def public_puzzle(self, pid: int) -> dict[str, Any]:
        """Return what a participant's page may see of puzzle ``pid``: id, size and clues (never
        the solution)."""
        p = self.puzzles[pid]
        clues = p.clues_dict()
        return {"id": pid, "height": p.height, "width": p.width, **clues}

    def survey(self, survey_type: str) -> list[dict[str, Any]]:
        """Return the items of survey ``survey_type`` (``pre``, ``puzzle_K`` or ``post``)."""
        surveys = self.platform["surveys"]
        if survey_type == "pre":
            return surveys["pre"]
        if survey_type == "post":
            return surveys["post"]
        k = int(survey_type.removeprefix("puzzle_"))
        return rating_items(k)


def _schema_check(doc: Any, schema_path: Path, what: str, where: str) -> None:
    import jsonschema
    import yaml

    if not schema_path.is_file():
        return
    schema = yaml.safe_load(schema_path.read_text(encoding="utf-8"))
    errors = sorted(
        jsonschema.Draft202012Validator(schema).iter_errors(doc), key=lambda e: list(e.path)
    )
    if errors:
        e = errors[0]
        loc = "/".join(map(str, e.absolute_path)) or "(top)"
        raise PlanError(f"{where}: {what} at {loc}: {e.message}")


def _puzzle(rec: dict[str, Any], where: str) -> Puzzle:
    try:
        p = Puzzle.from_grid(rec["solution"], label=str(rec.get("id", "")))
    except (PuzzleError, KeyError, TypeError) as e:
        raise PlanError(f"{where}: puzzle {rec.get('id')!r}: {e}") from None
    clues = rec.get("clues")
    if clues is not None:
        given = {k: [[int(v) for v in line if v] for line in clues[k]] for k in ("rows", "columns")}
        own = {k: [[v for v in line if v] for line in p.clues_dict()[k]] for k in given}
        if given != own:
            raise PlanError(f"{where}: puzzle {rec.get('id')!r}: clues do not match the solution")
    h = rec.get("puzzle_hash")
    if h is not None and h != p.hash:
        raise PlanError(f"{where}: puzzle {rec.get('id')!r}: puzzle_hash is not its clues' hash")
    return p


def _practice(spec: dict[str, Any] | None, default: list[list[int]]) -> dict[str, Any]:
    spec = dict(spec or {})
    sol = spec.get("solution", default)
    p = Puzzle.from_grid(sol)
    return {"solution": [list(map(int, r)) for r in sol], **p.clues_dict(),
            "height": p.height, "width": p.width}  # fmt: skip


def platform_defaults(platform: dict[str, Any] | None, per_session: int) -> dict[str, Any]:
    """Return the ``platform`` section with every default filled in (see
    ``workflow/schemas/platform.schema.yaml`` for each key's meaning and unit)."""
    p = copy.deepcopy(platform or {})
    out: dict[str, Any] = {
        "title": p.get("title", "Nonogram study"),
        "consent": p.get("consent", DEFAULT_CONSENT),
        "tutorial": p.get("tutorial", True),
        "practice": _practice(p.get("practice"), [[1, 0, 1], [1, 1, 1], [0, 1, 0]]),
        "warmup": {
            "enabled": p.get("warmup", {}).get("enabled", True),
            "time_limit_s": float(p.get("warmup", {}).get("time_limit_s", 300)),
            **_practice(
                p.get("warmup"),
                [[1, 1, 0, 1], [0, 1, 1, 1], [1, 1, 0, 0], [0, 1, 1, 1]],
            ),
        },
        "hint_limit": int(p.get("hint_limit", 5)),
        "surveys": {
            "pre": p.get("surveys", {}).get("pre", DEFAULT_PRE_SURVEY),
            "post": p.get("surveys", {}).get("post", post_items(per_session)),
        },
        "completion": {
            "code": p.get("completion", {}).get("code"),
            "redirect_url": p.get("completion", {}).get("redirect_url"),
            "message": p.get("completion", {}).get(
                "message", "Thank you! Your answers are saved. You may close this page."
            ),
        },
        "replace_after_s": float(p.get("replace_after_s", 1800.0)),
        "enrollment": p.get("enrollment", "open"),
        "external_id_param": p.get("external_id_param", "PROLIFIC_PID"),
        "limits": {
            "max_batch_events": int(p.get("limits", {}).get("max_batch_events", 200)),
            "max_body_bytes": int(p.get("limits", {}).get("max_body_bytes", 256 * 1024)),
            "events_per_s": float(p.get("limits", {}).get("events_per_s", 20.0)),
            "event_burst": int(p.get("limits", {}).get("event_burst", 400)),
            "max_text_chars": int(p.get("limits", {}).get("max_text_chars", 5000)),
        },
    }
    return out


def plan_digest(raw: Any) -> str:
    """Return the plan's content hash: the sha256 (hex) of ``raw`` (the parsed plan) as
    canonical JSON, so comments and YAML layout do not change it but any value does."""
    text = json.dumps(raw, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def non_finite_keys(doc: Any, where: str = "") -> list[str]:
    """Return the paths (``platform/limits/events_per_s``, ``puzzles/0/id``) of the numbers in
    ``doc`` that are not finite (YAML's ``.inf``, ``-.inf``, ``.nan``), in document order."""
    out: list[str] = []
    if isinstance(doc, float) and not math.isfinite(doc):
        out.append(where or "(top)")
    elif isinstance(doc, dict):
        for k, v in doc.items():
            out += non_finite_keys(v, f"{where}/{k}" if where else str(k))
    elif isinstance(doc, list):
        for i, v in enumerate(doc):
            out += non_finite_keys(v, f"{where}/{i}" if where else str(i))
    return out


def load_plan(path: str | Path) -> StudyPlan:
    """Return the plan at ``path`` as a :class:`StudyPlan`; raise :class:`PlanError` naming the
    file for anything the platform cannot serve."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise PlanError(f"{path}: cannot read the plan: {e}") from None
    return plan_from_text(text, str(path), path)


def plan_from_text(text: str, where: str, path: Path | None = None) -> StudyPlan:
    """Return the plan whose YAML text is ``text`` (``where`` names it in messages: the file,
    or the database holding its copy) as a :class:`StudyPlan`; raise :class:`PlanError` for
    anything the platform cannot serve, a number that is not finite included (named by its
    key)."""
    import yaml

    try:
        raw = yaml.safe_load(text)
    except yaml.YAMLError as e:
        raise PlanError(f"{where}: cannot read the plan: {e}") from None
    if not isinstance(raw, dict):
        raise PlanError(f"{where}: a plan is a YAML mapping")
    bad = non_finite_keys(raw)
    if bad:
        raise PlanError(
            f"{where}: {', '.join(bad[:5])}: a plan's numbers must be finite "
            "(.inf and .nan are not numbers a study can use)"
        )
    _schema_check(raw, PLAN_SCHEMA, "plan", where)
    _schema_check(raw.get("platform", {}), PLATFORM_SCHEMA, "platform section", where)
    try:
        per = int(raw["puzzles_per_session"])
        recs = raw["puzzles"]
        sessions = [list(map(int, s["puzzles"])) for s in raw["schedule"]["sessions"]]
    except (KeyError, TypeError, ValueError) as e:
        raise PlanError(f"{where}: missing or malformed plan key: {e}") from None
    puzzles: dict[int, Puzzle] = {}
    for rec in recs:
        pid = int(rec["id"])
        if pid in puzzles:
            raise PlanError(f"{where}: puzzle id {pid} appears twice")
        puzzles[pid] = _puzzle(rec, where)
    hashes = [p.hash for p in puzzles.values()]
    if len(set(hashes)) != len(hashes):
        raise PlanError(f"{where}: two puzzles have the same clues")
    if not sessions:
        raise PlanError(f"{where}: the schedule has no sessions")
    for i, s in enumerate(sessions):
        if len(s) != per or len(set(s)) != per:
            raise PlanError(f"{where}: session {i} must list {per} distinct puzzle ids, got {s}")
        unknown = [x for x in s if x not in puzzles]
        if unknown:
            raise PlanError(f"{where}: session {i} names unknown puzzle ids {unknown}")
    return StudyPlan(
        name=str(raw.get("name", path.stem if path is not None else "plan")),
        puzzles=puzzles,
        sessions=sessions,
        per_session=per,
        platform=platform_defaults(raw.get("platform"), per),
        raw=raw,
        path=path,
        text=text,
        digest=plan_digest(raw),
    )
