"""Texts computed from the study a results folder holds.

Every caption under ``workflow/report/<stem>.rst`` is a Jinja template that Snakemake's report
renders with ``snakemake.config``. The workflow puts the study's facts there
(``config["results_study"]``, :func:`study_facts`), so a caption names the study's numbers of
puzzles, participants and puzzles per session, mentions drags only when the logs have drag
events and the published analysis only when the preset has one. :func:`render_caption` renders
a caption outside Snakemake with the same context (the HTML report and the tests use it).
"""

from __future__ import annotations

import copy
import json
import os
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import jinja2
import pandas as pd
import yaml

from nonolab.core.paths import workflow_root
from nonolab.study.identity import STUDY_RECORD

#: the facts of a results folder that holds no study yet (no ingest): every count unknown
EMPTY_FACTS: dict[str, Any] = {
    "name": None,
    "path": None,
    "preset": None,
    "puzzles": None,
    "participants": None,
    "attempts": None,
    "puzzles_per_session": [],
    "per_session_text": "some",
    "puzzle_sizes": [],
    "drags": False,
    "published": False,
    "pauses": None,
}


def _study_record(results_dir: Path) -> dict[str, Any]:
    """Return the results folder's study record (``ingest/study.json``, or ``tables/study.json``
    when a report copy has one), or an empty dict."""
    for sub in ("ingest", "tables"):
        path = results_dir / sub / STUDY_RECORD
        if path.is_file():
            return json.loads(path.read_text(encoding="utf-8"))
    return {}


def _read(results_dir: Path, table: str, columns: list[str]) -> pd.DataFrame | None:
    """Return ``columns`` of ingest table ``table`` (Parquet, else CSV), or None if absent."""
    pq = results_dir / "ingest" / f"{table}.parquet"
    if pq.is_file():
        return pd.read_parquet(pq, columns=columns)
    csv = results_dir / "ingest" / f"{table}.csv"
    if csv.is_file():
        return pd.read_csv(csv, usecols=columns)
    return None


def _preset_has_published(record: dict[str, Any]) -> bool:
    """Whether the study's preset names a published analysis (its ``published`` section).

    Reads the record's ``published`` flag when ingest wrote one; else loads the preset by name
    (``config/studies/<name>.yaml``); False when neither is known.
    """
    if "published" in record:
        return bool(record["published"])
    name = record.get("preset")
    if not name:
        return False
    from nonolab.study.presets import PRESET_DIR, load_preset

    path = PRESET_DIR / f"{name}.yaml"
    if not path.is_file():
        return False
    return bool(load_preset(path).data.get("published"))


def study_facts(results_dir: str | os.PathLike) -> dict[str, Any]:
    """Return the facts of the study whose results are in ``results_dir`` (the folder that
    holds ``ingest/``, ``tables/``, ...).

    Keys: ``name`` (the study folder's name), ``path`` (its absolute path), ``preset`` (name),
    ``puzzles``, ``participants``, ``attempts`` (counts of the analysed study),
    ``puzzles_per_session`` (sorted distinct numbers of puzzles the participants were served;
    ``per_session_text`` says it in words, :func:`sessions_text`), ``puzzle_sizes`` (sorted
    distinct ``"HxW"`` grid sizes), ``drags`` (whether any drag event was logged),
    ``published`` (whether the preset has a published analysis) and ``pauses`` (the pause
    threshold's source and any collapsed mixture component, or None before the pauses stage). A folder without ingest results
    gives :data:`EMPTY_FACTS` (counts None). Counts come from the ingest tables when present,
    else from the study record.
    """
    results_dir = Path(results_dir)
    record = _study_record(results_dir)
    facts = copy.deepcopy(EMPTY_FACTS)
    if not record and not (results_dir / "ingest").is_dir():
        return facts
    path = record.get("study_dir")
    facts.update(
        name=Path(path).name if path else None,
        path=path,
        preset=record.get("preset"),
        puzzles=record.get("puzzles"),
        participants=record.get("participants"),
        attempts=record.get("attempts"),
        published=_preset_has_published(record),
    )
    for key in ("puzzles_per_session", "puzzle_sizes", "drags"):
        if key in record:
            facts[key] = record[key]
    att = _read(results_dir, "attempts", ["participant_id", "puzzle_hash"])
    if att is not None:
        facts["attempts"] = int(len(att))
        facts["participants"] = int(att["participant_id"].nunique())
        facts["puzzles"] = int(att["puzzle_hash"].nunique())
        per = att.groupby("participant_id").size()
        facts["puzzles_per_session"] = sorted(int(k) for k in per.unique())
    facts["per_session_text"] = sessions_text(facts["puzzles_per_session"])
    puz = _read(results_dir, "puzzles", ["puzzle_hash", "height", "width"])
    if puz is not None:
        if att is not None:
            puz = puz[puz["puzzle_hash"].isin(set(att["puzzle_hash"]))]
        sizes = {(int(h), int(w)) for h, w in zip(puz["height"], puz["width"], strict=True)}
        facts["puzzle_sizes"] = [f"{h}x{w}" for h, w in sorted(sizes)]
    ev = _read(results_dir, "events", ["type"])
    if ev is not None:
        facts["drags"] = bool((ev["type"] == "drag").any())
    facts["pauses"] = _pause_facts(results_dir)
    return facts


def _pause_facts(results_dir: Path) -> dict[str, Any] | None:
    """Return what the captions say about the pause threshold (``pauses/threshold.json``):
    ``threshold_used_s``, ``threshold_source``, ``spikes_s`` (the gaps a mixture component
    collapsed onto) and ``fallback`` (whether the threshold used is the fallback's); None
    before the pauses stage ran."""
    path = results_dir / "pauses" / "threshold.json"
    if not path.is_file():
        return None
    rec = json.loads(path.read_text(encoding="utf-8"))
    return {
        "threshold_used_s": rec.get("threshold_used_s"),
        "threshold_source": rec.get("threshold_source"),
        "spikes_s": [d["spike_s"] for d in rec.get("degenerate_components") or []],
        "fallback": str(rec.get("threshold_source", "")).startswith("fallback"),
    }


def sessions_text(per_session: list[int]) -> str:
    """Return how many puzzles each participant was served, in words: ``"3"``, ``"2 to 4"``,
    ``"2 or 4"``; ``"some"`` when unknown."""
    ks = sorted(set(per_session))
    if not ks:
        return "some"
    if len(ks) == 1:
        return str(ks[0])
    if ks == list(range(ks[0], ks[-1] + 1)):
        return f"{ks[0]} to {ks[-1]}"
    return ", ".join(str(k) for k in ks[:-1]) + f" or {ks[-1]}"


def _default_config() -> dict[str, Any]:
    return yaml.safe_load((workflow_root() / "config" / "config.yaml").read_text(encoding="utf-8"))


def caption_config(results_dir: str | os.PathLike, config: dict | None = None) -> dict[str, Any]:
    """Return a copy of ``config`` (default: the shipped ``config/config.yaml``) with the study's
    facts as ``results_study`` (:func:`study_facts`), ``published_alignment`` set from them
    unless the config sets it, a null ``simulate.power.per_session`` resolved to the study's
    puzzles per session and a null ``simulate.recovery.pipeline_puzzles`` to its puzzles (as
    the workflow does): the ``snakemake.config`` the captions are rendered with."""
    cfg = copy.deepcopy(config) if config is not None else _default_config()
    facts = study_facts(results_dir)
    cfg["results_study"] = {**(cfg.get("results_study") or {}), **facts}
    cfg.setdefault("published_alignment", facts["published"])
    # the power analysis's puzzles per participant: as the workflow resolves it (the study's)
    power = cfg.setdefault("simulate", {}).setdefault("power", {})
    if power.get("per_session") is None and facts["puzzles_per_session"]:
        power["per_session"] = max(2, max(facts["puzzles_per_session"]))
    # the recovery's pipeline studies: the study's number of puzzles (as the workflow does)
    recovery = cfg["simulate"].setdefault("recovery", {})
    if recovery.get("pipeline_puzzles") is None and facts["puzzles"]:
        recovery["pipeline_puzzles"] = max(3, int(facts["puzzles"]))
    return cfg


def caption_environment() -> jinja2.Environment:
    """Return the Jinja environment Snakemake's report renders captions with (no extra
    filters: a caption must render in Snakemake's report too)."""
    return jinja2.Environment(trim_blocks=True, lstrip_blocks=True)


def render_caption(stem: str, results_dir: str | os.PathLike, config: dict | None = None) -> str:
    """Return the reStructuredText of caption ``workflow/report/<stem>.rst`` rendered for the
    study in ``results_dir``: the same context as Snakemake's report (``snakemake`` with
    ``config`` = :func:`caption_config`, empty ``input``/``output``/``params``/``wildcards``;
    ``categories`` and ``files`` empty) plus ``study`` (:func:`study_facts`).

    Raises FileNotFoundError for an unknown stem.
    """
    path = workflow_root() / "workflow" / "report" / f"{stem}.rst"
    if not path.is_file():
        raise FileNotFoundError(f"no caption template {path}")
    cfg = caption_config(results_dir, config)
    snake = SimpleNamespace(
        config=cfg, input={}, output={}, params={}, wildcards={}, log=[], rule=stem
    )
    return (
        caption_environment()
        .from_string(path.read_text(encoding="utf-8"))
        .render(snakemake=snake, categories={}, files={}, study=cfg["results_study"])
    )


__all__ = [
    "EMPTY_FACTS",
    "caption_config",
    "caption_environment",
    "render_caption",
    "sessions_text",
    "study_facts",
]
