"""The study plan file (``plan.yaml``): what a study platform serves and the pipeline reads.

The format is the JSON Schema ``workflow/schemas/plan.schema.yaml``. :func:`load_plan` reads and
validates a plan (schema, then what a schema cannot say: each puzzle's ``puzzle_hash`` is the
hash of its clues, the clues match the solution, ids and hashes are unique, every session serves
``puzzles_per_session`` distinct known puzzles) and returns a :class:`Plan`; :func:`write_plan`
writes one atomically (a temporary file in the same folder, then a rename), byte-stable for the
same plan. :func:`study_puzzle_records` and :func:`write_study_files` turn a plan into the
pipeline's inputs: the study puzzle file (docs/data-format.md) and a preset with the plan's
``puzzles_per_session`` and puzzle fingerprint (docs/presets.md).
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

import jsonschema
import yaml

from nonolab.sat.puzzles import Puzzle, PuzzleError
from nonolab.study.presets import SCHEMA_DIR

PLAN_VERSION = 1
SCHEMA_FILE = "plan.schema.yaml"


class PlanError(ValueError):
    """A plan file is not valid (the message names the file and the offending entry)."""


@cache
def plan_schema() -> dict[str, Any]:
    """Return the plan JSON Schema (cached: do not modify)."""
    return yaml.safe_load((SCHEMA_DIR / SCHEMA_FILE).read_text(encoding="utf-8"))


@dataclass(frozen=True)
class PlanPuzzle:
    """One served puzzle: study id, the puzzle (clues and solution), optional source and metrics."""

    id: int
    puzzle: Puzzle
    source: Mapping[str, Any] = field(default_factory=dict)
    metrics: Mapping[str, float | None] = field(default_factory=dict)

    @property
    def puzzle_hash(self) -> str:
        """The canonical clue hash (hex sha256)."""
        return self.puzzle.hash

    def record(self) -> dict[str, Any]:
        """Return the plan-file mapping of this puzzle."""
        p = self.puzzle
        assert p.solution is not None
        out: dict[str, Any] = {
            "id": int(self.id),
            "puzzle_hash": p.hash,
            "size": {"height": p.height, "width": p.width},
            "clues": p.clues_dict(),
            "solution": [list(map(int, r)) for r in p.solution],
        }
        if self.source:
            out["source"] = dict(self.source)
        if self.metrics:
            out["metrics"] = {k: _plain(v) for k, v in self.metrics.items()}
        return out


@dataclass(frozen=True)
class Session:
    """One scheduled session: position, block, puzzle ids in serving order."""

    session: int
    block: int
    puzzles: tuple[int, ...]


@dataclass(frozen=True)
class Plan:
    """A study plan (see the module docstring and ``plan.schema.yaml``).

    ``analyses``, ``selection``, ``participants``, ``platform`` and ``schedule_extra`` (the
    schedule's ``method`` and ``balance``) are kept as plain mappings, as in the file.
    """

    name: str
    puzzles: tuple[PlanPuzzle, ...]
    puzzles_per_session: int
    sessions: tuple[Session, ...]
    block_size: int
    seeds: Mapping[str, int]
    analyses: tuple[Mapping[str, Any], ...] = ()
    description: str = ""
    created_by: str = ""
    participants: Mapping[str, Any] = field(default_factory=dict)
    selection: Mapping[str, Any] = field(default_factory=dict)
    platform: Mapping[str, Any] | None = None
    schedule_extra: Mapping[str, Any] = field(default_factory=dict)

    @property
    def queues(self) -> list[list[int]]:
        """Return the sessions' puzzle ids in serving order."""
        return [list(s.puzzles) for s in self.sessions]

    def puzzle(self, pid: int) -> PlanPuzzle:
        """Return the puzzle with study id ``pid`` (KeyError if none)."""
        for p in self.puzzles:
            if p.id == pid:
                return p
        raise KeyError(pid)

    def to_dict(self) -> dict[str, Any]:
        """Return the plan as the plain mapping written to ``plan.yaml`` (schema order)."""
        out: dict[str, Any] = {"plan_version": PLAN_VERSION, "name": self.name}
        if self.description:
            out["description"] = self.description
        if self.created_by:
            out["created_by"] = self.created_by
        out["puzzles_per_session"] = int(self.puzzles_per_session)
        out["puzzles"] = [p.record() for p in self.puzzles]
        sched: dict[str, Any] = {}
        if "method" in self.schedule_extra:
            sched["method"] = self.schedule_extra["method"]
        sched["block_size"] = int(self.block_size)
        sched["sessions"] = [
            {"session": s.session, "block": s.block, "puzzles": [int(x) for x in s.puzzles]}
            for s in self.sessions
        ]
        if "balance" in self.schedule_extra:
            sched["balance"] = _plain(self.schedule_extra["balance"])
        out["schedule"] = sched
        out["seeds"] = {k: int(v) for k, v in self.seeds.items()}
        if self.participants:
            out["participants"] = _plain(self.participants)
        out["analyses"] = [_plain(a) for a in self.analyses]
        if self.selection:
            out["selection"] = _plain(self.selection)
        if self.platform is not None:
            out["platform"] = _plain(self.platform)
        return out


def _plain(v: Any) -> Any:
    """Return ``v`` with numpy scalars, tuples and mappings turned into plain YAML types."""
    if isinstance(v, Mapping):
        return {str(k): _plain(x) for k, x in v.items()}
    if isinstance(v, list | tuple):
        return [_plain(x) for x in v]
    if hasattr(v, "item") and callable(v.item):  # numpy scalar
        return v.item()
    if isinstance(v, float) and v != v:  # NaN is not YAML-portable: write null
        return None
    return v


def plan_from_dict(data: Any, where: str = "plan") -> Plan:
    """Return the :class:`Plan` of a plan mapping, validated (see the module docstring).

    Raises :class:`PlanError` naming ``where`` and the offending entry.
    """
    try:
        jsonschema.validate(data, plan_schema())
    except jsonschema.ValidationError as exc:
        at = "/".join(map(str, exc.absolute_path)) or "(top level)"
        raise PlanError(f"{where}: invalid plan at {at}: {exc.message}") from None
    puzzles: list[PlanPuzzle] = []
    seen_ids: set[int] = set()
    seen_hash: dict[str, int] = {}
    for i, rec in enumerate(data["puzzles"]):
        pid = rec["id"]
        if pid in seen_ids:
            raise PlanError(f"{where}: puzzle id {pid} appears twice")
        seen_ids.add(pid)
        try:
            p = Puzzle(
                rows=rec["clues"]["rows"],
                cols=rec["clues"]["columns"],
                solution=rec["solution"],
                label=str(pid),
            )
        except PuzzleError as exc:
            raise PlanError(f"{where}: puzzles/{i} (id {pid}): {exc}") from None
        if p.hash != rec["puzzle_hash"]:
            raise PlanError(
                f"{where}: puzzles/{i} (id {pid}): puzzle_hash {rec['puzzle_hash'][:12]}... is "
                f"not the hash of its clues ({p.hash[:12]}...)"
            )
        if (p.height, p.width) != (rec["size"]["height"], rec["size"]["width"]):
            raise PlanError(
                f"{where}: puzzles/{i} (id {pid}): size {rec['size']} but the clues give "
                f"{p.height}x{p.width}"
            )
        if p.hash in seen_hash:
            raise PlanError(f"{where}: puzzles {seen_hash[p.hash]} and {pid} have the same clues")
        seen_hash[p.hash] = pid
        puzzles.append(PlanPuzzle(pid, p, rec.get("source", {}), rec.get("metrics", {})))
    m = data["puzzles_per_session"]
    if m > len(puzzles):
        raise PlanError(f"{where}: {m} puzzles per session but only {len(puzzles)} puzzles")
    sched = data["schedule"]
    sessions: list[Session] = []
    for i, s in enumerate(sched["sessions"]):
        q = s["puzzles"]
        if s["session"] != i:
            raise PlanError(f"{where}: schedule/sessions/{i} is numbered {s['session']}")
        if len(q) != m:
            raise PlanError(
                f"{where}: schedule/sessions/{i} serves {len(q)} puzzles, not the plan's "
                f"puzzles_per_session {m}"
            )
        unknown = sorted(set(q) - seen_ids)
        if unknown:
            raise PlanError(f"{where}: schedule/sessions/{i} names unknown puzzle ids {unknown}")
        if len(set(q)) != len(q):
            raise PlanError(f"{where}: schedule/sessions/{i} serves a puzzle twice: {q}")
        sessions.append(Session(i, s["block"], tuple(q)))
    blocks = [s.block for s in sessions]
    if blocks != sorted(blocks):
        raise PlanError(f"{where}: schedule blocks are not in order")
    extra = {k: sched[k] for k in ("method", "balance") if k in sched}
    return Plan(
        name=data["name"],
        puzzles=tuple(puzzles),
        puzzles_per_session=m,
        sessions=tuple(sessions),
        block_size=sched["block_size"],
        seeds=dict(data["seeds"]),
        analyses=tuple(data["analyses"]),
        description=data.get("description", ""),
        created_by=data.get("created_by", ""),
        participants=data.get("participants", {}),
        selection=data.get("selection", {}),
        platform=data.get("platform"),
        schedule_extra=extra,
    )


def load_plan(path: str | os.PathLike) -> Plan:
    """Return the plan read from ``path`` (YAML or JSON), validated.

    Raises :class:`PlanError` naming the file and the offending entry, FileNotFoundError when
    the file does not exist.
    """
    path = Path(path)
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise FileNotFoundError(f"plan file {path} does not exist") from None
    except yaml.YAMLError as exc:
        raise PlanError(f"{path}: not valid YAML ({exc})") from None
    return plan_from_dict(data, str(path))


def plan_text(plan: Plan) -> str:
    """Return the YAML text of ``plan`` (keys in schema order; the same plan gives the same
    bytes). Validates it first (raises :class:`PlanError`)."""
    data = plan.to_dict()
    plan_from_dict(data, f"plan {plan.name!r}")
    return yaml.safe_dump(
        data, sort_keys=False, allow_unicode=True, default_flow_style=None, width=100
    )


def _atomic_write(text: str, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_plan(plan: Plan, path: str | os.PathLike) -> Path:
    """Write ``plan`` as YAML to ``path`` atomically (a temporary file beside it, then a
    rename: readers never see a partial plan); return the path. Validates first."""
    path = Path(path)
    _atomic_write(plan_text(plan), path)
    return path


def study_puzzle_records(plan: Plan) -> list[dict[str, Any]]:
    """Return the plan's puzzles as a study puzzle file (docs/data-format.md): a list of
    ``{"id", "solution", "clues"}`` in id order, readable by
    :func:`nonolab.sat.puzzles.load_study_puzzles`."""
    out = []
    for p in sorted(plan.puzzles, key=lambda q: q.id):
        rec = p.record()
        out.append({"id": rec["id"], "solution": rec["solution"], "clues": rec["clues"]})
    return out


def preset_text(plan: Plan, puzzle_file: str = "nonograms_6.json") -> str:
    """Return a study preset (``extends: default``) for a study run from ``plan``: its puzzle
    file, ``puzzles_per_session``, fingerprint (puzzle id -> clue hash) and the schedule file
    (``assignment_schedule.json``, written by :func:`write_study_files`)."""
    data = {
        "name": f"plan-{plan.name}",
        "extends": "default",
        "description": f"Study run from plan {plan.name!r} (written by nonolab design).",
        "fingerprint": {"puzzle_hashes": {str(p.id): p.puzzle_hash for p in plan.puzzles}},
        "puzzle_file": puzzle_file,
        "puzzles_per_session": int(plan.puzzles_per_session),
        "assignment_schedule": "assignment_schedule.json",
    }
    return yaml.safe_dump(data, sort_keys=False, width=100)


def write_study_files(
    plan: Plan, out_dir: str | os.PathLike, puzzle_file: str = "nonograms_6.json"
) -> dict[str, Path]:
    """Write the pipeline's inputs for a study run from ``plan`` into ``out_dir``: the puzzle
    file (``puzzle_file``), the preset (``preset.yaml``) and the schedule as the platform's
    ``assignment_schedule.json`` (``{"version": 1, "sequences": [...]}``). Returns their paths
    by role (``puzzles``, ``preset``, ``schedule``)."""
    out = Path(out_dir)
    paths = {
        "puzzles": out / puzzle_file,
        "preset": out / "preset.yaml",
        "schedule": out / "assignment_schedule.json",
    }
    _atomic_write(json.dumps(study_puzzle_records(plan), indent=1) + "\n", paths["puzzles"])
    _atomic_write(preset_text(plan, puzzle_file), paths["preset"])
    _atomic_write(json.dumps({"version": 1, "sequences": plan.queues}) + "\n", paths["schedule"])
    return paths


def make_plan(
    name: str,
    puzzles: Sequence[PlanPuzzle],
    queues: Sequence[Sequence[int]],
    block_size: int,
    seeds: Mapping[str, int],
    **kwargs: Any,
) -> Plan:
    """Return a :class:`Plan` whose sessions are ``queues`` in order, block ``i // block_size``.

    ``kwargs`` are the other :class:`Plan` fields. Validated like a loaded plan."""
    m = len(queues[0]) if queues else 0
    sessions = tuple(
        Session(i, i // block_size, tuple(int(x) for x in q)) for i, q in enumerate(queues)
    )
    plan = Plan(
        name=name,
        puzzles=tuple(puzzles),
        puzzles_per_session=kwargs.pop("puzzles_per_session", m),
        sessions=sessions,
        block_size=block_size,
        seeds=dict(seeds),
        **kwargs,
    )
    return plan_from_dict(plan.to_dict(), f"plan {name!r}")
