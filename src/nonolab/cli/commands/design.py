"""``nonolab design``: plan the next study (puzzles, schedule, power, pre-registration)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from nonolab.cli.options import grid_size, positive_int
from nonolab.core.progress import Progress


def _ints(text: str) -> tuple[int, ...]:
    try:
        out = tuple(int(x) for x in text.split(",") if x.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"needs comma-separated whole numbers, not {text!r}"
        ) from None
    if not out or min(out) < 1:
        raise argparse.ArgumentTypeError(f"needs whole numbers of at least 1, not {text!r}")
    return out


def _pair(text: str) -> tuple[float, float]:
    try:
        lo, hi = (float(x) for x in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(f"needs LOW,HIGH, not {text!r}") from None
    return lo, hi


def _without_rho(sources: tuple) -> tuple:
    return tuple(e for e in sources if e["field"] != "rho")


def _run(args: argparse.Namespace) -> int:
    from nonolab.design.discriminate import parse_measures
    from nonolab.design.options import (
        check_design_options,
        check_effect_models,
        read_effects_file,
    )
    from nonolab.design.selection import Constraints
    from nonolab.design.study import (
        DesignSettings,
        reference_from_study,
        run_design,
        settings_with,
        settings_with_effects,
    )
    from nonolab.report.figures.design import write_design_figures

    # every option and effect size against the plan schema, before anything is computed
    check_design_options(vars(args))
    if args.effects:
        read_effects_file(args.effects)
    ls = {"yes": True, "no": False, "any": None}[args.line_solvable]
    s = DesignSettings(
        pool=args.pool,
        pool_metrics=args.pool_metrics,
        n_puzzles=args.puzzles,
        per_session=args.per_session,
        participants=tuple(sorted(set(args.participants))),
        k_curve=tuple(sorted(set(args.k_curve))),
        target_power=args.target_power,
        rho=0.6,
        alpha=args.alpha,
        missing=args.missing,
        primary_metric=args.metric,
        constraints=Constraints(
            unique=not args.allow_multiple,
            size=args.size,
            line_solvable=ls,
            fill=args.fill,
            drop_top=args.drop_top,
        ),
        replications=args.replications,
        lmm_replications=args.lmm_replications,
        maximal_replications=args.maximal_replications,
        maximal_df=args.maximal_df,
        boundary=args.boundary,
        criterion=args.criterion,
        spread=not args.allow_ties,
        random_selections=args.random_selections,
        seed=args.seed,
        name=args.name,
        discriminate=parse_measures(args.discriminate) if args.discriminate else (),
        discriminate_weight=args.discriminate_weight,
    )
    s = settings_with_effects(
        s,
        args.effects_from or None,
        behaviour=args.effects_behaviour,
        effects_file=args.effects or None,
    )
    if args.rho is not None:
        s = settings_with(s, rho=args.rho, effect_sources=_without_rho(s.effect_sources))
    where = " and ".join(x for x in (args.effects_from, args.effects) if x) or "the defaults"
    check_effect_models(s.rating, s.behaviour, f"the effect sizes of {where}")
    ref = None
    if args.reference_study:
        ref = reference_from_study(
            args.reference_study,
            served=args.reference_served,
            participants=args.reference_participants,
        )
    with Progress(None, "design") as bar:

        def log(message: str) -> None:
            # a terminal shows the note on the progress line; a log file gets one line each
            if bar.enabled and not message.startswith("warning:"):
                bar.set_note(message)
            else:
                print(f"design: {message}", file=sys.stderr, flush=True)

        def step(i: int, n: int, note: str) -> None:
            bar.total = n
            bar.update(note=note)
            if not bar.enabled:
                print(f"design: power {i}/{n} {note}", file=sys.stderr, flush=True)

        summary = run_design(
            s, args.out, reference=ref, reference_preset=args.reference_preset,
            log=log, progress=step,
        )  # fmt: skip
    if not args.no_figures:
        write_design_figures(args.out, s.target_power)
    out = Path(args.out)
    print(
        f"wrote {out / 'plan.yaml'} and {out / 'preregistration.md'}: {s.n_puzzles} puzzles, "
        f"{s.per_session} per session, {summary['planned_participants']} participants "
        f"({'reaches' if summary['reached_target'] else 'does not reach'} power "
        f"{s.target_power} for the primary analysis); tables in {out / 'tables'}"
    )
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    """Add ``design`` to the CLI."""
    p = sub.add_parser(
        "design",
        help="plan a study: puzzles chosen for power, a balanced schedule, power, a plan",
        description="Choose K puzzles from a pool (D-optimal over the target metrics, under "
        "constraints), build a balanced schedule of M puzzles per session, compute the power of "
        "every planned analysis by simulating the exact design, and write plan.yaml, "
        "preregistration.md, tables and figures into --out. Deterministic for a seed. See "
        "docs/designing-a-study.md.",
    )
    p.add_argument(
        "--pool",
        required=True,
        help="pool folder (results/pool of the workflow) or a puzzle file with --pool-metrics",
    )
    p.add_argument("--pool-metrics", help="SAT metrics of a puzzle-file pool (CSV)")
    p.add_argument(
        "--puzzles", type=positive_int, default=24, help="K, puzzles (default: %(default)s)"
    )
    p.add_argument(
        "--per-session",
        type=positive_int,
        default=3,
        help="M, puzzles each session serves (default: %(default)s)",
    )
    p.add_argument(
        "--participants",
        type=_ints,
        default=(30, 60, 90, 120, 150),
        help="participant counts of the power curve (default: 30,60,90,120,150)",
    )
    p.add_argument(
        "--k-curve",
        type=_ints,
        default=(6, 12, 18, 24, 30),
        help="puzzle counts of the power curve over K (default: 6,12,18,24,30)",
    )
    p.add_argument(
        "--target-power",
        type=float,
        default=0.8,
        help="power the smallest design must reach (default: %(default)s)",
    )
    p.add_argument(
        "--rho",
        type=float,
        default=None,
        help="population Spearman rho of the primary test (default: the observed rho of "
        "--effects-from, else 0.6)",
    )
    p.add_argument("--alpha", type=float, default=0.05, help="test level (default: %(default)s)")
    p.add_argument(
        "--missing", type=float, default=0.1, help="missing-rating rate (default: %(default)s)"
    )
    p.add_argument("--metric", default="conflicts", help="primary metric (default: %(default)s)")
    p.add_argument("--size", type=grid_size, default=None, help="required puzzle size HxW")
    p.add_argument(
        "--line-solvable",
        choices=("yes", "no", "any"),
        default="any",
        help="require (yes) or exclude (no) puzzles line propagation solves (default: any)",
    )
    p.add_argument(
        "--fill",
        type=_pair,
        default=(0.0, 1.0),
        help="range LOW,HIGH of the share of filled cells (default: 0,1)",
    )
    p.add_argument(
        "--drop-top",
        type=float,
        default=0.05,
        help="share of the pool with the most conflicts left out (default: %(default)s)",
    )
    p.add_argument(
        "--allow-multiple",
        action="store_true",
        help="allow puzzles with more than one solution",
    )
    p.add_argument(
        "--replications",
        type=positive_int,
        default=1000,
        help="simulations per power of the Spearman test (default: %(default)s)",
    )
    p.add_argument(
        "--lmm-replications",
        type=positive_int,
        default=500,
        help="simulations per power of each mixed model (default: %(default)s)",
    )
    p.add_argument(
        "--maximal-replications",
        type=int,
        default=0,
        help="simulations of the moderation model with correlated random slopes by "
        "participant, one refit each (default: %(default)s, not run)",
    )
    p.add_argument(
        "--maximal-df",
        choices=("satterthwaite", "kenward_roger"),
        default="satterthwaite",
        help="df of the maximal model's test (default: %(default)s)",
    )
    p.add_argument(
        "--boundary",
        choices=("not_significant", "lmertest"),
        default="not_significant",
        help="how a mixed-model fit with a variance component at 0 is tested: counted as not "
        "significant (the pipeline: no Satterthwaite df) or with the df of the model without "
        "it (lmerTest); the power under the other is reported too (default: %(default)s)",
    )
    p.add_argument(
        "--criterion",
        choices=("d_quadratic", "d_linear"),
        default="d_quadratic",
        help="puzzle selection: D-optimal for a quadratic in the metric (puzzles over the "
        "range, curvature visible) or for straight lines (puzzles at the extremes) "
        "(default: %(default)s)",
    )
    p.add_argument(
        "--allow-ties",
        action="store_true",
        help="let selected puzzles share a value of the primary metric freely (default: at "
        "most ceil(K / 8) per value, or the fewest the pool allows)",
    )
    p.add_argument(
        "--random-selections",
        type=positive_int,
        default=1000,
        help="random selections the D-criterion is compared with (default: %(default)s)",
    )
    p.add_argument(
        "--effects",
        help="YAML with rating: and behaviour: effect-size overrides; with --effects-from, "
        "a value given here replaces the fitted one",
    )
    p.add_argument(
        "--effects-from",
        metavar="RESULTS",
        help="results folder of `nonolab run` (a pilot or the public study): take the rating "
        "model, the behaviour model and rho from its fitted models (moderation.csv, "
        "behaviour_models.csv, table1_spearman.csv; --effects and --rho override them)",
    )
    p.add_argument(
        "--effects-behaviour",
        default="pause_count",
        help="behaviour of --effects-from's behaviour model (default: %(default)s)",
    )
    p.add_argument(
        "--reference-study",
        help="study folder whose design is compared (puzzle file and schedule file)",
    )
    p.add_argument(
        "--reference-preset", help="preset whose exclusion reasons the pre-registration lists"
    )
    p.add_argument(
        "--reference-served",
        type=positive_int,
        default=48,
        help="schedule sequences the reference study served (default: %(default)s)",
    )
    p.add_argument(
        "--reference-participants",
        type=positive_int,
        default=67,
        help="participants of the reference study (default: %(default)s)",
    )
    p.add_argument(
        "--discriminate",
        metavar="MEASURE,MEASURE",
        help="choose the puzzles so that these registry measures (or pool SAT columns) are "
        "decorrelated while keeping their spread, and plan the contrast of which predicts "
        "difficulty better (docs/designing-a-study.md)",
    )
    p.add_argument(
        "--discriminate-weight",
        metavar="W",
        type=float,
        default=1.0,
        help="weight of the measures' spread against their decorrelation (1: D-optimal over "
        "them, the most contrast power on the public pool; below 1: less correlated, less "
        "spread; default: %(default)s)",
    )
    p.add_argument("--seed", type=int, default=20261205, help="master seed (default: %(default)s)")
    p.add_argument("--name", default="next-study", help="the plan's name (default: %(default)s)")
    p.add_argument("--no-figures", action="store_true", help="write no figures")
    p.add_argument("--out", required=True, help="output folder")
    p.set_defaults(func=_run)
