#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# edo-lookup from the command line: for every tier kind its rows equal
# edo-unpack's rows for the same ids (npy and text ids, npy, HDF5 and text
# rows, stdin and stdout), the unknown-id policies, --stats, and bad input
# (one line naming the file and line, exit 1 or 2, nothing written).
#   lookup.sh BUILD_DIR SOURCE_DIR
set -uo pipefail
source "$(dirname "$0")/checks.bash" "$@"  # build, src, work (removed at exit), expect, fail, err_has
glove="$src/data-samples/glove.6B.50d.10k.npy"
py=/usr/bin/python3
L="$build/edo-lookup"
P="$build/edo-pack"
"$py" - "$work" <<'PY'
import numpy as np, sys
w = sys.argv[1]
np.save(w + '/zipf.npy', 1.0 / (np.arange(10000) + 1))
rng = np.random.default_rng(5)
ids = np.concatenate([rng.integers(0, 10000, 3000), [0, 9999, 0, 17]])  # repeats, both ends
np.save(w + '/ids.npy', ids.astype(np.int64))
np.save(w + '/ids_u16.npy', ids[:100].astype(np.uint16))
open(w + '/ids.txt', 'w').write('# ids, one a line\n' + ''.join(' %d \n' % i for i in ids) + '\n')
np.save(w + '/ids_float.npy', ids.astype(np.float32))
np.save(w + '/ids_neg.npy', np.array([3, -1], dtype=np.int32))
PY
quick=(-q --train-rows 2000)
# Every tier kind: scalar, trained, sparse csr and bitmap, default, zero, centroids, nearest, hashed, group.
expect 0 "$P" "$glove" -o "$work/scalar.edo" --freq "$work/zipf.npy" "${quick[@]}" \
  --tier hot:rows=5%:fp16 --tier warm:rows=30%:int8 --tier cold:rows=50%:pq:m=10 --tier rare:rest:default
expect 0 "$P" "$glove" -o "$work/sparse.edo" --freq "$work/zipf.npy" "${quick[@]}" \
  --tier hot:rows=10%:fp16 --tier 'mid:rows=40%:csr:density=0.3,values=int8' \
  --tier 'cold:rest:bitmap:density=0.25,values=int4'
expect 0 "$P" "$glove" -o "$work/fallback.edo" --freq "$work/zipf.npy" "${quick[@]}" \
  --tier kept:rows=50%:int8 --tier z:rows=10%:zero --tier c:rows=20%:centroids:32 --tier n:rest:nearest
expect 0 "$build/edo-hash" "$glove" -o "$work/hash.edo" --freq "$work/zipf.npy" --scheme hash:buckets=1000,k=2 \
  --keep-top rows=1% -q
expect 0 "$build/edo-hash" "$glove" -o "$work/group.edo" --scheme 'group:clusters=32,residual=int4' -q
for name in scalar sparse fallback hash group; do
  expect 0 "$build/edo-unpack" "$work/$name.edo" -o "$work/$name.all.npy" -q
  expect 0 "$L" "$work/$name.edo" --ids "$work/ids.npy" -o "$work/$name.rows.npy" -q
  expect 0 "$L" "$work/$name.edo" --ids "$work/ids.txt" --format text --with-ids -o "$work/$name.rows.txt" -q
  "$L" "$work/$name.edo" --ids - <"$work/ids.txt" >"$work/$name.stdout.npy" 2>"$work/err" || fail "$name: stdin to stdout"
  "$py" - "$work" "$name" <<'PY' || fail "$name: edo-lookup rows differ from edo-unpack's"
import numpy as np, sys
w, name = sys.argv[1], sys.argv[2]
ids = np.load(w + '/ids.npy')
want = np.load(w + '/%s.all.npy' % name)[ids]
for got in (np.load(w + '/%s.rows.npy' % name), np.load(w + '/%s.stdout.npy' % name)):
    assert got.dtype == np.float32 and got.shape == want.shape, got.shape
    assert got.tobytes() == want.tobytes(), np.abs(got - want).max()
lines = open(w + '/%s.rows.txt' % name).read().splitlines()
assert len(lines) == len(ids)
for line, i, row in zip(lines, ids, want):
    head, values = line.split('\t')
    assert int(head) == i
    assert np.array(values.split(), dtype=np.float32).tobytes() == row.tobytes(), line
PY
done
# HDF5 rows, uint16 ids, and -o rows.txt meaning text.
expect 0 "$L" "$work/scalar.edo" --ids "$work/ids_u16.npy" -o "$work/rows.h5:/emb" -q
expect 0 "$L" "$work/scalar.edo" --ids "$work/ids_u16.npy" -o "$work/rows.txt" -q
"$py" - "$work" <<'PY' || fail "hdf5 or .txt rows"
import numpy as np, sys
w = sys.argv[1]
want = np.load(w + '/scalar.all.npy')[np.load(w + '/ids_u16.npy')]
got = np.array([np.array(l.split(), dtype=np.float32) for l in open(w + '/rows.txt')])
assert got.tobytes() == want.tobytes()
try:
    import h5py
    assert h5py.File(w + '/rows.h5', 'r')['emb'][...].tobytes() == want.tobytes()
except ImportError:
    pass
PY

# Unknown ids: an error naming the line by default; the default vector; the hash.
printf '3\n10000\n' >"$work/beyond.txt"
expect 1 "$L" "$work/scalar.edo" --ids "$work/beyond.txt" -o "$work/u.npy"
err_has "beyond.txt: line 2: id 10000 is outside"
[ -e "$work/u.npy" ] && fail "an output was written for an unknown id"
expect 0 "$L" "$work/scalar.edo" --ids "$work/beyond.txt" --unknown default --format text -o "$work/d.txt" -q
expect 0 "$L" "$work/hash.edo" --ids "$work/beyond.txt" --unknown hash --format text -o "$work/h.txt" -q
expect 1 "$L" "$work/scalar.edo" --ids "$work/beyond.txt" --unknown hash -o "$work/u.npy"
"$py" - "$work" <<'PY' || fail "unknown-id policies"
import numpy as np, sys
w = sys.argv[1]
d = [np.array(l.split(), dtype=np.float32) for l in open(w + '/d.txt')]
all_ = np.load(w + '/scalar.all.npy')
assert d[0].tobytes() == all_[3].tobytes()
assert d[1].tobytes() == all_[9999].tobytes()  # the rare tier's default vector, as row 9999 (a rare row) reads
h = [np.array(l.split(), dtype=np.float32) for l in open(w + '/h.txt')]
assert np.isfinite(h[1]).all() and np.abs(h[1]).max() > 0
PY

# --stats on stderr: lookups per tier, storage reads, peak memory.
expect 0 "$L" "$work/scalar.edo" --ids "$work/ids.npy" -o "$work/s.npy" --stats
grep -q "3004 lookups in" "$work/err" || fail "--stats: $(cat "$work/err")"
grep -q "tier hot " "$work/err" || fail "--stats has no per-tier line"
grep -q "peak resident memory" "$work/err" || fail "--stats has no peak memory"

# --max-resident: disk tiers read through a bounded page cache, the same rows.
expect 0 "$P" "$glove" -o "$work/disk.edo" --freq "$work/zipf.npy" "${quick[@]}" \
  --tier hot:rows=5%:fp16 --tier cold:rest:int4:disk
expect 0 "$L" "$work/disk.edo" --ids "$work/ids.npy" -o "$work/m.npy" -q
expect 0 "$L" "$work/disk.edo" --ids "$work/ids.npy" -o "$work/c.npy" --max-resident 1M --stats
cmp -s "$work/m.npy" "$work/c.npy" || fail "--max-resident changed the rows"
grep -q "tier cold .*cache hit rate" "$work/err" || fail "--stats has no cache line: $(cat "$work/err")"
# io_uring where the kernel allows it (containers may forbid it: then one clear line, exit 1).
"$L" "$work/disk.edo" --ids "$work/ids.npy" -o "$work/u.npy" --max-resident 1M --cache-io io_uring -q 2>"$work/err"
case $? in
  0) cmp -s "$work/m.npy" "$work/u.npy" || fail "--cache-io io_uring changed the rows" ;;
  1) grep -q "io_uring is not available" "$work/err" || fail "io_uring: $(cat "$work/err")" ;;
  *) fail "io_uring: unexpected exit: $(cat "$work/err")" ;;
esac
expect 2 "$L" "$work/disk.edo" --ids "$work/ids.npy" -o "$work/c.npy" --max-resident 200K
err_has "give at least"
expect 2 "$L" "$work/disk.edo" --ids "$work/ids.npy" -o "$work/c.npy" --max-resident 1X
err_has "unknown unit 'X'"
expect 2 "$L" "$work/disk.edo" --ids "$work/ids.npy" -o "$work/c.npy" --max-resident 0
err_has "give a budget"

# A file truncated while being served: one line naming it, exit 1, no output left.
cp "$work/scalar.edo" "$work/shrinking.edo"
{ echo 1; sleep 1; truncate -s 4096 "$work/shrinking.edo"; seq 2 9999; } |
  "$L" "$work/shrinking.edo" --ids - -o "$work/shrunk.npy" >"$work/out" 2>"$work/err"
[ $? = 1 ] || fail "truncated while served: exit $? :: $(cat "$work/err")"
err_has "shrinking.edo: the file shrank while being served"
[ -e "$work/shrunk.npy" ] && fail "an output was left by a lookup of a truncated file"
ls "$work" | grep -q 'shrunk.npy.' && fail "a temporary was left by a lookup of a truncated file"

# Bad input: one line naming the file and the line or entry, nothing written.
printf '5\n7\nabc\n' >"$work/bad.txt"
expect 1 "$L" "$work/scalar.edo" --ids "$work/bad.txt" -o "$work/b.npy"
err_has "bad.txt: line 3: 'abc' is not an id"
printf '5\n-2\n' >"$work/neg.txt"
expect 1 "$L" "$work/scalar.edo" --ids "$work/neg.txt" -o "$work/b.npy"
err_has "neg.txt: line 2: id '-2' is negative"
printf '99999999999999999999\n' >"$work/huge.txt"
expect 1 "$L" "$work/scalar.edo" --ids "$work/huge.txt" -o "$work/b.npy"
err_has "huge.txt: line 1: id '99999999999999999999' is above 2^63 - 1"
expect 1 "$L" "$work/scalar.edo" --ids "$work/ids_float.npy" -o "$work/b.npy"
err_has "ids_float.npy: ids .npy holds float32, not integers"
expect 1 "$L" "$work/scalar.edo" --ids "$work/ids_neg.npy" -o "$work/b.npy"
err_has "ids_neg.npy: entry 1: id -1 is negative"
printf '# nothing\n\n' >"$work/empty.txt"
expect 1 "$L" "$work/scalar.edo" --ids "$work/empty.txt" -o "$work/b.npy"
err_has "empty.txt: no ids"
expect 1 "$L" "$work/missing.edo" --ids "$work/ids.txt" -o "$work/b.npy"
err_has "missing.edo"
expect 2 "$L" "$work/scalar.edo" --ids "$work/ids.txt" -o "$work/b.npy" --with-ids
err_has "--with-ids is for text rows"
expect 2 "$L" "$work/scalar.edo" --ids "$work/ids.txt" -o "$work/ids.txt" --format text
err_has "would overwrite the input"
expect 2 "$L" "$work/scalar.edo"
[ -e "$work/b.npy" ] && fail "an output was written for bad input"
head -c 1000 "$work/scalar.edo" >"$work/trunc.edo"
expect 1 "$L" "$work/trunc.edo" --ids "$work/ids.txt" -o "$work/b.npy"
err_has "trunc.edo"

[ "$failures" = 0 ] || { echo "$failures failure(s)"; exit 1; }
echo "lookup: ok"
