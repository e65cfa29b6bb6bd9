# SPDX-License-Identifier: Apache-2.0
# Sourced by the benchmarks (not one itself): best_of RUNS WORKDIR CMD...
# prints the best of RUNS wall-clock seconds of CMD (its output discarded).
best_of() {
  local runs=$1 work=$2 b="" t
  shift 2
  for _ in $(seq "$runs"); do
    /usr/bin/time -f %e -o "$work/t" "$@" >/dev/null 2>&1
    t=$(tail -1 "$work/t")
    if [ -z "$b" ] || awk "BEGIN{exit !($t < $b)}"; then b=$t; fi
  done
  echo "$b"
}
