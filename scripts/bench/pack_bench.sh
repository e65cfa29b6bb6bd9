#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Benchmark of packed files (docs/BENCHMARKS.md, "Packed files"):
#  1. the plan edo-profile --plan finds on GloVe 10k with Zipf counts for
#     recall@10 >= 0.99 (access-weighted), packed and evaluated;
#  2. batch lookup throughput (4096 ids drawn by frequency) from the mmapped
#     file vs a plain gather from the fp32 table in memory, same run;
#  3. open time of a multi-GB packed file vs the small one.
# usage: scripts/bench/pack_bench.sh [BIG_ROWS] [BIG_DIM] [DIR]   (default 4194304 x 128 in /tmp; BIG_ROWS 0 skips it)
set -euo pipefail
cd "$(dirname "$0")/../.."
big_rows="${1:-4194304}"; big_dim="${2:-128}"; dir="${3:-/tmp}"
build="${EDO_BUILD_DIR:-build}"
py=/usr/bin/python3
glove=../shared/data/glove.6B.50d.10k.npy
[ -f "$glove" ] || glove=data-samples/glove.6B.50d.10k.npy
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)"

cmake --install "$build" --prefix "$work/prefix" >/dev/null
cmake -S scripts/bench/lookup -B "$work/b" -DCMAKE_PREFIX_PATH="$work/prefix" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$work/b" -j2 >/dev/null

"$py" -c "import numpy as np; np.save('$work/zipf.npy', 1.0 / (np.arange(10000) + 1))"
"$build/edo-profile" "$glove" --freq "$work/zipf.npy" -q --plan --budget 'recall@10>=0.99' \
  --plan-config "$work/plan.json" | sed -n '/^plan:/,/^  chosen/p'
"$build/edo-pack" "$glove" -o "$work/glove.edo" --freq "$work/zipf.npy" -q --config "$work/plan.json" \
  --eval --k 10 | grep -E '^  (tier|hot|cold|warm|all|row map|size|residency)|  (w\.)?recall@10 '
# One thread, as a serving thread runs: the packed file, and one-tier fp16 and int8 files.
OMP_NUM_THREADS=1 "$work/b/bench_lookup" "$work/glove.edo" "$glove" "$work/zipf.npy" 4096
for codec in fp16 int8; do
  "$build/edo-quantize" "$glove" -o "$work/glove.$codec.edo" --codec "$codec" -q >/dev/null
  OMP_NUM_THREADS=1 "$work/b/bench_lookup" "$work/glove.$codec.edo" "$glove" "$work/zipf.npy" 4096
done
[ "$big_rows" -gt 0 ] || exit 0

big="$dir/edo-bench-${big_rows}x${big_dim}.npy"
[ -f "$big" ] || "$py" scripts/bench/make_synthetic.py "$big" "$big_rows" "$big_dim"
"$py" -c "import numpy as np; np.save('$work/bigf.npy', 1.0 / (np.arange($big_rows) + 1))"
"$build/edo-pack" "$big" -o "$dir/edo-bench-packed.edo" --freq "$work/bigf.npy" -q \
  --tier hot:rows=5%:fp16:gpu --tier warm:rows=25%:int8:host --tier cold:rest:int4:disk >/dev/null
"$work/b/bench_lookup" "$dir/edo-bench-packed.edo" "$big" "$work/bigf.npy" 4096
rm -f "$dir/edo-bench-packed.edo"
