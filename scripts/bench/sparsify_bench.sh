#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Benchmark of edo-sparsify (docs/BENCHMARKS.md, "Pruning"):
#  1. value-pruning sweeps on GloVe 10k x 50 and BIGANN 10k x 128, next to
#     dense int8, int4 and int4:group=32 in the same run;
#  2. dropping the rarest 30/50/70% of GloVe rows (Zipf counts) with each
#     fallback: access-weighted recall@10 and the share of lookups that hit it;
#  3. sparsify throughput next to a numpy copy of the same fp32 bytes, and
#     batch lookup from a sparse tier next to a dense int8 tier (one thread);
#  4. what CSR and bitmap really save at 20% density, by value and index width.
# usage: scripts/bench/sparsify_bench.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
build="${EDO_BUILD_DIR:-build}"
py=/usr/bin/python3
data=../shared/data
[ -f "$data/glove.6B.50d.10k.npy" ] || data=data-samples
glove=$data/glove.6B.50d.10k.npy
bigann=$data/bigann10k_base.npy
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)"
"$py" -c "import numpy as np; np.save('$work/zipf.npy', 1.0 / (np.arange(10000) + 1))"

echo "== 1. sweeps (recall@10 over 1000 queries, cosine)"
sweep='auto:density=0.1,values=int8;auto:density=0.2,values=int8;auto:density=0.3,values=int8;auto:density=0.5,values=int8;auto:density=0.7,values=int8;auto:density=0.3,values=fp16;auto:density=0.5,values=int4'
"$build/edo-sparsify" "$glove" --sweep "$sweep" --k 10 --eval-freq "$work/zipf.npy" -q
[ -f "$bigann" ] && "$build/edo-sparsify" "$bigann" --sweep "$sweep" --k 10 --metric l2 -q

echo "== 2. dropping rows of GloVe (Zipf counts), kept rows fp32"
printf "  %-6s %-14s %12s %12s %12s %9s %9s\n" drop fallback bytes fallback-hit w.recall@10 rel_fro cos
for share in 30 50 70; do
  for fb in mean zero centroids:256 nearest; do
    "$build/edo-sparsify" "$glove" -o "$work/d.edo" --freq "$work/zipf.npy" --drop "rows=$share%" --fallback "$fb" \
      --eval --eval-freq "$work/zipf.npy" --k 10 -q --json >"$work/d.json"
    "$py" - "$work/d.json" "$share" "$fb" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
t = {x["name"]: x for x in j["tiers"]}
e = j["eval"]
print(f"  {sys.argv[2] + '%':<6} {sys.argv[3]:<14} {j['file_bytes']:>12} {t['dropped']['mass']:>12.4f} {e['w.recall@10']:>12.4f}"
      f" {e['dropped.rel_fro']:>9.3f} {e['dropped.cos.mean']:>9.3f}")
PY
  done
done

echo "== 3. throughput"
"$build/edo-sparsify" "$glove" -o "$work/s.edo" --density 0.3 --values int8 --form csr -q --json >"$work/s.json"
"$py" - "$work/s.json" "$glove" <<'PY'
import json, sys, time, numpy as np
j = json.load(open(sys.argv[1])); g = np.load(sys.argv[2])
best = 1e9
for _ in range(200):
    t0 = time.perf_counter(); g.copy(); best = min(best, time.perf_counter() - t0)
enc = j["encode_seconds"]
print(f"  sparsify csr density 0.3 int8: {j['fp32_bytes'] / enc / 1e9:.3g} GB/s of fp32 input; numpy copy of the same bytes {g.nbytes / best / 1e9:.3g} GB/s ({g.nbytes / enc / (g.nbytes / best):.3f}x)")
PY
cmake --install "$build" --prefix "$work/prefix" >/dev/null
cmake -S scripts/bench/lookup -B "$work/b" -DCMAKE_PREFIX_PATH="$work/prefix" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$work/b" -j2 >/dev/null
"$build/edo-quantize" "$glove" -o "$work/i8.edo" --codec int8 -q >/dev/null
"$build/edo-sparsify" "$glove" -o "$work/bm.edo" --density 0.3 --values int8 --form bitmap -q >/dev/null
for f in i8 s bm; do OMP_NUM_THREADS=1 "$work/b/bench_lookup" "$work/$f.edo" "$glove" "$work/zipf.npy" 4096 | grep -E "^file|lookup"; done

echo "== 4. bytes per stored value at 20% density (values + indices or masks + 4-byte offsets), against dense"
"$py" - <<'PY'
for dim in (50, 256, 1024):
    ib = 1 if dim <= 256 else 2
    for name, w, params in (("fp32", 4, 0), ("fp16", 2, 0), ("int8", 1, 8), ("int4", 0.5, 8)):
        d = 0.2
        dense = dim * w + params
        csr = d * dim * (w + ib) + 4 + params
        bitmap = d * dim * w + (dim + 7) // 8 + 4 + params
        print(f"  dim {dim:>4} {name:<5} dense {dense:7.0f} B/row  csr {csr:7.1f} ({100 * (1 - csr / dense):5.1f}% saved)"
              f"  bitmap {bitmap:7.1f} ({100 * (1 - bitmap / dense):5.1f}% saved)")
PY
