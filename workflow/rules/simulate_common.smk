# Helpers of the simulate stage (included by simulate.smk).


def simulate_settings(part):
    """Return config simulate.<part> with the seed resolved (null = the master seed)."""
    cfg = dict(config.get("simulate", {}).get(part, {}))
    if cfg.get("seed") is None:
        cfg["seed"] = int(config["seed"])
    return cfg


POWER = simulate_settings("power")
