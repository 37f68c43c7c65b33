#!/usr/bin/env bash
# Set up .venv (first run only), then run the default sweep on the best device present (CUDA, MPS, else CPU).
# Extra arguments go to `xferbench sweep`, e.g. scripts/sweep.sh --op seed --batch-sizes 1,8,64
source "$(dirname "$0")/setup.sh" "torch,tf,nvml"
exec .venv/bin/xferbench sweep "$@"
