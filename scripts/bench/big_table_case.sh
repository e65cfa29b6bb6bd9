#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The case users bring: a table bigger than this machine's memory, end to end
# (docs/BENCHMARKS.md, "A table bigger than memory"). Builds a seeded
# synthetic fp32 table (default 47,000,000 x 128 = 24 GB) with Zipf lookup
# counts (row i looked up ~ 1/(i+1)^1.05), profiles it, plans under 30% of its
# fp32 bytes (7.2 GB at the default size, --max-bytes) with the hot tier's
# bytes capped at an eighth of that (--gpu-bytes, so that it fits the serving
# budget when served from host memory), marks every tier after the hot one
# disk (cold rows on NVMe), packs, evaluates, and serves 100 batches of 4096
# ids drawn by frequency: with --max-resident (1G) after dropping the file
# from the page cache (the cache's reads by io_uring, then by pread), and
# through the mapping with the file cached.
# Prints each step's wall time and peak RSS.
# usage: [MAX_RESIDENT=1G] scripts/bench/big_table_case.sh [ROWS] [DIM] [DIR]
#   (default 47000000 128 /tmp/edo-big; needs ROWS*DIM*4 bytes + ~40% free in DIR)
set -euo pipefail
cd "$(dirname "$0")/../.."
rows="${1:-47000000}"; dim="${2:-128}"; dir="${3:-/tmp/edo-big}"
build="${EDO_BUILD_DIR:-build}"
py=/usr/bin/python3
mkdir -p "$dir"
table="$dir/table-${rows}x${dim}.npy"
counts="$dir/counts-${rows}.npy"
ids="$dir/ids-${rows}.npy"
packed="$dir/packed-${rows}x${dim}.edo"
budget=$((rows * dim * 4 * 3 / 10))
hot_cap=$((budget / 8))
resident="${MAX_RESIDENT:-1G}"
summary="$dir/summary.txt"
: >"$summary"
echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)," \
  "$(awk '/MemTotal/ {printf "%.1f GB", $2 / 1e6}' /proc/meminfo) memory; table ${rows} x ${dim}" \
  "($(awk -v b=$((rows * dim * 4)) 'BEGIN {printf "%.1f GB", b / 1e9}') fp32), budget ${budget} bytes" | tee -a "$summary"
# step NAME CMD...: runs CMD, appending its wall time and peak RSS to the summary.
step() {
  local name="$1"; shift
  echo "== $name"
  /usr/bin/time -f "$name: %e s wall, peak RSS %M KB" -a -o "$summary" "$@"
  tail -1 "$summary"
}
drop_cache() { "$py" -c "import os, sys; fd = os.open(sys.argv[1], os.O_RDONLY); os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)" "$1"; }

[ -f "$table" ] || step "make table" "$py" scripts/bench/make_synthetic.py "$table" "$rows" "$dim" 7
[ -f "$counts" ] || step "make counts and ids" "$py" - "$counts" "$ids" "$rows" <<'PY'
import sys
import numpy as np
counts_path, ids_path, rows = sys.argv[1], sys.argv[2], int(sys.argv[3])
counts = np.lib.format.open_memmap(counts_path, mode="w+", dtype=np.float64, shape=(rows,))
chunk = 1 << 22
for b in range(0, rows, chunk):
    counts[b:b + chunk] = 1e9 / np.power(np.arange(b, min(rows, b + chunk), dtype=np.float64) + 1, 1.05)
counts.flush()
cum = np.cumsum(counts)
rng = np.random.default_rng(11)
ids = np.searchsorted(cum, rng.random(100 * 4096) * cum[-1], side="right")
np.save(ids_path, np.minimum(ids, rows - 1).astype(np.int64))
PY

step "profile" "$build/edo-profile" "$table" --freq "$counts" --quiet >"$dir/profile.txt"
step "plan" "$build/edo-profile" "$table" --freq "$counts" --quiet --plan --budget 'recall@10>=0.5' \
  --max-bytes "$budget" --gpu-bytes "$hot_cap" --plan-codecs fp16 --plan-codecs int8 --plan-codecs int4 --plan-codecs int2 \
  --plan-config "$dir/plan.json" >"$dir/plan.txt"
grep -A3 -E '^  chosen' "$dir/plan.txt" || sed -n '/^plan:/,$p' "$dir/plan.txt" | tail -8
"$py" - "$dir/plan.json" <<'PY'
import json, sys
plan = json.load(open(sys.argv[1]))
for i, tier in enumerate(plan["tiers"]):
    tier["residency"] = "gpu" if i == 0 else "disk"
json.dump(plan, open(sys.argv[1], "w"), indent=2)
print("tiers:", ", ".join(f"{t['name']}:{t['share']}:{t['codec']}:{t['residency']}" for t in plan["tiers"]))
PY
step "pack" "$build/edo-pack" "$table" -o "$packed" --freq "$counts" --config "$dir/plan.json" --quiet >"$dir/pack.txt"
cat "$dir/pack.txt"
step "eval" "$build/edo-eval" "$table" "$packed" --eval-freq "$counts" --k 10 --queries 1000 >"$dir/eval.txt"
grep -E '^  (metric|recall@10|rel_fro|cos.mean|lookups|bag.rel_err.mean|dot.rho|ratio) ' "$dir/eval.txt"

for io in io_uring pread; do
  drop_cache "$packed"
  step "lookup, --max-resident $resident, --cache-io $io, file evicted" "$build/edo-lookup" "$packed" --ids "$ids" \
    --batch 4096 --max-resident "$resident" --cache-io "$io" --stats -o "$dir/rows-bounded.npy" 2>&1 | grep -vE '^\s*$'
done
cat "$packed" >/dev/null  # the whole file in the page cache
step "lookup, mapped, file cached" "$build/edo-lookup" "$packed" --ids "$ids" --batch 4096 --stats \
  -o "$dir/rows-mapped.npy" 2>&1 | grep -vE '^\s*$'
cmp -s "$dir/rows-bounded.npy" "$dir/rows-mapped.npy" && echo "rows: identical" || echo "rows: DIFFER"
echo "== summary"
cat "$summary"
