#!/usr/bin/env bash
# How long a small job takes while another process keeps one core busy,
# under the tools' default (idle OpenMP threads sleep: OMP_WAIT_POLICY
# defaults to PASSIVE) and under libgomp's own default (threads spin for a
# while before sleeping, what the tools did before they set it), with
# --threads 1 as the floor. The job is edo-profile of a 3-tier pack of the
# GloVe sample, the case an adversarial run found taking 79 s.
# usage: scripts/bench/omp_wait_bench.sh [BUILD_DIR] [RUNS]
set -euo pipefail
cd "$(dirname "$0")/../.."
build="${1:-build}"; runs="${2:-3}"
work="$(mktemp -d)"
busy=""
cleanup() { [ -n "$busy" ] && kill "$busy" 2>/dev/null; rm -rf "$work"; }
trap cleanup EXIT
data=data-samples/glove.6B.50d.10k.npy
"$build/edo-pack" "$data" -o "$work/p3.edo" -q \
  --tier hot:rows=10%:fp16 --tier warm:rows=40%:int8 --tier cold:rest:int4 >/dev/null

# best of RUNS wall seconds of "$@"
best() {
  local b="" t
  for _ in $(seq "$runs"); do
    /usr/bin/time -f %e -o "$work/t" "$@" >/dev/null 2>&1
    t=$(tail -1 "$work/t")
    if [ -z "$b" ] || awk "BEGIN{exit !($t < $b)}"; then b=$t; fi
  done
  echo "$b"
}

echo "cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(nproc) cores"
idle_default=$(env -u OMP_WAIT_POLICY bash -c "$(declare -f best); runs=$runs; work=$work; best '$build/edo-profile' '$work/p3.edo'")
echo "idle machine, default policy:        ${idle_default} s"
# One core kept busy by a spinning process for the rest of the run.
( while :; do :; done ) &
busy=$!
t_default=$(env -u OMP_WAIT_POLICY bash -c "$(declare -f best); runs=$runs; work=$work; best '$build/edo-profile' '$work/p3.edo'")
t_one=$(env -u OMP_WAIT_POLICY bash -c "$(declare -f best); runs=$runs; work=$work; best '$build/edo-profile' '$work/p3.edo' --threads 1")
# libgomp's default without OMP_WAIT_POLICY is 300,000 spins before a thread
# sleeps; an explicit GOMP_SPINCOUNT outranks the tools' PASSIVE default.
t_spin=$(env -u OMP_WAIT_POLICY GOMP_SPINCOUNT=300000 bash -c "$(declare -f best); runs=1; work=$work; best '$build/edo-profile' '$work/p3.edo'")
echo "one core busy, default (PASSIVE):    ${t_default} s"
echo "one core busy, --threads 1:          ${t_one} s"
echo "one core busy, libgomp's spinning default (before): ${t_spin} s (GOMP_SPINCOUNT=300000, one run)"
