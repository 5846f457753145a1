#!/usr/bin/env bash
# cluster-generic cancel command for the local-cluster profile: terminate the process groups
# of the given job ids (each job runs in its own session, see submit.sh).
for jobid in "$@"; do
  kill -TERM -- "-$jobid" 2>/dev/null || true
done
