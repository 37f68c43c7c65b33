#!/usr/bin/env bash
# Set up .venv (first run only), then run the default sweep on the best device present (CUDA, MPS, else CPU).
# Extra arguments go to `xferbench sweep`, e.g. scripts/sweep.sh --op seed --batch-sizes 1,8,64
# With an NVIDIA driver present, CuPy comes too: it runs the raw CUDA reference that every curve is read
# against. Its build follows the driver: CUDA 13 drivers (580 and newer) get cupy-cuda13x, others cupy-cuda12x.
extras="torch,tf,jax,nvml"
if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1; then
    driver_cuda=$(nvidia-smi 2>/dev/null | sed -n 's/.*CUDA Version: *\([0-9]*\).*/\1/p' | head -n 1)
    if [ "${driver_cuda:-0}" -ge 13 ]; then
        extras="$extras,cupy-cuda13"
    else
        extras="$extras,cupy"
    fi
fi
source "$(dirname "$0")/setup.sh" "$extras"
exec .venv/bin/xferbench sweep "$@"
