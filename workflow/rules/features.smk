# Stage: features. Ingest tables + pause threshold -> per-attempt behavioural features.
# The threshold comes from results/pauses/threshold.json (`threshold_used_s`), written by the
# pauses stage; DAG: ingest -> pauses -> features.


rule features:
    input:
        tables=expand("results/ingest/{t}.parquet", t=INGEST_TABLES),
        # read_ingest checks the folder against it: one run's complete output, never a mix
        manifest="results/ingest/manifest.json",
        threshold="results/pauses/threshold.json",
    output:
        csv=report(
            "results/features/attempts.csv",
            caption="../report/features_attempts.rst",
            category="Features",
        ),
        parquet="results/features/attempts.parquet",
    log:
        "results/logs/features.log",
    benchmark:
        "results/bench/rules/features.tsv"
    conda:
        "../../envs/nonolab.yaml"
    threads: 1
    resources:
        mem_mb=2000,
        runtime=10,
    params:
        keep_initial_rating_sentinel=keep_initial_rating_sentinel(),
    script:
        "../../scripts/features.py"


ALL_TARGETS.extend(["results/features/attempts.csv"])
