"""A study analysed from Python, step by step, with the entry points of ``import nonolab``.

Run it from the repository root (``python docs/examples/api_tour.py [STUDY_DIR]``; default: the
example study). Each step prints what it computed; the workflow (``nonolab run``) computes the
same tables with the settings of config/config.yaml and writes them with provenance.
"""

# %% Set-up: the study folder (the example study unless one is given)
import sys
from pathlib import Path

import nonolab

study_dir = Path(sys.argv[1]) if len(sys.argv) > 1 else Path("data/example-study")

# %% 1. Ingest: the logs as tidy tables, and the ledger of everything left out
study = nonolab.ingest_study(study_dir)
s = study.summary
print(f"{s['participants']} participants, {s['attempts']} attempts, {s['ledger_rows']} ledger rows")

# %% 2. Pause threshold: Gaussian mixtures on log(gap between interactions)
gaps = nonolab.interaction_gaps(study.tables["events"])["gap_s"]
model = nonolab.fit_pause_model(gaps)
print(
    f"{model.n_gaps} gaps; pause threshold {model.threshold_s:.3f} s (EM converged: {model.converged})"
)

# %% 3. Features: one row per attempt, pauses counted with that threshold
attempts = nonolab.attempt_features(study.tables, model.threshold_s)
print(attempts[["participant_id", "puzzle_id", "time_to_solve_s", "pause_count"]].head())

# %% 4. Bradley-Terry ranking of reported difficulty (100 participant-bootstrap resamples)
strengths = nonolab.bt_ranking(attempts, n_boot=100, seed=1)
print(strengths[["puzzle_id", "strength", "ci_low", "ci_high", "rank"]].to_string(index=False))

# %% 5. SAT solver counters of the study's puzzles, and Table 1 (Spearman rho, exact p)
metrics = nonolab.sat_metrics(nonolab.study_puzzles(study), solvers=["minisat22"])
t1 = nonolab.table1(strengths, attempts, metrics)
print(t1[["metric", "bt_rho", "bt_p", "raw_rho", "raw_p", "p_method"]].to_string(index=False))

# %% 6. A mixed model: pauses ~ conflicts, crossed random intercepts (participant, puzzle)
conflicts = metrics.set_index("puzzle_id")["conflicts"]
data = attempts.assign(conflicts=attempts["puzzle_id"].map(conflicts).astype(float))
data["conflicts_z"] = (data["conflicts"] - data["conflicts"].mean()) / data["conflicts"].std()
fit = nonolab.fit_mixed_model(data, "pause_count ~ conflicts_z")
print(
    f"pause_count ~ conflicts_z: slope {fit.params['conflicts_z']:.3f} (SE {fit.bse['conflicts_z']:.3f})"
)

# %% 7. The SAT toolkit: generate puzzles with a unique solution and solve one
puzzles = nonolab.generate_puzzles(2, 8, 8, seed=7)
result = nonolab.solve(puzzles[0])
print(f"generated {len(puzzles)} 8x8 puzzles; the first is {result.status}")
assert result.status == "unique"
