"""Study presets: where a study's files are, and which log file is which participant.

A preset is a YAML file under ``config/studies/`` validated against
``workflow/schemas/study_preset.schema.yaml`` (a misspelt key is an error). It names the puzzle
file, the log globs, the coded-themes files, the number of puzzles per session, where published
outputs are, a fingerprint (the canonical clue hash of each puzzle id in the puzzle file) and the
participant-file mapping as a table:
each row maps a log file (path relative to the study folder) to a published participant id, or
excludes it with a reason. Files matched by the log globs but not listed get the participant id
of their file stem (``default_participant_id: stem``), unless an ``exclude_globs`` row matches
them.

A preset may ``extends`` another (a name under ``config/studies/`` or a path relative to the
preset file): its keys are merged into the base preset's, mappings key by key, and a key set to
``null`` removes the base's entry (e.g. ``themes: null`` for a study without coded themes); the
merged preset is validated. So a study laid out like the default one but with another puzzle
file needs only ``extends: default`` and ``puzzle_file``.

``preset: auto`` picks the preset whose fingerprint matches the study's puzzle file, else
``default``. The fingerprint compares content, not bytes: ``puzzle_hashes`` maps each puzzle id
to :func:`nonolab.sat.puzzles.puzzle_hash` of its clues, so a re-saved file (CRLF line ends, other
spacing or key order) still matches. A preset may instead give ``puzzle_file_sha256`` (the file's
bytes).
"""

from __future__ import annotations

import fnmatch
import os
import re
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath, PureWindowsPath
from typing import Any

import yaml

from nonolab.core.hashing import file_sha256
from nonolab.core.paths import workflow_root
from nonolab.core.strict import DuplicateKeyError, normalise_id, yaml_load
from nonolab.sat.puzzles import PuzzleError, load_study_puzzles

#: the checkout root, or the workflow copy installed with the package (nonolab.core.paths)
REPO = workflow_root()
PRESET_DIR = REPO / "config" / "studies"
SCHEMA_DIR = REPO / "workflow" / "schemas"


class StudyError(ValueError):
    """A study folder or preset is unusable (missing files, bad preset, ambiguous mapping)."""


@dataclass(frozen=True)
class LogSource:
    """One log file of a study and what the preset says about it.

    ``rel`` is the path relative to the study folder (POSIX). ``participant_id`` is the
    published id, or None when the file is excluded or not read (``reason`` then says why).
    """

    path: Path
    rel: str
    participant_id: str | None
    reason: str | None = None
    #: False for a file that is listed but not read (``reason`` says why: a dangling link, a
    #: log-like file the globs do not match, a name that is not UTF-8)
    read: bool = True


@dataclass(frozen=True)
class Preset:
    """A validated study preset (see the module docstring); ``data`` is the raw mapping."""

    name: str
    path: Path
    data: dict[str, Any] = field(compare=False)

    @property
    def puzzle_file(self) -> str:
        """Puzzle file, relative to the study folder."""
        return self.data["puzzle_file"]

    @property
    def puzzles_per_session(self) -> int:
        """The largest number of puzzles a session serves (3 in the public study; see
        :attr:`session_sizes` for every number allowed)."""
        return max(self.session_sizes)

    @property
    def session_sizes(self) -> frozenset[int]:
        """Every number of puzzles a session may serve: ``puzzles_per_session`` is one
        integer, a list of them (``[2, 3, 4]``) or a range ``{min: 2, max: 4}`` (inclusive)."""
        return session_sizes(self.data["puzzles_per_session"])

    @property
    def max_gap_s(self) -> float:
        """The largest gap (s) between two consecutive interactions of one attempt; a longer
        one excludes the attempt (preset key ``max_gap_s``, default 3600)."""
        return float(self.data.get("max_gap_s", 3600.0))

    def get(self, key: str, default: Any = None) -> Any:
        """Return the preset value ``key`` (or ``default``)."""
        return self.data.get(key, default)


def session_sizes(value: int | list[int] | dict[str, int]) -> frozenset[int]:
    """Return the session sizes a preset's ``puzzles_per_session`` allows: an integer, a list
    of integers or ``{min, max}`` (inclusive). Raises :class:`StudyError` for an empty set."""
    if isinstance(value, dict):
        out = frozenset(range(int(value["min"]), int(value["max"]) + 1))
    elif isinstance(value, list):
        out = frozenset(int(v) for v in value)
    else:
        out = frozenset([int(value)])
    if not out:
        raise StudyError(f"puzzles_per_session {value!r} allows no session size")
    return out


def _schema(name: str) -> dict[str, Any]:
    return yaml.safe_load((SCHEMA_DIR / name).read_text(encoding="utf-8"))


def _merge(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    """Return ``base`` updated by ``over``: mappings are merged key by key, a ``None`` value
    removes the key, any other value replaces it."""
    out = dict(base)
    for key, val in over.items():
        if val is None:
            out.pop(key, None)
        elif isinstance(val, dict) and isinstance(out.get(key), dict):
            out[key] = _merge(out[key], val)
        else:
            out[key] = val
    return out


def _extended(path: Path, data: Any, seen: tuple[Path, ...]) -> Any:
    """Return the preset mapping of ``path`` merged onto its ``extends`` base (recursively);
    ``data`` unchanged when it extends nothing."""
    if not isinstance(data, dict) or "extends" not in data:
        return data
    base_ref = data["extends"]
    if not isinstance(base_ref, str):
        raise StudyError(f"{path}: invalid preset at extends: {base_ref!r} is not a string")
    presets = available_presets()
    base_path = presets.get(base_ref) or (path.parent / base_ref)
    if base_path.resolve() in seen:
        raise StudyError(f"{path}: preset extends {base_ref!r}, which extends it (a cycle)")
    base = _read_preset_yaml(base_path)
    base = _extended(base_path, base, (*seen, base_path.resolve()))
    if not isinstance(base, dict):
        raise StudyError(f"{path}: the preset it extends ({base_path}) is not a mapping")
    over = {k: v for k, v in data.items() if k != "extends"}
    return _merge(base, over)


def _read_preset_yaml(path: Path) -> Any:
    try:
        return yaml_load(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise StudyError(f"preset file {path} does not exist") from None
    except DuplicateKeyError as exc:
        raise StudyError(f"{path}: {exc}; which value is meant is unknown") from None
    except yaml.YAMLError as exc:
        raise StudyError(f"{path}: not valid YAML ({exc})") from None


def load_preset(path: str | Path) -> Preset:
    """Return the preset read from ``path`` (merged onto the preset it ``extends``, if any),
    validated against its schema.

    Raises :class:`StudyError` naming the file and the offending key.
    """
    import jsonschema  # here: every job imports this module; only loading a preset validates

    path = Path(path)
    data = _extended(path, _read_preset_yaml(path), (path.resolve(),))
    try:
        jsonschema.validate(data, _schema("study_preset.schema.yaml"))
    except jsonschema.ValidationError as exc:
        where = "/".join(map(str, exc.absolute_path)) or "(top level)"
        raise StudyError(f"{path}: invalid preset at {where}: {exc.message}") from None
    files = [row["file"] for row in data.get("participants", {}).get("files", [])]
    dup = sorted({f for f in files if files.count(f) > 1})
    if dup:
        raise StudyError(f"{path}: participant mapping lists {dup} more than once")
    for key, value in preset_paths(data):
        check_study_relative(value, key, f"{path}")
    preset = Preset(name=data["name"], path=path, data=data)
    try:
        preset.session_sizes  # noqa: B018 (checks min <= max)
    except StudyError as exc:
        raise StudyError(f"{path}: invalid preset at puzzles_per_session: {exc}") from None
    return preset


def available_presets() -> dict[str, Path]:
    """Return ``{name: path}`` of the presets under ``config/studies/``."""
    return {p.stem: p for p in sorted(PRESET_DIR.glob("*.yaml"))}


def resolve_preset(study_dir: str | Path, preset: str = "auto") -> Preset:
    """Return the preset for ``study_dir``.

    ``preset`` is ``auto`` (the preset whose fingerprint matches the study's puzzle file, else
    ``default``), a preset name under ``config/studies/`` or a path to a preset file.
    """
    return choose_preset(study_dir, preset)[0]


def choose_preset(study_dir: str | Path, preset: str = "auto") -> tuple[Preset, str]:
    """Return the preset for ``study_dir`` (as :func:`resolve_preset`) and why it was chosen,
    in words: named, or for ``auto`` which fingerprint matched, or that none matched and the
    default was assumed (naming a preset file in the study folder that ``auto`` does not
    read)."""
    study_dir = Path(study_dir)
    presets = available_presets()
    if preset != "auto":
        if preset in presets:
            return load_preset(presets[preset]), f"named: the shipped preset {preset!r}"
        if Path(preset).exists():
            return load_preset(preset), f"named: the preset file {preset}"
        raise StudyError(f"preset {preset!r} is neither a name in {sorted(presets)} nor a file")
    for path in presets.values():
        p = load_preset(path)
        if fingerprint_matches(p, study_dir / p.puzzle_file):
            return p, (
                f"assumed (no --preset): its fingerprint matches the study's puzzle file "
                f"{p.puzzle_file}"
            )
    if "default" not in presets:
        raise StudyError(f"no preset matches {study_dir} and there is no default preset")
    local = sorted(f.name for f in study_dir.glob("*.y*ml") if f.is_file())
    hint = (
        f"; the study folder has {', '.join(local)}, which is read only when named "
        f"(--preset {study_dir / local[0]})"
        if local
        else "; name one with --preset NAME or --preset FILE"
    )
    return load_preset(presets["default"]), (
        "assumed (no --preset): no shipped preset's fingerprint matches the study's puzzle "
        f"file, so the default preset{hint}"
    )


def puzzle_file_hashes(path: str | Path) -> dict[str, str] | None:
    """Return ``{puzzle id: canonical clue hash}`` of a study puzzle file, or None when the
    file is missing or cannot be read as puzzles (the ingest then reports why)."""
    try:
        return {str(p.label): p.hash for p in load_study_puzzles(path)}
    except (OSError, PuzzleError, ValueError, RecursionError):
        return None


def fingerprint_matches(preset: Preset, puzzle_path: Path) -> bool:
    """Return True when the preset's fingerprint matches the puzzle file at ``puzzle_path``:
    the same puzzle ids with the same canonical clue hashes (``puzzle_hashes``), or, for a
    preset that gives only ``puzzle_file_sha256``, the same bytes. False without a
    fingerprint or a file."""
    fp = preset.get("fingerprint") or {}
    study_dir = puzzle_path.parents[len(PurePosixPath(preset.puzzle_file).parts) - 1]
    if not puzzle_path.is_file() or not (
        preset.get(OUTSIDE_LINKS, False) or _is_inside(puzzle_path, study_dir)
    ):
        return False
    if "puzzle_hashes" in fp:
        want = {str(k): v for k, v in fp["puzzle_hashes"].items()}
        return puzzle_file_hashes(puzzle_path) == want
    want_sha = fp.get("puzzle_file_sha256")
    return bool(want_sha) and file_sha256(puzzle_path) == want_sha


#: preset keys (dotted) whose values are paths or globs relative to the study folder
PATH_KEYS = (
    "puzzle_file",
    "assignment_schedule",
    "log_globs",
    "themes.coded_responses",
    "themes.coded_difficulty_themes",
    "themes.coded_strategies",
    "themes.codebook",
    "published",
    "participants.files.file",
    "participants.exclude_globs.glob",
)
#: the preset option that lets a symbolic link inside the study point outside it
OUTSIDE_LINKS = "follow_links_outside_study"


def preset_paths(data: Any) -> list[tuple[str, str]]:
    """Return ``(key, value)`` of every path and glob a preset mapping names (:data:`PATH_KEYS`;
    list items keyed ``log_globs[0]``, every string under ``published``)."""
    out: list[tuple[str, str]] = []
    if not isinstance(data, dict):
        return out

    def walk(node: Any, parts: list[str], key: str) -> None:
        if not parts:
            if isinstance(node, str):
                out.append((key, node))
            elif isinstance(node, list):
                for i, item in enumerate(node):
                    walk(item, [], f"{key}[{i}]")
            elif isinstance(node, dict):
                for k, v in node.items():
                    walk(v, [], f"{key}.{k}")
            return
        if isinstance(node, list):
            for i, item in enumerate(node):
                walk(item, parts, f"{key}[{i}]")
        elif isinstance(node, dict) and parts[0] in node:
            walk(node[parts[0]], parts[1:], f"{key}.{parts[0]}" if key else parts[0])

    for dotted in PATH_KEYS:
        walk(data, dotted.split("."), "")
    return out


def check_study_relative(value: str, key: str, where: str) -> None:
    """Raise :class:`StudyError` naming ``where``, ``key`` and ``value`` when the path or glob
    ``value`` could name something outside the study folder: an absolute path (``/x``, ``~``,
    a drive ``C:``) or a ``..`` part. Every path a preset names is relative to the study."""
    pure = PurePosixPath(value.replace("\\", "/"))
    if value.startswith(("/", "\\", "~")) or PureWindowsPath(value).drive or pure.is_absolute():
        raise StudyError(
            f"{where}: {key}: {value!r} is an absolute path; every path in a preset is relative "
            "to the study folder (nothing outside it is read)"
        )
    if ".." in pure.parts:
        raise StudyError(
            f"{where}: {key}: {value!r} leads out of the study folder ('..'); every path in a "
            "preset is relative to the study folder (nothing outside it is read)"
        )


def inside_study(
    study_dir: str | Path, rel: str, key: str, preset: Preset | dict[str, Any] | None = None
) -> Path:
    """Return ``study_dir / rel`` after checking it stays inside the study folder: ``rel`` is
    relative without ``..`` (:func:`check_study_relative`) and, unless the preset sets
    ``follow_links_outside_study: true``, no symbolic link on the way leads outside the study
    folder. Raises :class:`StudyError` naming ``key`` and ``rel``."""
    study_dir = Path(study_dir)
    data = preset.data if isinstance(preset, Preset) else (preset or {})
    check_study_relative(rel, key, f"study {study_dir}")
    path = study_dir / rel
    if not data.get(OUTSIDE_LINKS, False) and not _is_inside(path, study_dir):
        raise StudyError(
            f"study {study_dir}: {key}: {rel!r} is a symbolic link to "
            f"{os.path.realpath(path)}, outside the study folder; set {OUTSIDE_LINKS}: true in "
            "the preset to read it"
        )
    return path


def _is_inside(path: Path, study_dir: Path) -> bool:
    """Return True when ``path`` with every link resolved lies inside ``study_dir`` (itself
    resolved: a study folder that is a link is fine)."""
    real, root = os.path.realpath(path), os.path.realpath(study_dir)
    return real == root or real.startswith(root.rstrip(os.sep) + os.sep)


def study_file(study_dir: str | Path, preset: Preset, key: str) -> Path:
    """Return the absolute path of the preset's file entry ``key`` (dotted for a nested one,
    e.g. ``puzzle_file``, ``themes.coded_responses``), checked to lie inside the study folder
    (:func:`inside_study`)."""
    node: Any = preset.data
    for part in key.split("."):
        if not isinstance(node, dict) or part not in node:
            raise StudyError(f"preset {preset.name} has no {key!r}")
        node = node[part]
    return inside_study(study_dir, str(node), key, preset)


def log_sources(study_dir: str | Path, preset: Preset) -> list[LogSource]:
    """Return every log file matched by the preset's globs, each mapped or excluded, and the
    files that are not read (``read`` False, with the reason; see :func:`_find_logs`: globs
    match case-insensitively, a dangling link, a folder or a log-like file no glob matches is
    listed, not read).

    Sorted by relative path. Raises :class:`StudyError` when the study folder does not exist,
    when a mapping row names a file that is not there, or when two files map to the same
    participant id.
    """
    study_dir = Path(study_dir)
    if not study_dir.is_dir():
        raise StudyError(f"study folder {study_dir} does not exist")
    globs = list(preset.get("log_globs", []))
    for i, g in enumerate(globs):
        check_study_relative(g, f"log_globs[{i}]", f"preset {preset.name}")
    found, unread = _find_logs(study_dir, globs, bool(preset.get(OUTSIDE_LINKS, False)))
    mapping = {row["file"]: row for row in preset.get("participants", {}).get("files", [])}
    missing = sorted(set(mapping) - set(found))
    if missing:
        raise StudyError(
            f"preset {preset.name}: participant mapping names files not found under "
            f"{study_dir}: {missing}"
        )
    excl = preset.get("participants", {}).get("exclude_globs", [])
    out: list[LogSource] = [
        LogSource(path, rel, None, f"not read: {why}", read=False)
        for rel, (path, why) in unread.items()
    ]
    for rel in sorted(found):
        row = mapping.get(rel)
        if row is not None:
            if "exclude" in row:
                out.append(LogSource(found[rel], rel, None, row["exclude"]))
            else:
                out.append(LogSource(found[rel], rel, normalise_id(str(row["participant_id"]))))
            continue
        hit = next((e for e in excl if fnmatch.fnmatch(rel, e["glob"])), None)
        if hit is not None:
            out.append(LogSource(found[rel], rel, None, hit["reason"]))
        else:
            out.append(LogSource(found[rel], rel, normalise_id(found[rel].stem)))
    ids: dict[str, str] = {}
    for s in out:
        if s.participant_id is None:
            continue
        if s.participant_id in ids:
            alike = (
                " (the same name in Unicode normal form C, written with other code points)"
                if ids[s.participant_id] != s.rel
                and Path(ids[s.participant_id]).stem != Path(s.rel).stem
                and normalise_id(Path(ids[s.participant_id]).stem) == normalise_id(Path(s.rel).stem)
                else ""
            )
            raise StudyError(
                f"participant id {s.participant_id!r} is given by two log files: "
                f"{ids[s.participant_id]} and {s.rel}{alike}; exclude one in the preset"
            )
        ids[s.participant_id] = s.rel
    return sorted(out, key=lambda s: s.rel)


#: file name endings of log-like files: such a file under a glob's folder that no glob matches
#: is ledgered as not read (compared case-insensitively)
LOG_SUFFIXES = (".ndjson", ".jsonl", ".json")


def _glob_regex(pattern: str) -> re.Pattern[str]:
    """Return the case-insensitive regex of a path glob relative to the study folder: ``*``
    and ``?`` stay within one folder, ``**/`` spans any number of folders, ``[...]`` as in
    :mod:`fnmatch`."""
    out, i = "", 0
    while i < len(pattern):
        if pattern.startswith("**/", i):
            out, i = out + "(?:.*/)?", i + 3
        elif pattern.startswith("**", i):
            out, i = out + ".*", i + 2
        elif pattern[i] == "*":
            out, i = out + "[^/]*", i + 1
        elif pattern[i] == "?":
            out, i = out + "[^/]", i + 1
        elif pattern[i] == "[" and "]" in pattern[i + 2 :]:
            j = pattern.index("]", i + 2)
            out, i = out + fnmatch.translate(pattern[i : j + 1])[4:-3], j + 1
        else:
            out, i = out + re.escape(pattern[i]), i + 1
    return re.compile(out, re.IGNORECASE | re.DOTALL)


def _glob_root(study_dir: Path, pattern: str) -> Path:
    """Return the folder a glob starts from: its leading parts without wildcards."""
    parts = []
    for part in pattern.split("/")[:-1]:
        if any(ch in part for ch in "*?["):
            break
        parts.append(part)
    return study_dir.joinpath(*parts)


def _find_logs(
    study_dir: Path, globs: list[str], outside_links: bool = False
) -> tuple[dict[str, Path], dict[str, tuple]]:
    """Return ``({rel: path} of the log files to read, {rel: (path, why)} of files not read)``.

    Every file under the folders the globs start from is looked at: a regular file (or a link
    to one) that a glob matches, compared case-insensitively (``X.NDJSON`` matches
    ``*.ndjson``), is read. Not read, with the reason: a dangling link or a matched path that
    is not a regular file, a log-like file (:data:`LOG_SUFFIXES`, e.g. ``.jsonl`` or a log in a
    sub-folder) that no glob matches, any other file in a folder that holds logs read (a log
    renamed ``.txt`` or ``.bak``), a file whose name is not UTF-8, and (unless
    ``outside_links``) a symbolic link to a file or folder outside the study folder.
    """
    regexes = [_glob_regex(g) for g in globs]
    found: dict[str, Path] = {}
    unread: dict[str, tuple[Path, str]] = {}
    others: dict[str, Path] = {}
    roots = sorted({_glob_root(study_dir, g) for g in globs})
    for root in roots:
        if not root.is_dir():
            continue
        seen = {os.path.realpath(root)}
        for folder, dirs, files in os.walk(root, followlinks=True):  # as glob, into linked folders
            real = {d: os.path.realpath(Path(folder) / d) for d in dirs}
            if not outside_links:
                for d in [d for d in dirs if not _is_inside(Path(folder) / d, study_dir)]:
                    rel = (Path(folder) / d).relative_to(study_dir).as_posix()
                    why = (
                        f"a symbolic link to the folder {real[d]}, outside the study folder "
                        f"(set {OUTSIDE_LINKS}: true in the preset to read it)"
                    )
                    unread[rel] = (Path(folder) / d, why)
                    dirs.remove(d)
            dirs[:] = sorted(d for d in dirs if real[d] not in seen)  # a link cycle is not walked
            seen.update(real[d] for d in dirs)
            for name in [*files, *dirs]:
                path = Path(folder) / name
                rel = path.relative_to(study_dir).as_posix()
                if rel in found or rel in unread:
                    continue
                matched = any(r.fullmatch(rel) for r in regexes)
                if name in dirs and not matched:
                    continue  # a folder: its files are looked at in turn
                try:
                    rel.encode("utf-8")
                except UnicodeEncodeError:
                    shown = rel.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
                    if matched or name.lower().endswith(LOG_SUFFIXES):
                        unread[shown] = (path, "the file name is not UTF-8")
                    continue
                if (
                    (matched or name.lower().endswith(LOG_SUFFIXES))
                    and not outside_links
                    and path.exists()
                    and not _is_inside(path, study_dir)
                ):
                    why = (
                        f"a symbolic link to {os.path.realpath(path)}, outside the study folder "
                        f"(set {OUTSIDE_LINKS}: true in the preset to read it)"
                    )
                    unread[rel] = (path, why)
                elif matched and path.is_file():
                    found[rel] = path
                elif matched and path.is_symlink() and not path.exists():
                    unread[rel] = (path, f"dangling symbolic link to {os.readlink(path)}")
                elif matched:
                    unread[rel] = (path, "not a regular file")
                elif name.lower().endswith(LOG_SUFFIXES):
                    unread[rel] = (
                        path,
                        f"a log-like file that no log glob {globs} matches (add a glob to read it)",
                    )
                elif name not in dirs:
                    others[rel] = path
    # any other file next to the logs read (a renamed log: .txt, .bak, no extension), or in
    # the glob folders when no log is found there
    log_folders = {rel.rpartition("/")[0] for rel in found}
    for rel, path in others.items():
        if rel.rpartition("/")[0] in log_folders or not found:
            why = (
                f"a file in a log folder that no log glob {globs} matches (a renamed log? "
                "rename it or add a glob; not a log? move it out of the folder)"
            )
            unread[rel] = (path, why)
    return found, unread
