"""Whether a results folder is one consistent run of the study it names, and if not, what changed.

The results folder already records where everything came from: the ingest writes
``ingest/manifest.json`` (every file with its sha256 and the ``run_id``, the sha256 of that
list), ``ingest/study.json`` (the study folder, preset and the study's content fingerprint) and
a provenance sidecar per table (the sha256 of every study file it read); every later stage
writes a sidecar (``<name>.provenance.json``, or a ``provenance`` key in a JSON record) with the
sha256 of every results file it read. :func:`check_results` reads those records back:

* the ingest folder is one run's complete output (:func:`nonolab.study.ingest.check_ingest_folder`);
* the study's files are the ones that run read (the study fingerprint, and per file: which log
  or puzzle file was added, removed or changed since);
* every stage's inputs are the files now in the results folder: a table computed from an
  ``attempts.csv`` that a later run rewrote comes from an earlier run, and is named;
* the last ``nonolab run`` did not fail (``run-status.json``, written by :func:`mark_run_failed`).

The report shows the problems in a banner at the top of the page and ``nonolab report`` prints
them; :func:`mark_run_failed` also marks an existing ``report.html`` as out of date, so a failed
run never leaves a page that reads as current.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from nonolab.core.hashing import file_sha256
from nonolab.core.tables import write_json, write_text

#: the record of a failed ``nonolab run`` in the results folder (removed by a complete run)
RUN_STATUS = "run-status.json"
#: where :func:`mark_run_failed` puts the banner in an existing page (the report writes it)
BANNER_SLOT = "<!--nonolab:banner-->"
#: most problems named one by one (the rest are counted)
MAX_LISTED = 12


@dataclass
class Consistency:
    """What :func:`check_results` found.

    ``problems``: sentences, each naming what is out of step (empty: the folder is one run of
    the study's current files); ``ingest_run``: the ingest's ``run_id`` (None without a complete
    ingest); ``fingerprint``: the study fingerprint the ingest recorded; ``checked``: how many
    stage outputs had their inputs checked; ``stale``: the outputs (paths relative to the
    results folder) computed from files a later run replaced."""

    problems: list[str] = field(default_factory=list)
    ingest_run: str | None = None
    fingerprint: str | None = None
    checked: int = 0
    stale: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """Whether the folder is one consistent run of the study's current files."""
        return not self.problems

    def summary(self) -> str:
        """Return one line naming the ingest run and fingerprint, and whether all is in step."""
        run = (self.ingest_run or "none")[:12]
        fp = (self.fingerprint or "unknown")[:12]
        n = len(self.problems)
        state = "consistent" if self.ok else f"OUT OF DATE ({n} problem{'s' if n > 1 else ''})"
        return (
            f"results of ingest run {run} (study fingerprint {fp}); {self.checked} stage "
            f"outputs checked: {state}"
        )


def _load(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def _study_changes(root: Path, record: dict[str, Any]) -> list[str]:
    """Return sentences naming how the study's files differ from the ones the ingest read."""
    from nonolab.study.identity import study_fingerprint
    from nonolab.study.presets import StudyError, load_preset

    study_dir = record.get("study_dir")
    preset_file = record.get("preset_file")
    if not study_dir or not Path(study_dir).is_dir():
        return [
            f"The study folder {study_dir} these results were computed from is not there any "
            "more: they cannot be checked against the study's files."
        ]
    if not preset_file or not Path(preset_file).is_file():
        return []
    try:
        now = study_fingerprint(study_dir, load_preset(preset_file))
    except (StudyError, OSError, ValueError) as exc:
        return [f"The study's files could not be checked: {exc}"]
    if now == record.get("fingerprint"):
        return []
    read: dict[str, str] = {}
    for side in sorted((root / "ingest").glob("*.provenance.json")):
        read.update((_load(side) or {}).get("inputs") or {})
    changed, removed = [], []
    for path, sha in sorted(read.items()):
        p = Path(path)
        if not p.is_file():
            removed.append(p)
        elif file_sha256(p) != sha:
            changed.append(p)
    added = []
    try:
        from nonolab.study.presets import log_sources

        for s in log_sources(study_dir, load_preset(preset_file)):
            if s.path.as_posix() not in read and s.read:
                added.append(s.path)
    except (StudyError, OSError, ValueError):
        pass

    def names(paths: list[Path]) -> str:
        rel = [os.path.relpath(p, study_dir) for p in paths]
        more = f" and {len(rel) - MAX_LISTED} more" if len(rel) > MAX_LISTED else ""
        return ", ".join(rel[:MAX_LISTED]) + more

    what = []
    if added:
        what.append(f"{len(added)} file(s) added ({names(added)})")
    if removed:
        what.append(f"{len(removed)} file(s) removed ({names(removed)})")
    if changed:
        what.append(f"{len(changed)} file(s) changed ({names(changed)})")
    detail = "; ".join(what) if what else "a file the analysis reads changed"
    return [
        f"The study's files changed since these results were computed: {detail}. Run "
        "`nonolab run` again for results of the study as it is now."
    ]


def _stage_records(root: Path) -> list[tuple[str, dict[str, str]]]:
    """Return ``(output, {input: sha256})`` for every stage output below ``root`` that records
    its inputs (sidecars and JSON records with a ``provenance`` key), ingest excepted (its
    manifest covers it). Outputs are paths relative to ``root``."""
    out = []
    for path in sorted(root.rglob("*.json")):
        rel = path.relative_to(root).as_posix()
        if rel.startswith(("ingest/", "logs/", "bench/")) or path.name == RUN_STATUS:
            continue
        rec = _load(path)
        if not isinstance(rec, dict):
            continue
        if path.name.endswith(".provenance.json"):
            name = rel.removesuffix(".provenance.json")
            siblings = sorted(
                p.name for p in path.parent.glob(path.name[: -len(".provenance.json")] + ".*")
            )
            shown = [s for s in siblings if not s.endswith(".provenance.json")]
            output = (path.parent / shown[0]).relative_to(root).as_posix() if shown else name
        elif isinstance(rec.get("provenance"), dict):
            output, rec = rel, rec["provenance"]
        else:
            continue
        inputs = rec.get("inputs")
        if isinstance(inputs, dict):
            out.append((output, {str(k): str(v) for k, v in inputs.items()}))
    return out


def _stale_stages(root: Path) -> tuple[int, list[str], list[str]]:
    """Return (outputs checked, stale outputs, sentences) for the stages whose recorded inputs
    in the results folder are not the files there now."""
    base = root.parent
    checked, stale, by_input = 0, [], {}
    for output, inputs in _stage_records(root):
        checked += 1
        for name, sha in inputs.items():
            if not name.startswith("results/"):
                continue
            p = base / name
            if not p.is_file() or file_sha256(p) != sha:
                stale.append(output)
                by_input.setdefault(name.removeprefix("results/"), []).append(output)
                break
    sentences = []
    for name, outputs in sorted(by_input.items()):
        gone = not (root / name).is_file()
        more = f" and {len(outputs) - MAX_LISTED} more" if len(outputs) > MAX_LISTED else ""
        sentences.append(
            f"{len(outputs)} output(s) were computed from "
            + (f"{name}, which is not there now" if gone else f"an earlier {name}")
            + f" (a different run): {', '.join(outputs[:MAX_LISTED])}{more}."
        )
    return checked, stale, sentences


def check_results(results_root: str | os.PathLike) -> Consistency:
    """Return what is out of step in the results folder ``results_root`` (the folder holding
    ``ingest/``, ``tables/``, ...): see the module docstring. A folder without an ingest gives
    no problems (there is nothing to be out of step)."""
    from nonolab.study.ingest import check_ingest_folder
    from nonolab.study.presets import StudyError

    root = Path(results_root)
    found = Consistency()
    status = _load(root / RUN_STATUS)
    if isinstance(status, dict) and status.get("status") == "failed":
        found.problems.append(
            "The last `nonolab run` on this folder failed"
            + (f" ({status['reason']})" if status.get("reason") else "")
            + ": these results are the last complete run's at best, and the stages it reached "
            "may be newer than the rest. Fix the cause and run again."
        )
    if not (root / "ingest").is_dir():
        return found
    try:
        found.ingest_run = check_ingest_folder(root / "ingest")
    except StudyError as exc:
        found.problems.append(str(exc))
    record = _load(root / "ingest" / "study.json")
    if isinstance(record, dict):
        found.fingerprint = record.get("fingerprint")
        found.problems += _study_changes(root, record)
    found.checked, found.stale, sentences = _stale_stages(root)
    found.problems += sentences
    return found


def banner_html(found: Consistency) -> str:
    """Return the out-of-date banner for the top of the page (empty when all is in step);
    every sentence HTML-escaped."""
    import html

    if found.ok:
        return ""
    items = "".join(f"<li>{html.escape(p, quote=True)}</li>" for p in found.problems)
    return (
        '<div class="stale-banner" id="out-of-date" role="alert"><strong>These results are '
        "out of date or mixed: read them as such.</strong><ul>"
        f"{items}</ul></div>"
    )


def mark_run_failed(results_root: str | os.PathLike, reason: str = "") -> None:
    """Record in ``results_root`` that a ``nonolab run`` failed (``run-status.json``) and put
    the out-of-date banner at the top of an existing ``report.html`` (rewritten atomically), so
    the last complete report reads as out of date until a run completes. ``reason``: what
    failed, in a few words (the failed job)."""
    root = Path(results_root)
    if not root.is_dir():
        return
    reason = " ".join(str(reason).split())[:300]
    write_json(
        {
            "status": "failed",
            "reason": reason,
            "failed_at": datetime.now(UTC).isoformat(timespec="seconds"),
        },
        root / RUN_STATUS,
    )
    page_path = root / "report.html"
    if not page_path.is_file():
        return
    page = page_path.read_text(encoding="utf-8")
    page = re.sub(
        r'<div class="stale-banner" id="out-of-date".*?</div>', "", page, count=1, flags=re.S
    )
    banner = banner_html(check_results(root))
    if BANNER_SLOT in page:
        page = page.replace(BANNER_SLOT, BANNER_SLOT + banner, 1)
    else:
        page = page.replace("<body>", "<body>" + banner, 1)
    write_text(page_path, page)


def mark_run_complete(results_root: str | os.PathLike) -> None:
    """Remove the failed-run record of ``results_root`` (a run completed)."""
    (Path(results_root) / RUN_STATUS).unlink(missing_ok=True)


__all__ = [
    "BANNER_SLOT",
    "RUN_STATUS",
    "Consistency",
    "banner_html",
    "check_results",
    "mark_run_complete",
    "mark_run_failed",
]
