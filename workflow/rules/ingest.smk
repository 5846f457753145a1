# Stage: ingest. Raw study logs -> tidy tables + exclusion ledger (nonolab.study.ingest).
INGEST_TABLES = [
    "events",
    "attempts",
    "participants",
    "ratings",
    "survey_texts",
    "puzzles",
    "ledger",
]
INGEST_CSV = ["attempts", "participants", "ratings", "ledger"]


rule ingest:
    input:
        puzzles=study_path("puzzle_file"),
        preset=PRESET_FILE,
        logs=study_logs(),
        # the ingest cross-checks the coded responses against the logs and the codebook
        coded=[p for p in (CODED_RESPONSES, CODEBOOK_FILE) if p and Path(p).is_file()],
    output:
        parquet=expand("results/ingest/{t}.parquet", t=INGEST_TABLES),
        csv=[
            report(
                f"results/ingest/{t}.csv",
                caption=f"../report/ingest_{t}.rst",
                category="Ingest",
            )
            for t in INGEST_CSV
        ],
        summary="results/ingest/summary.json",
        study="results/ingest/study.json",
        # sha256 of every file and the run id (nonolab.study.ingest.write_ingest); a results
        # folder written before it existed has none, so its ingest is planned again
        manifest="results/ingest/manifest.json",
    log:
        "results/logs/ingest.log",
    benchmark:
        "results/bench/rules/ingest.tsv"
    conda:
        "../../envs/nonolab.yaml"
    threads: 4  # large studies: one log-reading process per thread (scaled down to --cores)
    resources:
        mem_mb=2000,
        runtime=10,
    params:
        preset_name=PRESET_NAME,
    script:
        "../../scripts/ingest.py"


ALL_TARGETS.extend(["results/ingest/summary.json", "results/ingest/manifest.json"])
