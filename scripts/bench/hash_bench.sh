#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Benchmark of edo-hash (docs/BENCHMARKS.md, "Hashing"):
#  1. GloVe 10k x 50 with Zipf counts (row r counted 1/(r+1)) and BIGANN
#     10k x 128 with uniform counts: at B = V/2, V/4, V/10, the naive hash
#     (fit=none), the fitted single hash, two hashes with and without
#     per-row weights, and quotient-remainder (sum); group-shared rows (256
#     k-means clusters, int4 and int2 residuals); each alone and with
#     --keep-top rows=1% and 5% (kept rows fp16); next to dense int8, int4,
#     int4:group=32 and pq at about the same bytes, in the same run;
#  2. fitting time on a seeded synthetic 1M x 128 table (B = V/10, K = 2)
#     with its peak resident memory (skipped unless EDO_BENCH_BIG=1).
# usage: scripts/bench/hash_bench.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
build="${EDO_BUILD_DIR:-build}"
py=/usr/bin/python3
data=../shared/data
[ -f "$data/glove.6B.50d.10k.npy" ] || data=data-samples
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)"
"$py" -c "import numpy as np; np.save('$work/zipf.npy', 1.0 / (np.arange(10000) + 1))"

# table NAME FILE DIM METRIC [FREQ]: every scheme at every B and keep-top share.
table() {
  local name=$1 file=$2 dim=$3 metric=$4 freq=${5:-}
  local fit_args=(--metric "$metric") eval_args=(--metric "$metric")
  [ -z "$freq" ] || fit_args+=(--freq "$freq") eval_args+=(--eval-freq "$freq")
  echo "== $name (recall@10 over 1000 queries; w. = weighted by the counts)"
  printf "  %-48s %-9s %8s %7s %9s %8s %10s %12s %8s\n" scheme keep bytes ratio rel_err cos recall@10 w.recall@10 fit_s
  for keep in none rows=1% rows=5%; do
    local keep_args=()
    [ "$keep" = none ] || keep_args=(--keep-top "$keep")
    local sweep=""
    for div in 2 4 10; do
      local b=$((10000 / div))
      sweep+="hash:buckets=$b,fit=none;hash:buckets=$b;hash:buckets=$b,k=2;hash:buckets=$b,k=2,weights=1;qr:buckets=$b;"
    done
    sweep+="group:clusters=256,residual=int4;group:clusters=256,residual=int2"
    "$build/edo-hash" "$file" "${fit_args[@]}" "${keep_args[@]}" --sweep "$sweep" --k 10 --json -q >"$work/s.json"
    "$py" - "$work/s.json" "$keep" "$dim" <<'PY'
import json, sys
keep, dim = sys.argv[2], int(sys.argv[3])
for p in json.load(open(sys.argv[1]))["sweep"]:
    if p["baseline"] and keep != "none":
        continue
    e = p["eval"]
    spec = p["spec"].split(", top")[0] + (" (dense)" if p["baseline"] else "")
    rel = e.get("w.rel_fro", e["rel_fro"]); cos = e.get("w.cos.mean", e["cos.mean"])
    w = e.get("w.recall@10")
    print(f"  {spec:<48} {keep:<9} {p['file_bytes']:>8} {p['ratio']:>6.2f}x {rel:>9.4f} {cos:>8.4f} {e['recall@10']:>10.4f}"
          f" {('-' if w is None else f'{w:.4f}'):>12} {p['seconds']:>8.2f}")
PY
  done
  # pq at about the bytes of the hashed files at V/10 and V/4 (m bytes a row plus its codebooks).
  for m in 4 8; do
    "$build/edo-quantize" "$file" -o "$work/pq.edo" --codec "pq:m=$m" --eval "${eval_args[@]}" --k 10 -q --json \
      >"$work/pq.json"
    "$py" - "$work/pq.json" "$m" <<'PY'
import json, sys
j = json.load(open(sys.argv[1])); e = j["eval"]
rel = e.get("w.rel_fro", e["rel_fro"]); cos = e.get("w.cos.mean", e["cos.mean"]); w = e.get("w.recall@10")
print(f"  {'pq:m=' + sys.argv[2] + ' (dense)':<48} {'none':<9} {j['file_bytes']:>8} {j['ratio']:>6.2f}x {rel:>9.4f} {cos:>8.4f}"
      f" {e['recall@10']:>10.4f} {('-' if w is None else f'{w:.4f}'):>12} {j.get('train_seconds', 0) + j.get('encode_seconds', 0):>8.2f}")
PY
  done
}

table "GloVe 10k x 50, Zipf counts" "$data/glove.6B.50d.10k.npy" 50 cos "$work/zipf.npy"
if [ -f "$data/bigann10k_base.npy" ]; then table "BIGANN 10k x 128, uniform counts" "$data/bigann10k_base.npy" 128 l2; fi

if [ "${EDO_BENCH_BIG:-0}" = 1 ]; then
  echo "== 2. fitting 1M x 128 (seeded synthetic), B = 100000, K = 2"
  "$py" scripts/bench/make_synthetic.py "$work/big.npy" 1000000 128 1
  /usr/bin/time -v "$build/edo-hash" "$work/big.npy" -o "$work/big.edo" --scheme hash:buckets=100000,k=2 2>"$work/time" |
    grep -E "^  fit "
  grep -E "Elapsed|Maximum resident" "$work/time" | sed 's/^\t/  /'
fi
