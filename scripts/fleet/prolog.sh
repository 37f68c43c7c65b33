#!/bin/bash
# A Slurm prolog (slurm.conf: Prolog=/etc/slurm/prolog.d/xferbench.sh, PrologFlags=Alloc): check this
# node's GPUs before a job starts on it. A failed check exits non-zero, which makes Slurm drain the
# node and requeue the job, so no job lands on a degraded link. It checks the raw copy alone, which
# starts no framework but CuPy, yet it still costs seconds before every job: for nodes shared between
# jobs (where another job's traffic would slow the link and fail the check), or to check less often,
# run the same lines as Slurm's HealthCheckProgram instead. Each run replaces the node's last file.
XFERBENCH=${XFERBENCH:-/opt/xferbench/bin/xferbench}
LOGS=${LOGS:-/var/log/xferbench}
mkdir -p "$LOGS"
"$XFERBENCH" check --path cuda/raw_pinned --overwrite --out "$LOGS/%h.json" > "$LOGS/last.log" 2>&1
status=$?
if [ "$status" -eq 2 ] && ! ls /proc/driver/nvidia/gpus/* > /dev/null 2>&1; then
    exit 0  # no NVIDIA GPU on this node: nothing to check, nothing to drain for
fi
exit "$status"  # 1: a GPU failed; 2 with GPUs present: CUDA could not use them (see last.log); both drain
