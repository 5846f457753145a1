#!/usr/bin/env bash
# cluster-generic submit command for the local-cluster profile: run the Snakemake job script
# given as the last argument in a fresh, detached bash process (its own session), and print
# that process's id as the job id. The exit code goes to $NONOLAB_LOCAL_CLUSTER_DIR/<id>.rc
# (default .snakemake/local-cluster/ under the working directory), read by status.sh.
set -euo pipefail
jobscript="${!#}"
state="${NONOLAB_LOCAL_CLUSTER_DIR:-.snakemake/local-cluster}"
mkdir -p "$state"
state="$(cd "$state" && pwd)"
# The child writes its exit code to <its pid>.rc.tmp, then renames it (atomic for status.sh).
setsid bash -c 'bash "$1" >"$2/$$.out" 2>&1; rc=$?; echo "$rc" >"$2/$$.rc.tmp"; mv "$2/$$.rc.tmp" "$2/$$.rc"' \
  local-cluster-job "$jobscript" "$state" </dev/null >/dev/null 2>&1 &
echo "$!"
