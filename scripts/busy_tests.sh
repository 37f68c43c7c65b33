#!/usr/bin/env bash
# The tests beside CPU-bound processes, as on a busy laptop or a shared CI runner: no test's outcome may
# depend on how busy the machine is. Sets up .venv as test.sh does (first run only).
#
#   scripts/busy_tests.sh                      the tests that start processes and time them (-m slow), beside one per core
#   scripts/busy_tests.sh --per-core 5 tests/test_contention.py
#   scripts/busy_tests.sh --per-core 2 -m ""   every test, beside two per core
#
# Arguments after --per-core N go to pytest (through test.sh); without any, the slow tests run: they start
# workers, sweeps and tools and wait on them, where a loaded machine shows first. .ci/run runs this after the suite.
set -euo pipefail
cd "$(dirname "$0")/.."
per_core=1
if [ "${1:-}" = "--per-core" ]; then
    per_core="${2:?--per-core needs a number}"
    shift 2
fi
case "$per_core" in ''|*[!0-9]*) echo "error: --per-core takes a whole number, not '$per_core'" >&2; exit 2;; esac
source scripts/setup.sh "torch,tf,jax,nvml,dev"
cores=$(.venv/bin/python -c 'import os; print(len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count())')
count=$((per_core * cores))
pids=()
stop_busy() {
    for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
    wait 2>/dev/null || true
}
trap stop_busy EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
for _ in $(seq "$count"); do
    python3 -c 'while True: pass' &
    pids+=("$!")
done
echo "busy: $count CPU-bound processes ($per_core per core on $cores cores) run beside the tests" >&2
if [ "$#" -eq 0 ]; then
    set -- -m slow
fi
start=$SECONDS
status=0
bash scripts/test.sh "$@" || status=$?
echo "busy: the tests took $((SECONDS - start)) s beside $count CPU-bound processes (exit $status)" >&2
exit "$status"
