#!/usr/bin/env bash
# Set up .venv (first run only), then run the test suite. Extra arguments go to pytest.
source "$(dirname "$0")/setup.sh" "torch,tf,jax,nvml,dev"
status=0
# One test process per core, four at most (each worker may start TensorFlow); -n 0 runs them in this one.
.venv/bin/python -m pytest -n auto --maxprocesses=4 "$@" || status=$?
if [ "$status" -eq 5 ]; then
    # pytest's "no tests collected": an empty full suite is broken; an empty selection is the caller's choice.
    if [ "$#" -eq 0 ]; then
        echo "error: pytest collected no tests from the full suite; tests/ is missing or broken" >&2
        exit 1
    fi
    echo "note: no tests matched the selection: $*" >&2
    exit 0
fi
exit "$status"
