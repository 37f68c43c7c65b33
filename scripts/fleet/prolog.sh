#!/bin/bash
# A Slurm prolog (slurm.conf: Prolog=/etc/slurm/prolog.d/xferbench.sh, PrologFlags=Alloc): check this
# node's GPUs before a job starts on it. A failed check exits non-zero, which makes Slurm drain the
# node and requeue the job, so no job lands on a degraded link. Keep it short: it runs before every job.
XFERBENCH=${XFERBENCH:-/opt/xferbench/bin/xferbench}
LOGS=${LOGS:-/var/log/xferbench}
mkdir -p "$LOGS"
"$XFERBENCH" check --path cuda/raw_pinned --out "$LOGS/%h-${SLURM_JOB_ID:-manual}.json" > "$LOGS/last.log" 2>&1
status=$?
if [ "$status" -eq 2 ]; then
    exit 0  # nothing to check (no GPU) or a setup problem: say so in the log, do not drain for it
fi
exit "$status"
