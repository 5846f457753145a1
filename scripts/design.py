"""Snakemake script of rule `design_study`: nonolab.design.run_design on the configured pool."""

import logging
from pathlib import Path

from nonolab.design.options import check_design_options, check_effect_models
from nonolab.design.selection import Constraints
from nonolab.design.study import DesignSettings, reference_from_study, run_design
from nonolab.report.figures.design import write_design_figures

logging.basicConfig(filename=snakemake.log[0], level=logging.INFO, format="%(message)s", force=True)
log = logging.getLogger("design")

cfg = snakemake.params.settings
check_design_options(cfg)  # the plan schema's bounds, as `nonolab design` checks its options
seed = cfg.get("seed")
settings = DesignSettings(
    pool=str(snakemake.params.pool),
    pool_metrics=cfg.get("pool_metrics"),
    n_puzzles=int(cfg["puzzles"]),
    per_session=int(cfg["per_session"]),
    participants=tuple(sorted(set(int(n) for n in cfg["participants"]))),
    k_curve=tuple(sorted(set(int(k) for k in cfg["k_curve"]))),
    target_power=float(cfg["target_power"]),
    rho=float(cfg["rho"]),
    alpha=float(cfg["alpha"]),
    missing=float(cfg.get("missing", 0.1)),
    primary_metric=cfg.get("metric", "conflicts"),
    constraints=Constraints(drop_top=float(cfg.get("drop_top", 0.05))),
    replications=int(cfg.get("replications", 1000)),
    lmm_replications=int(cfg.get("lmm_replications", 500)),
    maximal_replications=int(cfg.get("maximal_replications", 0)),
    random_selections=int(cfg.get("random_selections", 1000)),
    seed=int(seed if seed is not None else snakemake.params.seed),
)
if cfg.get("effects_from_results"):
    from nonolab.design.study import settings_with_effects

    settings = settings_with_effects(
        settings, ".", behaviour=cfg.get("effects_behaviour", "pause_count")
    )
    log.info(
        "effect sizes from this run's fits: %s",
        {src["field"]: src["value"] for src in settings.effect_sources},
    )
check_effect_models(settings.rating, settings.behaviour, "the design's effect sizes")
reference = None
schedule = snakemake.params.schedule
if cfg.get("compare_with_study", True) and schedule:
    reference = reference_from_study(
        snakemake.params.study,
        puzzle_file=snakemake.params.puzzle_file,
        schedule_file=str(Path(schedule).relative_to(snakemake.params.study)),
        served=int(cfg.get("reference_served", 48)),
        participants=int(cfg.get("reference_participants", 67)),
    )
out = Path(snakemake.output.plan).parent
summary = run_design(
    settings, out, reference=reference, reference_preset=snakemake.params.preset, log=log.info
)
write_design_figures(out, settings.target_power)
log.info("planned participants %s", summary["planned_participants"])
