"""``nonolab run``: run the Snakemake workflow on a study folder.

``nonolab run --study DIR --preset NAME|FILE --results OUT [TARGET...] [-- SNAKEMAKE_ARGS...]``
runs ``python -m snakemake`` (the same interpreter) on the workflow's Snakefile (the
checkout's, or the copy installed with the package: :func:`nonolab.core.paths.workflow_root`),
writing ``results/`` under OUT.

* The study and the preset are checked before Snakemake starts (:func:`check_study`): a study
  whose files are not where the preset says ends with a message naming the missing file, the
  preset key that names it and docs/presets.md, not with Snakemake's MissingInputException.
* The results folder remembers its study (``results/ingest/study.json``: the study folder and
  the preset file, :mod:`nonolab.study.identity`), so a later ``nonolab run --results OUT``
  needs neither ``--study`` nor ``--preset``.
* Snakemake's output goes to ``OUT/results/logs/run.log``; the terminal shows one line per
  finished job (:mod:`nonolab.cli.snakemake_log`), ``--verbose`` the whole log, ``--quiet``
  only errors and the closing summary, which says where the results, the report and the
  exclusion ledger are.
* A run of the whole workflow (no TARGET) ends by building the study report.

Every argument after ``--`` goes to Snakemake as it is (``-n`` for a dry run, ``--profile ...``,
``--config key=value``); with a dry run or another of Snakemake's inspection options
(:data:`SHOW_SNAKEMAKE`) Snakemake's output is shown as it is and nothing else happens.
Snakemake's own ``--report`` is refused (its page does not escape the study's strings; the
study report is ``nonolab report``), and so is a study whose paths contain ``<name>`` or
``{name}``, which Snakemake reads as a path variable or a wildcard (:func:`check_snakemake_paths`).
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

from nonolab.cli import EXTRAS

#: modules the workflow's rules import: every optional dependency of the `pipeline` extra and
#: matplotlib from `plot` (nonolab.cli.EXTRAS), Snakemake first
WORKFLOW_MODULES = tuple(
    sorted(
        (m for m, extra in EXTRAS.items() if extra in ("pipeline", "plot")),
        key=lambda m: m != "snakemake",
    )
)

#: Snakemake options (after ``--``) that inspect the workflow instead of running it: their
#: output is shown unchanged, and no report or summary follows
SHOW_SNAKEMAKE = frozenset(
    {
        "-n",
        "--dry-run",
        "--dryrun",
        "-l",
        "--list",
        "--list-rules",
        "--list-target-rules",
        "--lt",
        "-S",
        "--summary",
        "-D",
        "--detailed-summary",
        "--dag",
        "--rulegraph",
        "--filegraph",
        "--d3dag",
        "--lint",
        "--unlock",
        "--list-changes",
        "--lc",
        "--cleanup-metadata",
        "--delete-all-output",
        "--delete-temp-output",
        "-t",
        "--touch",
        "--version",
        "-v",
        "-h",
        "--help",
    }
)

#: where the run's Snakemake log goes, relative to the working directory
RUN_LOG = Path("results") / "logs" / "run.log"
#: the exclusion ledger of the ingest, relative to the working directory
LEDGER = Path("results") / "ingest" / "ledger.csv"
DOCS_PRESETS = "docs/presets.md"


def _check_installed() -> None:
    """Raise ModuleNotFoundError naming the first workflow dependency that is not installed."""
    for name in WORKFLOW_MODULES:
        if importlib.util.find_spec(name) is None:
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)


def snakemake_command(
    study: str | None,
    directory: str,
    cores: int,
    targets: list[str],
    snakemake_args: list[str],
    preset: str | None = None,
    nocolor: bool = False,
) -> list[str]:
    """Return the Snakemake command line (a list of words) that ``nonolab run`` executes.

    ``study`` becomes ``study_dir=<absolute path>`` and ``preset`` (a preset name, or a file
    path made absolute) ``preset=...`` of a ``--config``, merged into a ``--config`` / ``-C``
    of ``snakemake_args`` when there is one (Snakemake keeps only the last), else given last
    (``--config`` takes every word after it). ``nocolor`` adds ``--nocolor``.
    """
    from nonolab.core.paths import workflow_root

    root = workflow_root()
    cmd = [
        sys.executable,
        "-m",
        "snakemake",
        "--snakefile",
        str(root / "Snakefile"),
        "--cores",
        str(cores),
        "--directory",
        str(Path(directory).resolve()),
        *(["--nocolor"] if nocolor else []),
        *targets,
    ]
    extra = list(snakemake_args)
    items = []
    if study is not None:
        items.append(f"study_dir={Path(study).resolve()}")
    if preset is not None:
        items.append(f"preset={preset}")
    if items:
        at = next((i for i, w in enumerate(extra) if w in ("--config", "-C")), None)
        if at is None:
            extra += ["--config", *items]
        else:
            extra[at + 1 : at + 1] = items
    return cmd + extra


def preset_argument(text: str) -> str:
    """Return the ``--preset`` value as the workflow takes it: a preset name under
    ``config/studies/`` as it is, a file path made absolute (relative to the working
    directory). Raises ValueError naming both readings when it is neither."""
    from nonolab.study.presets import PRESET_DIR, available_presets

    looks_like_path = os.sep in text or "/" in text or text.endswith((".yaml", ".yml"))
    presets = available_presets()
    if text in presets and not looks_like_path:
        return text
    path = Path(text)
    if path.is_file():
        return path.resolve().as_posix()
    where = f"{path.resolve()}" if not path.is_absolute() else str(path)
    raise ValueError(
        f"--preset {text!r}: there is no preset file {where}"
        + (f" (relative to the working directory {Path.cwd()})" if not path.is_absolute() else "")
        + f" and no preset of that name in {PRESET_DIR} ({', '.join(sorted(presets))}); "
        f"see {DOCS_PRESETS}"
    )


def remembered_preset(record: dict[str, Any]) -> str | None:
    """Return the preset a results folder's study record names, as ``--preset`` takes it: the
    name of a preset under ``config/studies/``, else the recorded preset file; None when the
    record names no file (an older record) or the file is gone."""
    from nonolab.study.presets import PRESET_DIR

    file = record.get("preset_file")
    if not file:
        name = record.get("preset")
        return name if name and (PRESET_DIR / f"{name}.yaml").is_file() else None
    path = Path(file)
    if path.parent.resolve() == PRESET_DIR.resolve() and path.is_file():
        return path.stem
    return path.as_posix() if path.is_file() else None


def _config_default(key: str) -> str:
    """Return the workflow config's ``key`` (config/config.yaml beside the Snakefile)."""
    import yaml

    from nonolab.core.paths import workflow_root

    root = workflow_root()
    config = yaml.safe_load((root / "config" / "config.yaml").read_text(encoding="utf-8"))
    value = str(config[key])
    if key == "study_dir" and not Path(value).is_absolute():
        return str((root / value).resolve())
    return value


def _passthrough_config(words: list[str]) -> dict[str, str]:
    """Return the ``key=value`` items of a ``--config`` / ``-C`` among Snakemake's ``words``."""
    out: dict[str, str] = {}
    on = False
    for w in words:
        if w in ("--config", "-C"):
            on = True
        elif on and not w.startswith("-") and "=" in w:
            key, _, value = w.partition("=")
            out[key] = value
        else:
            on = False
    return out


def check_study(study_dir: str | os.PathLike, preset: str) -> Any:
    """Return the :class:`nonolab.study.presets.Preset` for a study after checking that every
    file the workflow needs is where the preset says.

    Checks the preset itself (it loads and validates), its puzzle file, that its log globs
    match at least one file, that every file of its participant mapping is there, and the files
    of its ``assignment_schedule`` and ``published`` entries. Raises
    :class:`nonolab.study.presets.StudyError` naming the missing file, the preset key that
    names it, the preset file and what to do (:data:`DOCS_PRESETS`).
    """
    from nonolab.study.presets import StudyError, log_sources, resolve_preset

    study = Path(study_dir).resolve()
    if not study.is_dir():
        what = "is not a folder" if study.exists() else "does not exist"
        raise StudyError(f"study folder {study} {what}")
    p = resolve_preset(study, preset)
    which = f"the preset {p.name!r} ({p.path})"
    puzzle = study / p.puzzle_file
    if not puzzle.is_file():
        candidates = sorted(
            f.name for f in study.glob("*.json") if f.is_file() and "schedule" not in f.name
        )
        hint = (
            f" JSON files at the top of the study folder: {', '.join(candidates)}."
            if candidates
            else ""
        )
        raise StudyError(
            f"the study folder {study} has no {p.puzzle_file}, the file {which} names as "
            f"`puzzle_file`.{hint} A study whose puzzle file has another name needs a preset "
            "of its own: a YAML file with `extends: default` and `puzzle_file: <its name>`, "
            f"given as `nonolab run --preset FILE` (see {DOCS_PRESETS})."
        )
    sources = [s for s in log_sources(study, p) if s.read]
    if not sources:
        globs = ", ".join(p.get("log_globs", [])) or "(none)"
        raise StudyError(
            f"no log file in {study} matches the `log_globs` of {which}: {globs}. Put the "
            f"logs there or write a preset whose `log_globs` match them (see {DOCS_PRESETS})."
        )
    named = {}
    if isinstance(p.get("assignment_schedule"), str):
        named["assignment_schedule"] = p.get("assignment_schedule")
    for key, value in (p.get("published") or {}).items():
        if isinstance(value, str):
            named[f"published.{key}"] = value
    for key, rel in named.items():
        if not (study / rel).is_file():
            raise StudyError(
                f"the study folder {study} has no {rel}, the file {which} names as `{key}`. "
                "Add the file, or use a preset without that entry (a preset that extends this "
                f"one can remove it with `{key.split('.')[-1]}: null`; see {DOCS_PRESETS})."
            )
    check_snakemake_paths(study, p, sources)
    return p


def check_snakemake_paths(study: Path, preset: Any, sources: list[Any]) -> None:
    """Raise :class:`nonolab.study.presets.StudyError` when a path the workflow hands to
    Snakemake contains ``<name>`` or ``{name}``
    (:func:`nonolab.study.snakemake_names.snakemake_name_problems`, the rule ``validate``
    uses): the study folder, the preset file, a file the preset names or a log file. Snakemake
    would stop with a traceback; the message names the path and the part to rename instead.
    Returns None."""
    from nonolab.study.presets import StudyError
    from nonolab.study.snakemake_names import snakemake_name_problems

    problems = snakemake_name_problems(study, preset, sources)
    if problems:
        raise StudyError(problems[0]["reason"])


@dataclass
class Outcome:
    """How a Snakemake run ended: its exit status and what the log said."""

    returncode: int
    progress: Any  # nonolab.cli.snakemake_log.JobProgress


def run_logged(cmd: list[str], log_path: Path, mode: str, out: TextIO) -> Outcome:
    """Run ``cmd`` (Snakemake) with its output going to ``log_path``; show on ``out`` one line
    per finished job (``mode`` ``progress``), every line (``verbose``) or nothing (``quiet``).
    Returns the exit status and the parsed log."""
    from nonolab.cli.snakemake_log import JobProgress

    progress = JobProgress()
    log_path.parent.mkdir(parents=True, exist_ok=True)
    # the Popen context closes the pipe when Snakemake ends (no unclosed-file warning)
    with (
        open(log_path, "w", encoding="utf-8") as log,
        subprocess.Popen(
            cmd,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            encoding="utf-8",
            errors="replace",
            bufsize=1,
        ) as proc,
    ):
        assert proc.stdout is not None
        try:
            for line in proc.stdout:
                log.write(line)
                shown = progress.feed(line)
                if mode == "verbose":
                    out.write(line)
                elif mode == "progress":
                    for text in shown:
                        print(text, file=out, flush=True)
        except KeyboardInterrupt:
            proc.terminate()
            proc.wait()
            raise
        returncode = proc.wait()
    return Outcome(returncode, progress)


#: the last line of a Python traceback: ``ValueError: message``
_EXCEPTION_LINE = re.compile(r"^[A-Za-z_][\w.]*(Error|Exception|Exit): \S")


def without_stack_frames(lines: list[str]) -> list[str]:
    """Return ``lines`` without Python stack traces: each ``Traceback ...`` header and the
    ``  File "...", line N`` frames (with the source line under each) are dropped, the
    exception's message is kept."""
    out: list[str] = []
    skip_source = False
    for line in lines:
        if line.startswith("Traceback (most recent call last)"):
            continue
        if line.lstrip().startswith('File "') and ", line " in line:
            skip_source = True
            continue
        if skip_source and line.startswith("    "):
            skip_source = False
            continue
        skip_source = False
        out.append(line)
    return out


def _failure_text(outcome: Outcome, log_path: Path, workdir: Path) -> str:
    """Return what to show when Snakemake failed: each failed job with the end of its own log,
    or else Snakemake's error message (its lines from the first error on), always without
    Python stack frames, and where the whole log is."""
    lines: list[str] = []
    seen = set()
    for job in outcome.progress.failed:  # Snakemake names each failed job twice
        key = (job.rule, job.wildcards, tuple(job.logs))
        if key in seen:
            continue
        seen.add(key)
        name = f"{job.rule} ({job.wildcards})" if job.wildcards else job.rule
        lines.append(f"job {name} failed")
        for rel in job.logs:
            path = workdir / rel
            lines.append(f"  its log: {path}")
            if path.is_file():
                text = path.read_text(encoding="utf-8", errors="replace").splitlines()
                tail = [t for t in without_stack_frames(text) if t.strip()]
                lines += [f"    {t}" for t in tail[-6:]]
    text = log_path.read_text(encoding="utf-8", errors="replace").splitlines()
    if lines:  # the jobs' exceptions (a script's stderr goes to Snakemake's log)
        errors = list(dict.fromkeys(t for t in text if _EXCEPTION_LINE.match(t)))
        if errors:
            lines.append("errors:")
            lines += [f"  {t}" for t in errors[:10]]
    else:
        start = next(
            (
                i
                for i, t in enumerate(text)
                if "Error" in t or "Exception" in t or t.startswith("Missing")
            ),
            max(0, len(text) - 15),
        )
        lines = [t for t in without_stack_frames(text[start:]) if t.strip()][:30]
    lines.append(f"Snakemake's whole log: {log_path}")
    return "\n".join(lines)


def build_study_report(workdir: Path) -> Path:
    """Build the study report of ``workdir`` (the folder holding ``results/``) with the function
    ``nonolab report`` calls (:func:`nonolab.report.html.build_report`); return its path."""
    from nonolab.report.html import build_report

    return build_report(workdir)


def study_line(study_dir: str | os.PathLike, preset: Any, from_config: bool) -> str:
    """Return the line naming the study a run analyses, its preset, where the study came from
    when ``--study`` was not given (``from_config``: the config's ``study_dir``) and the
    simulation extras a whole run makes (the config's ``extras``, else the preset's)."""
    import yaml

    from nonolab.core.paths import workflow_root

    where = Path(study_dir).resolve()
    line = f"study: {where} (preset {preset.name})"
    if from_config:
        line += "; no --study given: the config's study_dir (config/config.yaml)"
    config = yaml.safe_load((workflow_root() / "config" / "config.yaml").read_text("utf-8"))
    extras = config.get("extras")
    if extras is None:
        extras = preset.get("extras") or []
    asked = ", ".join(extras) if extras else "none"
    return (
        f"{line}\nsimulation extras in a whole run: {asked} (targets of their own: power, "
        "pool, recovery, extras)"
    )


def _whole_workflow(targets: list[str], passthrough: list[str]) -> bool:
    """Return True when the run makes the whole workflow (the default target or ``all``):
    no TARGET, and no target among the words after ``--`` (a word before their first
    option)."""
    if targets:
        return "all" in targets
    for word in passthrough:
        if word.startswith("-"):
            break
        if word != "all":
            return False
    return True


def _summary(workdir: Path, log_path: Path, report: Path | None, outcome: Outcome) -> str:
    p = outcome.progress
    if p.nothing_to_do:
        head = "nothing to do: every result is up to date"
    else:
        head = f"done: {p.done} of {p.total} jobs"
    rows = [head, f"results: {workdir / 'results'}"]
    if report is not None:
        rows.append(f"report:  {report}")
    if (workdir / LEDGER).is_file():
        rows.append(f"ledger:  {workdir / LEDGER} (every file, line and participant left out)")
    rows.append(f"log:     {log_path}")
    return "\n".join(rows)


def refuse_snakemake_report(passthrough: list[str]) -> None:
    """Raise ValueError when Snakemake's own ``--report`` is among the arguments after ``--``.

    Snakemake's report embeds the study's strings (folder, preset name, file names) in its page
    without escaping them for HTML and script blocks; the study report is ``nonolab report``
    (escaped, offline), which ``nonolab run`` builds at the end of a whole run. Returns None."""
    for word in passthrough:
        if word == "--report" or word.startswith("--report="):
            raise ValueError(
                "Snakemake's --report is not offered: its page does not escape the study's "
                "strings (a folder or preset name can carry a script). The study report is "
                "built at the end of `nonolab run`, or with `nonolab report --results OUT` "
                "(results/report.html)."
            )


def _run(args: argparse.Namespace) -> int:
    from nonolab.study.identity import read_results_study

    workdir = Path(args.directory).resolve()
    passthrough = list(getattr(args, "snakemake_args", []) or [])
    refuse_snakemake_report(passthrough)
    given = _passthrough_config(passthrough)
    record = read_results_study(workdir / "results") if workdir.is_dir() else None
    study, preset = args.study, args.preset
    notes = []
    if preset is not None:
        preset = preset_argument(preset)
    if record is not None:
        if study is None and "study_dir" not in given:
            study = record.get("study_dir")
            notes.append(f"study {study}")
        same = study is not None and Path(study).resolve().as_posix() == record.get("study_dir")
        if preset is None and "preset" not in given and same:
            preset = remembered_preset(record)
            if preset is not None:
                notes.append(f"preset {preset}")
    if notes:
        print(f"from {workdir / 'results/ingest/study.json'}: {', '.join(notes)}", file=sys.stderr)
    if study is not None and not Path(study).is_dir():
        raise FileNotFoundError(f"study folder {study} not found")
    _check_installed()
    study_dir = given.get("study_dir") or study or _config_default("study_dir")
    checked = check_study(study_dir, given.get("preset") or preset or _config_default("preset"))
    line = study_line(study_dir, checked, study is None and "study_dir" not in given)
    # --quiet: the terminal shows only errors and the summary; the line goes to stderr
    print(line, file=sys.stderr if args.quiet else sys.stdout, flush=True)
    workdir.mkdir(parents=True, exist_ok=True)
    show = bool(SHOW_SNAKEMAKE & set(passthrough))
    nocolor = bool(os.environ.get("NO_COLOR"))
    cmd = snakemake_command(
        study, str(workdir), args.cores, list(args.targets), passthrough, preset, nocolor
    )
    if show:  # a dry run, a listing, ...: Snakemake's own output is what was asked for
        return subprocess.call(cmd)
    mode = "verbose" if args.verbose else "quiet" if args.quiet else "progress"
    log_path = workdir / RUN_LOG
    outcome = run_logged(cmd, log_path, mode, sys.stdout)
    if outcome.returncode != 0:
        failure = _failure_text(outcome, log_path, workdir)
        print(f"nonolab run: failed\n{failure}", file=sys.stderr)
        if outcome.progress.failed:  # jobs ran: the results folder may now be a mix
            from nonolab.report.consistency import mark_run_failed

            mark_run_failed(workdir / "results", failure.splitlines()[0])
            print("the last report (if any) is marked out of date", file=sys.stderr)
        return 1
    report = None
    if _whole_workflow(list(args.targets), passthrough):
        from nonolab.report.consistency import mark_run_complete

        mark_run_complete(workdir / "results")
    if _whole_workflow(list(args.targets), passthrough) and not args.no_report:
        if mode != "quiet":
            print("building the report", flush=True)
        try:
            report = build_study_report(workdir)
        except Exception as exc:  # the results stay; say why the report is missing
            print(_summary(workdir, log_path, None, outcome))
            print(f"nonolab run: the report could not be built: {exc}", file=sys.stderr)
            return 1
    print(_summary(workdir, log_path, report, outcome))
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    """Add ``run`` to the CLI."""
    p = sub.add_parser(
        "run",
        help="run the whole analysis workflow (Snakemake) on a study folder",
        description="Run the analysis workflow (Snakemake) on a study folder: results/ is "
        "written under --results, Snakemake's log goes to results/logs/run.log and the "
        "terminal shows one line per finished job. The study and the preset are checked first; "
        "the results folder remembers them (results/ingest/study.json), so a later run, "
        "`nonolab report` or `make figures` on that folder needs neither. A run of the whole "
        "workflow ends by building the study report. Arguments after `--` go to Snakemake "
        "unchanged, e.g. `nonolab run --study data/example-study --results out -- -n` for a "
        "dry run (Snakemake's own output is shown then).",
        usage="%(prog)s [-h] [--study DIR] [--preset NAME|FILE] [--results DIR] [--cores N] "
        "[--quiet | --verbose] [--no-report] [TARGET ...] [-- SNAKEMAKE_ARG ...]",
        epilog="exit status: 0 the workflow finished; 1 a job failed (the failed job and the "
        "end of its log are shown); 2 a usage error, or a study or preset that cannot be used "
        "(the message names the file and the preset key). NO_COLOR=1 turns colour off.",
    )
    p.add_argument(
        "--study",
        metavar="DIR",
        help="study folder, relative to the working directory (default: the study the "
        "results folder holds, else the config's study_dir, the example study)",
    )
    p.add_argument(
        "--preset",
        metavar="NAME|FILE",
        help="study preset: a name under config/studies/ or a YAML file, relative to the "
        "working directory (docs/presets.md) (default: the preset the results folder "
        "remembers, else auto: the preset whose fingerprint matches the study, else default)",
    )
    p.add_argument(
        "--results",
        "--directory",
        "-d",
        "--workdir",
        dest="directory",
        metavar="DIR",
        default=".",
        help="results folder: results/ and .snakemake/ are written here; one per study: a "
        "folder holding another study's results is refused",
    )
    p.add_argument("--cores", type=int, default=2, metavar="N", help="cores Snakemake may use")
    loud = p.add_mutually_exclusive_group()
    loud.add_argument(
        "--quiet", "-q", action="store_true", help="show only errors and the closing summary"
    )
    loud.add_argument(
        "--verbose", "-v", action="store_true", help="show Snakemake's whole log as it runs"
    )
    p.add_argument(
        "--no-report",
        action="store_true",
        help="do not build the study report at the end of a whole run",
    )
    p.add_argument("targets", nargs="*", metavar="TARGET", help="Snakemake targets (default: all)")
    p.set_defaults(func=_run, snakemake_args=[])
