# Helpers of the simulate stage (included by simulate.smk).


def simulate_settings(part):
    """Return config simulate.<part> with the seed resolved (null = the master seed)."""
    cfg = dict(config.get("simulate", {}).get(part, {}))
    if cfg.get("seed") is None:
        cfg["seed"] = int(config["seed"])
    return cfg


POWER = simulate_settings("power")


def preset_per_session():
    """Puzzles per session the preset names: its number, or the largest of a set or range
    (nonolab.study.presets.Preset.puzzles_per_session)."""
    return _PRESET.puzzles_per_session


# Each simulated participant rates the study's number of puzzles per session (config
# simulate.power.per_session overrides); the captions read it from the config.
if POWER.get("per_session") is None:
    POWER["per_session"] = max(2, preset_per_session())
config.setdefault("simulate", {}).setdefault("power", {})["per_session"] = POWER[
    "per_session"
]
# grid cells with fewer puzzles than a participant rates cannot be drawn
POWER["n_puzzles"] = [
    n for n in POWER.get("n_puzzles", []) if n >= POWER["per_session"]
]


def study_puzzle_count():
    """Number of puzzles in the study's puzzle file (0 when it cannot be read)."""
    from nonolab.sat.puzzles import load_study_puzzles

    try:
        return len(load_study_puzzles(study_path("puzzle_file")))
    except Exception:  # the ingest reports an unreadable puzzle file in full
        return 0


# The recovery's pipeline studies have the study's number of puzzles unless the config names
# one; the captions read it from the config.
_recovery = config.setdefault("simulate", {}).setdefault("recovery", {})
if _recovery.get("pipeline_puzzles") is None:
    _recovery["pipeline_puzzles"] = max(3, study_puzzle_count())
