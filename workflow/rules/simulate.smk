# Stage: simulate. Power analysis of the study design (METHODS 8 under the study's design) and
# parameter recovery on simulated studies. Library: nonolab.sim.power, nonolab.sim.recovery.
#
# power_cell runs one (puzzles, participants) design cell: a cluster runs the cells in parallel;
# power_merge gathers them into results/tables/power.csv, power_figure draws it.
# Both are simulation extras (config `extras`): not part of `all` unless asked for; the targets
# `power`, `recovery` (and `extras`, in pool.smk) run them.


include: "simulate_common.smk"


rule power_cell:
    output:
        "results/power/cells/p{n_puzzles}_n{n_participants}.csv",
    log:
        "results/logs/power/p{n_puzzles}_n{n_participants}.log",
    benchmark:
        "results/bench/rules/power_cell_p{n_puzzles}_n{n_participants}.tsv"
    wildcard_constraints:
        n_puzzles=r"\d+",
        n_participants=r"\d+",
    conda:
        "../../envs/nonolab.yaml"
    threads: 1
    resources:
        mem_mb=1000,
        runtime=30,
    params:
        settings=POWER,
        n_puzzles=lambda wildcards: int(wildcards.n_puzzles),
        n_participants=lambda wildcards: int(wildcards.n_participants),
    script:
        "../../scripts/power_cell.py"


rule power_study:
    input:
        study="results/ingest/study.json",
        attempts="results/ingest/attempts.parquet",
    output:
        "results/power/study.csv",
    log:
        "results/logs/power/study.log",
    benchmark:
        "results/bench/rules/power_study.tsv"
    conda:
        "../../envs/nonolab.yaml"
    threads: 1
    resources:
        mem_mb=1000,
        runtime=30,
    params:
        settings=POWER,
    script:
        "../../scripts/power_study.py"


rule power_merge:
    input:
        grid=expand(
            "results/power/cells/p{n_puzzles}_n{n_participants}.csv",
            n_puzzles=POWER.get("n_puzzles", []),
            n_participants=POWER.get("n_participants", []),
        ),
        study="results/power/study.csv",
    output:
        report(
            "results/tables/power.csv",
            caption="../report/power_table.rst",
            category="Simulation",
        ),
    log:
        "results/logs/power/merge.log",
    benchmark:
        "results/bench/rules/power_merge.tsv"
    conda:
        "../../envs/nonolab.yaml"
    threads: 1
    resources:
        mem_mb=1000,
        runtime=5,
    params:
        settings=POWER,
    script:
        "../../scripts/power_merge.py"


rule power_figure:
    input:
        "results/tables/power.csv",
    output:
        png=report(
            "results/figures/power.png",
            caption="../report/power_figure.rst",
            category="Simulation",
        ),
        pdf="results/figures/power.pdf",
    log:
        "results/logs/power/figure.log",
    benchmark:
        "results/bench/rules/power_figure.tsv"
    conda:
        "../../envs/nonolab.yaml"
    threads: 1
    resources:
        mem_mb=1000,
        runtime=5,
    script:
        "../../scripts/power_figure.py"


rule recovery:
    output:
        record="results/recovery/recovery.json",
        table=report(
            "results/tables/recovery.csv",
            caption="../report/recovery.rst",
            category="Simulation",
        ),
    log:
        "results/logs/recovery.log",
    benchmark:
        "results/bench/rules/recovery.tsv"
    conda:
        "../../envs/nonolab.yaml"
    # the replications run in a second process beside the pipeline study (same record)
    threads: 2
    resources:
        mem_mb=4000,
        runtime=240,
    params:
        # the pipeline studies have the study's number of puzzles unless the config names one
        settings=simulate_settings("recovery"),
    script:
        "../../scripts/recovery.py"


# `nonolab run power`: the power grid, its table and figure.
rule power:
    input:
        "results/tables/power.csv",
        "results/figures/power.png",


# Simulation extras: part of `all` only when asked for (config or preset `extras`).
if "power" in EXTRAS:
    ALL_TARGETS.append("results/tables/power.csv")
    FIGURES.append("results/figures/power.png")
if "recovery" in EXTRAS:
    ALL_TARGETS.append("results/tables/recovery.csv")
