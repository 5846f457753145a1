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
                lmm_power(a, design, s.lmm_replications, seed, s.rating, s.behaviour, s.alpha)
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
) -> Reference:
    """Return the public study's design as a :class:`Reference`, read at run time from the
    study folder: its puzzles (metrics computed here with ``solver`` on ``encoding``, in the
    puzzle file's order), its schedule file, the ``served`` sequences the sessions drew from
    it (48 of 120) and its ``participants`` (67 after the ingest)."""
    from nonolab.sat.puzzles import load_study_puzzles
    from nonolab.sat.solvers import solver_records

    d = Path(study_dir)
    puzzles = load_study_puzzles(d / puzzle_file)
    rec = pd.DataFrame(solver_records(puzzles, [encoding], [solver]))
    sched = read_schedule_file(str(d / schedule_file)) if (d / schedule_file).exists() else None
    return Reference("paper", rec, sched, served, participants)


def _reference_design(ref: Reference, missing: float, pool: pd.DataFrame, metric: str) -> Design:
    """Return the reference design: its puzzles and, per participant, the served sequences in
    schedule order, cycled over the ``served`` ones when there are more participants."""
    if ref.schedule is None:
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
    if s.study_metric_sd is not None:  # fitted effects: per SD of the study's puzzles
        from nonolab.design.effects import to_pool_scale

        pool_sd = float(np.log1p(el[s.primary_metric].to_numpy(dtype=float)).std())
        r, b, src = to_pool_scale(
            s.rating, s.behaviour, s.effect_sources, s.study_metric_sd, pool_sd
        )
        s = replace(s, rating=r, behaviour=b, effect_sources=src)
    metrics = list(s.selection_metrics)
    if s.primary_metric not in metrics:
        metrics = [s.primary_metric, *metrics]
    if s.n_puzzles <= len(metrics):  # too few puzzles to separate every metric
        metrics = [s.primary_metric]
    ks = sorted(set(s.k_curve) | {s.n_puzzles})
    # a K too small to separate every metric is chosen for the primary metric alone
    chosen = {
        k: select_puzzles(
            el, k, metrics if k > len(metrics) else [s.primary_metric], seed=seeds["selection"]
        )
        for k in ks
    }
    disc = None
    if s.discriminate:  # the discriminating criterion replaces D-optimality (its module)
        from nonolab.design import discriminate as dsc

        disc = dsc.discriminating_choice(
            el, chosen, s.discriminate, s.n_puzzles, seeds["selection"], s.discriminate_weight
        )
    sel = el.iloc[chosen[s.n_puzzles]].reset_index(drop=True)
    X = design_matrix(el, metrics)
    d_opt = float(
        np.exp(
            np.linalg.slogdet(X[chosen[s.n_puzzles]].T @ X[chosen[s.n_puzzles]] / s.n_puzzles)[1]
            / X.shape[1]
        )
    )
    rand = random_criteria(
        el, s.n_puzzles, metrics, s.random_selections, seeds["random_selections"]
    )
    crit_rows = [
        selection_summary(f"d_optimal_k{s.n_puzzles}", sel, el, metrics, d_opt, rand),
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
        crit["selection"] = crit["selection"].replace(f"d_optimal_k{s.n_puzzles}", disc.label)
    crit = crit[
        [c for c in COMPARISON_COLUMNS if c in crit]
        + [c for c in crit if c not in COMPARISON_COLUMNS]
    ]
    sel_table = sel.drop(columns=["puzzle"]).copy()
    sel_table.insert(0, "id", range(len(sel_table)))

    # -- schedule ---------------------------------------------------------------------------
    n_max = max(max(s.participants), s.n_puzzles)
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
        sk = balanced_schedule(k, min(s.per_session, k), max(n_max, n_plan), seeds["schedule"])
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
    planned_rows = _power_all(s, plan_design, seeds["power"], analyses, lambda: None)
    ref_rows: list[PowerResult] = []
    balance_rows = []
    n_blocks = -(-n_plan // sched.block_size)
    for b in range(1, n_blocks + 1):
        balance_rows.append(
            schedule_balance(
                sched.sessions, s.n_puzzles, f"planned: {b} block(s)", b * sched.block_size
            )
        )
    planned_balance = schedule_balance(
        _cycled(sched.sessions, n_plan), s.n_puzzles, "planned: all sessions"
    )
    balance_rows.append(planned_balance)
    if reference is not None:
        rd = _reference_design(reference, s.missing, el, s.primary_metric)
        ref_rows = _power_all(s, rd, seeds["power"], analyses, lambda: tick("reference"))
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
                    rd.queues, len(reference.metrics), f"{reference.name}: all sessions"
                )
            )
    maximal_row = None
    if s.maximal_replications:
        maximal_row = maximal_power(
            plan_design, s.maximal_replications, seeds["power"], s.rating, s.alpha, s.maximal_df
        )
        tick("maximal")

    # -- tables ------------------------------------------------------------------------------
    power_tab = pd.DataFrame(
        [{"design": "planned", **r.row()} for r in planned_rows]
        + ([{"design": "planned", **maximal_row.row()}] if maximal_row else [])
        + [{"design": reference.name if reference else "", **r.row()} for r in ref_rows]
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
    analyses_rec = []
    for name, kind, role, family in ANALYSES:
        r = power_by[name]
        lo, hi = r.interval()
        analyses_rec.append(
            {
                "name": name,
                "kind": kind,
                "role": role,
                "family": family,
                "model": _MODELS[name].format(m=s.primary_metric),
                "test": _TESTS[name],
                "alpha": s.alpha,
                "settings": _settings(name, s),
                "power": {
                    "participants": n_plan,
                    "power": round(r.power, 6),
                    "mc_ci": [round(lo, 6), round(hi, 6)],
                    "replications": r.replications,
                },
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
        lo, hi = maximal_row.interval()
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
                "power": {
                    "participants": n_plan,
                    "power": round(maximal_row.power, 6),
                    "mc_ci": [round(lo, 6), round(hi, 6)],
                    "replications": maximal_row.replications,
                },
            }
        )
    stop = (
        f"Stop after {n_plan} complete sessions: the smallest number reaching power "
        f"{s.target_power} for the primary analysis ({n_min}), rounded up to whole blocks of "
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
            "criterion": "D-optimal: det(X'X/K)^(1/q), X = [1, z(log1p(metric))...] over the "
            "eligible pool",
            "metrics": metrics,
            "constraints": s.constraints.record(),
            "d_criterion": round(d_opt, 8),
            "random_median": round(float(np.median(rand)), 8),
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
    )
    if disc is not None:
        text += dsc.markdown(disc, c_rows)
    plan_mod._atomic_write(text, out / "preregistration.md")
    return summary


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
    queues: np.ndarray, vals: np.ndarray, pool: pd.DataFrame, metric: str, missing: float
) -> Design:
    """Return the :class:`Design` of ``queues`` over puzzles with ``metric`` counts ``vals``,
    latent difficulty on ``pool``'s scale."""
    scores, z = pool_scales(pool, metric, vals)
    return Design(queues, vals, missing, scores, z)


def _cycled(sessions: np.ndarray, n: int) -> np.ndarray:
    """Return the first ``n`` sessions, repeating the schedule when it is shorter."""
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
