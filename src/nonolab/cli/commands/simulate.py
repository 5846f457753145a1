"""``nonolab simulate``: write a simulated study in the public study's folder layout."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from nonolab.cli.options import grid_size, non_negative_int, positive_int
from nonolab.core.progress import Progress
from nonolab.core.tables import write_text
from nonolab.sim.design import SURVEYS, StudyDesign, design_preset, reshape_study
from nonolab.sim.events import simulate_study
from nonolab.sim.model import FAULTS, METRICS, SimParams, params_from_mapping
from nonolab.sim.writer import write_study


def _per_session(text: str) -> tuple[int, int]:
    """Return ``(min, max)`` puzzles per session of ``K`` or ``A-B`` (1 <= A <= B)."""
    try:
        low, _, high = text.partition("-")
        a, b = int(low), int(high or low)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"--per-session must be a number or a range like 2-4, got {text!r}"
        ) from None
    if not 1 <= a <= b:
        raise argparse.ArgumentTypeError(f"--per-session needs 1 <= A <= B, got {text!r}")
    return a, b


def _faults(text: str) -> tuple[str, ...]:
    names = (
        FAULTS if text.strip() == "all" else tuple(x.strip() for x in text.split(",") if x.strip())
    )
    bad = [x for x in names if x not in FAULTS]
    if bad:
        raise argparse.ArgumentTypeError(f"unknown fault classes {bad}; known: {', '.join(FAULTS)}")
    return names


def _run(args: argparse.Namespace) -> int:
    overrides: dict = {}
    if args.params:
        overrides.update(json.loads(Path(args.params).read_text(encoding="utf-8")))
    h, w = args.size
    overrides.update(
        n_participants=args.participants,
        n_puzzles=args.puzzles,
        height=h,
        width=w,
        filled=args.filled if args.filled is not None else (h * w) // 2,
        faults=tuple(args.faults),
    )
    if args.metric is not None:
        overrides["metric"] = args.metric
    if args.strength is not None:
        overrides["metric_strength"] = args.strength
    params = params_from_mapping(SimParams(), overrides)
    low, high = args.per_session
    if high > params.n_puzzles:
        raise ValueError(f"--per-session {high} needs at least {high} puzzles (--puzzles)")
    design = StudyDesign(
        per_session=high,
        per_session_min=low if low < high else None,
        missing=args.missing_ratings,
        surveys=args.surveys,
    )
    session_size = max(3, high)
    out = Path(args.out)
    if out.exists() and not out.is_dir():
        raise ValueError(f"{out} exists and is not a folder")
    if out.is_dir() and any(out.iterdir()) and not args.force:
        raise ValueError(
            f"{out} is not empty: refusing to write a study into it (--force rewrites a "
            "simulated study)"
        )
    with Progress(params.n_participants, "simulate") as bar:
        bar.set_note("drawing puzzles")
        study = simulate_study(
            params, args.seed, progress=lambda: bar.update(note=""), session_size=session_size
        )
        study = reshape_study(study, design, args.seed)
        bar.set_note("writing files")
        files = write_study(study, out)
    if design.sizes != (3,):
        write_text(out / "preset.yaml", design_preset(design))
        files.append(out / "preset.yaml")
    truth = study.truth
    print(
        f"wrote {len(files)} files to {args.out}: {params.n_participants} participants, "
        f"{params.n_puzzles} puzzles; true pause threshold {truth['pause_threshold_s']:.4f} s, "
        f"true final-rating slope {truth['slope_final_rating']:.4f}"
    )
    if design.sizes != (3,):
        print(f"run it with its preset: nonolab run --study {out} --preset {out / 'preset.yaml'}")
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    """Add ``simulate`` to the CLI."""
    p = sub.add_parser(
        "simulate",
        help="write a simulated study (public-study layout plus ground_truth.json)",
        description="Simulate a Nonogram study: unique puzzles, participants with latent "
        "expertise, NDJSON interaction logs, surveys, coded themes, and ground_truth.json. "
        "Deterministic for a seed. Refuses a non-empty output folder unless --force. Progress "
        "goes to stderr when it is a terminal.",
    )
    p.add_argument("out", help="output folder (created; must not exist or be empty)")
    p.add_argument(
        "--force",
        action="store_true",
        help="write into a non-empty folder that holds a simulated study (ground_truth.json), "
        "replacing it; a folder without one is never written into",
    )
    p.add_argument(
        "--participants", type=positive_int, default=30, help="participants (one log file each)"
    )
    p.add_argument("--puzzles", type=positive_int, default=6, help="distinct puzzles")
    p.add_argument("--seed", type=int, default=0, help="seed of every random draw")
    p.add_argument("--size", type=grid_size, default=(10, 10), help="HxW (default 10x10)")
    p.add_argument(
        "--filled", type=non_negative_int, default=None, help="filled cells (default: half)"
    )
    p.add_argument(
        "--metric",
        choices=METRICS,
        default=None,
        help="SAT metric driving difficulty (default: the simulator's, SimParams.metric)",
    )
    p.add_argument(
        "--strength",
        type=float,
        default=None,
        help="puzzle-level correlation of metric and difficulty (default: SimParams's)",
    )
    p.add_argument(
        "--faults",
        type=_faults,
        default=(),
        help="comma-separated bad-input classes to inject, one instance each, or 'all' "
        f"({', '.join(FAULTS)}); listed in ground_truth.json",
    )
    p.add_argument(
        "--params", metavar="FILE", help="JSON file of further SimParams overrides (default: none)"
    )
    p.add_argument(
        "--per-session",
        type=_per_session,
        default=(3, 3),
        metavar="K|A-B",
        help="puzzles each session serves: K, or a range A-B drawn per session (sessions that "
        "ran out of time); at most --puzzles (default 3); other than 3 the study gets a "
        "preset.yaml to pass as the workflow's preset",
    )
    p.add_argument(
        "--missing-ratings",
        type=float,
        default=0.0,
        help="probability that each initial and each final rating is left out (default 0)",
    )
    p.add_argument(
        "--surveys",
        choices=SURVEYS,
        default="all",
        help="all surveys answered (default), no post-survey, an empty pre-survey, or neither",
    )
    p.set_defaults(func=_run)
