#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Lossless tiers from the tools (docs/PACK.md, "Lossless tiers"): a bf16 and
# an fp16 safetensors table packed with bare `lossless` keep their type and
# unpack bit for bit; a model's tables all lossless and back; edo-eval sees
# no error; an inexact value, a bad spec, a shard and incompressible values
# each get their one line on stderr, and nothing is written where it fails.
# usage: lossless.sh BUILD_DIR SOURCE_DIR
set -uo pipefail
source "$(dirname "$0")/checks.bash" "$@"
py=/usr/bin/python3
if ! "$py" -c 'import numpy' 2>/dev/null; then
  echo "lossless: skipped ($py has no numpy)"
  exit 0
fi
K="$build/edo-pack"; U="$build/edo-unpack"; E="$build/edo-eval"

"$py" - "$src/data-samples/glove.6B.50d.10k.npy" "$work" <<'PY'
import json, struct, sys, numpy as np
x = np.load(sys.argv[1])[:3000].astype(np.float32)
work = sys.argv[2]
u = x.view(np.uint32).astype(np.uint64)
bf = ((u + 0x7fff + ((u >> 16) & 1)) >> 16).astype(np.uint16)
h = x.astype(np.float16)
def write(path, tensors):
    head, blobs, at = {}, [], 0
    for name, (dtype, arr) in tensors.items():
        head[name] = {"dtype": dtype, "shape": list(arr.shape), "data_offsets": [at, at + arr.nbytes]}
        blobs.append(arr.tobytes()); at += arr.nbytes
    text = json.dumps(head).encode(); text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + b"".join(blobs))
write(work + "/bf.safetensors", {"emb": ("BF16", bf)})
write(work + "/h.safetensors", {"emb": ("F16", h)})
write(work + "/model.safetensors", {"words.weight": ("BF16", bf), "pos.weight": ("F16", h[:512, :32].copy())})
# What the tools read: bf16 widened by a shift, fp16 exactly.
np.save(work + "/bf.npy", (bf.astype(np.uint32) << 16).view(np.float32))
np.save(work + "/h.npy", h.astype(np.float32))
np.save(work + "/x.npy", x)
np.save(work + "/counts.npy", np.arange(len(x), 0, -1).astype(np.float64))
r = np.random.default_rng(1).integers(0, 2**32, size=(500, 40), dtype=np.uint64).astype(np.uint32)
np.save(work + "/noise.npy", ((r & 0x807fffff) | (((r >> 8) % 255) << 23)).view(np.float32))
PY
same() {  # A.npy B.npy: identical bits
  "$py" -c 'import sys, numpy as np; a, b = np.load(sys.argv[1]), np.load(sys.argv[2])
sys.exit(0 if a.shape == b.shape and np.array_equal(a.view(np.uint32), b.view(np.uint32)) else 1)' "$1" "$2" ||
    fail "$1 and $2 differ"
}

for t in bf h; do
  expect 0 "$K" "$work/$t.safetensors" -o "$work/$t.edo" --tier all:rest:lossless --json -q
  want=$([ "$t" = bf ] && echo bf16 || echo fp16)
  grep -q "\"codec\": \"lossless:values=$want\"" "$work/out" || fail "a $want input's lossless tier: $(cat "$work/out")"
  expect 0 "$U" "$work/$t.edo" -o "$work/$t.back.npy" -q
  same "$work/$t.npy" "$work/$t.back.npy"
done
# A hot tier in the same type before it, then evaluation: no error anywhere.
expect 0 "$K" "$work/bf.safetensors" -o "$work/two.edo" --tier hot:rows=10%:bf16 --tier cold:rest:lossless
expect 0 "$U" "$work/two.edo" -o "$work/two.back.npy" -q
same "$work/bf.npy" "$work/two.back.npy"
expect 0 "$E" "$work/bf.safetensors" "$work/two.edo" --json
"$py" -c 'import json, sys; j = json.load(open(sys.argv[1])); sys.exit(0 if j["mse"] == 0 and "rd.gap_bits" not in j else 1)' \
  "$work/out" || fail "edo-eval of a lossless file: $(head -c 400 "$work/out")"
# The planner's default ladder starts with lossless: a budget a bf16 table meets bit for bit is met so.
expect 0 "$K" "$work/bf.safetensors" -o "$work/plan.edo" --budget 'ratio>=2.5'
grep -qF "all:rest:lossless:values=bf16" "$work/out" || fail "ratio>=2.5 on bf16 is no lossless plan: $(cat "$work/out")"
expect 0 "$U" "$work/plan.edo" -o "$work/plan.back.npy" -q
same "$work/bf.npy" "$work/plan.back.npy"
# Never in a hot or warm tier: a budget that needs two tiers keeps lossless out of the hot one.
expect 0 "$K" "$work/bf.safetensors" -o "$work/plan4.edo" --budget 'ratio>=4' --plan-codecs lossless --plan-codecs int4 \
  --plan-codecs fp16
if grep -E "^  (hot|warm) " "$work/out" | grep -qF lossless; then fail "a lossless hot tier: $(cat "$work/out")"; fi
# Every table of a model, each in its own type.
expect 0 "$K" "$work/model.safetensors" -o "$work/model.edo" --tier all:rest:lossless
expect 0 "$U" "$work/model.edo" --table words.weight -o "$work/words.npy" -q
same "$work/bf.npy" "$work/words.npy"
expect 0 "$U" "$work/model.edo" --table pos.weight -o "$work/pos.npy" -q
"$py" -c 'import sys, numpy as np; np.save(sys.argv[2], np.load(sys.argv[1])[:512, :32].copy())' \
  "$work/h.npy" "$work/pos.want.npy"
same "$work/pos.want.npy" "$work/pos.npy"

# fp32 values that are no bf16: refused, naming the row and column; nothing written.
expect 1 "$K" "$work/x.npy" -o "$work/no.edo" --tier all:rest:lossless:values=bf16 --freq "$work/counts.npy"
err_has "row 0, column 0"
err_has "is not exactly a bf16 value"
[ ! -e "$work/no.edo" ] || fail "a refused lossless tier left a file"
expect 2 "$K" "$work/x.npy" -o "$work/no.edo" --tier all:rest:lossless:values=int8 --freq "$work/counts.npy"
err_has "values=int8 (bf16, fp16 or fp32)"
expect 2 "$K" "$work/x.npy" -o "$work/no.edo" --tier all:rest:lossless --shard 0/2 --freq "$work/counts.npy"
grep -qF "does not shard" "$work/err" || fail "a lossless shard: $(cat "$work/err")"
# edo-quantize writes codecs: a lossless tier is edo-pack's, and it says so.
expect 2 "$build/edo-quantize" "$work/x.npy" -o "$work/no.edo" --codec lossless
err_has "a lossless tier, not a codec: edo-pack writes it (--tier all:rest:lossless)"
# Values that do not compress: stored raw, said in the summary, read back exactly.
expect 0 "$K" "$work/noise.npy" -o "$work/noise.edo" --tier all:rest:lossless
grep -qF "its values do not compress" "$work/out" || fail "no note for incompressible values: $(cat "$work/out")"
expect 0 "$U" "$work/noise.edo" -o "$work/noise.back.npy" -q
same "$work/noise.npy" "$work/noise.back.npy"

[ "$failures" -eq 0 ] && echo "lossless: ok"
exit $((failures > 0))
