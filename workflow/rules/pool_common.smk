# Helpers of the pool stage (workflow/rules/pool.smk): pool settings and shard file lists.

POOLS = ("pool", "pool_paper")

# Rule-local wildcard constraints (a global block would also bind other stages' wildcards).
POOL_WILDCARDS = {"pool": "|".join(POOLS), "shard": r"\d+"}


def study_grid():
    """Return ``(grid, reason)``: the pool grid matching the study's puzzles
    (nonolab.measure.sweep.study_pool_grid), or None and why no candidate pool can match them.
    """
    from nonolab.measure.sweep import study_pool_grid
    from nonolab.sat.puzzles import load_study_puzzles

    path = study_path("puzzle_file")
    try:
        puzzles = load_study_puzzles(path)
    except (
        Exception
    ) as e:  # the ingest reports it in full; the pool only needs the sizes
        return None, f"the study's puzzle file {path} cannot be read ({e})"
    return study_pool_grid(puzzles)


STUDY_GRID, POOL_SKIPPED = study_grid()
if all(config["pool"].get(k) is not None for k in ("height", "width", "filled")):
    POOL_SKIPPED = None  # the config names the grid: generate that pool


def pool_settings(pool):
    """Return the effective settings of pool `pool` (`pool` or `pool_paper`) as a plain dict:
    the config's, with a null height, width or filled taken from the study's puzzles
    (:func:`study_grid`). Raises ValueError when the study's puzzles give none
    (``POOL_SKIPPED`` says why)."""
    cfg = dict(config["pool"])
    for key in ("height", "width", "filled"):
        if cfg.get(key) is None:
            if STUDY_GRID is None:
                raise ValueError(
                    f"config pool ({pool}): no pool.{key}, and {POOL_SKIPPED}"
                )
            cfg[key] = STUDY_GRID[key]
    if pool == "pool_paper":
        cfg.update(cfg.get("paper", {}))
    cfg.pop("paper", None)
    if cfg.get("seed") is None:
        cfg["seed"] = config["seed"]
    if not 1 <= int(cfg["shards"]) <= int(cfg["size"]):
        raise ValueError(
            f"config pool ({pool}): shards={cfg['shards']} must be between 1 and size={cfg['size']}"
        )
    if int(cfg["filled"]) > int(cfg["height"]) * int(cfg["width"]):
        raise ValueError(
            f"config pool ({pool}): filled={cfg['filled']} cells do not fit a "
            f"{cfg['height']}x{cfg['width']} grid"
        )
    return cfg


def pool_shard_files(kind):
    """Input function: the `kind` table (`pool`, `metrics`, `timing`) of every shard."""

    def files(wildcards):
        n = int(pool_settings(wildcards.pool)["shards"])
        return expand(
            "results/{pool}/shard_{shard}/{kind}.csv",
            pool=wildcards.pool,
            shard=range(n),
            kind=kind,
        )

    return files


def pool_shard_runtime(wildcards):
    """Minutes for one shard job. Measured on one core (docs/decisions.md, "Scale-out"): a 10x10
    puzzle with 50 filled cells takes about 8 ms to generate (uniqueness proofs of the rejected
    grids included) and well under 1 ms per solver run. Estimate 0.05 s per puzzle and run,
    scaled by grid area relative to 10x10 (larger grids are harder: raise it with
    --set-resources pool_shard:runtime=... when the grid grows), plus 5 minutes of start-up.
    """
    cfg = pool_settings(wildcards.pool)
    per_shard = -(-int(cfg["size"]) // int(cfg["shards"]))
    runs = 1 + len(cfg["solvers"]) * len(cfg["encodings"])
    area = int(cfg["height"]) * int(cfg["width"]) / 100
    return 5 + int(per_shard * runs * area * 0.05 / 60)
