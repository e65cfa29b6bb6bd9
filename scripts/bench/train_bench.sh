#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Issue 15, item 2: training time of the trainable codecs' default settings on
# seeded synthetic 65,536 x 384 and 65,536 x 768 tables (make_synthetic.py;
# training time hardly depends on the values), next to FAISS's own
# ProductQuantizer training on the same rows in the same run (pq_bench
# --only faiss-pq: FAISS k-means with its IndexFlatL2 assignment, trained on
# the whole table, as edo's 65,536-row default sample is here).
#
# Each cell is edo-quantize's own "train_seconds" (--json), one process after
# another; FAISS cells and the slow ones stop at LIMIT seconds (default 400).
#
# usage: scripts/bench/train_bench.sh [LIMIT] [DIR]   (DIR keeps the tables, default /tmp/edo-train-bench)
set -euo pipefail
cd "$(dirname "$0")/../.."
B="${EDO_BUILD_DIR:-build}"
limit="${1:-400}"
dir="${2:-${TMPDIR:-/tmp}/edo-train-bench}"
mkdir -p "$dir"
echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)"
export OMP_WAIT_POLICY=passive
cell() {  # TABLE SPEC
  local out
  if out=$(timeout "$limit" "$B/edo-quantize" "$1" -o "$dir/out.edo" --codec "$2" --json -q 2>/dev/null); then
    /usr/bin/python3 -c 'import json,sys; d=json.loads(sys.argv[1]); print("%-14s edo %-22s train %7.1f s  encode %6.1f s  mse %.5g" % (sys.argv[2], d["codec"], d["train_seconds"], d["encode_seconds"], d["mse"]))' \
      "$out" "$(basename "$1" .npy)"
  else
    printf '%-14s edo %-22s not trained within %s s\n' "$(basename "$1" .npy)" "$2" "$limit"
  fi
}
faiss_pq() {  # TABLE MxB
  local line
  line=$(timeout "$limit" "$B/scripts/bench/pq/pq_bench" --data "$1" --metric l2 --shapes "$2" --only faiss-pq \
    --queries 200 2>/dev/null | grep faiss-pq || true)
  if [ -n "$line" ]; then
    printf '%-14s %s\n' "$(basename "$1" .npy)" "$line"
  else
    printf '%-14s FAISS ProductQuantizer %s: not trained within %s s\n' "$(basename "$1" .npy)" "$2" "$limit"
  fi
}
for dim in 384 768; do
  t="$dir/synthetic_65536x$dim.npy"
  [ -f "$t" ] || /usr/bin/python3 scripts/bench/make_synthetic.py "$t" 65536 "$dim" "$dim"
  q=$((dim / 4)); h=$((dim / 8))
  for spec in "pca:$q" "pq:m=$q" "pq:m=$h" "opq:m=$q" "opq:m=$h" "rq:m=$h,beam=4,train_beam=1,refine=1" "rq:m=$h"; do
    cell "$t" "$spec"
  done
  faiss_pq "$t" "${q}x8"
done
