#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Benchmark: reading safetensors tensors (F32 and BF16) through edo's reader,
# against `cat FILE > /dev/null` of the same file (the read ceiling from the
# page cache) and against the same table as .npy (edo's npy reader, the
# peer), in the same run, with peak resident memory. The work on the rows is
# edo-profile's (statistics over every row, streamed in 32 MiB blocks).
#
# usage: scripts/bench/safetensors_bench.sh [ROWS] [DIM] [DIR]
# default 2097152 x 128 float32 = 1 GiB in ${DIR:-/tmp}. Needs /usr/bin/python3 with numpy.
set -euo pipefail
cd "$(dirname "$0")/../.."
rows="${1:-2097152}"; dim="${2:-128}"; dir="${3:-/tmp}"
npy="$dir/edo-bench-${rows}x${dim}.npy"
st="$dir/edo-bench-${rows}x${dim}.safetensors"
bin="${EDO_BUILD_DIR:-build}/edo-profile"
[ -x "$bin" ] || { echo "build first: scripts/build.sh" >&2; exit 1; }
[ -f "$npy" ] || /usr/bin/python3 scripts/bench/make_synthetic.py "$npy" "$rows" "$dim"
# One file holding the table twice, as F32 and as BF16 (rounded to nearest even), written in chunks.
[ -f "$st" ] || /usr/bin/python3 - "$npy" "$st" <<'PY'
import json, struct, sys
import numpy as np
x = np.load(sys.argv[1], mmap_mode='r')
n, d = x.shape
f32, bf16 = n * d * 4, n * d * 2
head = {"table.f32": {"dtype": "F32", "shape": [n, d], "data_offsets": [0, f32]},
        "table.bf16": {"dtype": "BF16", "shape": [n, d], "data_offsets": [f32, f32 + bf16]}}
text = json.dumps(head).encode()
text += b' ' * ((8 - len(text) % 8) % 8)
chunk = 1 << 18
with open(sys.argv[2] + '.tmp', 'wb') as f:
    f.write(struct.pack('<Q', len(text)) + text)
    for b in range(0, n, chunk):
        f.write(np.ascontiguousarray(x[b:b + chunk]).astype('<f4').tobytes())
    for b in range(0, n, chunk):
        bits = np.ascontiguousarray(x[b:b + chunk]).view(np.uint32)
        f.write(((bits + 0x7fff + ((bits >> 16) & 1)) >> 16).astype('<u2').tobytes())
import os; os.replace(sys.argv[2] + '.tmp', sys.argv[2])
PY
load() { cut -d' ' -f1 /proc/loadavg; }
echo "table: $rows x $dim; machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), load average $(load)"
cat "$npy" "$st" > /dev/null  # warm the page cache for every contender
f32_bytes=$((rows * dim * 4)); bf16_bytes=$((rows * dim * 2))
best() { sort -n | head -1; }
# cat of exactly the tensor's bytes: the file's F32 or BF16 part.
hdr=$(( $(stat -c %s "$st") - f32_bytes - bf16_bytes ))
range() {  # offset bytes: dd of that byte range, 1 MiB reads, as cat reads
  /usr/bin/time -f %e dd if="$st" of=/dev/null bs=1M iflag=skip_bytes,count_bytes skip="$1" count="$2" status=none 2>&1
}
t_cat32=$(for i in 1 2 3; do range "$hdr" "$f32_bytes"; done | best)
t_cat16=$(for i in 1 2 3; do range $((hdr + f32_bytes)) "$bf16_bytes"; done | best)
t_catnpy=$(for i in 1 2 3; do /usr/bin/time -f %e cat "$npy" 2>&1 >/dev/null; done | best)
run() {  # spec -> "best_seconds peak_kb"
  local runs
  runs=$(for i in 1 2 3; do /usr/bin/time -f '%e %M' "$bin" --quiet --json "$1" 2>&1 >/dev/null | tail -1; done)
  echo "$(echo "$runs" | awk '{print $1}' | best) $(echo "$runs" | awk '{print $2}' | sort -n | tail -1)"
}
read -r t_npy m_npy < <(run "$npy")
read -r t_32 m_32 < <(run "$st:table.f32")
read -r t_16 m_16 < <(run "$st:table.bf16")
awk -v b32="$f32_bytes" -v b16="$bf16_bytes" -v cn="$t_catnpy" -v c32="$t_cat32" -v c16="$t_cat16" \
    -v tn="$t_npy" -v t32="$t_32" -v t16="$t_16" -v mn="$m_npy" -v m32="$m_32" -v m16="$m_16" 'BEGIN {
  printf "%-38s %7s %9s %12s %9s\n", "what", "s", "GB/s", "time / cat", "peak RSS";
  printf "%-38s %7.2f %9.2f %12s %9s\n", "cat of the npy", cn, b32 / cn / 1e9, "1.00x", "-";
  printf "%-38s %7.2f %9.2f %12s %9s\n", "dd of the F32 tensor bytes", c32, b32 / c32 / 1e9, "1.00x", "-";
  printf "%-38s %7.2f %9.2f %12s %9s\n", "dd of the BF16 tensor bytes", c16, b16 / c16 / 1e9, "1.00x", "-";
  printf "%-38s %7.2f %9.2f %11.2fx %6.0f MB\n", "edo-profile x.npy (peer)", tn, b32 / tn / 1e9, tn / cn, mn / 1024;
  printf "%-38s %7.2f %9.2f %11.2fx %6.0f MB\n", "edo-profile x.safetensors:table.f32", t32, b32 / t32 / 1e9, t32 / c32, m32 / 1024;
  printf "%-38s %7.2f %9.2f %11.2fx %6.0f MB\n", "edo-profile x.safetensors:table.bf16", t16, b16 / t16 / 1e9, t16 / c16, m16 / 1024;
}'
echo "best of 3 runs each (peak RSS: the largest); load average at the end $(load)"
