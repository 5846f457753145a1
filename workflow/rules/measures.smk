# Stage: measures. Every registered difficulty measure (nonolab.measure.registry: structure,
# human-strategy, SAT effort for every solver x encoding) of the served puzzles, and of a puzzle
# pool in independent shard jobs (cluster-ready). Definitions: docs/measures.md.
#
# Config (optional block `measures`): `pool`, a packed pool file (e.g. the public study's
# nonograms10x10.txt; absolute, or relative to the working directory), default the workflow's
# own pool (results/pool/pool.csv); `shards` (default 10). The pool is not part of `all`:
# `snakemake measures_pool`.

MEASURES_CONFIG = config.get("measures") or {}
MEASURES_POOL = MEASURES_CONFIG.get("pool") or "results/pool/pool.csv"
MEASURES_SHARDS = int(MEASURES_CONFIG.get("shards", 10))


rule measures_served:
    input:
        puzzles="results/ingest/puzzles.parquet",
    output:
        table="results/measures/served.csv",
        timing="results/measures/served_timing.csv",
        registry="results/measures/registry.csv",
    log:
        "results/logs/measures/served.log",
    benchmark:
        "results/bench/rules/measures_served.tsv"
    conda:
        "../../envs/nonolab.yaml"
    threads: 1
    resources:
        mem_mb=1000,
        runtime=10,
    params:
        solvers=config["sat"]["solvers"],
        encodings=config["sat"]["encodings"],
    script:
        "../../scripts/measures_table.py"


rule measures_pool_shard:
    input:
        pool=MEASURES_POOL,
    output:
        table="results/measures/pool/shard_{shard}.csv",
        timing="results/measures/pool/shard_{shard}_timing.csv",
    log:
        "results/logs/measures/pool_shard_{shard}.log",
    benchmark:
        "results/bench/rules/measures_pool_shard_{shard}.tsv"
    wildcard_constraints:
        shard=r"\d+",
    conda:
        "../../envs/nonolab.yaml"
    threads: 1
    resources:
        mem_mb=1000,
        # measured: 0.2 s per 10x10 puzzle on one core with the study's three solvers x three
        # encodings (docs/measures.md); a 1,000-puzzle pool in 10 shards: about 20 s a shard
        runtime=30,
    params:
        shard=lambda wildcards: int(wildcards.shard),
        shards=MEASURES_SHARDS,
        solvers=config["sat"]["solvers"],
        encodings=config["sat"]["encodings"],
    script:
        "../../scripts/measures_table.py"


rule measures_pool:
    input:
        tables=expand(
            "results/measures/pool/shard_{shard}.csv", shard=range(MEASURES_SHARDS)
        ),
        timings=expand(
            "results/measures/pool/shard_{shard}_timing.csv",
            shard=range(MEASURES_SHARDS),
        ),
    output:
        table="results/measures/pool.csv",
        timing="results/measures/pool_timing.csv",
    log:
        "results/logs/measures/pool_merge.log",
    benchmark:
        "results/bench/rules/measures_pool_merge.tsv"
    conda:
        "../../envs/nonolab.yaml"
    threads: 1
    resources:
        mem_mb=2000,
        runtime=5,
    script:
        "../../scripts/measures_merge.py"


ALL_TARGETS.extend(["results/measures/served.csv", "results/measures/registry.csv"])


rule measure_evaluation:
    input:
        attempts="results/features/attempts.csv",
        strengths="results/tables/bt_strengths.csv",
        measures="results/measures/served.csv",
        registry="results/measures/registry.csv",
    output:
        leaderboard="results/tables/measure_leaderboard.csv",
        tests="results/tables/measure_tests.csv",
        oos="results/tables/measure_oos.csv",
        figure="results/figures/measure_leaderboard.png",
    log:
        "results/logs/measures/evaluation.log",
    benchmark:
        "results/bench/rules/measure_evaluation.tsv"
    conda:
        "../../envs/nonolab.yaml"
    threads: 1
    resources:
        mem_mb=2000,
        runtime=30,
    params:
        n_perm=MEASURES_CONFIG.get("n_perm", 999),
        seed=config["seed"],
    script:
        "../../scripts/measure_evaluation.py"


ALL_TARGETS.extend(
    [
        "results/tables/measure_leaderboard.csv",
        "results/tables/measure_tests.csv",
        "results/figures/measure_leaderboard.png",
    ]
)
