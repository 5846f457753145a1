# Stage: pool. A pool of random unique puzzles, generated and measured in independent shard jobs,
# merged, then the paper's selection (METHODS 1): drop the top fraction by the selection metric,
# take the lowest, the nearest-median and the highest. Library: nonolab.measure.sweep.
#
# Two pools, same rules: `pool` (config pool.size / pool.shards; part of `all`, small by default)
# and `pool_paper` (config pool.paper.size / pool.paper.shards; the paper's 1,000-puzzle pool,
# run it with `snakemake pool_paper`). A 100,000-puzzle pool is a config change: an extra
# config file with `pool: {size: 100000, shards: 500}` after config/config.yaml, on a cluster
# profile (docs/cluster.md).


include: "pool_common.smk"


rule pool_shard:
    output:
        pool="results/{pool}/shard_{shard}/pool.csv",
        metrics="results/{pool}/shard_{shard}/metrics.csv",
        timing="results/{pool}/shard_{shard}/timing.csv",
    log:
        "results/logs/{pool}/shard_{shard}.log",
    benchmark:
        "results/bench/rules/pool_shard_{pool}_{shard}.tsv"
    wildcard_constraints:
        **POOL_WILDCARDS,
    conda:
        "../../envs/nonolab.yaml"
    threads: 1
    resources:
        mem_mb=1000,
        runtime=pool_shard_runtime,
    params:
        settings=lambda wildcards: pool_settings(wildcards.pool),
        shard=lambda wildcards: int(wildcards.shard),
    script:
        "../../scripts/pool_shard.py"


rule pool_merge:
    input:
        pool=pool_shard_files("pool"),
        metrics=pool_shard_files("metrics"),
        timing=pool_shard_files("timing"),
    output:
        pool="results/{pool}/pool.csv",
        metrics="results/{pool}/metrics.csv",
        timing="results/{pool}/timing.csv",
        excluded="results/{pool}/excluded.csv",
    log:
        "results/logs/{pool}/merge.log",
    benchmark:
        "results/bench/rules/pool_merge_{pool}.tsv"
    wildcard_constraints:
        **POOL_WILDCARDS,
    conda:
        "../../envs/nonolab.yaml"
    threads: 1
    resources:
        mem_mb=2000,
        runtime=10,
    params:
        settings=lambda wildcards: pool_settings(wildcards.pool),
    script:
        "../../scripts/pool_merge.py"


rule pool_select:
    input:
        pool="results/{pool}/pool.csv",
        metrics="results/{pool}/metrics.csv",
        excluded="results/{pool}/excluded.csv",
    output:
        selected=report(
            "results/{pool}/selected.csv",
            caption="../report/pool_selected.rst",
            category="Puzzle pool",
        ),
        puzzles="results/{pool}/selected_puzzles.json",
    log:
        "results/logs/{pool}/select.log",
    benchmark:
        "results/bench/rules/pool_select_{pool}.tsv"
    wildcard_constraints:
        **POOL_WILDCARDS,
    conda:
        "../../envs/nonolab.yaml"
    threads: 1
    resources:
        mem_mb=2000,
        runtime=10,
    params:
        settings=lambda wildcards: pool_settings(wildcards.pool),
    script:
        "../../scripts/pool_select.py"


rule pool:
    input:
        "results/pool/selected.csv",
        "results/pool/selected_puzzles.json",


rule pool_paper:
    input:
        "results/pool_paper/selected.csv",
        "results/pool_paper/selected_puzzles.json",


rule pool_skipped:
    output:
        "results/pool/skipped.json",
    log:
        "results/logs/pool/skipped.log",
    benchmark:
        "results/bench/rules/pool_skipped.tsv"
    conda:
        "../../envs/nonolab.yaml"
    threads: 1
    resources:
        mem_mb=200,
        runtime=1,
    params:
        reason=POOL_SKIPPED,
    script:
        "../../scripts/pool_skipped.py"


# The pool follows the study's puzzles (pool_common.smk: study_grid); without one grid size
# the pool stages are skipped and results/pool/skipped.json says why.
# The pool is a simulation extra (config `extras`): `nonolab run pool` makes it.
if "pool" in EXTRAS:
    if POOL_SKIPPED is None:
        ALL_TARGETS.extend(
            ["results/pool/selected.csv", "results/pool/selected_puzzles.json"]
        )
    else:
        ALL_TARGETS.append("results/pool/skipped.json")


# `nonolab run extras`: every simulation extra (power grid, pool, recovery).
rule extras:
    input:
        "results/tables/power.csv",
        "results/figures/power.png",
        "results/tables/recovery.csv",
        *(
            ["results/pool/selected.csv", "results/pool/selected_puzzles.json"]
            if POOL_SKIPPED is None
            else ["results/pool/skipped.json"]
        ),
