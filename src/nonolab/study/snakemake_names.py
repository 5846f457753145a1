"""Paths Snakemake cannot take as file names: the one rule ``nonolab run`` and ``validate`` share.

The workflow hands Snakemake the study folder, the preset file, the files the preset names and
every log file as rule inputs. Snakemake reads two patterns in such a path as its own syntax:
``<name>`` with a lower-case name is a *path variable* (an undefined one stops the workflow with
``UndefinedPathvarException``), and ``{name}`` (also ``{ name }``, ``{name,constraint}``) is a
*wildcard* (a ``WildcardError``: the ingest rule's outputs do not define it). Both stop the run
with Snakemake's traceback, although ``nonolab ingest`` and ``validate`` read such a file as any
other. :data:`SNAKEMAKE_PATHVAR` and :data:`SNAKEMAKE_WILDCARD` are Snakemake's own patterns
(``snakemake.pathvars.PATHVAR_REGEX`` and ``snakemake.io.WILDCARD_REGEX``, Snakemake 9; the
tests compare them on generated names); :func:`snakemake_name_problems` lists the paths that
match, and ``nonolab run`` refuses the study before Snakemake starts while ``nonolab validate``
lists each as a problem naming the file.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

#: a path variable: ``<name>`` with a lower-case name (``<results>``, ``<logs>``, ...)
SNAKEMAKE_PATHVAR = re.compile(r"<[a-z][a-z0-9_]*>")
#: a wildcard: ``{name}`` with an optional constraint (Snakemake's pattern, verbatim)
SNAKEMAKE_WILDCARD = re.compile(
    r"""
    \{
        (?=(   # This lookahead assertion emulates an 'atomic group'
               # which is required for performance
            \s*(?P<name>[.\w]+)   # wildcard name
            (\s*,\s*
                (?P<constraint>                 # an optional constraint
                    ([^{}]+ | \{\d+(,\d+)?\})*  # allow curly braces to nest one level
                )                               # ...  as in '{w,a{3,5}}'
            )?\s*
        ))\1
    \}
    """,
    re.VERBOSE,
)


def snakemake_part(path: str) -> tuple[str, str] | None:
    """Return ``(part, what)`` for the first part of ``path`` that Snakemake reads as its own
    syntax (``("<abc>", "a path variable ...")`` or ``("{x}", "a wildcard ...")``), or None
    when Snakemake takes ``path`` as it is."""
    found = []
    m = SNAKEMAKE_PATHVAR.search(path)
    if m is not None:
        found.append((m.start(), m.group(), "a path variable (`<name>` with a lower-case name)"))
    m = SNAKEMAKE_WILDCARD.search(path)
    if m is not None:
        found.append((m.start(), m.group(), "a wildcard (`{name}`)"))
    if not found:
        return None
    _, part, what = min(found)
    return part, what


def snakemake_name_message(what: str, path: str) -> str | None:
    """Return why Snakemake cannot take ``path`` (``what`` names it: "the log file"), naming the
    part to rename, or None when it can."""
    hit = snakemake_part(path)
    if hit is None:
        return None
    part, kind = hit
    inner = part[1:-1].strip()
    return (
        f"{what} {path} contains {part}, which Snakemake reads as {kind} and cannot take in a "
        "file path, so `nonolab run` refuses the study. Rename it so that no `<` is followed "
        "by lower-case letters and a `>` and no `{` by a name and a `}` (for example "
        f"{inner!r} instead of {part!r})."
    )


def snakemake_name_problems(study: Path, preset: Any, sources: list[Any]) -> list[dict[str, Any]]:
    """Return one record per path the workflow hands to Snakemake that Snakemake cannot take
    (:func:`snakemake_part`): the study folder, the preset file, a file the preset names
    (puzzle file, schedule, coded responses, published tables) or a log file (``sources``,
    :func:`nonolab.study.presets.log_sources`). Each record: ``what``, ``path``, ``file`` (the
    path relative to the study where it is inside it), ``id`` and ``reason``
    (:func:`snakemake_name_message`)."""
    from nonolab.study.presets import preset_paths

    paths: list[tuple[str, str, str, str]] = [("the study folder", str(study), str(study), ".")]
    paths.append(
        (f"the preset file of {preset.name!r}", str(preset.path), str(preset.path), preset.name)
    )
    for key, value in preset_paths(preset.data):
        if not key.startswith(("log_globs", "participants.")):  # globs: their files follow
            paths.append((f"the file the preset names as `{key}`", str(study / value), value, key))
    for s in sources:
        paths.append(("the log file", str(s.path), s.rel, Path(s.rel).stem))
    out = []
    inside_bad_folder = snakemake_part(str(study)) is not None
    for what, path, file, ident in paths:
        if inside_bad_folder and out and path.startswith(str(study)):
            continue  # the study folder's own record names the part to rename
        reason = snakemake_name_message(what, path)
        if reason is not None:
            out.append({"what": what, "path": path, "file": file, "id": ident, "reason": reason})
    return out


__all__ = [
    "SNAKEMAKE_PATHVAR",
    "SNAKEMAKE_WILDCARD",
    "snakemake_name_message",
    "snakemake_name_problems",
    "snakemake_part",
]
