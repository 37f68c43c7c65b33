#!/usr/bin/env bash
# Builds the two peers validate compares against, at pinned upstream versions:
#   nvbandwidth v0.8 (CMake, Boost program_options)   -> OUT/nvbandwidth
#   bandwidthTest from cuda-samples v12.8 (nvcc)       -> OUT/bandwidthTest
#
#   bash scripts/build_peers.sh                      # fetches both with git, builds into .peers/bin
#   bash scripts/build_peers.sh --from DIR           # offline: DIR/nvbandwidth/ and DIR/bandwidthTest/
#
# Options:
#   --out DIR     where the binaries go (default .peers/bin, under the repository)
#   --from DIR    a folder holding the sources: DIR/nvbandwidth/ (the v0.8 tree) and DIR/bandwidthTest/
#                 (bandwidthTest.cu with its Common/ headers). Where DIR/debs/ holds Boost .debs, they are
#                 unpacked and used; where DIR/wheels/ holds the nvidia-nvml-dev wheel, its nvml.h is used
#                 when the toolkit has none
#   --work DIR    the build folder (default: a new folder under $TMPDIR or /tmp)
#   --archs LIST  CUDA architectures, e.g. 90 or "90;100" (default 90: H100 and H200)
# Environment: NVCC (default: nvcc on PATH), BOOST_ROOT (a prefix holding include/boost/program_options.hpp;
# default: the debs under --from, then /usr and /usr/local).
set -euo pipefail

NVB_REPO=https://github.com/NVIDIA/nvbandwidth.git
NVB_TAG=v0.8
NVB_COMMIT=66746a3bef61c8c2e12ab34955310da70b9e38cb
SAMPLES_REPO=https://github.com/NVIDIA/cuda-samples.git
SAMPLES_TAG=v12.8
SAMPLES_COMMIT=db3eea23946bca2e90a75eca2b5b3e07158a9e11

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
COMPAT=$REPO/scripts/peers/cuda13_compute_mode.h

usage_error() { echo "error: $*; see the options at the top of scripts/build_peers.sh" >&2; exit 2; }
die() { echo "error: $*" >&2; exit 2; }
fail() { echo "error: $*" >&2; exit 1; }  # a build step that failed, not bad input

OUT_DIR=$REPO/.peers/bin
FROM=""
WORK=""
ARCHS=90
while [ $# -gt 0 ]; do
  case $1 in
    --out | --from | --work | --archs)
      [ $# -ge 2 ] && [ -n "$2" ] || usage_error "$1 needs a value"
      case $1 in --out) OUT_DIR=$2 ;; --from) FROM=$2 ;; --work) WORK=$2 ;; --archs) ARCHS=$2 ;; esac
      shift 2 ;;
    -h | --help) sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) usage_error "unknown option '$1'" ;;
  esac
done
archs=$(printf '%s' "$ARCHS" | tr ',; ' '\n\n\n' | sed '/^$/d')
[ -n "$archs" ] || usage_error "--archs is empty"
for a in $archs; do [[ $a =~ ^[0-9]+[af]?$ ]] || usage_error "--archs entry '$a' is not an architecture number like 90"; done
if [ -n "$FROM" ]; then
  [ -d "$FROM" ] || die "--from $FROM is not a folder; give the folder that holds nvbandwidth/ and bandwidthTest/"
  FROM=$(cd "$FROM" && pwd)
  for f in nvbandwidth/CMakeLists.txt bandwidthTest/bandwidthTest.cu bandwidthTest/Common/helper_cuda.h; do
    [ -f "$FROM/$f" ] || die "--from $FROM has no $f; it must hold nvbandwidth/ ($NVB_TAG) and bandwidthTest/ (cuda-samples $SAMPLES_TAG)"
  done
fi

# The tools, all checked before anything is fetched or built.
nvcc=${NVCC:-$(command -v nvcc || true)}
{ [ -n "$nvcc" ] && [ -x "$(command -v "$nvcc" || true)" ]; } ||
  die "nvcc not found${NVCC:+ at NVCC=$NVCC}: install the CUDA toolkit (nvcc) or set NVCC to its path"
nvcc=$(command -v "$nvcc")
command -v cmake >/dev/null || die "cmake not found on PATH: install CMake 3.20 or newer"
mkdir -p "${WORK:=$(mktemp -d "${TMPDIR:-/tmp}/xferbench-peers.XXXXXX")}" || die "cannot create the build folder $WORK"
WORK=$(cd "$WORK" && pwd)

boost_prefix=""
if [ -n "${BOOST_ROOT:-}" ]; then
  [ -f "$BOOST_ROOT/include/boost/program_options.hpp" ] && boost_prefix=$BOOST_ROOT
elif [ -n "$FROM" ] && compgen -G "$FROM/debs/*boost*.deb" >/dev/null; then
  # A private prefix: the .debs are never installed into /.
  command -v dpkg-deb >/dev/null || die "dpkg-deb not found to unpack $FROM/debs: install dpkg, or set BOOST_ROOT to a Boost prefix"
  rm -rf "$WORK/boost" && mkdir -p "$WORK/boost"
  for deb in "$FROM"/debs/*boost*.deb; do dpkg-deb -x "$deb" "$WORK/boost" || die "dpkg-deb could not unpack $deb"; done
  [ -f "$WORK/boost/usr/include/boost/program_options.hpp" ] && boost_prefix=$WORK/boost/usr
else
  for p in /usr /usr/local; do
    [ -f "$p/include/boost/program_options.hpp" ] && { boost_prefix=$p; break; }
  done
fi
[ -n "$boost_prefix" ] || die "Boost program_options not found${BOOST_ROOT:+ under BOOST_ROOT=$BOOST_ROOT}: install libboost-program-options-dev, or set BOOST_ROOT to a prefix holding include/boost/program_options.hpp"

# The sources: the given folder, or the pinned versions fetched with git.
if [ -n "$FROM" ]; then
  echo "sources: $FROM"
  nvb_src=$FROM/nvbandwidth
  bt_src=$FROM/bandwidthTest
else
  echo "sources: fetching nvbandwidth $NVB_TAG and cuda-samples $SAMPLES_TAG with git into $WORK/src"
  fetched() {  # fetched DIR REPO TAG COMMIT [PATHS...]: a shallow clone at TAG that must be COMMIT
    local dir=$1 url=$2 tag=$3 commit=$4 head
    shift 4
    rm -rf "$dir"
    if [ $# -gt 0 ]; then
      # only the named paths: cuda-samples is large and bandwidthTest needs one sample and Common/
      git clone -q --depth 1 --branch "$tag" --filter=blob:none --sparse "$url" "$dir" &&
        git -C "$dir" sparse-checkout set "$@"
    else
      git clone -q --depth 1 --branch "$tag" "$url" "$dir"
    fi || die "could not fetch $url at $tag (offline?): give --from DIR, a folder holding nvbandwidth/ and bandwidthTest/"
    head=$(git -C "$dir" rev-parse HEAD)
    [ "$head" = "$commit" ] || die "$url tag $tag is now commit $head, not the pinned $commit; check the tag upstream, or give --from DIR"
  }
  fetched "$WORK/src/nvbandwidth" "$NVB_REPO" "$NVB_TAG" "$NVB_COMMIT"
  fetched "$WORK/src/cuda-samples" "$SAMPLES_REPO" "$SAMPLES_TAG" "$SAMPLES_COMMIT" Samples/1_Utilities/bandwidthTest Common
  nvb_src=$WORK/src/nvbandwidth
  bt_src=$WORK/src/bandwidthTest
  mkdir -p "$bt_src"
  cp "$WORK/src/cuda-samples/Samples/1_Utilities/bandwidthTest/bandwidthTest.cu" "$bt_src/"
  cp -R "$WORK/src/cuda-samples/Common" "$bt_src/Common"
fi

# nvml.h: nvbandwidth includes it; a toolkit made of pip wheels lacks it, and the wheel beside the sources has it.
flags=()
cuda_root=$(dirname "$(dirname "$(readlink -f "$nvcc")")")
if [ ! -f "$cuda_root/include/nvml.h" ] && [ -n "$FROM" ] && compgen -G "$FROM/wheels/nvidia_nvml_dev-*.whl" >/dev/null; then
  rm -rf "$WORK/nvml" && mkdir -p "$WORK/nvml"
  python3 -m zipfile -e "$(ls "$FROM"/wheels/nvidia_nvml_dev-*.whl | head -n1)" "$WORK/nvml" || die "could not unpack the nvml wheel in $FROM/wheels"
  nvml_h=$(find "$WORK/nvml" -name nvml.h | head -n1)
  [ -n "$nvml_h" ] && flags=(-I"$(dirname "$nvml_h")") && echo "nvml.h: $nvml_h (the toolkit has none)"
fi

mkdir -p "$OUT_DIR" || die "cannot create --out $OUT_DIR"
OUT_DIR=$(cd "$OUT_DIR" && pwd)
cmake_archs=$(printf '%s\n' $archs | paste -sd';' -)

# nvbandwidth: built from a copy, so that its CMakeLists' `git describe` never names an enclosing
# repository's commit (a clone at the tag names the tag).
echo "== nvbandwidth $NVB_TAG"
if [ "$nvb_src" != "$WORK/src/nvbandwidth" ]; then
  rm -rf "$WORK/src/nvbandwidth" && mkdir -p "$WORK/src" && cp -R "$nvb_src" "$WORK/src/nvbandwidth"
fi
# CMP0167 NEW: with CMake 3.30 and newer, Boost's own BoostConfig.cmake, not the deprecated FindBoost.
cmake_args=(-S "$WORK/src/nvbandwidth" -B "$WORK/nvbandwidth-build" -DCMAKE_BUILD_TYPE=Release
  -DCMAKE_CUDA_COMPILER="$nvcc" -DCMAKE_CUDA_ARCHITECTURES="$cmake_archs"
  -DCMAKE_PREFIX_PATH="$boost_prefix" -DBOOST_ROOT="$boost_prefix" -DCMAKE_POLICY_DEFAULT_CMP0167=NEW)
[ ${#flags[@]} -gt 0 ] && cmake_args+=(-DCMAKE_CXX_FLAGS="${flags[*]}" -DCMAKE_CUDA_FLAGS="${flags[*]}")
command -v ninja >/dev/null && cmake_args+=(-G Ninja)
echo "cmake ${cmake_args[*]}"
cmake "${cmake_args[@]}" || fail "configuring nvbandwidth failed (output above)"
cmake --build "$WORK/nvbandwidth-build" -j"$(nproc 2>/dev/null || echo 2)" || fail "building nvbandwidth failed (output above)"
[ -x "$WORK/nvbandwidth-build/nvbandwidth" ] || fail "the build finished without $WORK/nvbandwidth-build/nvbandwidth"
cp "$WORK/nvbandwidth-build/nvbandwidth" "$OUT_DIR/nvbandwidth"

echo "== bandwidthTest (cuda-samples $SAMPLES_TAG)"
gencode=()
for a in $archs; do gencode+=(-gencode "arch=compute_$a,code=sm_$a"); last=$a; done
gencode+=(-gencode "arch=compute_$last,code=compute_$last")  # PTX too, for newer GPUs
bt_cmd=("$nvcc" -O3 -std=c++17 "${gencode[@]}" -I"$bt_src/Common" -include "$COMPAT"
  -o "$OUT_DIR/bandwidthTest" "$bt_src/bandwidthTest.cu")
echo "${bt_cmd[*]}"
"${bt_cmd[@]}" || fail "compiling bandwidthTest failed (output above)"
[ -x "$OUT_DIR/bandwidthTest" ] || fail "nvcc finished without $OUT_DIR/bandwidthTest"

echo "nvbandwidth: $OUT_DIR/nvbandwidth"
echo "bandwidthTest: $OUT_DIR/bandwidthTest"
