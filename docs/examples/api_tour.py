"""A study analysed from Python, step by step, with the entry points of ``import nonolab``.

Run it from the repository root (``python docs/examples/api_tour.py [STUDY_DIR] [--preset
NAME]``; default: the example study, preset ``auto`` as ``nonolab run`` picks it). Each step
prints what it computed; the workflow (``nonolab run``) computes the same tables with the
settings of config/config.yaml and writes them with provenance.
"""

# %% Set-up: the study folder (the example study unless one is given) and its preset
import argparse
from pathlib import Path

import nonolab

cli = argparse.ArgumentParser(description=__doc__.splitlines()[0])
cli.add_argument("study_dir", nargs="?", default="data/example-study", type=Path)
cli.add_argument("--preset", default="auto", help="preset name or file (default: auto, as the CLI)")
args = cli.parse_args()
study_dir = args.study_dir

# %% 1. Ingest: the logs as tidy tables, and the ledger of everything left out
study = nonolab.ingest_study(study_dir, preset=args.preset)
s = study.summary
print(f"{s['participants']} participants, {s['attempts']} attempts, {s['ledger_rows']} ledger rows")

# %% 2. Pause threshold: log-normal mixtures of the gaps between interactions. threshold="auto"
# is the workflow's default: the preset's published threshold when it names one, else the
# fitted one (the threshold chain: it always ends in a threshold and says which step gave it).
gaps = nonolab.interaction_gaps(study.tables["events"])["gap_s"]
model = nonolab.fit_pause_model(
    gaps, components=3, threshold="auto", preset=args.preset, study_dir=study_dir
)
print(f"{model.n_gaps} gaps; pause threshold {model.threshold_s:.3g} s")
print(" ".join(model.provenance["threshold_sentences"]))

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
