#!/usr/bin/env bash
# Redraw the gallery (plots/, shown in docs/usage.md and the README) from committed result files. Nothing is measured.
# Run it where xferbench is installed (e.g. after scripts/test.sh: source .venv/bin/activate).
set -euo pipefail
cd "$(dirname "$0")/.."
set -x
TF_FILES=(results/cpu-amd-epyc-2core/tf-host-buffers.json results/cpu-amd-epyc-2core/tf-host-buffers-glibc-tunables.json)
xferbench report "${TF_FILES[@]}" -m eager -m function --host-buffer numpy \
  --title "TensorFlow 2.21 CPU copy: glibc's mmap threshold (batch 171) with and without GLIBC_TUNABLES" \
  --plot plots/tf-cpu-mmap-cliff.png -o plots/report-tf-cpu-mmap-cliff.md --overwrite
xferbench plot results/cpu-amd-epyc-2core/torch-host-copy-seed.json \
  --title "PyTorch and host copies on a 2-core AMD EPYC (CPU, host-to-host)" -o plots/cpu-torch-host.png --overwrite
xferbench plot results/sim/link-10us-25gbps.json results/sim/link-10us-20gbps.json \
  --title "Simulated links: 10 µs latency, 25 vs 20 GB/s" -o plots/sim-links.png --overwrite
# The example the README links: two simulated GPUs behind different links, compared as a bug report would.
xferbench report results/sim/gpu-a-25gbps.json results/sim/gpu-b-12gbps.json \
  --title "Simulated example (no data moves): GPU A behind a 25 GB/s link vs GPU B behind 12 GB/s" \
  --plot docs/example-report.png -o docs/example-report.md --overwrite
