#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# safetensors input: F32, F16, BF16, F8_E4M3 and F8_E5M2 tensors read as
# tables (values checked against numpy), edo-profile's listing, a sharded
# model through its index, and hostile headers (one line naming the file,
# exit 1, nothing written).
#   safetensors.sh BUILD_DIR SOURCE_DIR
set -uo pipefail
source "$(dirname "$0")/checks.bash" "$@"  # build, src, work (removed at exit), expect, fail, err_has
py=/usr/bin/python3
"$py" - "$work" "$src/data-samples/glove.6B.50d.10k.npy" <<'PY'
import json, struct, sys
import numpy as np
w, glove = sys.argv[1], np.load(sys.argv[2])

def fp8_e4m3(b):  # float8_e4m3fn: bias 7, no infinities, NaN at 0x7f / 0xff
    s = -1.0 if b & 0x80 else 1.0
    e, m = (b >> 3) & 15, b & 7
    return s * (m / 8 * 2.0 ** -6 if e == 0 else (1 + m / 8) * 2.0 ** (e - 7))

def fp8_e5m2(b):  # IEEE-like: bias 15
    s = -1.0 if b & 0x80 else 1.0
    e, m = (b >> 2) & 31, b & 3
    return s * (m / 4 * 2.0 ** -14 if e == 0 else (1 + m / 4) * 2.0 ** (e - 15))

def write(path, tensors, metadata=None, pad=0, lie=None):
    header, blobs, off = {}, [], 0
    for name, (dtype, shape, raw) in tensors.items():
        header[name] = {"dtype": dtype, "shape": list(shape), "data_offsets": [off, off + len(raw)]}
        blobs.append(raw); off += len(raw)
    if metadata: header["__metadata__"] = metadata
    if lie: lie(header)
    text = json.dumps(header).encode() + b' ' * pad
    open(path, 'wb').write(struct.pack('<Q', len(text)) + text + b''.join(blobs))

x = glove[:300]
f16 = x.astype(np.float16)
bits = x.view(np.uint32)
bf16 = ((bits + 0x7fff + ((bits >> 16) & 1)) >> 16).astype(np.uint16)  # round to nearest even
rng = np.random.default_rng(3)
e4 = rng.integers(0, 256, (40, 8)).astype(np.uint8); e4[(e4 & 0x7f) == 0x7f] = 0x3c
e5 = rng.integers(0, 256, (40, 8)).astype(np.uint8); e5[((e5 >> 2) & 31) == 31] = 0x3c
tensors = {
    "model.embed.weight": ("F32", x.shape, x.astype('<f4').tobytes()),
    "model.embed16": ("F16", f16.shape, f16.astype('<f2').tobytes()),
    "model.embedbf16": ("BF16", bf16.shape, bf16.astype('<u2').tobytes()),
    "e4": ("F8_E4M3", e4.shape, e4.tobytes()),
    "e5": ("F8_E5M2", e5.shape, e5.tobytes()),
    "bias": ("F32", (50,), np.ones(50, '<f4').tobytes()),
    "odd": ("F8_E8M0", (4, 4), bytes(16)),
}
write(w + '/m.safetensors', tensors, {"format": "pt"}, pad=5)
np.save(w + '/want_f32.npy', x)
np.save(w + '/want_f16.npy', f16.astype(np.float32))
np.save(w + '/want_bf16.npy', (bf16.astype(np.uint32) << 16).view(np.float32))
np.save(w + '/want_e4.npy', np.vectorize(fp8_e4m3)(e4).astype(np.float32))
np.save(w + '/want_e5.npy', np.vectorize(fp8_e5m2)(e5).astype(np.float32))
# A sharded model: two files and an index.
write(w + '/s-00001-of-00002.safetensors', {"a.weight": ("F32", (20, 50), glove[:20].astype('<f4').tobytes())})
write(w + '/s-00002-of-00002.safetensors', {"b.weight": ("F16", (30, 50), glove[20:50].astype('<f2').tobytes())})
json.dump({"metadata": {}, "weight_map": {"a.weight": "s-00001-of-00002.safetensors",
                                          "b.weight": "s-00002-of-00002.safetensors"}},
          open(w + '/s.safetensors.index.json', 'w'))
np.save(w + '/want_b.npy', glove[20:50].astype(np.float16).astype(np.float32))
# Hostile files: each breaks one rule.
one = {"t": ("F32", (2, 2), np.ones(4, '<f4').tobytes()), "u": ("F32", (2, 2), np.ones(4, '<f4').tobytes())}
write(w + '/past_end.safetensors', one, lie=lambda h: h["u"].update(data_offsets=[16, 48]))
write(w + '/overlap.safetensors', one, lie=lambda h: h["u"].update(data_offsets=[8, 24]))
write(w + '/shape.safetensors', one, lie=lambda h: h["u"].update(shape=[2, 3]))
open(w + '/big_header.safetensors', 'wb').write(struct.pack('<Q', 1000) + b'{}')
open(w + '/huge_header.safetensors', 'wb').write(struct.pack('<Q', 2**62) + b'{}')
open(w + '/not_json.safetensors', 'wb').write(struct.pack('<Q', 4) + b'{abc')
open(w + '/short.safetensors', 'wb').write(b'\x01\x02')
write(w + "/gap.safetensors", one, lie=lambda h: h["t"].update(shape=[1, 2], data_offsets=[0, 8]))
PY
Q="$build/edo-quantize"
U="$build/edo-unpack"
m="$work/m.safetensors"

# The listing (--list-tables): 2-D readable tensors, largest first (the F8_E8M0 one and the 1-D bias left out).
expect 0 "$build/edo-profile" "$m" --list-tables
"$py" - "$work/out" <<'PY' || fail "listing: $(cat "$work/out")"
import sys
rows = [l.split() for l in open(sys.argv[1]).read().splitlines()[1:]]
names = [r[1] if r[0] == '*' else r[0] for r in rows]
assert names == ['model.embed.weight', 'model.embed16', 'model.embedbf16', 'e4', 'e5'], names
# The default choice marked, with why: the names holding 'emb'.
marked = [r[1] for r in rows if r[0] == '*']
assert marked == ['model.embed.weight', 'model.embed16', 'model.embedbf16'], marked
assert all("(its name holds 'emb')" in l for l in open(sys.argv[1]).read().splitlines()[1:] if l.startswith('*'))
PY
expect 0 "$build/edo-profile" "$m" --list-tables --json
grep -q '"bfloat16"' "$work/out" || fail "--json listing has no bfloat16 tensor"
expect 0 "$build/edo-profile" "$m:model.embedbf16" -q
grep -qi "bfloat16" "$work/out" || fail "profile of a BF16 tensor does not name its dtype: $(head -5 "$work/out")"

# Values: through a lossless .edo and back, against numpy.
for pair in model.embed.weight:f32 model.embed16:f16 model.embedbf16:bf16 e4:e4 e5:e5; do
  tensor=${pair%:*}; want=${pair#*:}
  expect 0 "$Q" "$m:$tensor" -o "$work/$want.edo" --codec fp32 -q
  expect 0 "$U" "$work/$want.edo" -o "$work/$want.npy" -q
  "$py" -c "import numpy as np, sys; a = np.load('$work/$want.npy'); b = np.load('$work/want_$want.npy'); \
assert a.shape == b.shape and a.tobytes() == b.tobytes(), (a.shape, b.shape)" || fail "$tensor: values differ"
done
# A sharded model through its index.
expect 0 "$Q" "$work/s.safetensors.index.json:b.weight" -o "$work/b.edo" --codec fp32 -q
expect 0 "$U" "$work/b.edo" -o "$work/b.npy" -q
"$py" -c "import numpy as np; assert np.load('$work/b.npy').tobytes() == np.load('$work/want_b.npy').tobytes()" ||
  fail "sharded tensor differs"
expect 0 "$build/edo-profile" "$work/s.safetensors.index.json" --list-tables
grep -q "b.weight" "$work/out" && grep -q "a.weight" "$work/out" || fail "index listing: $(cat "$work/out")"

# Naming: several 2-D tensors and none named is a model (docs/PACK.md, "Models": the
# tensors named like embeddings); a missing tensor; a 1-D one; an unknown dtype.
expect 0 "$Q" "$m" -o "$work/model.edo" --codec int8
grep -q 'took    model.embed.weight (300 x 50)' "$work/err" || fail "the model's choice: $(cat "$work/err")"
grep -q "skipped 4 tensors (2 not a default table" "$work/err" || fail "no one-line summary: $(cat "$work/err")"
expect 0 "$Q" "$m" -o "$work/model.edo" --codec int8 --verbose
grep -q "skipped e4: not a default table (no 'emb' in its name" "$work/err" || fail "e4's skip: $(cat "$work/err")"
expect 1 "$Q" "$m:nope" -o "$work/x.edo" --codec int8
err_has "no tensor 'nope'; its 2-D tensors: model.embed.weight"
expect 1 "$Q" "$m:bias" -o "$work/x.edo" --codec int8
err_has "tensor 'bias' has shape [50], not a table"
expect 1 "$Q" "$m:odd" -o "$work/x.edo" --codec int8
err_has "tensor 'odd' is F8_E8M0, which edo does not read"
expect 1 "$Q" "$work/s.safetensors.index.json:c.weight" -o "$work/x.edo" --codec int8
err_has "no tensor 'c.weight' in the index"

# Hostile headers: one line naming the file, nothing written.
for case in "past_end:data_offsets [16, 48] outside the 32 bytes after the header" \
            "overlap:tensors must tile it" "shape:does not fit the 16 bytes its data_offsets give" \
            "big_header:header length runs past the end of the file (10 bytes)" \
            "huge_header:more than the format's 100000000" "not_json:not valid JSON" \
            "short:shorter than its 8-byte header length" "gap:tensors must tile it"; do
  name=${case%%:*}; msg=${case#*:}
  expect 1 "$Q" "$work/$name.safetensors:t" -o "$work/x.edo" --codec int8
  err_has "$name.safetensors: "
  grep -qF -- "$msg" "$work/err" || fail "$name: stderr lacks '$msg': $(cat "$work/err")"
done
[ -e "$work/x.edo" ] && fail "an output was written from a bad input"

# Output: edo-unpack writes a safetensors tensor (float32, float16, bfloat16) that edo reads back, and its
# header is the format's (8-byte length, JSON padded to 8 bytes, the tensor tiling the buffer).
expect 0 "$Q" "$src/data-samples/glove.6B.50d.10k.npy" -o "$work/g8.edo" --codec int8 -q
expect 0 "$U" "$work/g8.edo" -o "$work/g8.npy" -q
for dt in float32 float16 bfloat16; do
  expect 0 "$U" "$work/g8.edo" -o "$work/out_$dt.safetensors:embed_tokens.weight" --dtype "$dt" -q
  expect 0 "$Q" "$work/out_$dt.safetensors:embed_tokens.weight" -o "$work/back_$dt.edo" --codec fp32 -q
  expect 0 "$U" "$work/back_$dt.edo" -o "$work/back_$dt.npy" -q
done
expect 0 "$U" "$work/g8.edo" -o "$work/default_name.safetensors" -q
"$py" - "$work" <<'PY' || fail "safetensors output"
import json, struct, sys
import numpy as np
w = sys.argv[1]
x = np.load(w + '/g8.npy')
bits = x.view(np.uint32)
bf16 = (((bits + 0x7fff + ((bits >> 16) & 1)) >> 16) << 16).astype(np.uint32).view(np.float32)
want = {'float32': x, 'float16': x.astype(np.float16).astype(np.float32), 'bfloat16': bf16}
for dt, expected in want.items():
    assert np.load(w + '/back_%s.npy' % dt).tobytes() == expected.tobytes(), dt
    raw = open(w + '/out_%s.safetensors' % dt, 'rb').read()
    n = struct.unpack('<Q', raw[:8])[0]
    assert n % 8 == 0
    h = json.loads(raw[8:8 + n])
    t = h['embed_tokens.weight']
    assert t['dtype'] == {'float32': 'F32', 'float16': 'F16', 'bfloat16': 'BF16'}[dt]
    assert t['shape'] == [10000, 50] and t['data_offsets'][0] == 0 and t['data_offsets'][1] == len(raw) - 8 - n
raw = open(w + '/default_name.safetensors', 'rb').read()
h = json.loads(raw[8:8 + struct.unpack('<Q', raw[:8])[0]])
assert 'embeddings' in h, h
PY
expect 2 "$U" "$work/g8.edo" -o "$work/x.npy" --dtype bfloat16
err_has "npy and HDF5 have no bfloat16"

[ "$failures" = 0 ] || { echo "$failures failure(s)"; exit 1; }
echo "safetensors: ok"
