"""``nonolab design``: select puzzles, schedule sessions, compute power, write the plan.

:func:`run_design` runs the whole design for :class:`DesignSettings` and writes, into one
folder: ``plan.yaml`` (:mod:`nonolab.design.plan`), ``preregistration.md``
(:mod:`nonolab.design.prereg`), the pipeline's study inputs (``study/``: puzzle file, preset,
schedule), and the tables (``tables/``, each with its provenance sidecar):

* ``design_selection.csv``: the selected puzzles with their metrics;
* ``design_criterion.csv``: the D-criterion of the selection against random selections of the
  same size, the optimal selection of the reference design's size, and the reference design
  (the paper's six puzzles);
* ``design_balance.csv``: the schedule's balance after each block (and at the planned
  participants) beside the reference schedule's;
* ``design_power.csv``: power of every planned analysis at the planned design and at the
  reference design, with Monte-Carlo intervals;
* ``design_power_curve.csv``: power over participants (at K) and over K (at the planned
  participants);
* ``design_smallest.csv``: per K, the smallest number of participants reaching the target power
  for the primary analysis.

Everything is seeded (:attr:`DesignSettings.seed` and the seeds derived from it, all recorded in
the plan); the same settings give byte-identical tables.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from nonolab.core.tables import write_json, write_table
from nonolab.design import plan as plan_mod
from nonolab.design.power import (
    POWER_COLUMNS,
    BehaviourModel,
    Design,
    PowerResult,
    RatingModel,
    expected_sample_rho,
    lmm_power,
    maximal_power,
    spearman_power,
)
from nonolab.design.schedule import (
    balance_table,
    balanced_schedule,
    read_schedule_file,
    schedule_balance,
)
from nonolab.design.selection import (
    COMPARISON_COLUMNS,
    DEFAULT_METRICS,
    Constraints,
    design_matrix,
    eligible,
    load_pool,
    pool_scales,
    random_criteria,
    random_summary,
    select_puzzles,
    selection_summary,
)

#: the planned analyses, primary first: (name, kind, role, family)
ANALYSES = (
    ("spearman_bt", "spearman_bt", "primary", "primary"),
    ("rating_lmm", "rating_lmm", "secondary", "secondary: metric effects"),
    ("behaviour_lmm", "behaviour_lmm", "secondary", "secondary: metric effects"),
    ("moderation_lmm", "moderation_lmm", "secondary", "secondary: moderation"),
)


@dataclass(frozen=True)
class Reference:
    """A reference design to compare with (the paper's): its puzzles' metric counts (in puzzle
    order), the schedule file it drew from, the sessions served from it and its participants."""

    name: str
    metrics: pd.DataFrame
    schedule: np.ndarray | None
    served: int
    participants: int
    #: the sessions actually served (participants x M puzzle positions in ``metrics``, in
    #: serving order), read from the study's logs; None: reconstructed from the schedule
    sessions: np.ndarray | None = None


@dataclass(frozen=True)
class DesignSettings:
    """Settings of :func:`run_design` (see ``nonolab design --help``)."""

    pool: str
    pool_metrics: str | None = None
    n_puzzles: int = 24
    per_session: int = 3
    participants: tuple[int, ...] = (30, 60, 90, 120, 150)
    k_curve: tuple[int, ...] = (6, 12, 18, 24, 30)
    target_power: float = 0.8
    rho: float = 0.6
    alpha: float = 0.05
    missing: float = 0.1
    primary_metric: str = "conflicts"
    selection_metrics: tuple[str, ...] = DEFAULT_METRICS
    constraints: Constraints = field(default_factory=Constraints)
    replications: int = 1000
    lmm_replications: int = 500
    maximal_replications: int = 0
    maximal_df: str = "satterthwaite"
    #: how a mixed-model fit with a variance component at 0 is tested: ``not_significant``
    #: (the pipeline: no Satterthwaite df) or ``lmertest`` (the df of the model without it);
    #: the power under the other convention is reported beside it either way
    boundary: str = "not_significant"
    #: selection criterion (:data:`nonolab.design.selection.CRITERIA`) and whether tied
    #: values of the primary metric are kept as few as the pool allows
    criterion: str = "d_quadratic"
    spread: bool = True
    #: the curved truth power is also reported under: latent difficulty depends on
    #: ``tanh`` of the pool-standardised metric (flat at both ends of the pool)
    curved_truth: str = "tanh"
    random_selections: int = 1000
    seed: int = 20261205
    name: str = "next-study"
    rating: RatingModel = field(default_factory=RatingModel)
    behaviour: BehaviourModel = field(default_factory=BehaviourModel)
    solver: str = "minisat22"
    encoding: str = "block_start"
    #: where each effect size came from (:func:`nonolab.design.effects.effects_from_results`;
    #: empty: the defaults or a user YAML)
    effect_sources: tuple[dict[str, Any], ...] = ()
    #: SD of log1p(primary metric) over the puzzles of the study the fitted effects came from
    #: (their slopes are per that SD); None: the effects are on the pool's scale
    study_metric_sd: float | None = None
    #: what is known of the study the fitted effects came from (``n_puzzles``, ``sizes``,
    #: ``participants``; :func:`nonolab.design.effects.effects_from_results`)
    effect_study: dict[str, Any] | None = None
    #: ``--discriminate``: measures the selection decorrelates, and the spread weight ``w``
    #: (:mod:`nonolab.design.discriminate`); empty: D-optimal
    discriminate: tuple[str, ...] = ()
    discriminate_weight: float = 1.0

    def seeds(self) -> dict[str, int]:
        """Return the named seeds derived from :attr:`seed` (selection, schedule, power,
        random selections), each recorded in the plan."""
        ss = np.random.SeedSequence(self.seed).generate_state(4)
        return {
            "master": self.seed,
            "selection": int(ss[0]),
            "schedule": int(ss[1]),
            "power": int(ss[2]),
            "random_selections": int(ss[3]),
        }

    def record(self) -> dict[str, Any]:
        """Return the settings as a plain mapping."""
        d = asdict(self)
        d["constraints"] = self.constraints.record()
        return d


Log = Callable[[str], None]


def _power_all(
    s: DesignSettings,
    design: Design,
    seed: int,
    analyses: Sequence[str],
    tick: Callable[[], None],
) -> list[PowerResult]:
    out = []
    for a in analyses:
        if a == "spearman_bt":
            out.append(spearman_power(design, s.rho, s.replications, seed, s.rating, s.alpha))
        else:
            out.append(
                lmm_power(
                    a,
                    design,
                    s.lmm_replications,
                    seed,
                    s.rating,
                    s.behaviour,
                    s.alpha,
                    boundary=s.boundary,
                )
            )
        tick()
    return out


def reference_from_study(
    study_dir: str | Path,
    *,
    puzzle_file: str = "nonograms_6.json",
    schedule_file: str = "assignment_schedule_6puzzles_3perms.json",
    served: int = 48,
    participants: int = 67,
    solver: str = "minisat22",
    encoding: str = "block_start",
    served_from_logs: bool = True,
) -> Reference:
    """Return the public study's design as a :class:`Reference`, read at run time from the
    study folder: its puzzles (metrics computed here with ``solver`` on ``encoding``, in the
    puzzle file's order), its schedule file, the ``served`` sequences the sessions drew from
    it (48 of 120) and its ``participants`` (67 after the ingest). With
    ``served_from_logs`` the sessions actually served are read from the study's logs
    (:func:`served_sessions`) and the reference design is those sessions, its participants
    their number; else the design is reconstructed from the schedule file's first ``served``
    sequences, cycled over ``participants``."""
    from nonolab.sat.puzzles import load_study_puzzles
    from nonolab.sat.solvers import solver_records

    d = Path(study_dir)
    puzzles = load_study_puzzles(d / puzzle_file)
    rec = pd.DataFrame(solver_records(puzzles, [encoding], [solver]))
    sched = read_schedule_file(str(d / schedule_file)) if (d / schedule_file).exists() else None
    sessions = served_sessions(d, rec["puzzle_hash"].tolist()) if served_from_logs else None
    n = participants if sessions is None else len(sessions)
    return Reference("paper", rec, sched, served, n, sessions)


def served_sessions(study_dir: str | Path, hashes: Sequence[str]) -> np.ndarray | None:
    """Return the sessions a study actually served, read from its logs by the ingest (the
    study's preset, ``auto``): one row per analysed participant (participant id order), the
    positions in ``hashes`` of the puzzles in serving order; None when the folder has no
    logs or no participant served a full session of puzzles in ``hashes``."""
    from nonolab.study.ingest import ingest_study
    from nonolab.study.presets import resolve_preset

    d = Path(study_dir)
    try:
        res = ingest_study(d, resolve_preset(d))
    except (FileNotFoundError, ValueError):
        return None
    a = res.tables["attempts"]
    if a.empty:
        return None
    pos = {h: i for i, h in enumerate(hashes)}
    a = a[a["puzzle_hash"].isin(pos)].sort_values(["participant_id", "order"])
    rows = [[pos[h] for h in g["puzzle_hash"]] for _, g in a.groupby("participant_id", sort=True)]
    if not rows:
        return None
    m = max(len(r) for r in rows)
    rows = [r for r in rows if len(r) == m]
    return np.asarray(rows, dtype=int)


def _reference_design(ref: Reference, missing: float, pool: pd.DataFrame, metric: str) -> Design:
    """Return the reference design: its puzzles and, per participant, the served sequences in
    schedule order, cycled over the ``served`` ones when there are more participants."""
    if ref.sessions is not None:
        q = ref.sessions
    elif ref.schedule is None:
        k = len(ref.metrics)
        q = balanced_schedule(k, 3, ref.participants, 0).sessions
    else:
        served = ref.schedule[: ref.served]
        q = served[np.arange(ref.participants) % len(served)]
    return _design(q, ref.metrics[metric].to_numpy(dtype=float), pool, metric, missing)


def run_design(
    s: DesignSettings,
    out_dir: str | Path,
    *,
    reference: Reference | None = None,
    reference_preset: str | Path | None = None,
    log: Log | None = None,
    progress: Callable[[int, int, str], None] | None = None,
) -> dict[str, Any]:
    """Run the design (module docstring) and write its outputs into ``out_dir``; return the
    summary record also written as ``design.json``. ``reference``: the design to compare with
    (:func:`reference_from_study`); ``reference_preset``: the preset whose exclusion reasons the
    pre-registration lists; ``log``: messages; ``progress(done, total, note)``: power steps."""
    out = Path(out_dir)
    tables = out / "tables"
    seeds = s.seeds()
    say = log or (lambda _m: None)
    analyses = [a for a, *_ in ANALYSES]
    n_steps = (
        len(s.participants) * len(analyses)
        + len(s.k_curve) * len(analyses)
        + (len(analyses) if reference is not None else 0)
        + (1 if s.maximal_replications else 0)
        + len(analyses) * (2 if (s.criterion, s.spread) == ("d_linear", False) else 4)
    )
    step = [0]

    def tick(note: str = "") -> None:
        step[0] += 1
        if progress is not None:
            progress(step[0], n_steps, note)

    # -- selection --------------------------------------------------------------------------
    say(f"reading pool {s.pool}")
    pool = load_pool(s.pool, s.pool_metrics, solver=s.solver, encoding=s.encoding)
    el = eligible(pool, s.constraints)
    say(f"pool: {len(pool)} puzzles, {len(el)} eligible")
    scale_factor = None
    if s.study_metric_sd is not None:  # fitted effects: per SD of the study's puzzles
        from nonolab.design.effects import to_pool_scale

        pool_sd = float(np.log1p(el[s.primary_metric].to_numpy(dtype=float)).std())
        r, b, src = to_pool_scale(
            s.rating, s.behaviour, s.effect_sources, s.study_metric_sd, pool_sd
        )
        s = replace(s, rating=r, behaviour=b, effect_sources=src)
        scale_factor = pool_sd / s.study_metric_sd
    from nonolab.design.sanity import effect_checks

    warnings = effect_checks(
        s,
        scale_factor=scale_factor,
        pool_sizes=frozenset(f"{h}x{w}" for h, w in zip(el["height"], el["width"], strict=True)),
        study=s.effect_study,
    )
    for w in warnings:
        say(f"warning: {w}")
    metrics = list(s.selection_metrics)
    if s.primary_metric not in metrics:
        metrics = [s.primary_metric, *metrics]
    if s.n_puzzles <= len(metrics):  # too few puzzles to separate every metric
        metrics = [s.primary_metric]
    ks = sorted(set(s.k_curve) | {s.n_puzzles})

    def select(k: int, criterion: str, spread: bool) -> np.ndarray:
        c, ms = criterion_used(k, criterion, metrics)
        return select_puzzles(el, k, ms, seed=seeds["selection"], criterion=c, distinct=spread)

    chosen = {k: select(k, s.criterion, s.spread) for k in ks}
    disc = None
    if s.discriminate:  # the discriminating criterion replaces D-optimality (its module)
        from nonolab.design import discriminate as dsc

        disc = dsc.discriminating_choice(
            el, chosen, s.discriminate, s.n_puzzles, seeds["selection"], s.discriminate_weight
        )
    sel = el.iloc[chosen[s.n_puzzles]].reset_index(drop=True)
    X = design_matrix(el, metrics)
    linear = select(s.n_puzzles, "d_linear", False)  # the straight-line D-optimum
    alternative = None if (s.criterion, s.spread) == ("d_linear", False) else linear
    d_opt = float(np.exp(np.linalg.slogdet(X[linear].T @ X[linear] / s.n_puzzles)[1] / X.shape[1]))
    used = criterion_used(s.n_puzzles, s.criterion, metrics)[0]
    sel_name = f"{used}{'_spread' if s.spread else ''}_k{s.n_puzzles}"
    rand = random_criteria(
        el, s.n_puzzles, metrics, s.random_selections, seeds["random_selections"]
    )
    crit_rows = [
        selection_summary(sel_name, sel, el, metrics, d_opt, rand),
        *(
            [
                selection_summary(
                    f"d_linear_k{s.n_puzzles}", el.iloc[linear], el, metrics, d_opt, rand
                )
            ]
            if alternative is not None
            else []
        ),
        random_summary(f"random_k{s.n_puzzles}_median", rand, s.n_puzzles, d_opt),
        {
            **random_summary(f"random_k{s.n_puzzles}_p95", rand, s.n_puzzles, d_opt),
            "d_criterion": float(np.quantile(rand, 0.95)),
            "d_efficiency": float(np.quantile(rand, 0.95)) / d_opt,
            "random_share_below": 0.95,
        },
    ]
    if reference is not None:
        k_ref = len(reference.metrics)
        if k_ref >= len(metrics) + 1 and k_ref <= len(el):
            opt_ref = el.iloc[select_puzzles(el, k_ref, metrics, seed=seeds["selection"])]
            d_ref_opt = selection_summary("x", opt_ref, el, metrics, 1.0)["d_criterion"]
            rand_ref = random_criteria(
                el, k_ref, metrics, s.random_selections, seeds["random_selections"]
            )
            crit_rows.append(
                selection_summary(f"d_optimal_k{k_ref}", opt_ref, el, metrics, d_opt, rand_ref)
            )
            crit_rows.append(
                selection_summary(
                    f"{reference.name}_k{k_ref}", reference.metrics, el, metrics, d_opt, rand_ref
                )
                | {"d_efficiency_same_k": None}
            )
            crit_rows[-1]["d_efficiency_same_k"] = crit_rows[-1]["d_criterion"] / d_ref_opt
    crit = pd.DataFrame(crit_rows)
    if disc is not None:  # the selection at K is the discriminating one
        crit["selection"] = crit["selection"].replace(sel_name, disc.label)
    crit = crit[
        [c for c in COMPARISON_COLUMNS if c in crit]
        + [c for c in crit if c not in COMPARISON_COLUMNS]
    ]
    sel_table = sel.drop(columns=["puzzle"]).copy()
    sel_table.insert(0, "id", range(len(sel_table)))

    # -- schedule ---------------------------------------------------------------------------
    # long enough for every design the power search visits (up to 4x the largest planned N)
    # and at least SCHEDULE_SESSIONS, in whole blocks: no schedule is ever cycled
    n_max = schedule_length(s.n_puzzles, 4 * max(s.participants))
    sched = balanced_schedule(s.n_puzzles, s.per_session, n_max, seeds["schedule"])
    say(f"schedule: {sched.method}, blocks of {sched.block_size} sessions")

    # -- power over participants at K ---------------------------------------------------------
    curve: list[PowerResult] = []
    metric_vals = sel[s.primary_metric].to_numpy(dtype=float)
    for n in s.participants:
        d = _design(sched.sessions[:n], metric_vals, el, s.primary_metric, s.missing)
        curve += _power_all(s, d, seeds["power"], analyses, lambda n=n: tick(f"N={n}"))
        say(f"power at K={s.n_puzzles}, N={n}: spearman {curve[-len(analyses)].power:.3f}")

    # smallest N reaching the target at K (primary analysis), refined by bisection
    def primary_at(k_sched: np.ndarray, vals: np.ndarray, n: int) -> float:
        return spearman_power(
            _design(_cycled(k_sched, n), vals, el, s.primary_metric, s.missing),
            s.rho,
            s.replications,
            seeds["power"],
            s.rating,
            s.alpha,
        ).power

    # -- power over K at the planned participants ---------------------------------------------
    prim = {r.n_participants: r.power for r in curve if r.analysis == "spearman_bt"}
    planned = _smallest(prim, s.target_power, lambda n: primary_at(sched.sessions, metric_vals, n))
    n_min = planned if planned is not None else max(s.participants)
    # the plan serves whole blocks (each exactly position-balanced): round up
    n_plan = -(-n_min // sched.block_size) * sched.block_size
    k_rows: list[PowerResult] = []
    smallest_rows = []
    for k in s.k_curve:
        vals = el.iloc[chosen[k]][s.primary_metric].to_numpy(dtype=float)
        sk = balanced_schedule(
            k, min(s.per_session, k), schedule_length(k, 4 * max(s.participants)), seeds["schedule"]
        )
        d = _design(_cycled(sk.sessions, n_plan), vals, el, s.primary_metric, s.missing)
        k_rows += _power_all(s, d, seeds["power"], analyses, lambda k=k: tick(f"K={k}"))
        grid = {
            n: spearman_power(
                _design(_cycled(sk.sessions, n), vals, el, s.primary_metric, s.missing),
                s.rho,
                s.replications,
                seeds["power"],
                s.rating,
                s.alpha,
            ).power
            for n in s.participants
        }
        smallest_rows.append(
            {
                "n_puzzles": k,
                "per_session": min(s.per_session, k),
                "target_power": s.target_power,
                "smallest_participants": _smallest(
                    grid,
                    s.target_power,
                    lambda n, sk=sk, vals=vals: primary_at(sk.sessions, vals, n),
                ),
                "searched_up_to": 4 * max(s.participants),
            }
        )
    say(f"smallest N at K={s.n_puzzles} for power {s.target_power}: {planned}")

    # -- power at the planned design and at the reference design ------------------------------
    plan_design = _design(
        _cycled(sched.sessions, n_plan), metric_vals, el, s.primary_metric, s.missing
    )
    planned_rows = _power_all(s, plan_design, seeds["power"], analyses, lambda: tick("planned"))
    # the same under a curved truth, and the straight-line D-optimal selection under both
    variants: list[tuple[str, list[PowerResult]]] = []
    planned_queues = _cycled(sched.sessions, n_plan)
    options = [("planned", metric_vals)]
    if alternative is not None:
        options.append((f"d_linear_k{s.n_puzzles}", el.iloc[alternative][s.primary_metric]))
    for label, vals in options:
        for truth in ("linear", s.curved_truth):
            if (label, truth) == ("planned", "linear"):
                continue
            d = _design(planned_queues, np.asarray(vals, dtype=float), el, s.primary_metric,
                        s.missing, truth)  # fmt: skip
            name = label if truth == "linear" else f"{label}, curved truth ({truth})"
            variants.append(
                (name, _power_all(s, d, seeds["power"], analyses, lambda n=name: tick(n)))
            )
    # the estimand: the Spearman rho a study of the chosen puzzles estimates
    estimands = {"planned": expected_sample_rho(plan_design, s.rho, seed=seeds["power"])}
    for label, vals in options[1:]:
        d = _design(planned_queues, np.asarray(vals, dtype=float), el, s.primary_metric, s.missing)
        estimands[label] = expected_sample_rho(d, s.rho, seed=seeds["power"])
    ref_rows: list[PowerResult] = []
    balance_rows = []
    n_blocks = len(sched.sessions) // sched.block_size
    for b in range(1, n_blocks + 1):
        balance_rows.append(
            schedule_balance(
                sched.sessions, s.n_puzzles, f"schedule: {b} block(s)", b * sched.block_size
            )
        )
    planned_balance = schedule_balance(
        _cycled(sched.sessions, n_plan), s.n_puzzles, "planned: all sessions"
    )
    balance_rows.append(planned_balance)
    if reference is not None:
        rd = _reference_design(reference, s.missing, el, s.primary_metric)
        ref_rows = _power_all(s, rd, seeds["power"], analyses, lambda: tick("reference"))
        estimands[reference.name] = expected_sample_rho(rd, s.rho, seed=seeds["power"])
        if reference.schedule is not None:
            balance_rows.append(
                schedule_balance(
                    reference.schedule,
                    len(reference.metrics),
                    f"{reference.name}: {reference.served} served sequences",
                    reference.served,
                )
            )
        balance_rows.append(
            schedule_balance(
                rd.queues,
                len(reference.metrics),
                f"{reference.name}: sessions actually served"
                if reference.sessions is not None
                else f"{reference.name}: reconstructed from the schedule file",
            )
        )
    maximal_row = None
    if s.maximal_replications:
        maximal_row = maximal_power(
            plan_design, s.maximal_replications, seeds["power"], s.rating, s.alpha, s.maximal_df
        )
        tick("maximal")

    # -- tables ------------------------------------------------------------------------------
    def with_estimand(design: str, r: PowerResult) -> dict[str, Any]:
        row = {"design": design, **r.row()}
        base = design.split(",")[0]
        if r.analysis == "spearman_bt" and base in estimands and "curved" not in design:
            row["expected_sample_rho"], row["expected_sample_rho_sd"] = estimands[base]
        return row

    power_tab = pd.DataFrame(
        [with_estimand("planned", r) for r in planned_rows]
        + ([{"design": "planned", **maximal_row.row()}] if maximal_row else [])
        + [with_estimand(name, r) for name, rows in variants for r in rows]
        + [with_estimand(reference.name, r) for r in ref_rows if reference is not None]
    )
    curve_tab = pd.DataFrame(
        [{"curve": "participants", **r.row()} for r in curve]
        + [{"curve": "puzzles", **r.row()} for r in k_rows]
    )
    common = {"params": s.record(), "seeds": seeds}
    inputs = [p for p in (s.pool, s.pool_metrics) if p and Path(p).is_file()]
    # the power tables' inputs: the tables the effect sizes came from (hashed in the sidecars)
    from nonolab.design.effects import source_files

    eff = [p for p in source_files(s.effect_sources) if Path(p).is_file()]
    write_table(sel_table, tables / "design_selection.csv", inputs=inputs, **common)
    write_table(crit, tables / "design_criterion.csv", inputs=inputs, **common)
    write_table(balance_table(balance_rows), tables / "design_balance.csv", **common)
    write_table(_ordered(power_tab), tables / "design_power.csv", inputs=eff, **common)
    write_table(_ordered(curve_tab), tables / "design_power_curve.csv", inputs=eff, **common)
    write_table(pd.DataFrame(smallest_rows), tables / "design_smallest.csv", inputs=eff, **common)

    # -- plan and pre-registration -------------------------------------------------------------
    from nonolab.design.prereg import preregistration

    puzzles = [
        plan_mod.PlanPuzzle(
            i,
            row["puzzle"],
            source={"pool": Path(s.pool).name, "pool_id": str(row["pool_id"])},
            metrics={m: float(row[m]) for m in DEFAULT_METRICS if m in row},
        )
        for i, (_, row) in enumerate(sel.iterrows())
    ]
    power_by = {r.analysis: r for r in planned_rows}
    est_mean, est_sd = estimands["planned"]
    analyses_rec = []
    for name, kind, role, family in ANALYSES:
        r = power_by[name]
        analyses_rec.append(
            {
                "name": name,
                "kind": kind,
                "role": role,
                "family": family,
                "model": _MODELS[name].format(m=s.primary_metric),
                "test": _test_text(name, s),
                "alpha": s.alpha,
                "settings": _settings(name, s),
                "power": power_record(r, n_plan)
                | (
                    {
                        "estimand": f"population (pool) Spearman rho {s.rho:g}",
                        "expected_sample_rho": round(est_mean, 2),
                        "expected_sample_rho_sd": round(est_sd, 2),
                    }
                    if name == "spearman_bt"
                    else {}
                ),
            }
        )
    if disc is not None:  # the measure contrast, at the planned design
        c_rows = dsc.contrast_rows(
            disc,
            plan_design.queues,
            s.rho,
            s.replications,
            seeds["power"],
            s.rating,
            s.alpha,
            s.missing,
        )
        analyses_rec.append(dsc.analysis_record(disc, c_rows, n_plan, s.alpha))
        write_table(pd.DataFrame(disc.rows()), tables / "design_discrimination.csv", **common)
    if maximal_row is not None:
        analyses_rec.append(
            {
                "name": "moderation_maximal",
                "kind": "moderation_maximal",
                "role": "secondary",
                "family": "sensitivity (reported, not corrected)",
                "model": _MODELS["moderation_maximal"].format(m=s.primary_metric),
                "test": f"REML; two-sided t test of metric:expertise with {s.maximal_df} df",
                "alpha": s.alpha,
                "settings": _settings("moderation_lmm", s),
                "power": power_record(maximal_row, n_plan),
            }
        )
    reach = (
        f"the smallest number reaching power {s.target_power} for the primary analysis ({n_min})"
        if planned is not None
        else f"no design searched (up to {4 * max(s.participants)} participants) reaches power "
        f"{s.target_power} for the primary analysis; the largest planned size ({n_min})"
    )
    stop = (
        f"Stop after {n_plan} complete sessions: {reach}, rounded up to whole blocks of "
        f"{sched.block_size} sessions (each block is exactly position-balanced). Sessions that "
        "end incomplete or are excluded are replaced by serving the same schedule entry to "
        "the next participant. No interim analyses."
    )
    plan = plan_mod.make_plan(
        s.name,
        puzzles,
        _cycled(sched.sessions, n_plan).tolist(),
        sched.block_size,
        seeds,
        description=f"{s.n_puzzles} puzzles, {s.per_session} per session, {n_plan} participants",
        created_by=f"nonolab design {_version()}",
        participants={"planned": int(n_plan), "stopping_rule": stop},
        selection={
            **selection_record(*criterion_used(s.n_puzzles, s.criterion, metrics), s.spread),
            "constraints": s.constraints.record(),
            "d_criterion": round(float(crit.iloc[0]["d_criterion"]), 4),
            "d_criterion_linear_optimum": round(d_opt, 4),
            "random_median": round(float(np.median(rand)), 4),
            **(disc.record() if disc is not None else {}),
        },
        analyses=tuple(analyses_rec),
        schedule_extra={
            "method": sched.method,
            "balance": {k: v for k, v in planned_balance.items() if k != "design"},
        },
    )
    plan_mod.write_plan(plan, out / "plan.yaml")
    plan_mod.write_study_files(plan, out / "study")
    summary = {
        "settings": s.record(),
        "seeds": seeds,
        "eligible": int(len(el)),
        "pool": int(len(pool)),
        "planned_participants": int(n_plan),
        "smallest_participants": int(n_min),
        "reached_target": planned is not None,
        "schedule_method": sched.method,
        "block_size": sched.block_size,
        "warnings": warnings,
    }
    write_json(summary, out / "design.json")
    text = preregistration(
        plan,
        s,
        power_tab,
        curve_tab,
        crit,
        balance_table(balance_rows),
        pd.DataFrame(smallest_rows),
        reference_preset,
        warnings,
    )
    if disc is not None:
        text += dsc.markdown(disc, c_rows)
    plan_mod._atomic_write(text, out / "preregistration.md")
    return summary


def criterion_used(k: int, criterion: str, metrics: Sequence[str]) -> tuple[str, list[str]]:
    """Return the criterion and the metrics a selection of ``k`` puzzles is made with when
    ``criterion`` over ``metrics`` (primary first) is asked for: a K too small to separate
    every metric (and the curvature) is chosen for the primary metric alone; too small for a
    quadratic even then, for its straight line (``d_linear``)."""
    quad = int(criterion == "d_quadratic")
    ms = list(metrics) if k > len(metrics) + quad else [metrics[0]]
    return (criterion if k > len(ms) + 1 else "d_linear"), ms


def selection_record(criterion: str, metrics: Sequence[str], spread: bool) -> dict[str, object]:
    """Return the plan's ``selection`` entries naming the criterion that chose the puzzles:
    ``criterion_id`` (:data:`~nonolab.design.selection.CRITERIA`), ``criterion`` (its
    definition, :data:`CRITERION_TEXT`, with the tie cap when ``spread``), ``spread`` and
    ``metrics`` (those of the criterion). The discriminating criterion replaces these
    (:meth:`nonolab.design.discriminate.DesignDiscrimination.record`)."""
    return {
        "criterion_id": criterion,
        "criterion": CRITERION_TEXT[criterion]
        + (
            "; at most ceil(K / 8) puzzles (or the fewest the pool allows) share a value"
            if spread
            else ""
        ),
        "spread": bool(spread),
        "metrics": list(metrics),
    }


CRITERION_TEXT = {
    "d_linear": "D-optimal for straight-line effects: det(X'X/K)^(1/q), X = [1, "
    "z(log1p(metric))...] over the eligible pool (puzzles at the ends of the range)",
    "d_quadratic": "D-optimal for a quadratic in the primary metric beside the other "
    "metrics' lines: X = [1, z, z^2 - 1, z(other metrics)...] over the eligible pool (puzzles "
    "at both ends and in the middle, so that curvature can be seen)",
}

_MODELS = {
    "spearman_bt": "Spearman rho(BT log-strength of final ratings, {m})",
    "rating_lmm": "final_difficulty ~ {m} + (1 | participant_id) + (1 | puzzle_hash)",
    "behaviour_lmm": "behaviour ~ {m} + (1 | participant_id) + (1 | puzzle_hash)",
    "moderation_lmm": (
        "final_difficulty ~ {m} * expertise_composite + (1 | participant_id) + (1 | puzzle_hash)"
    ),
    "moderation_maximal": (
        "final_difficulty ~ {m} * expertise_composite + (1 + {m} | participant_id) "
        "+ (1 | puzzle_hash)"
    ),
}
_TESTS = {
    "spearman_bt": "two-sided Spearman test (exact permutation p for K <= 8, else t approximation)",
    "rating_lmm": "REML; two-sided t test of the metric slope with Satterthwaite df",
    "behaviour_lmm": "REML; two-sided t test of the metric slope with Satterthwaite df",
    "moderation_lmm": "REML; two-sided t test of metric:expertise with Satterthwaite df",
}


def _test_text(name: str, s: DesignSettings) -> str:
    """Return the planned test of analysis ``name`` with the conventions that decide it."""
    if name == "spearman_bt":
        return _TESTS[name] + (
            "; no Bradley-Terry estimate (win graph not strongly connected): not significant"
        )
    if s.boundary == "lmertest":
        return _TESTS[name] + (
            "; a fit with a variance component at 0 is tested with the df of the model without "
            "it (lmerTest's convention)"
        )
    return _TESTS[name] + "; a fit with a variance component at 0 (no df): not significant"


def power_record(r: PowerResult, participants: int) -> dict[str, Any]:
    """Return the plan's record of one power: the power and its Monte-Carlo 95% interval
    (3 decimals: the precision a few hundred replications support), the replications, the
    share whose test is undefined (counted as not significant) and why, and for mixed models
    the share of boundary fits and the power under lmerTest's convention."""
    lo, hi = r.interval()
    out: dict[str, Any] = {
        "participants": int(participants),
        "power": round(r.power, 3),
        "mc_ci": [round(lo, 3), round(hi, 3)],
        "replications": r.replications,
        "counted_not_significant": {
            "share": round(r.undefined_share, 3),
            "reason": r.undefined_reason or "fit failed",
        },
    }
    if r.boundary_share is not None:
        out["boundary_share"] = round(r.boundary_share, 3)
        out["power_lmertest_convention"] = round(r.power_lmertest or 0.0, 3)
    return out


def _settings(name: str, s: DesignSettings) -> dict[str, Any]:
    base = {"metric": s.primary_metric, "metric_transform": "log1p_z", "missing": s.missing}
    if name == "spearman_bt":
        out = base | {"rho": s.rho, "bt_ridge": 0.01, "rating": "final_difficulty"}
        used = ("rho", "rating.")
    elif name == "behaviour_lmm":
        out = base | {"effect_sd_units": s.behaviour.slope, **s.behaviour.record()}
        used = ("behaviour.",)
    else:
        out = base | s.rating.record()
        used = ("rating.",)
    src = [dict(e) for e in s.effect_sources if str(e["field"]).startswith(used)]
    return out | ({"effect_sources": src} if src else {})


def _design(
    queues: np.ndarray,
    vals: np.ndarray,
    pool: pd.DataFrame,
    metric: str,
    missing: float,
    truth: str = "linear",
) -> Design:
    """Return the :class:`Design` of ``queues`` over puzzles with ``metric`` counts ``vals``,
    latent difficulty on ``pool``'s scale: linear in it, or (``truth`` ``tanh``) in
    ``tanh`` of it, re-standardised over the pool (:func:`curved`)."""
    scores, z = pool_scales(pool, metric, vals)
    if truth != "linear":
        ps, pz = pool_scales(pool, metric, pool[metric].to_numpy(dtype=float))
        scores, z = curved(scores, ps, truth), curved(z, pz, truth)
    return Design(queues, vals, missing, scores, z)


def curved(v: np.ndarray, pool_v: np.ndarray, truth: str = "tanh") -> np.ndarray:
    """Return the curved truth's latent scale: ``f(v)`` standardised with the mean and SD of
    ``f`` over the pool's values ``pool_v`` (``f = tanh``: steepest in the middle of the pool,
    flat at both ends, where a straight-line design puts its puzzles)."""
    if truth != "tanh":
        raise ValueError(f"unknown curved truth {truth!r} (known: tanh)")
    f, fp = np.tanh(v), np.tanh(pool_v)
    return (f - fp.mean()) / fp.std()


#: the fewest sessions a design's schedule holds (whole blocks, each exactly balanced)
SCHEDULE_SESSIONS = 600


def schedule_length(k: int, searched: int) -> int:
    """Return the number of sessions to schedule for ``k`` puzzles: at least
    :data:`SCHEDULE_SESSIONS` and ``searched`` (the largest design the power search may
    visit), rounded up to whole blocks of ``k``."""
    n = max(SCHEDULE_SESSIONS, searched, k)
    return -(-n // k) * k


def _cycled(sessions: np.ndarray, n: int) -> np.ndarray:
    """Return the first ``n`` sessions (a reference schedule shorter than ``n`` is repeated;
    the designed schedules are long enough, :func:`schedule_length`)."""
    return sessions[np.arange(n) % len(sessions)]


def _smallest(
    grid: dict[int, float], target: float, power_at: Callable[[int], float]
) -> int | None:
    """Return the smallest N whose power reaches ``target``: the smallest grid point that does,
    refined by bisection between it and the grid point below (or searched up to 4x the grid's
    maximum by doubling when none does); None when even that does not reach it."""
    ns = sorted(grid)
    hit = [n for n in ns if grid[n] >= target]
    if hit:
        hi = hit[0]
        below = [n for n in ns if n < hi]
        lo = below[-1] if below else 1
    else:
        lo, hi = ns[-1], ns[-1] * 2
        while power_at(hi) < target:
            lo, hi = hi, hi * 2
            if hi > 4 * ns[-1]:
                return None
    while hi - lo > max(1, hi // 50):
        mid = (lo + hi) // 2
        if power_at(mid) >= target:
            hi = mid
        else:
            lo = mid
    return int(hi)


def _ordered(df: pd.DataFrame) -> pd.DataFrame:
    first = [c for c in ("design", "curve") if c in df]
    rest = [c for c in POWER_COLUMNS if c in df]
    return df[first + rest + [c for c in df if c not in first + rest]]


def _version() -> str:
    from importlib import metadata

    try:
        return metadata.version("nonolab")
    except metadata.PackageNotFoundError:
        return "unknown"


def settings_with(s: DesignSettings, **kw: Any) -> DesignSettings:
    """Return ``s`` with fields replaced (``rating``/``behaviour`` overrides as mappings)."""
    if isinstance(kw.get("rating"), dict):
        kw["rating"] = replace(s.rating, **kw["rating"])
    if isinstance(kw.get("behaviour"), dict):
        kw["behaviour"] = replace(s.behaviour, **kw["behaviour"])
    return replace(s, **kw)


def settings_with_effects(
    s: DesignSettings,
    results_dir: str | Path | None = None,
    *,
    behaviour: str = "pause_count",
    effects_file: str | Path | None = None,
) -> DesignSettings:
    """Return ``s`` with the effect sizes of a study's fits (``results_dir``:
    :func:`nonolab.design.effects.effects_from_results` for ``s``'s primary metric, solver and
    encoding and the ``behaviour`` outcome) and a user's YAML (``effects_file``:
    :func:`load_effects`) on top, each value's source recorded
    (:func:`nonolab.design.effects.merge_effects`); ``s`` itself when neither is given."""
    from nonolab.design.effects import effects_from_results, merge_effects

    fitted = None
    if results_dir is not None:
        fitted = effects_from_results(
            results_dir,
            metric=s.primary_metric,
            solver=s.solver,
            encoding=s.encoding,
            behaviour=behaviour,
        )
    if fitted is None and effects_file is None:
        return s
    user = load_effects(effects_file) if effects_file is not None else None
    return settings_with(s, **merge_effects(fitted, user, effects_file))


def load_effects(path: str | Path) -> dict[str, dict[str, float]]:
    """Return user-given effect sizes from a YAML/JSON file with optional ``rating:`` and
    ``behaviour:`` mappings (field names of :class:`RatingModel` / :class:`BehaviourModel`)."""
    import yaml

    data = yaml.safe_load(Path(path).read_text(encoding="utf-8")) or {}
    unknown = set(data) - {"rating", "behaviour"}
    if unknown:
        raise ValueError(f"{path}: unknown sections {sorted(unknown)} (use rating, behaviour)")
    return {k: dict(v) for k, v in data.items()}


__all__ = [
    "ANALYSES",
    "DesignSettings",
    "Reference",
    "load_effects",
    "settings_with_effects",
    "reference_from_study",
    "run_design",
    "settings_with",
]
