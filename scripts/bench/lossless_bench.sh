#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Lossless tiers (FORMAT.md 9.10) on GloVe 50d, the BIGANN sample and a
# 65,536 x 768 synthetic table, each stored in bf16 and in fp16 (safetensors
# inputs of those types, so `lossless` keeps them): the bits a value the
# file's tier takes beside the entropy of the scheme (the symbols' order-0
# entropy plus the raw bits) and beside zstd -19 on the same raw values (the
# peer a user would reach for; no random access), then one core's decode of
# every row (GB/s of fp32 rows written) beside the fixed-rate twin (the same
# table by the bf16 or fp16 codec) and memcpy of the same output, and random
# rows and pooled bags (M ids a second) beside the twin (edo_bench_lossless).
#
# usage: scripts/bench/lossless_bench.sh   (about three minutes)
set -euo pipefail
cd "$(dirname "$0")/../.."
B="${EDO_BUILD_DIR:-build}"
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
export OMP_WAIT_POLICY=passive OMP_NUM_THREADS=1
py=/usr/bin/python3
$py scripts/bench/make_synthetic.py "$work/s768.npy" 65536 768 >/dev/null
# Each table as bf16 and fp16 safetensors, and its raw values for zstd.
$py - "$work" data-samples/glove.6B.50d.10k.npy data-samples/bigann10k_base.npy "$work/s768.npy" <<'PY'
import json, struct, sys, numpy as np
work = sys.argv[1]
for src in sys.argv[2:]:
    name = src.split("/")[-1].split(".")[0]
    x = np.ascontiguousarray(np.load(src, mmap_mode="r"), dtype=np.float32)
    u = x.view(np.uint32).astype(np.uint64)
    for kind, raw in (("bf16", ((u + 0x7fff + ((u >> 16) & 1)) >> 16).astype(np.uint16)),
                      ("fp16", x.astype(np.float16))):
        dtype = {"bf16": "BF16", "fp16": "F16"}[kind]
        head = json.dumps({"emb": {"dtype": dtype, "shape": list(x.shape), "data_offsets": [0, raw.nbytes]}}).encode()
        head += b" " * (-len(head) % 8)
        with open(f"{work}/{name}.{kind}.safetensors", "wb") as f:
            f.write(struct.pack("<Q", len(head)) + head)
            f.write(raw.tobytes())
        raw.tofile(f"{work}/{name}.{kind}.raw")
PY
field() { $py -c "import json,sys; print(json.load(open(sys.argv[1]))[sys.argv[2]])" "$@"; }
echo "| table | type | scheme entropy | edo lossless | zstd -19 | zstd -d GB/s | decode GB/s: lossless / twin / memcpy | rows M ids/s: lossless / twin | bags M ids/s: lossless / twin |"
echo "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
for name in glove bigann10k_base s768; do
  for kind in bf16 fp16; do
    in="$work/$name.$kind.safetensors"
    "$B/edo-pack" "$in" -o "$work/l.edo" --tier all:rest:lossless -q >/dev/null
    "$B/edo-quantize" "$in" -o "$work/t.edo" --codec "$kind" -q >/dev/null
    $py scripts/edo_reader.py "$work/l.edo" --manifest > "$work/m.json"
    read -r bits entropy < <($py -c "import json,sys; t=json.load(open(sys.argv[1]))['tiers'][0]
print(t['bits_per_value'], t['symbol_entropy'] + 8)" "$work/m.json")
    "$B/scripts/bench/edo_bench_lossless" "$work/l.edo" "$work/t.edo" > "$work/b.json"
    # zstd's own benchmark: ratio and decompression speed of the raw values, one thread.
    z=$(zstd -b19 -i1 -T1 "$work/$name.$kind.raw" 2>&1 | tr '\r' '\n' | grep -E "MB/s.*MB/s" | tail -1)
    zratio=$(sed -E 's/.*\(x([0-9.]+)\).*/\1/' <<< "$z")
    zdec=$(sed -E 's/.* ([0-9.]+) MB\/s$/\1/' <<< "$z")
    printf '| %s | %s | %.2f | %.2f | %.2f | %.2f | %.2f / %.1f / %.1f | %.1f / %.1f | %.1f / %.1f |\n' \
      "$name" "$kind" "$entropy" "$bits" "$($py -c "print(16 / $zratio)")" "$($py -c "print($zdec / 1000)")" \
      "$(field "$work/b.json" decode_lossless_gbs)" "$(field "$work/b.json" decode_twin_gbs)" \
      "$(field "$work/b.json" memcpy_gbs)" "$(field "$work/b.json" lookup_lossless_mids)" \
      "$(field "$work/b.json" lookup_twin_mids)" "$(field "$work/b.json" bags_lossless_mids)" \
      "$(field "$work/b.json" bags_twin_mids)"
  done
done
