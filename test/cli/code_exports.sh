#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Stored codes out of a .edo: edo-unpack --codes (safetensors: decoded by an
# independent numpy dequantizer and read back by edo bit for bit) and
# --to fbgemm (FBGEMM IntNBit rows, decoded by an independent numpy decoder
# of that layout, the added error checked against the one reported).
# Hostile code files get one line naming the file, exit 1.
#   code_exports.sh BUILD_DIR SOURCE_DIR
set -uo pipefail
source "$(dirname "$0")/checks.bash" "$@"  # build, src, work (removed at exit), expect, fail, err_has
py=/usr/bin/python3
Q="$build/edo-quantize"
U="$build/edo-unpack"
glove="$src/data-samples/glove.6B.50d.10k.npy"
"$py" -c "import numpy as np; np.save('$work/g.npy', np.load('$glove')[:3000])"
"$py" -c "import numpy as np; np.save('$work/s.npy', np.load('$src/data-samples/bigann10k_base.npy')[:2000].astype(np.float32))"

# ---- safetensors codes: every scalar codec and the trained ones -------------------------
for codec in fp16 bf16 fp8:e4m3 int8 int5:group=16 int4:group=16 int3 int2:group=8 int6:group=10,scale=fp16 bin pq:m=10 opq:m=5,nbits=6 pca:16,int8; do
  name=$(echo "$codec" | tr ':,=' '___')
  expect 0 "$Q" "$work/g.npy" -o "$work/$name.edo" --codec "$codec" --seed 3 -q
  expect 0 "$U" "$work/$name.edo" -o "$work/$name.npy" -q
  expect 0 "$U" "$work/$name.edo" -o "$work/$name.safetensors:tok.weight" --codes -q
  # Read back by edo as the decoded table, bit for bit.
  expect 0 "$Q" "$work/$name.safetensors:tok.weight" -o "$work/$name.back.edo" --codec fp32 -q
  expect 0 "$U" "$work/$name.back.edo" -o "$work/$name.back.npy" -q
  cmp -s "$work/$name.npy" "$work/$name.back.npy" || fail "$codec: the codes read back decode differently"
done
# An independent dequantizer: the layout docs/PACK.md gives, in numpy.
"$py" - "$work" <<'PY' || fail "numpy dequantization of the stored codes"
import json, struct, sys
import numpy as np
w = sys.argv[1]

def load(path):
    raw = open(path, 'rb').read()
    n = struct.unpack('<Q', raw[:8])[0]
    head = json.loads(raw[8:8 + n])
    meta = head.pop('__metadata__')
    base = 8 + n
    dt = {'U8': np.uint8, 'F32': '<f4', 'F16': '<f2'}
    t = {k: np.frombuffer(raw[base + v['data_offsets'][0]:base + v['data_offsets'][1]],
                          dt.get(v['dtype'], np.uint8)).reshape(v['shape']) for k, v in head.items()}
    return t, meta

def unpack(codes, bits, dim):  # value j at bits j*bits of the row, least significant first
    rows = codes.shape[0]
    bitpos = np.arange(dim) * bits
    byte, shift = bitpos // 8, bitpos % 8
    padded = np.concatenate([codes, np.zeros((rows, 1), np.uint8)], axis=1).astype(np.uint32)
    word = padded[:, byte] | (padded[:, byte + 1] << 8)  # a 3- or 5-bit value may straddle two bytes
    return (word >> shift) & ((1 << bits) - 1)

for name, bits, group in [('int8', 8, 50), ('int5_group_16', 5, 16), ('int4_group_16', 4, 16), ('int3', 3, 50),
                          ('int2_group_8', 2, 8), ('int6_group_10_scale_fp16', 6, 10), ('bin', 1, 50)]:
    t, meta = load(f'{w}/{name}.safetensors')
    dim = int(meta['tok.weight.dim'])
    assert dim == 50 and meta['edo.codes'] == '1', meta
    q = unpack(t['tok.weight.codes'], bits, dim).astype(np.float32)
    scales = t['tok.weight.scales']
    if bits == 1:
        x = np.where(q > 0, -scales, scales)
    else:
        g = np.arange(dim) // group
        x = q * scales[:, g] + t['tok.weight.offsets'][:, g]
    want = np.load(f'{w}/{name}.npy')
    err = np.abs(x - want).max() / np.abs(want).max()
    assert err < 1e-6, (name, err)
t, meta = load(f'{w}/fp16.safetensors')
assert np.array_equal(t['tok.weight.codes'].astype(np.float32), np.load(f'{w}/fp16.npy'))
t, meta = load(f'{w}/pq_m_10.safetensors')
assert meta['tok.weight.codec'] == 'pq:m=10,nbits=8' and t['tok.weight.codes'].shape == (3000, 10), meta
assert 'tok.weight.state.pq.codebooks' in t
PY
expect 0 "$build/edo-profile" "$work/int8.safetensors"
grep -q "codes tok.weight (int8" "$work/out" || fail "edo-profile lists no codes group: $(cat "$work/out")"
# Without a tensor name, the file's only group of codes.
expect 0 "$build/edo-eval" "$work/int8.edo" "$work/int8.safetensors" --json
# Refusals: a tiered file; --codes with a decoded dtype or a non-safetensors output.
expect 0 "$build/edo-pack" "$work/g.npy" -o "$work/tiered.edo" --tier hot:rows=10%:fp16 --tier cold:rest:int8 -q
expect 2 "$U" "$work/tiered.edo" -o "$work/t.safetensors" --codes
err_has "one codec tier holds every row"
expect 2 "$U" "$work/int8.edo" -o "$work/t.npy" --codes
err_has "--codes writes a safetensors file"
[ ! -e "$work/t.safetensors" ] && [ ! -e "$work/t.npy" ] || fail "a refused export left a file"
# Hostile code files: a codec whose width disagrees with the tensors, a missing tensor, bad metadata.
"$py" - "$work" <<'PY'
import json, struct, sys
w = sys.argv[1]
raw = open(f'{w}/int4_group_16.safetensors', 'rb').read()
n = struct.unpack('<Q', raw[:8])[0]
head = json.loads(raw[8:8 + n])
def save(path, h, body=raw[8 + n:]):
    text = json.dumps(h).encode()
    open(path, 'wb').write(struct.pack('<Q', len(text)) + text + body)
h = json.loads(json.dumps(head)); h['__metadata__']['tok.weight.dim'] = '64'; save(f'{w}/h_dim.safetensors', h)
h = json.loads(json.dumps(head)); h['__metadata__']['tok.weight.dim'] = 'x'; save(f'{w}/h_dimtext.safetensors', h)
h = json.loads(json.dumps(head)); h['__metadata__']['tok.weight.codec'] = 'int4:group=0'; save(f'{w}/h_codec.safetensors', h)
h = json.loads(json.dumps(head)); h['__metadata__']['edo.codes'] = '9'; save(f'{w}/h_version.safetensors', h)
h = json.loads(json.dumps(head)); h['tok.weight.offsets']['dtype'] = 'I32'; save(f'{w}/h_dtype.safetensors', h)
PY
for bad in h_dim h_dimtext h_codec h_version h_dtype; do
  expect 1 "$build/edo-profile" "$work/$bad.safetensors:tok.weight"
  err_has "$work/$bad.safetensors"
done
err_has "needs tensor 'tok.weight.offsets' of F32"

# ---- FBGEMM IntNBit rows --------------------------------------------------------------------
for codec in int8 int4 int2 int4:group=32 pq:m=16; do
  name=f_$(echo "$codec" | tr ':,=' '___')
  expect 0 "$Q" "$work/s.npy" -o "$work/$name.edo" --codec "$codec" --seed 3 -q
  expect 0 "$U" "$work/$name.edo" -o "$work/$name.npy" -q
  for type in int8 int4 int2; do
    expect 0 "$U" "$work/$name.edo" -o "$work/$name.$type.npy" --to fbgemm --fbgemm-type "$type" -q
    grep -q "FBGEMM ${type^^} rows" "$work/err" || fail "$codec -> $type: no report: $(cat "$work/err")"
    reported=$(sed -n 's/.*added error \([0-9.e+-]*\) .*/\1/p' "$work/err")
    kept=$(sed -n 's/.*; \([0-9]*\) rows keep.*/\1/p' "$work/err")
    "$py" - "$work/$name.$type.npy" "$work/$name.npy" "$type" "$reported" "$kept" "$codec" <<'PY' || fail "$codec -> $type: the independent FBGEMM decoder disagrees"
import sys
import numpy as np
rows, want, kind, reported, kept, codec = sys.argv[1:]
w = np.load(rows); want = np.load(want)
bits = {'int8': 8, 'int4': 4, 'int2': 2}[kind]
dim = want.shape[1]
unpadded = 4 + dim * bits // 8
assert w.dtype == np.uint8 and w.shape == (want.shape[0], (unpadded + 15) // 16 * 16), w.shape
assert not w[:, unpadded:].any(), 'padding not zero'
# FBGEMM's TBE inference row: fp16 scale at [0:2], fp16 bias at [2:4], codes least significant bits first.
scale = w[:, 0:2].copy().view('<f2').astype(np.float32)
bias = w[:, 2:4].copy().view('<f2').astype(np.float32)
bitpos = np.arange(dim) * bits
q = (w[:, 4 + bitpos // 8] >> (bitpos % 8)) & ((1 << bits) - 1)
x = q.astype(np.float32) * scale + bias
err = np.linalg.norm((x - want).astype(np.float64)) / np.linalg.norm(want.astype(np.float64))
assert abs(err - float(reported)) <= 1e-3 * float(reported) + 1e-6, (err, reported)
# Requantizing costs at most what FBGEMM's own quantizer would lose on these rows.
bound = {8: 0.01, 4: 0.15, 2: 0.6}[bits]
assert err < bound, (err, bound)
same_bits = codec == kind
assert (int(kept) > 0) == same_bits, (kept, codec, kind)
PY
  done
done
# fp16 pairs are FBGEMM's own row header: every row keeps its codes and nothing is added.
expect 0 "$Q" "$work/s.npy" -o "$work/h4.edo" --codec int4:scale=fp16 -q
expect 0 "$U" "$work/h4.edo" -o "$work/h4.fb.npy" --to fbgemm -q
grep -q "FBGEMM INT4 rows .*; 2000 rows keep the file's codes, 0 " "$work/err" || fail "int4:scale=fp16: $(cat "$work/err")"
# safetensors output, CPU alignment.
expect 0 "$U" "$work/f_int4.edo" -o "$work/fb.safetensors:table0" --to fbgemm --row-alignment 1 -q
"$py" -c "
import json,struct; raw=open('$work/fb.safetensors','rb').read(); n=struct.unpack('<Q',raw[:8])[0]
h=json.loads(raw[8:8+n]); assert h['table0']['dtype']=='U8' and h['table0']['shape']==[2000,68], h" ||
  fail "fbgemm rows in safetensors"
expect 2 "$U" "$work/int8.edo" -o "$work/fb.npy" --to fbgemm --fbgemm-type int2
err_has "FBGEMM needs a multiple of 4"
expect 2 "$U" "$work/f_int4.edo" -o "$work/fb.h5:/x" --to fbgemm
expect 2 "$U" "$work/f_int4.edo" -o "$work/fb.npy" --to fbgemm --row-alignment 12
err_has "a power of two"
expect 2 "$U" "$work/f_int4.edo" -o "$work/fb.npy" --fbgemm-type int4
err_has "are for --to fbgemm"
"$py" -c "
import numpy as np; x = np.random.default_rng(0).standard_normal((64, 16)).astype(np.float32); x[5, 3] = 1e8
np.save('$work/huge.npy', x)"
expect 0 "$Q" "$work/huge.npy" -o "$work/huge.edo" --codec fp32 -q
expect 1 "$U" "$work/huge.edo" -o "$work/fb.npy" --to fbgemm
err_has "row 5 spans beyond fp16's range"
[ ! -e "$work/fb.npy" ] || fail "a refused FBGEMM export left a file"

[ "$failures" = 0 ] || { echo "$failures failure(s)"; exit 1; }
echo "code_exports: ok"
