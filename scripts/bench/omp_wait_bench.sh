#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# How long a small job takes while another process keeps one core busy, with
# libgomp's spinning (GOMP_SPINCOUNT=300000, its default, which the tools
# keep when a user sets it), with the tools' own default since 2026-12-06
# (OMP_WAIT_POLICY=PASSIVE, apps/openmp_environment.cpp), and with --threads 1
# as the floor. The job is
# edo-profile of a 3-tier pack of the GloVe sample, the case an adversarial
# run found taking 79 s. OLD_BUILD_DIR, when given, runs the same on another
# build (an older commit) in the same run.
# usage: scripts/bench/omp_wait_bench.sh [BUILD_DIR] [RUNS] [OLD_BUILD_DIR]
set -euo pipefail
cd "$(dirname "$0")/../.."
build="${1:-build}"; runs="${2:-3}"; old="${3:-}"
work="$(mktemp -d)"
busy=""
cleanup() { [ -n "$busy" ] && kill "$busy" 2>/dev/null; rm -rf "$work"; }
trap cleanup EXIT
data=data-samples/glove.6B.50d.10k.npy
"$build/edo-pack" "$data" -o "$work/p3.edo" -q \
  --tier hot:rows=10%:fp16 --tier warm:rows=40%:int8 --tier cold:rest:int4 >/dev/null

# best of RUNS wall seconds of "$@" (exported to the bash -c below)
source scripts/bench/best_time.bash
best() { best_of "$runs" "$work" "$@"; }

echo "cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(nproc) cores"
# measure LABEL BUILD [ENV...]: best of RUNS for the job, idle and with a core busy.
measure() {
  local label=$1 dir=$2; shift 2
  printf '%-34s idle %6s s' "$label" "$(env -u OMP_WAIT_POLICY "$@" bash -c "$(declare -f best best_of); runs=$runs; work=$work; best '$dir/edo-profile' '$work/p3.edo'")"
  ( while :; do :; done ) &
  busy=$!
  printf '   one core busy %6s s' "$(env -u OMP_WAIT_POLICY "$@" bash -c "$(declare -f best best_of); runs=$runs; work=$work; best '$dir/edo-profile' '$work/p3.edo'")"
  printf '   --threads 1 %6s s\n' "$(env -u OMP_WAIT_POLICY "$@" bash -c "$(declare -f best best_of); runs=$runs; work=$work; best '$dir/edo-profile' '$work/p3.edo' --threads 1")"
  kill "$busy"; wait "$busy" 2>/dev/null || true; busy=""
}
measure "this build, GOMP_SPINCOUNT=300000" "$build" GOMP_SPINCOUNT=300000
measure "this build, its default (passive)" "$build"
if [ -n "$old" ]; then
  measure "$old, defaults" "$old"
  measure "$old, OMP_WAIT_POLICY=PASSIVE" "$old" OMP_WAIT_POLICY=PASSIVE
fi
