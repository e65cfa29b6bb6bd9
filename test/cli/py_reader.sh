#!/usr/bin/env bash
# The independent Python reader (scripts/edo_reader.py --decode) against the C++
# one (edo-unpack): one-tier files of every codec family, tiered files from
# edo-pack (row map, default tiers, trained tiers, sparse csr and bitmap tiers, zero,
# centroids and nearest fallback tiers), rows by id (--ids), the committed golden files, and
# corrupt row maps, state, sparse rows, centroid indices and nearest targets that the reader
# must refuse (sparse rows, centroid indices and nearest targets: with edo-unpack's very message).
# Scalar codecs, default, sparse and fallback tiers (nearest rows: their targets') decode bit for bit; pq and rq too (a lookup,
# and float32 sums in the order FORMAT.md gives); opq and pca (float sums in
# another order) within max |py - C++| <= 1e-5 * max |C++|.
# usage: py_reader.sh BUILD_DIR SOURCE_DIR
set -uo pipefail
build="$1"; src="$2"
py=/usr/bin/python3
reader="$src/scripts/edo_reader.py"
if ! "$py" -c 'import numpy' 2>/dev/null; then
  echo "py_reader: skipped ($py has no numpy)"
  exit 0
fi
work="$(mktemp -d)"; trap 'rm -rf "$work"' EXIT
source "$(dirname "$0")/checks.bash"
Q="$build/edo-quantize"; K="$build/edo-pack"; U="$build/edo-unpack"
# One thread: the answer is the same, and a busy machine trains far faster so.
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1
quick=(-q --threads 1 --train-rows 512)

"$py" - "$src/data-samples/glove.6B.50d.10k.npy" "$work" <<'PY'
import sys, numpy as np
np.save(sys.argv[2] + "/g.npy", np.ascontiguousarray(np.load(sys.argv[1])[:2000], dtype=np.float32))
np.save(sys.argv[2] + "/zipf.npy", 1.0 / (np.arange(2000) + 1))
# 300 columns: csr column indices of two bytes
np.save(sys.argv[2] + "/wide.npy", np.random.default_rng(1).standard_normal((500, 300)).astype(np.float32))
# row ids to look up: any order, repeats, every tier
ids = [1999, 0, 5, 5, 1234, 100, 42, 777, 1999, 3] + list(range(150, 1900, 37))
np.save(sys.argv[2] + "/ids.npy", np.array(ids, dtype=np.int64))
np.save(sys.argv[2] + "/wide_ids.npy", np.array([499, 0, 250, 249, 7, 7] + ids[10:], dtype=np.int32) % 500)
PY
g="$work/g.npy"

# decode NAME.edo MODE: edo-unpack and the Python reader; MODE exact or tol, checked at the end.
checks=()
decode() {
  local f="$work/$1.edo"
  expect 0 "$U" "$f" -o "$work/$1.cpp.npy" -q
  expect 0 "$py" "$reader" "$f" --decode "$work/$1.py.npy"
  checks+=("$work/$1.py.npy" "$work/$1.cpp.npy" "$2")
}
# decode_ids NAME IDS.npy MODE: the Python reader's --ids against those rows of edo-unpack's output (after decode NAME).
decode_ids() {
  expect 0 "$py" "$reader" "$work/$1.edo" --decode "$work/$1.ids.py.npy" --ids "$work/$2"
  "$py" -c 'import sys, numpy as np; np.save(sys.argv[3], np.load(sys.argv[1])[np.load(sys.argv[2])])' \
    "$work/$1.cpp.npy" "$work/$2" "$work/$1.ids.cpp.npy" || fail "$1: edo-unpack's rows by id"
  checks+=("$work/$1.ids.py.npy" "$work/$1.ids.cpp.npy" "$3")
}

# --- one-tier files: every scalar codec, and the trained codecs with uneven splits
n=0
for spec in fp32 fp16 bf16 fp8:e4m3 fp8:e5m2 int8 int4:group=10 int2:group=7 bin \
            pq:m=10 pq:m=12,nbits=5 rq:m=4,nbits=6 opq:m=10 opq:m=12,nbits=4 \
            pca:16 pca:16,int8 pca:20,pq:m=7,nbits=6 dims:20 dims:30,int4:group=8; do
  n=$((n + 1))
  case "$spec" in opq* | pca*) mode=tol ;; *) mode=exact ;; esac
  expect 0 "$Q" "$g" -o "$work/q$n.edo" --codec "$spec" "${quick[@]}"
  decode "q$n" "$mode"
done

# --- tiered files: a row map (with its local indices), default, scalar and trained tiers
expect 0 "$K" "$g" -o "$work/packed.edo" --freq "$work/zipf.npy" "${quick[@]}" \
  --tier hot:rows=5%:fp16:gpu --tier warm:rows=30%:int8 --tier cold:rows=50%:pq:m=10:disk --tier rare:rest:default
decode packed exact
expect 0 "$K" "$g" -o "$work/mixed.edo" --freq "$work/zipf.npy" "${quick[@]}" \
  --tier a:rows=10%:pca:16,int8:gpu --tier b:rows=20%:opq:m=5:nbits=5 --tier c:rows=30%:rq:m=3:nbits=5 \
  --tier d:rows=20%:fp8:e5m2 --tier e:rows=10%:default --tier f:rest:bin
decode mixed tol
decode_ids packed ids.npy exact
decode_ids mixed ids.npy tol
decode_ids q1 ids.npy exact

# --- sparse tiers: csr and bitmap, every value kind, every rule, whole table and by id
expect 0 "$K" "$g" -o "$work/sparse.edo" --freq "$work/zipf.npy" "${quick[@]}" \
  --tier hot:rows=10%:fp16 --tier 'cold:rest:csr:density=0.3,values=int8'
expect 0 "$K" "$g" -o "$work/bitmap.edo" --freq "$work/zipf.npy" "${quick[@]}" \
  --tier a:rows=40%:bitmap:density=0.25,values=int4 --tier b:rows=30%:bitmap:k=9,values=fp16 \
  --tier c:rest:bitmap:threshold=0.5,values=int8
expect 0 "$K" "$g" -o "$work/csrk.edo" --freq "$work/zipf.npy" "${quick[@]}" \
  --tier a:rows=20%:default --tier b:rest:csr:k=7,values=bf16
expect 0 "$K" "$g" -o "$work/csrt.edo" "${quick[@]}" --tier all:rest:csr:threshold=0.3,values=fp32
expect 0 "$K" "$work/wide.npy" -o "$work/wide.edo" "${quick[@]}" \
  --tier a:rows=50%:csr:k=20,values=int4 --tier b:rest:bitmap:k=9,values=fp32
for name in sparse bitmap csrk csrt; do
  decode "$name" exact
  decode_ids "$name" ids.npy exact
done
decode wide exact
decode_ids wide wide_ids.npy exact
expect 1 "$py" "$reader" "$work/sparse.edo" --decode "$work/x.npy" --ids 3,2000
err_has "sparse.edo: row id 2000 is out of range (the table has 2000 rows)"

# --- fallback tiers for dropped rows: zero, and centroids with 1- and 2-byte indices
expect 0 "$K" "$g" -o "$work/zero.edo" --freq "$work/zipf.npy" "${quick[@]}" \
  --tier kept:rest:int8 --tier dropped:rows=30%:zero
expect 0 "$K" "$g" -o "$work/cent.edo" --freq "$work/zipf.npy" "${quick[@]}" \
  --tier kept:rest:fp16 --tier dropped:rows=40%:centroids:32
# 300 centroids over 1000 rows: assign entries of two bytes
expect 0 "$K" "$g" -o "$work/cent300.edo" --freq "$work/zipf.npy" "${quick[@]}" \
  --tier kept:rest:fp16 --tier dropped:rows=50%:centroids:300
# nearest: no values, each dropped row read as the kept row its target names (cos and l2,
# one kept tier and two)
expect 0 "$K" "$g" -o "$work/near.edo" --freq "$work/zipf.npy" "${quick[@]}" \
  --tier kept:rest:int8 --tier dropped:rows=30%:nearest
expect 0 "$K" "$g" -o "$work/nearl2.edo" --freq "$work/zipf.npy" "${quick[@]}" \
  --tier hot:rows=10%:fp16 --tier cold:rest:int4 --tier dropped:rows=20%:nearest:l2
for name in zero cent cent300 near nearl2; do
  decode "$name" exact
  decode_ids "$name" ids.npy exact
done

# --- golden files (written by older tools; packed.edo has no local indices)
for f in "$src"/test/data/golden/*.edo; do
  name=$(basename "$f" .edo)
  expect 0 "$py" "$reader" "$f" --decode "$work/golden_$name.py.npy"
  case "$name" in *pca*) mode=tol ;; *) mode=exact ;; esac
  checks+=("$work/golden_$name.py.npy" "$src/test/data/golden/$name.decoded.npy" "$mode")
done

"$py" - "${checks[@]}" <<'PY' || fail "the Python reader and edo-unpack disagree (above)"
import os, sys, numpy as np
args, bad = sys.argv[1:], 0
for i in range(0, len(args), 3):
    mine, theirs, mode = args[i:i + 3]
    name = os.path.basename(mine)
    try:
        a, b = np.load(mine), np.load(theirs)
    except OSError as e:
        print("%s: %s" % (name, e)); bad += 1; continue
    if a.shape != b.shape or a.dtype != np.float32 or b.dtype != np.float32:
        print("%s: %s %s, edo-unpack %s %s" % (name, a.shape, a.dtype, b.shape, b.dtype)); bad += 1; continue
    if mode == "exact":
        if not np.array_equal(a.view(np.uint32), b.view(np.uint32)):
            print("%s: not bit for bit (%d values differ)" % (name, (a.view(np.uint32) != b.view(np.uint32)).sum()))
            bad += 1
        continue
    diff, scale = np.abs(a.astype(np.float64) - b).max(), np.abs(b).max()
    if not diff <= 1e-5 * scale:
        print("%s: max |diff| %.3g > 1e-5 * max |x| = %.3g" % (name, diff, 1e-5 * scale)); bad += 1
sys.exit(1 if bad else 0)
PY

# --- corrupt maps and state, resealed (checksums fixed) so only the decoder can object
# reseal IN OUT SECTION PYTHON-EXPR: OUT is IN with the section's payload p (a numpy array
# of the expression's dtype) changed by the expression, and every checksum made right again.
reseal() {
  "$py" - "$1" "$2" "$3" "$4" "$src/scripts" <<'PY'
import json, struct, sys
import numpy as np
sys.path.insert(0, sys.argv[5])
from edo_reader import xxh64
data = bytearray(open(sys.argv[1], "rb").read())
moff, mlen = struct.unpack_from("<QQ", data, 24)
text = bytes(data[moff:moff + mlen])
s = [s for s in json.loads(text)["sections"] if s["name"] == sys.argv[3]][0]
dtype, expr = sys.argv[4].split(":", 1)
p = np.frombuffer(data, dtype=dtype, count=s["length"] // np.dtype(dtype).itemsize, offset=s["offset"]).copy()
exec(expr)
data[s["offset"]:s["offset"] + s["length"]] = p.tobytes()
new = text.replace(s["xxh64"].encode(), b"%016x" % xxh64(p.tobytes()))
data[moff:moff + mlen] = new
struct.pack_into("<Q", data, 40, xxh64(new))
struct.pack_into("<Q", data, 56, xxh64(bytes(data[:56])))
open(sys.argv[2], "wb").write(data)
PY
}
P="$work/packed.edo"
# A sound reseal still decodes (the helper changes nothing else).
reseal "$P" "$work/same.edo" rowmap/local "<u4:pass" || fail "reseal failed"
expect 0 "$py" "$reader" "$work/same.edo" --decode "$work/same.npy"
cmp -s "$work/same.npy" "$work/packed.py.npy" || fail "a resealed, unchanged file decodes differently"
reseal "$P" "$work/b1.edo" rowmap/local "<u4:p[[0, 1]] = p[[1, 0]]"
expect 1 "$py" "$reader" "$work/b1.edo" --decode "$work/x.npy"; err_has "b1.edo: row map local section gives row 0"
reseal "$P" "$work/b2.edo" rowmap/rank "<u8:p[4] += 1"
expect 1 "$py" "$reader" "$work/b2.edo" --decode "$work/x.npy"
err_has "b2.edo: row map rank of tier 'hot' at row 256 is 101, the tier bytes say 100"
reseal "$P" "$work/b3.edo" rowmap/tier "u1:p[1999] = 4"
expect 1 "$py" "$reader" "$work/b3.edo" --decode "$work/x.npy"; err_has "b3.edo: row map gives row 1999 tier 4 of 4"
reseal "$P" "$work/b4.edo" rowmap/tier "u1:p[1999] = 0"
expect 1 "$py" "$reader" "$work/b4.edo" --decode "$work/x.npy"; err_has "b4.edo: row map puts 101 rows in tier 'hot'"
reseal "$P" "$work/b5.edo" cold/pq.codebooks "<f4:p[7] = np.nan"
expect 1 "$py" "$reader" "$work/b5.edo" --decode "$work/x.npy"
err_has "b5.edo: tier 'cold': state 'pq.codebooks' holds a value that is not finite"

# Corrupt sparse rows: both readers refuse, with the same message.
# refuse NAME TEXT: edo-unpack and the Python reader exit 1 on $work/NAME.edo, saying the same, with TEXT.
refuse() {
  expect 1 "$U" "$work/$1.edo" -o "$work/x.cpp.npy" -q; err_has "$1.edo: $2"
  local cpp; cpp=$(sed 's/^edo-unpack: error: //' "$work/err")
  expect 1 "$py" "$reader" "$work/$1.edo" --decode "$work/x.npy"; err_has "$1.edo: $2"
  [ "$(cat "$work/err")" = "$cpp" ] || fail "$1: the Python reader says '$(cat "$work/err")', edo-unpack '$cpp'"
}
S="$work/sparse.edo"
reseal "$S" "$work/s1.edo" cold/offsets "<u4:p[[5, 6]] = p[[6, 5]]"; refuse s1 "tier 'cold': row 5 is corrupt"
reseal "$S" "$work/s2.edo" cold/offsets "<u4:p[5] = 1 << 30"; refuse s2 "tier 'cold': row 4 is corrupt"
reseal "$S" "$work/s3.edo" cold/offsets "<u4:p[-1] -= 2"; refuse s3 "tier 'cold': offsets run from 0 to"
reseal "$S" "$work/s4.edo" cold/indices "u1:p[40] = 50"; refuse s4 "tier 'cold': row "
reseal "$S" "$work/s5.edo" cold/offsets "<u4:p[3:] += 60; p[-1] -= 60"; refuse s5 "tier 'cold': row 2 is corrupt"
B="$work/bitmap.edo"
reseal "$B" "$work/s6.edo" a/masks "u1:p[7] ^= 1"; refuse s6 "tier 'a': row 1 is corrupt"
# row 0's first stored column moved to a padding bit (past dim 50): the count still matches
reseal "$B" "$work/s7.edo" a/masks \
  "u1:j = np.flatnonzero(np.unpackbits(p[:7], bitorder='little'))[0]; p[j // 8] ^= 1 << j % 8; p[6] |= 0x80"
refuse s7 "tier 'a': row 0 is corrupt"
reseal "$B" "$work/s8.edo" a/offsets "<u4:p[3] += 1"; refuse s8 "tier 'a': row 2 is corrupt"
reseal "$work/wide.edo" "$work/s9.edo" a/indices "<u2:p[100] = 300"; refuse s9 "tier 'a': row 5 is corrupt"
# Centroid indices out of range (one byte and two): both readers refuse, with the same message.
reseal "$work/cent.edo" "$work/c1.edo" dropped/assign "u1:p[5] = 32"
refuse c1 "tier 'dropped': row 5 is assigned centroid 32 of 32"
reseal "$work/cent300.edo" "$work/c2.edo" dropped/assign "<u2:p[777] = 65535"
refuse c2 "tier 'dropped': row 777 is assigned centroid 65535 of 300"
# Nearest targets that are not stored rows: both readers refuse, with the same message. With
# Zipf frequencies the dropped tiers hold the coldest rows: near.edo rows 1400..1999, nearl2.edo
# rows 1600..1999 (local row i is row 1400 + i, 1600 + i).
reseal "$work/near.edo" "$work/n1.edo" dropped/target "<u4:p[3] = 1999"  # a row of the nearest tier itself
refuse n1 "row 1403 is answered by row 1999, which is not a stored row"
reseal "$work/nearl2.edo" "$work/n2.edo" dropped/target "<u4:p[10] = 2000"  # past the table
refuse n2 "row 1610 is answered by row 2000, which is not a stored row"
reseal "$work/nearl2.edo" "$work/n3.edo" dropped/target "<u4:p[10] = 0xFFFFFFFF"
refuse n3 "row 1610 is answered by row 4294967295, which is not a stored row"
# By id too: the first bad id in the caller's order, after others that resolve fine.
expect 1 "$py" "$reader" "$work/n1.edo" --decode "$work/x.npy" --ids 5,1500,1403,1999
err_has "n1.edo: row 1403 is answered by row 1999, which is not a stored row"
expect 1 "$py" "$reader" "$work/n2.edo" --decode "$work/x.npy" --ids 1610,1403
err_has "n2.edo: row 1610 is answered by row 2000, which is not a stored row"
[ ! -e "$work/x.npy" ] || fail "a refused file left an output"

[ "$failures" = 0 ] || { echo "py_reader: $failures failure(s)"; exit 1; }
echo "py_reader: ok"
