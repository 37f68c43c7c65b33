#!/usr/bin/env bash
# One command on a GPU machine that leaves the evidence: builds nvbandwidth and bandwidthTest (with the
# peers' kit's build.sh where one is given, else with scripts/build_peers.sh), runs `xferbench validate`
# with them inside a time budget, times `xferbench check`, runs every GPU test, runs the experiment
# sweeps, saves nvidia-smi's view, and packs everything into at most 8 files under $OUT.
#
#   OUT=/some/folder bash scripts/gpu_run.sh          # from anywhere; the peers' kit in .peers
#
# The peers' kit is a folder whose build.sh builds nvbandwidth and bandwidthTest offline into
# $PEERS_BUILD_ROOT/nvbandwidth/nvbandwidth and $PEERS_BUILD_ROOT/bandwidthTest/bandwidthTest; keep it
# out of git (echo /.peers/ >> .git/info/exclude). Without one, scripts/build_peers.sh builds them (from
# PEERS_SRC, else fetched with git); where no build gives them, validate uses the peers on PATH.
#
# It uses the machine's own python3 as it is (numpy, pandas, matplotlib, typer, rich, pytest,
# nvidia-ml-py, and whichever of PyTorch, CuPy and JAX are there): nothing is installed. The whole
# command ends within TOTAL_S seconds (8 minutes unless set): each step is time-boxed, and a step never
# gets more than the time left, less what the steps after it are kept (each one's MIN_S); a step that
# fails or runs out of time leaves its partial output and its exit code in the pack (gpu-run.txt), and
# one with under 5 s to run is skipped and said so.
#
# Settings (environment, all optional):
#   TOTAL_S            the whole command's seconds (default 480)
#   STEPS              the steps to run, in this order (default: smi build validate check sweeps tests); when
#                      they do not fit one call, split them: STEPS="smi build validate check tests", then
#                      STEPS="sweeps" TOTAL_S=240 in a second call
#   PEERS_KIT          the peers' kit (default .peers); none: scripts/build_peers.sh builds them
#   PEERS_SRC          with no kit: the folder of sources scripts/build_peers.sh builds from (its --from);
#                      unset: it fetches them with git
#   VALIDATE_MINUTES   validate's --max-minutes (default 4)
#   VALIDATE_ARGS      more arguments for validate (e.g. "--quick -f cuda")
#   CHECK_ARGS         more arguments for `xferbench check` (its result and log go in sweeps.tar.gz)
#   BUILD_S, CHECK_S, TESTS_S, SMI_S   the time boxes of the build, check, the GPU tests and each nvidia-smi call
#   GPU_SWEEPS         the sweeps after the GPU tests, ';'-separated NAME=ARGUMENTS (default: the experiments
#                      below; "none" runs none); each runs as `xferbench sweep ARGUMENTS -o NAME.json` within
#                      SWEEP_S seconds (default 60), stopped as Ctrl-C stops it (it keeps what it measured),
#                      and all are packed into sweeps.tar.gz with check's result
#   GPU_TESTS          the test files pytest runs (default: every test marked gpu under tests/)
#   GPU_TESTS_SELECT   pytest's -k over them (default: none, every GPU test runs); pytest prints each test's time
#   PYTHON             the interpreter (default python3)
#   NVCC               the CUDA compiler for the peers (default: nvcc on PATH, else /usr/local/cuda/bin/nvcc)
#   GIT_COMMIT         the commit to record, where the checkout has no .git
set -uo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$REPO" || exit 2
if [ -z "${OUT:-}" ]; then
  echo "error: set OUT to the folder the pack is written to, e.g. OUT=/tmp/pack bash scripts/gpu_run.sh" >&2
  exit 2
fi
mkdir -p "$OUT" || { echo "error: cannot create OUT=$OUT" >&2; exit 2; }
PYTHON=${PYTHON:-python3}
KIT=${PEERS_KIT:-.peers}
TOTAL_S=${TOTAL_S:-480}
VALIDATE_MINUTES=${VALIDATE_MINUTES:-4}
BUILD_S=${BUILD_S:-45}
CHECK_S=${CHECK_S:-60}
TESTS_S=${TESTS_S:-180}
SMI_S=${SMI_S:-10}
SWEEP_S=${SWEEP_S:-60}
GPU_TESTS=${GPU_TESTS:-tests}
GPU_TESTS_SELECT=${GPU_TESTS_SELECT:-}
# What each later step is kept at the least, so an earlier one running long cannot starve it.
CHECK_MIN_S=20 SWEEPS_MIN_S=30 TESTS_MIN_S=120
STEPS=${STEPS:-smi build validate check sweeps tests}
for asked in $STEPS; do
  case $asked in
    smi | build | validate | check | sweeps | tests) ;;
    *) echo "error: STEPS: no step '$asked'; give some of: smi build validate check sweeps tests" >&2; exit 2 ;;
  esac
done
wanted() { [[ " $STEPS " == *" $1 "* ]]; }
# keep STEP...: the least time kept for those of these later steps that will run
keep() {
  local total=0 later
  for later in "$@"; do
    if wanted "$later"; then
      case $later in check) total=$((total + CHECK_MIN_S)) ;; sweeps) total=$((total + SWEEPS_MIN_S)) ;; tests) total=$((total + TESTS_MIN_S)) ;; esac
    fi
  done
  echo "$total"
}
# The experiments a GPU run measures by default (NAME=ARGUMENTS; see GPU_SWEEPS), at 96 MiB and 1 GiB of 1 MiB
# items: pageable sources copied back to back, then made cold between copies as bandwidthTest's memset makes
# them, beside the host copy at the driver's threading (host/staged); device-to-host into a fresh tensor and
# into a preallocated one.
EXPERIMENT_SIZES="--shape 512x512x4 --batch-sizes 96,1024"
EXPERIMENT_PATHS="-f cuda -f torch -f host -m raw_pageable,pageable,numpy,staged"
EXPERIMENTS="warm=$EXPERIMENT_PATHS $EXPERIMENT_SIZES;cold=$EXPERIMENT_PATHS $EXPERIMENT_SIZES --cold-source"
EXPERIMENTS+=";d2h-into=-f cuda -f torch -m raw_pageable,pageable,pageable_into -d d2h $EXPERIMENT_SIZES"
# The driver's staging chunk is not published: the host copy at 256 KiB and 16 MiB chunks brackets it (2 MiB runs above).
EXPERIMENTS+=";staged-256k=-f host -m staged --staging-chunk-kib 256 $EXPERIMENT_SIZES"
EXPERIMENTS+=";staged-16m=-f host -m staged --staging-chunk-kib 16384 $EXPERIMENT_SIZES"
case $TOTAL_S in '' | *[!0-9]*) echo "error: TOTAL_S=$TOTAL_S is not a whole number of seconds" >&2; exit 2 ;; esac
WORK=$(mktemp -d "${TMPDIR:-/tmp}/xferbench-gpu-run.XXXXXX")
VALIDATE_BOX=$("$PYTHON" -c "import sys; print(int(float(sys.argv[1]) * 60) + 30)" "$VALIDATE_MINUTES") ||
  { echo "error: VALIDATE_MINUTES=$VALIDATE_MINUTES is not a number of minutes" >&2; exit 2; }
export PYTHONPATH="$REPO${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
SUMMARY=$OUT/gpu-run.txt
: >"$WORK/steps.txt"
STARTED=$(date +%s)
DEADLINE=$((STARTED + TOTAL_S))

note() { printf '%s\n' "$*" | tee -a "$SUMMARY"; }
# step NAME BOX_S LOG CMD...: CMD with its output in LOG, stopped at BOX_S seconds, or sooner where the
# deadline less $KEEP_S (the time kept for the steps after it) comes first (by $STOP_SIGNAL, TERM unless
# set: a sweep saves on it; pytest writes its summary only on INT), killed 10 s later; one line in the
# summary with its status, exit code and seconds ($EXIT_5 names what exit 5 means).
step() {
  local name=$1 box=$2 log=$3 t0 rc status left
  shift 3
  t0=$(date +%s)
  left=$((DEADLINE - t0 - ${KEEP_S:-0}))
  if [ "$left" -lt "$box" ]; then
    if [ "$left" -lt 5 ]; then
      skip "$name" "$((DEADLINE - t0)) s were left of TOTAL_S=$TOTAL_S and ${KEEP_S:-0} s are kept for the steps after it"
      return 0
    fi
    box=$left
  fi
  printf '== %s (at most %s s): %s\n' "$name" "$box" "$*" | tee -a "$SUMMARY"
  timeout -s "${STOP_SIGNAL:-TERM}" -k 10 "$box" "$@" >"$log" 2>&1
  rc=$?
  case $rc in
    0) status=ok ;;
    5) status=${EXIT_5:-failed} ;;
    124 | 137) status="timed out after $box s (partial output kept)" ;;
    *) status=failed ;;
  esac
  printf '%-14s %-44s exit %-3s %4s s\n' "$name" "$status" "$rc" "$(($(date +%s) - t0))" >>"$WORK/steps.txt"
  note "   -> $status, exit $rc, $(($(date +%s) - t0)) s"
  return 0
}
skip() {  # skip NAME REASON
  printf '%-14s %-44s %s\n' "$1" "skipped" "$2" >>"$WORK/steps.txt"
  note "== $1: skipped: $2"
}

{
  echo "# xferbench GPU run, $(date -u +'%Y-%m-%d %H:%M:%S UTC')"
  echo "commit: ${GIT_COMMIT:-$(git rev-parse HEAD 2>/dev/null || echo unknown)}"
  echo "host: $(uname -n); kernel $(uname -r); $(nproc) CPUs; $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')"
  lscpu 2>/dev/null | grep -E '^(NUMA node|Socket)' || true
  grep -E '^MemTotal' /proc/meminfo || true
  echo "python: $(command -v "$PYTHON") $("$PYTHON" --version 2>&1)"
  timeout 60 "$PYTHON" - <<'EOF' 2>&1
from importlib import metadata, util
for name, dist in (("numpy", "numpy"), ("torch", "torch"), ("cupy", "cupy-cuda13x"), ("cupy", "cupy-cuda12x"),
                   ("jax", "jax"), ("jaxlib", "jaxlib"), ("pynvml", "nvidia-ml-py"), ("tensorflow", "tensorflow")):
    try:
        print(f"{dist}: {metadata.version(dist)}")
    except metadata.PackageNotFoundError:
        if util.find_spec(name) is None:
            print(f"{dist}: not installed")
EOF
  echo "numactl: $(command -v numactl || echo 'not on PATH')"
  echo "steps: $STEPS"
  echo "time boxes: ${TOTAL_S} s in all; nvidia-smi ${SMI_S} s each, peers' build ${BUILD_S} s, validate ${VALIDATE_BOX} s (--max-minutes ${VALIDATE_MINUTES}), check ${CHECK_S} s, GPU tests ${TESTS_S} s, each sweep ${SWEEP_S} s"
  echo
} >"$SUMMARY"
cat "$SUMMARY"

for asked in smi build validate check sweeps tests; do
  wanted "$asked" || skip "$asked" "not among STEPS ($STEPS)"
done

# 1. nvidia-smi's view of the machine, as it prints it.
if ! wanted smi; then
  :
elif command -v nvidia-smi >/dev/null; then
  KEEP_S=$(keep check sweeps tests) step nvidia-smi-q "$SMI_S" "$OUT/nvidia-smi-q.txt" nvidia-smi -q
  KEEP_S=$(keep check sweeps tests) step topo "$SMI_S" "$OUT/nvidia-smi-topo.txt" nvidia-smi topo -m
else
  skip nvidia-smi "nvidia-smi is not on PATH"
fi

# The driver's libcuda.so.1 for the peers, where the loader does not already find it.
if ! ldconfig -p 2>/dev/null | grep -q 'libcuda\.so\.1'; then
  for dir in /usr/local/nvidia/lib64 /usr/local/nvidia/lib /usr/lib/x86_64-linux-gnu/nvidia; do
    [ -e "$dir/libcuda.so.1" ] && export LD_LIBRARY_PATH="$dir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" && break
  done
fi

# 2. The peers, built from the kit, or else by scripts/build_peers.sh.
PEER_ARGS=()
nvcc=${NVCC-$(command -v nvcc || true)}
[ -z "$nvcc" ] && [ -x /usr/local/cuda/bin/nvcc ] && nvcc=/usr/local/cuda/bin/nvcc
if ! wanted build; then
  :
elif [ -z "$nvcc" ] || [ ! -x "$nvcc" ]; then
  skip peers-build "no nvcc${nvcc:+ at $nvcc} to build them with; validate uses the peers on PATH, if any"
elif [ -f "$KIT/build.sh" ]; then
  export PEERS_BUILD_ROOT=$WORK/peers-build NVCC=$nvcc
  KEEP_S=$(keep check sweeps tests) step peers-build "$BUILD_S" "$WORK/peers-build.log" bash "$KIT/build.sh"
  for tool in nvbandwidth/nvbandwidth bandwidthTest/bandwidthTest; do
    [ -x "$PEERS_BUILD_ROOT/$tool" ] && PEER_ARGS+=(--peer "$PEERS_BUILD_ROOT/$tool")
  done
else
  # No kit of its own: the project's script builds them, from PEERS_SRC where given, else fetched with git.
  NVCC=$nvcc KEEP_S=$(keep check sweeps tests) step peers-build "$BUILD_S" "$WORK/peers-build.log" bash "$REPO/scripts/build_peers.sh" \
    --work "$WORK/peers-build" --out "$WORK/peers-build/bin" ${PEERS_SRC:+--from "$PEERS_SRC"}
  for tool in nvbandwidth bandwidthTest; do
    [ -x "$WORK/peers-build/bin/$tool" ] && PEER_ARGS+=(--peer "$WORK/peers-build/bin/$tool")
  done
fi
if [ -f "$WORK/peers-build.log" ]; then
  tar -czf "$OUT/peers-build.tar.gz" -C "$WORK" peers-build.log $(cd "$WORK" && ls -d peers-build/logs peers-build/build-info.txt 2>/dev/null)
fi

# 3. The validation, within its budget; its folder packed as one archive.
if wanted validate; then
  # shellcheck disable=SC2086  # VALIDATE_ARGS is a list of words
  KEEP_S=$(keep check sweeps tests) step validate "$VALIDATE_BOX" "$OUT/validate.log" "$PYTHON" -m xferbench validate "$WORK/validation" \
    --max-minutes "$VALIDATE_MINUTES" "${PEER_ARGS[@]}" ${VALIDATE_ARGS:-}
  if [ -d "$WORK/validation" ]; then
    tar -czf "$OUT/validation.tar.gz" -C "$WORK" validation
  else
    note "   (validate wrote no folder)"
  fi
fi

mkdir -p "$WORK/sweeps"

# 4. xferbench check, timed as a fleet job runs it: its result and log go with the sweeps.
if wanted check; then
  # shellcheck disable=SC2086  # CHECK_ARGS is a list of words
  KEEP_S=$(keep sweeps tests) step check "$CHECK_S" "$WORK/sweeps/check.log" "$PYTHON" -m xferbench check \
    --out "$WORK/sweeps/check.json" ${CHECK_ARGS:-}
fi

# 5. The experiment sweeps (or those GPU_SWEEPS names), each within its own box, all in one archive.
if wanted sweeps && [ "${GPU_SWEEPS:-}" != none ]; then
  IFS=';' read -r -a SWEEPS <<<"${GPU_SWEEPS:-$EXPERIMENTS}"
  for entry in "${SWEEPS[@]}"; do
    name=${entry%%=*}
    name=${name//[^A-Za-z0-9._-]/}
    if [ -z "$name" ] || [[ $entry != *=* ]]; then
      skip sweep "'$entry' is not NAME=ARGUMENTS"
      continue
    fi
    # shellcheck disable=SC2086  # the arguments are a list of words
    KEEP_S=$(keep tests) step "sweep-$name" "$SWEEP_S" "$WORK/sweeps/$name.log" "$PYTHON" -m xferbench sweep ${entry#*=} \
      -o "$WORK/sweeps/$name.json"
  done
fi
if wanted check || wanted sweeps; then
  tar -czf "$OUT/sweeps.tar.gz" -C "$WORK" sweeps
fi

# 6. Every GPU test (they skip cleanly where a framework sees no GPU), each one's time printed, in what is left.
if wanted tests; then
  # shellcheck disable=SC2086  # GPU_TESTS is a list of words
  STOP_SIGNAL=INT EXIT_5="no test matched the selection" step gpu-tests "$TESTS_S" "$OUT/gpu-tests.txt" "$PYTHON" -m pytest \
    -p no:cacheprovider -rA --durations=0 -m gpu ${GPU_TESTS_SELECT:+-k "$GPU_TESTS_SELECT"} $GPU_TESTS
fi

{
  echo
  echo "## steps (status, exit code, seconds)"
  cat "$WORK/steps.txt"
  echo
  echo "## the pack"
  (cd "$OUT" && ls -l)
  echo "took $(($(date +%s) - STARTED)) s in all"
} >>"$SUMMARY"
sed -n '/^## steps/,$p' "$SUMMARY"
rm -rf "$WORK"
exit 0
