#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Trained codecs and a sweep while another process keeps one core busy: the
# tools' default since 2026-12-06 (idle OpenMP threads sleep: they run
# themselves again with OMP_WAIT_POLICY=PASSIVE, apps/openmp_environment.cpp)
# against libgomp's own default, spinning (GOMP_SPINCOUNT=300000, which the
# tools keep as a user's choice), idle and busy, and --threads 1 as the floor.
# Best of RUNS wall seconds each, on the GloVe sample.
# usage: scripts/bench/trained_wait_bench.sh [BUILD_DIR] [RUNS]
set -euo pipefail
cd "$(dirname "$0")/../.."
build="${1:-build}"; runs="${2:-3}"
work="$(mktemp -d)"
busy=""
cleanup() { [ -n "$busy" ] && kill "$busy" 2>/dev/null; rm -rf "$work"; }
trap cleanup EXIT
data=data-samples/glove.6B.50d.10k.npy
unset OMP_WAIT_POLICY GOMP_SPINCOUNT OMP_NUM_THREADS

source "$(dirname "$0")/best_time.bash"
best() { best_of "$runs" "$work" "$@"; }

jobs=("pq:m=10|$build/edo-quantize $data -o $work/o.edo --codec pq:m=10 -q"
      "opq:m=10|$build/edo-quantize $data -o $work/o.edo --codec opq:m=10 -q"
      "sweep int8;int4;pq:m=10|$build/edo-quantize $data --sweep int8;int4;pq:m=10 -q")
echo "cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(nproc) cores"
printf '%-24s %10s %10s %12s %12s %10s %8s\n' job "spin idle" "sleep idle" "spin busy" "sleep busy" "1 thread" "busy x"
for j in "${jobs[@]}"; do
  label=${j%%|*}; cmd=${j#*|}
  spin_idle=$(GOMP_SPINCOUNT=300000 best $cmd)
  sleep_idle=$(best $cmd)
  ( while :; do :; done ) &
  busy=$!
  spin_busy=$(GOMP_SPINCOUNT=300000 best $cmd)
  sleep_busy=$(best $cmd)
  one=$(best $cmd --threads 1)
  kill "$busy"; wait "$busy" 2>/dev/null || true; busy=""
  printf '%-24s %10s %10s %12s %12s %10s %7.1fx\n' "$label" "$spin_idle" "$sleep_idle" "$spin_busy" "$sleep_busy" "$one" \
    "$(awk "BEGIN{print $spin_busy / $sleep_busy}")"
done
