#!/usr/bin/env bash
# cluster-generic status command for the local-cluster profile: print running, success or
# failed for the job id (a process id printed by submit.sh).
set -uo pipefail
jobid="$1"
state="${NONOLAB_LOCAL_CLUSTER_DIR:-.snakemake/local-cluster}"
rc_file="$state/$jobid.rc"
if [[ -f "$rc_file" ]]; then
  if [[ "$(cat "$rc_file")" == "0" ]]; then echo success; else echo failed; fi
  exit 0
fi
if kill -0 "$jobid" 2>/dev/null; then
  echo running
  exit 0
fi
# The process ended between the two checks, or died without writing its exit code.
if [[ -f "$rc_file" && "$(cat "$rc_file")" == "0" ]]; then echo success; else echo failed; fi
