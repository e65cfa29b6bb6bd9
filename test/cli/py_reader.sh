#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The independent Python reader (scripts/edo_reader.py --decode) against the C++
# one (edo-unpack): one-tier files of every codec family, tiered files from
# edo-pack (row map, default tiers, trained tiers, sparse csr and bitmap tiers, lossless tiers, zero,
# centroids and nearest fallback tiers; hashed tiers from edo-hash), rows by id (--ids), the
# committed golden files, and corrupt row maps, state, sparse rows, centroid indices, nearest
# targets and hashed tiers' sections and specs that the reader must refuse (sparse rows,
# centroid indices, nearest targets and hashed tiers: with edo-unpack's very message).
# Scalar codecs, default, sparse, fallback (nearest rows: their targets') and hashed
# tiers decode bit for bit; pq and rq too (a lookup, and float32 sums in the order
# FORMAT.md gives); opq and pca (float sums in another order) within
# max |py - C++| <= 1e-5 * max |C++|.
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
# The same counts with the hottest 100 on the even ids below 200: tiers interleave, so the packed map is written.
mixed = np.arange(2000)
mixed[:200] = np.concatenate([np.arange(0, 200, 2), np.arange(1, 200, 2)])
np.save(sys.argv[2] + "/zipf_mixed.npy", 1.0 / (np.argsort(mixed) + 1))
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
for spec in fp32 fp16 bf16 fp8:e4m3 fp8:e5m2 int8 int6 int5:group=9 int4:group=10 int3:group=7 int2:group=7 bin \
            int8:scale=fp16 int5:group=16,scale=fp16 int3:scale=fp16 \
            pq:m=10 pq:m=12,nbits=5 rq:m=4,nbits=6 opq:m=10 opq:m=12,nbits=4 \
            pq:m=10,codebooks=fp16 rq:m=4,nbits=6,codebooks=fp16 opq:m=12,nbits=4,codebooks=fp16 \
            pq:m=10,codebooks=int8 rq:m=4,nbits=6,codebooks=int8 opq:m=12,nbits=4,codebooks=int8 \
            pca:16 pca:16,int8 pca:20,pq:m=7,nbits=6 rot rot,int4:scale=fp16 dims:20 dims:30,int4:group=8 \
            tc:bits=2 tc:bits=1.5 tc:bits=7; do
  n=$((n + 1))
  case "$spec" in opq* | pca* | rot* | tc*) mode=tol ;; *) mode=exact ;; esac
  expect 0 "$Q" "$g" -o "$work/q$n.edo" --codec "$spec" "${quick[@]}"
  decode "q$n" "$mode"
done

# --- tiered files: a row map (runs of ids, or packed with its local indices), default, scalar and trained tiers
expect 0 "$K" "$g" -o "$work/packed.edo" --freq "$work/zipf.npy" "${quick[@]}" \
  --tier hot:rows=5%:fp16:gpu --tier warm:rows=30%:int8 --tier cold:rows=50%:pq:m=10:disk --tier rare:rest:default
decode packed exact
expect 0 "$K" "$g" -o "$work/mixed_ids.edo" --freq "$work/zipf_mixed.npy" "${quick[@]}" \
  --tier hot:rows=5%:fp16:gpu --tier warm:rows=30%:int8 --tier cold:rows=50%:pq:m=10:disk --tier rare:rest:default
decode mixed_ids exact
"$py" - "$work" <<'PY' || fail "the map kinds written"
import json, struct, sys
def manifest(path):
    data = open(path, "rb").read()
    off, n = struct.unpack_from("<QQ", data, 24)
    return json.loads(data[off:off + n])
assert manifest(sys.argv[1] + "/packed.edo")["rowmap"] == {"runs": "rowmap/runs"}
assert "local" in manifest(sys.argv[1] + "/mixed_ids.edo")["rowmap"]
PY
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

# --- lossless tiers (FORMAT.md 9.10): fp32 as read, behind an int8 hot tier, a raw segment, and
# the fuzz seeds' bf16 and fp16 tables (from safetensors inputs of those types)
expect 0 "$K" "$g" -o "$work/lossless.edo" --freq "$work/zipf_mixed.npy" "${quick[@]}" \
  --tier hot:rows=10%:int8 --tier cold:rest:lossless
"$py" -c 'import sys, numpy as np
r = np.random.default_rng(2).integers(0, 2**32, size=(300, 40), dtype=np.uint64).astype(np.uint32)
np.save(sys.argv[1], ((r & 0x807fffff) | (((r >> 8) % 255) << 23)).view(np.float32))' "$work/noise.npy"
expect 0 "$K" "$work/noise.npy" -o "$work/noise.edo" "${quick[@]}" --tier all:rest:lossless
decode lossless exact
decode_ids lossless ids.npy exact
decode noise exact
for seed in lossless_bf16 lossless_fp16_two_tiers lossless_raw_fp32; do
  cp "$src/fuzz/corpus/reader/$seed.edo" "$work/$seed.edo"
  decode "$seed" exact
done

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

# --- hashed tiers (FORMAT.md 9.5): the hash's test vectors, then every scheme whole and by id,
# alone and behind a kept top tier (where the hashed tier is handed table ids, not local ones).
# The weighted ones (weights=1: fma(w, b, x) computed in float64, then rounded) are compared bit
# for bit too: FORMAT.md 9.5 says the double rounding that could tell them apart is that rare,
# and on these files it does not occur.
"$py" - "$src/scripts" <<'PY' || fail "the Python reader's hash misses FORMAT.md 9.5's test vectors"
import sys
import numpy as np
sys.path.insert(0, sys.argv[1])
from edo_reader import hash_bucket, splitmix64
assert splitmix64(0) == 0xe220a8397b1dcdaf
assert [hash_bucket(0, 0, 0, 1000), hash_bucket(1, 0, 0, 1000), hash_bucket(12345, 1, 0, 1000)] == [55, 430, 752]
# numpy's uint64 form against Python's integers, with ids near 2^64 and a seed + k that wraps
ids = np.array([0, 1, 12345, 2**63, 2**64 - 1], dtype=np.uint64)
assert list(hash_bucket(ids, 3, 2**64 - 2, 2**32)) == [hash_bucket(int(i), 3, 2**64 - 2, 2**32) for i in ids]
PY
H="$build/edo-hash"
hq=(-q --threads 1)
n=0
for scheme in hash:buckets=300 hash:buckets=300,k=3,seed=7 hash:buckets=300,k=2,weights=1 \
              hash:buckets=200,k=8,weights=1,seed=3 hash:buckets=300,fit=none qr:buckets=70,op=sum \
              qr:buckets=100,op=mul; do
  n=$((n + 1))
  expect 0 "$H" "$g" -o "$work/h$n.edo" --scheme "$scheme" "${hq[@]}"
  decode "h$n" exact
  decode_ids "h$n" ids.npy exact
done
expect 0 "$H" "$g" -o "$work/htop.edo" --freq "$work/zipf.npy" --scheme hash:buckets=300,k=2,weights=1 \
  --keep-top rows=5% "${hq[@]}"
expect 0 "$H" "$g" -o "$work/qtop.edo" --freq "$work/zipf.npy" --scheme qr:buckets=70,op=mul --keep-top mass=30% \
  --keep-codec int8 "${hq[@]}"
# A hashed tier between a kept tier and a nearest one (whose targets the writer takes from the kept tier).
expect 0 "$K" "$g" -o "$work/nhash.edo" --freq "$work/zipf.npy" "${quick[@]}" \
  --tier kept:rows=40%:int8 --tier h:rows=40%:hash:buckets=100,k=2 --tier dropped:rest:nearest
for name in htop qtop nhash; do
  decode "$name" exact
  decode_ids "$name" ids.npy exact
done
# --- group-shared tiers (FORMAT.md 9.6): base rows alone, plus int4 residuals (bit for bit), plus a
# bracketed pca residual (float rounding), and behind a kept top tier (local indices, not ids).
expect 0 "$H" "$g" -o "$work/gr1.edo" --scheme group:clusters=300,residual=none "${hq[@]}"
expect 0 "$H" "$g" -o "$work/gr2.edo" --scheme 'group:clusters=40,residual=[int4:group=25]' "${hq[@]}"
expect 0 "$H" "$g" -o "$work/gr3.edo" --scheme 'group:clusters=40,residual=[pca:10,int8]' "${hq[@]}"
expect 0 "$H" "$g" -o "$work/gr4.edo" --freq "$work/zipf.npy" --scheme group:clusters=40,residual=int8 \
  --keep-top rows=5% "${hq[@]}"
for name in gr1 gr2 gr4; do
  decode "$name" exact
  decode_ids "$name" ids.npy exact
done
decode gr3 tol
decode_ids gr3 ids.npy tol

# --- a model file (FORMAT.md section 10): its tables listed, each read by name as its own file
# (an int8 table, a tiered table), by id too; a model decoded without --table is refused
expect 0 "$py" "$src/scripts/make_models.py" sample "$src/data-samples" "$work/model.safetensors"
expect 0 "$Q" "$work/model.safetensors" -o "$work/model.edo" --codec int8 "${quick[@]}"
expect 0 "$py" "$reader" "$work/model.edo" --tables
[ "$(tr '\n' ' ' <"$work/out")" = "emb.words.weight emb.items.weight emb.tiny.weight " ] ||
  fail "--tables: $(cat "$work/out")"
for t in emb.words.weight emb.items.weight emb.tiny.weight; do
  expect 0 "$U" "$work/model.edo" --table "$t" -o "$work/model.$t.cpp.npy" -q
  expect 0 "$py" "$reader" "$work/model.edo" --table "$t" --decode "$work/model.$t.py.npy"
  checks+=("$work/model.$t.py.npy" "$work/model.$t.cpp.npy" exact)
done
expect 0 "$py" "$reader" "$work/model.edo" --table emb.words.weight --decode "$work/model.ids.py.npy" --ids "$work/ids.npy"
"$py" -c 'import sys, numpy as np; np.save(sys.argv[3], np.load(sys.argv[1])[np.load(sys.argv[2])])' \
  "$work/model.emb.words.weight.cpp.npy" "$work/ids.npy" "$work/model.ids.cpp.npy" || fail "model: rows by id"
checks+=("$work/model.ids.py.npy" "$work/model.ids.cpp.npy" exact)
expect 0 "$py" "$reader" "$work/model.edo" --table emb.tiny.weight --manifest
grep -q '"tiers"' "$work/out" || fail "--table --manifest: not the table's manifest"
expect 1 "$py" "$reader" "$work/model.edo" --decode "$work/x.npy"
err_has "name one with --table"
expect 1 "$py" "$reader" "$work/model.edo" --table emb.none --decode "$work/x.npy"
err_has "no table 'emb.none'"
# The directory's rules (10.1), resealed so only they are broken.
rm -f "$work/x.npy"
for case in "dup|m['model']['tables'][1]['name'] = 'emb.words.weight'|appears twice" \
            "sec|m['model']['tables'][2]['section'] = 'tables/0'|holds another table" \
            "gone|m['model']['tables'][0]['section'] = 'tables/9'|does not exist" \
            "name|m['model']['tables'][0]['name'] = 'a b'|bad table name" \
            "none|m['model']['tables'] = []|0 tables" \
            "rows|m['rows'] = 3|has no \"rows\""; do
  IFS='|' read -r tag stmt msg <<<"$case"
  expect 0 "$py" "$src/test/cli/reseal_manifest.py" "$work/model.edo" "$work/model_$tag.edo" "$stmt"
  expect 1 "$py" "$reader" "$work/model_$tag.edo"
  err_has "$msg"
  expect 1 "$U" "$work/model_$tag.edo" -o "$work/x.safetensors"
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
P="$work/mixed_ids.edo"
# A sound reseal still decodes (the helper changes nothing else).
reseal "$P" "$work/same.edo" rowmap/local "<u4:pass" || fail "reseal failed"
expect 0 "$py" "$reader" "$work/same.edo" --decode "$work/same.npy"
cmp -s "$work/same.npy" "$work/mixed_ids.py.npy" || fail "a resealed, unchanged file decodes differently"
reseal "$P" "$work/b1.edo" rowmap/local "<u4:p[[0, 2]] = p[[2, 0]]"
expect 1 "$py" "$reader" "$work/b1.edo" --decode "$work/x.npy"; err_has "b1.edo: row map local section gives row 0"
reseal "$P" "$work/b2.edo" rowmap/rank "<u8:p[4] += 1"
expect 1 "$py" "$reader" "$work/b2.edo" --decode "$work/x.npy"
err_has "b2.edo: row map rank of tier 'hot' at row 256 is 101, the tier bytes say 100"
reseal "$P" "$work/b3.edo" rowmap/tier "u1:p[1999] = 4"
expect 1 "$py" "$reader" "$work/b3.edo" --decode "$work/x.npy"; err_has "b3.edo: row map gives row 1999 tier 4 of 4"
reseal "$P" "$work/b4.edo" rowmap/tier "u1:p[1999] = 0"
expect 1 "$py" "$reader" "$work/b4.edo" --decode "$work/x.npy"; err_has "b4.edo: row map puts 101 rows in tier 'hot'"
# The runs (0, hot, 0) (100, warm, 0) (700, cold, 0) (1700, rare, 0), corrupted: the Python reader checks
# the whole map first; edo-unpack streams and refuses at the first row of the first run that does not check out
# against the table and its tier (Reader::decode_all and
# Reader::validate_row_map() check the whole map, as the Python reader does).
R="$work/packed.edo"
reseal "$R" "$work/r1.edo" rowmap/runs "<u8:p[3] = 101"
expect 1 "$py" "$reader" "$work/r1.edo" --decode "$work/x.npy"; err_has "r1.edo: row map puts 101 rows in tier 'hot'"
expect 1 "$U" "$work/r1.edo" -o "$work/x.cpp.npy" -q; err_has "r1.edo: row map is corrupt at row 0"
reseal "$R" "$work/r2.edo" rowmap/runs "<u8:p[4] = 4"
expect 1 "$py" "$reader" "$work/r2.edo" --decode "$work/x.npy"; err_has "r2.edo: row map run 1 names tier 4 of 4"
expect 1 "$U" "$work/r2.edo" -o "$work/x.cpp.npy" -q; err_has "r2.edo: row map is corrupt at row 100"
reseal "$R" "$work/r3.edo" rowmap/runs "<u8:p[5] = 1"
expect 1 "$py" "$reader" "$work/r3.edo" --decode "$work/x.npy"
err_has "r3.edo: row map run 1 starts at index 1 of tier 1, its earlier runs say 0"
expect 1 "$U" "$work/r3.edo" -o "$work/x.cpp.npy" -q; err_has "r3.edo: row map is corrupt at row 100"
reseal "$R" "$work/r4.edo" rowmap/runs "<u8:p[6] = 2000"
expect 1 "$py" "$reader" "$work/r4.edo" --decode "$work/x.npy"; err_has "r4.edo: row map run 2 ends at row 1700"
expect 1 "$U" "$work/r4.edo" -o "$work/x.cpp.npy" -q; err_has "r4.edo: row map is corrupt at row 100"
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

# rebuild IN OUT STATEMENTS: OUT is IN with its manifest m and section payloads p (name -> bytes)
# changed by the statements (hashed(m): the tier named "hashed"), laid out again canonically with
# every checksum right: unlike reseal, a section may change length.
rebuild() {
  "$py" - "$1" "$2" "$3" "$src/scripts" <<'PY'
import json, struct, sys
sys.path.insert(0, sys.argv[4])
from edo_reader import HEADER, MAGIC, validate, xxh64
data = open(sys.argv[1], "rb").read()
m, sections, _ = validate(data)
p = {name: data[off:off + length] for name, (off, length, _) in sections.items()}
hashed = lambda m: [t for t in m["tiers"] if t["name"] == "hashed"][0]
exec(sys.argv[3])
out, table = bytearray(64), []
for s in m["sections"]:
    out += bytes(-len(out) % 64)
    table.append(dict(s, offset=len(out), length=len(p[s["name"]]), xxh64="%016x" % xxh64(p[s["name"]])))
    out += p[s["name"]]
out += bytes(-len(out) % 64)
m["sections"] = table
text = json.dumps(m, sort_keys=True, separators=(",", ":")).encode()
m_off = len(out)
out += text + bytes(-len(text) % 64)
head = HEADER.pack(MAGIC, 1, 0, 0, len(out), m_off, len(text), xxh64(text), len(table), 0, 0)[:56]
out[:64] = head + struct.pack("<Q", xxh64(head))
open(sys.argv[2], "wb").write(out)
PY
}
# A sound rebuild still decodes (the helper changes nothing else).
rebuild "$work/htop.edo" "$work/same.edo" "pass" || fail "rebuild failed"
expect 0 "$py" "$reader" "$work/same.edo" --decode "$work/same.npy"
cmp -s "$work/same.npy" "$work/htop.py.npy" || fail "a rebuilt, unchanged file decodes differently"
# Hashed tiers' sections of the wrong length, a section missing and bad specs: both readers
# refuse when opening, with the same message (also when asked for a few ids).
rebuild "$work/h3.edo" "$work/r1.edo" 'p["hashed/buckets"] = p["hashed/buckets"][:-4]'
refuse r1 "tier 'hashed': section 'hashed/buckets' holds 59996 bytes, 60000 expected"
expect 1 "$py" "$reader" "$work/r1.edo" --decode "$work/x.npy" --ids 5
err_has "r1.edo: tier 'hashed': section 'hashed/buckets' holds 59996 bytes, 60000 expected"
rebuild "$work/h3.edo" "$work/r2.edo" 'p["hashed/weights"] += bytes(2)'
refuse r2 "tier 'hashed': section 'hashed/weights' holds 8002 bytes, 8000 expected"
rebuild "$work/h6.edo" "$work/r3.edo" 'p["hashed/quotient"] = p["hashed/quotient"][:-200]'  # one row short
refuse r3 "tier 'hashed': section 'hashed/quotient' holds 5600 bytes, 5800 expected"
rebuild "$work/h7.edo" "$work/r4.edo" 'p["hashed/remainder"] += bytes(4)'
refuse r4 "tier 'hashed': section 'hashed/remainder' holds 20004 bytes, 20000 expected"
rebuild "$work/htop.edo" "$work/r5.edo" 'p["hashed/buckets"] = p["hashed/buckets"][:-200]'
refuse r5 "tier 'hashed': section 'hashed/buckets' holds 59800 bytes, 60000 expected"
rebuild "$work/h3.edo" "$work/r6.edo" \
  'del hashed(m)["sections"]["weights"]; m["sections"] = [s for s in m["sections"] if s["name"] != "hashed/weights"]'
refuse r6 "tier 'hashed': a weighted hash tier has exactly the sections 'buckets' and 'weights'"
rebuild "$work/h3.edo" "$work/r7.edo" 'hashed(m)["codec"] = hashed(m)["codec"].replace("k=2", "k=9")'
refuse r7 "tier 'hashed': hash spec 'hash:buckets=300,k=9,weights=1,fit=ls,seed=0': k=9 is outside 1..8"
rebuild "$work/h1.edo" "$work/r8.edo" 'hashed(m)["codec"] = hashed(m)["codec"].replace("=300", "=4294967297")'
spec="hash spec 'hash:buckets=4294967297,k=1,weights=0,fit=ls,seed=0'"
refuse r8 "tier 'hashed': $spec: needs buckets=B with B in 1..4294967296"
# code_size is the codec's (FORMAT.md 7.1): 2K bytes of weights a row. edo's reader does not
# check it for hashed tiers, so only this one is asked.
rebuild "$work/h3.edo" "$work/r9.edo" 'hashed(m)["code_size"] = 0'
expect 1 "$py" "$reader" "$work/r9.edo" --decode "$work/x.npy"
err_has "r9.edo: tier 'hashed': code_size 0, codec 'hash:buckets=300,k=2,weights=1,fit=ls,seed=0' needs 4"
# Group tiers: a base section a row short, and a group index past C (which only a decode finds).
rebuild "$work/gr2.edo" "$work/gq1.edo" 'p["hashed/base"] = p["hashed/base"][:-200]'
refuse gq1 "tier 'hashed': section 'hashed/base' holds 7800 bytes, 8000 expected"
rebuild "$work/gr1.edo" "$work/gq2.edo" 'p["hashed/assign"] = p["hashed/assign"][:14] + bytes([0x2c, 1]) + p["hashed/assign"][16:]'
refuse gq2 "tier 'hashed': row 7 is in group 300 of 300"
# A nearest target in the hashed tier (a stored row, so allowed): the row is answered by the
# hashed tier keyed by the target's table id, by both readers alike, whole and by id. With Zipf
# frequencies tier h holds rows 800..1599 and the dropped tier rows 1600..1999.
reseal "$work/nhash.edo" "$work/nh1.edo" dropped/target "<u4:p[3] = 1234"
expect 0 "$U" "$work/nh1.edo" -o "$work/nh1.cpp.npy" -q
expect 0 "$py" "$reader" "$work/nh1.edo" --decode "$work/nh1.py.npy"
expect 0 "$py" "$reader" "$work/nh1.edo" --decode "$work/nh1.ids.npy" --ids 1603,1234,3
"$py" - "$work/nh1.py.npy" "$work/nh1.cpp.npy" "$work/nh1.ids.npy" <<'PY' || fail "nh1: a target in the hashed tier"
import sys
import numpy as np
whole, cpp, by_id = (np.load(f).view(np.uint32) for f in sys.argv[1:])
assert np.array_equal(whole, cpp), "whole table: not bit for bit"
assert np.array_equal(cpp[1603], cpp[1234]), "edo-unpack: row 1603 is not row 1234"
assert np.array_equal(by_id, cpp[[1603, 1234, 3]]), "by id: not edo-unpack's rows"
PY

# Required features (FORMAT.md 8.1): a file needing one this reader lacks is refused by its name, as edo
# refuses it (the files above name those they use: int3, rot, scale=fp16, codebooks=..., tc, rowmap:runs).
expect 0 "$py" "$src/test/cli/reseal_manifest.py" "$work/q1.edo" "$work/future.edo" "m['requires'] = ['codec:int9']"
expect 1 "$py" "$reader" "$work/future.edo" --decode "$work/x.npy"; err_has "format feature 'codec:int9'"

[ ! -e "$work/x.npy" ] || fail "a refused file left an output"

[ "$failures" = 0 ] || { echo "py_reader: $failures failure(s)"; exit 1; }
echo "py_reader: ok"
