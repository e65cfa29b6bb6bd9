#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Issue 15, item 4: edo's scalar and grouped codecs against llama.cpp's block
# quantizers (Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, MXFP4 from the `gguf` package's
# numpy code, installed into a private venv: a peer, never a dependency) on
# the BIGANN sample, cos recall@10 over 1000 query rows (edo-eval, seed 0),
# against bits a value: 8 x file bytes / (rows x dim) for edo (every
# overhead: scales, header, manifest), 8 x quantized bytes / (rows x dim)
# for GGML's blocks.
#
# usage: scripts/bench/llama_quants_bench.sh [TABLE.npy]   (needs PyPI for the venv; ~2 minutes)
set -euo pipefail
cd "$(dirname "$0")/../.."
B="${EDO_BUILD_DIR:-build}"
table="${1:-../shared/data/bigann10k_base.npy}"
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
venv="${EDO_GGUF_VENV:-${TMPDIR:-/tmp}/edo-gguf-venv}"
if [ ! -x "$venv/bin/python" ] || ! "$venv/bin/python" -c 'import gguf' 2>/dev/null; then
  /usr/bin/python3 -m venv --system-site-packages "$venv"
  "$venv/bin/pip" install -q 'gguf==0.19.0' || { echo "cannot install gguf from PyPI: no peer" >&2; exit 1; }
fi
/usr/bin/python3 -c "import numpy as n; n.save('$work/t.npy', n.load('$table').astype('f4'))"
rows_dim=$(/usr/bin/python3 -c "import numpy as n; a=n.load('$work/t.npy', mmap_mode='r'); print(a.shape[0]*a.shape[1])")
recall() {  # DECODED: recall@10 against the table
  "$B/edo-eval" "$work/t.npy" "$1" --metric cos --k 10 --queries 1000 --seed 0 --json 2>/dev/null |
    /usr/bin/python3 -c 'import json,sys; print("%.4f" % json.load(sys.stdin)["recall@10"])'
}
{
  "$venv/bin/python" scripts/bench/llama_quants.py "$work/t.npy" "$work" Q4_0 Q4_1 Q5_0 Q5_1 Q8_0 MXFP4 |
    while read -r name bits path; do
      printf 'llama.cpp %s\t%.3f\t%s\n' "$name" "$bits" "$(recall "$path")"
    done
  for codec in int2 int2:group=32 int3 int3:group=32 int4 int4:group=64 int4:group=32 int4:group=16 int5 int5:group=64 \
    int4:scale=fp16 int4:group=64,scale=fp16 int4:group=32,scale=fp16 int5:scale=fp16 int5:group=64,scale=fp16 \
    int5:group=32,scale=fp16 int6:scale=fp16 int6:group=64,scale=fp16 int6:group=32,scale=fp16 int8:scale=fp16 \
    int5:group=32 int6 int6:group=64 int6:group=32 fp8:e4m3 int8 int8:group=32 \
    pq:m=32 pq:m=64 tc:bits=3.5 tc:bits=4 tc:bits=4.5 tc:bits=5 tc:bits=5.5 tc:bits=6 tc:bits=8; do
    "$B/edo-quantize" "$work/t.npy" -o "$work/e.edo" --codec "$codec" -q >/dev/null
    bytes=$(stat -c %s "$work/e.edo")
    printf 'edo %s\t%.3f\t%s\n' "$codec" "$(/usr/bin/python3 -c "print(8 * $bytes / $rows_dim)")" "$(recall "$work/e.edo")"
  done
} | sort -t$'\t' -k2,2n | awk -F'\t' 'BEGIN { printf "%-30s %10s %10s\n", "codec", "bits/value", "recall@10" }
  { printf "%-30s %10s %10s\n", $1, $2, $3 }'
