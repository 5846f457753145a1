# Helpers of the simulate stage (included by simulate.smk).


def simulate_settings(part):
    """Return config simulate.<part> with the seed resolved (null = the master seed)."""
    cfg = dict(config.get("simulate", {}).get(part, {}))
    if cfg.get("seed") is None:
        cfg["seed"] = int(config["seed"])
    return cfg


POWER = simulate_settings("power")


def preset_per_session():
    """Puzzles per session the preset names: its number, or the largest of a list or range."""
    value = PRESET.get("puzzles_per_session", 3)
    if isinstance(value, dict):
        value = value.get("max", value.get("min", 3))
    if isinstance(value, list):
        value = max(value)
    return int(value)


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
