#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# What an adversarial user does to the tools, one check per way it once
# went wrong: outputs naming inputs, huge and tiny values, absurd thread
# counts, resealed manifests, corrupt npz members, full disks, signals and
# hostile HDF5 shapes.
# usage: hostile.sh BUILD_DIR SOURCE_DIR
set -uo pipefail
build="$1"; src="$2"
data="$src/data-samples/glove.6B.50d.10k.npy"
hostile="$src/test/data/hostile"
py=/usr/bin/python3
work="$(mktemp -d)"; trap 'rm -rf "$work"' EXIT
source "$(dirname "$0")/checks.bash"
# no_leftovers DIR: no temporaries or intermediates of ours in DIR.
no_leftovers() {
  local left
  left="$(find "$1" -maxdepth 1 \( -name '.*.tmp-*' -o -name '*.unevaluated-*' -o -name 'edo-stdin-*' \) | head -3)"
  [ -z "$left" ] || fail "left behind in $1: $left"
}

P="$build/edo-profile"; Q="$build/edo-quantize"; U="$build/edo-unpack"; E="$build/edo-eval"; K="$build/edo-pack"
cd "$work" || exit 1
cp "$data" g.npy
"$Q" g.npy -o q.edo --codec int8 -q >/dev/null || fail "fixture"
sum() { cksum <"$1"; }
g_sum="$(sum g.npy)"; q_sum="$(sum q.edo)"

# --- 1. no path a tool writes may be one it reads (links included); exit 2
ln -s g.npy link.npy; ln g.npy hard.npy
expect 2 "$E" g.npy q.edo --report-md g.npy;              err_has "would overwrite the input"
expect 2 "$E" g.npy q.edo --report-json q.edo;            err_has "would overwrite the input"
expect 2 "$Q" g.npy -o x.edo --codec int8 --eval --report-json link.npy; err_has "would overwrite the input"
expect 2 "$K" g.npy -o p.edo --tier a:rest:int8 --eval --report-md hard.npy; err_has "would overwrite the input"
expect 2 "$P" g.npy --plan --budget 'recall@10>=0.5' --plan-codecs int8 --plan-config g.npy
err_has "would overwrite the input"
expect 2 "$Q" g.npy -o link.npy --codec int8;             err_has "would overwrite the input"
ln q.edo qhard.edo; expect 2 "$U" q.edo -o qhard.edo; err_has "would overwrite the input"
printf '0\n1\n' >ids.txt
expect 2 "$E" g.npy q.edo --query-file ids.txt --report-json ids.txt
expect 2 "$E" g.npy q.edo --report-md r.md --report-json r.md; err_has "the same file as"
[ "$(sum g.npy)" = "$g_sum" ] && [ "$(sum q.edo)" = "$q_sum" ] || fail "an input changed"

# --- 2. values whose sums overflow float: exit 1 naming the file and row, nothing left
$py -c "import numpy as n; g=n.load('g.npy'); n.save('big.npy', g*n.float32(1e20)); n.save('tiny.npy', (g.astype(n.float64)*1e-39).astype(n.float32))"
for codec in pq:m=10 opq:m=10 rq:m=5 pca:16,pq:m=4 rot,int4; do
  expect 1 "$Q" big.npy -o big.edo --codec "$codec"; err_has "big.npy: row 0: norm"
done
expect 1 "$K" big.npy -o big.edo --tier a:rest:pq:m=10 -q; err_has "big.npy: row"
expect 1 "$P" big.npy --plan --budget 'recall@10>=0.5' --plan-codecs pq:m=10 -q; err_has "big.npy: row"
# The default plan ladder leaves out a trained codec that cannot train.
expect 0 "$P" big.npy --plan --budget 'recall@10>=0.5' -q
no_leftovers .

# --- 3. thread counts: 1 to 1024, else exit 2 saying so
for cmd in "$P g.npy" "$Q g.npy -o t.edo --codec int8" "$U q.edo -o t.npy" "$E g.npy q.edo" \
           "$K g.npy -o t.edo --tier a:rest:int8"; do
  for n in 100000 0 "$(printf '9%.0s' $(seq 300))"; do
    expect 2 $cmd --threads "$n"; err_has "from 1 to 1024"
  done
done
expect 0 "$U" q.edo -o t.npy --threads 1024 -q
no_leftovers .

# --- 4. a resealed manifest that declares a huge dim fails before allocating
for dim in 2000000000 1099511627776; do
  $py "$src/test/cli/reseal_manifest.py" q.edo "d$dim.edo" "m['dim'] = $dim"
  # 1 GiB of address space: far less than the declared table needs.
  expect 1 bash -c "ulimit -v 1048576; exec '$U' d$dim.edo -o x.npy"; err_has "d$dim.edo: manifest: \"dim\""
  expect 1 "$P" "d$dim.edo"; err_has "d$dim.edo"
done

# --- 5. a flipped byte in an npz member fails its CRC-32
expect 1 "$Q" "$hostile/bad_crc.npz" -o z.edo --codec fp16; err_has "CRC-32 mismatch"
$py -c "import numpy as n; n.savez('ok.npz', emb=n.load('g.npy'))"
expect 0 "$Q" ok.npz -o z.edo --codec fp16 -q

# --- 6. stdout that cannot be written is a failure
if [ -w /dev/full ]; then
  for cmd in "$E g.npy q.edo --json" "$E g.npy q.edo --gate recall@10>=0.5" "$P g.npy" "$Q --list" \
             "$Q --help" "$build/example_lookup q.edo 0 1"; do
    $cmd >/dev/full 2>"$work/err"; got=$?
    [ "$got" = 1 ] || fail "exit $got (want 1) writing to /dev/full: $cmd"
    grep -q "write failed" "$work/err" || fail "no write error for $cmd: $(cat "$work/err")"
  done
fi

# --- 7. subnormal values: kept where the codec can, refused where it cannot
for codec in int8 int4:group=32 int2 fp8:e4m3; do
  expect 0 "$Q" tiny.npy -o tiny.edo --codec "$codec" --json -q
  $py -c "import json,sys; r=json.load(open('$work/out'))['rel_fro']; sys.exit(0 if r < 0.7 else 1)" ||
    fail "$codec on subnormal values: rel_fro $(grep rel_fro "$work/out")"
done
expect 1 "$Q" tiny.npy -o tiny.edo --codec fp16; err_has "tiny.npy: row 0: nonzero, but fp16 stores it as all zeros"
expect 1 "$Q" tiny.npy -o tiny.edo --codec bf16; err_has "beyond the codec's bound"
expect 1 "$Q" tiny.npy -o tiny.edo --codec pq:m=10; err_has "too small"
expect 1 "$K" tiny.npy -o tiny.edo --tier a:rest:fp16 -q; err_has "tiny.npy: row"
expect 0 "$Q" tiny.npy -o tiny.edo --codec fp16 --allow-underflow -q
expect 0 "$K" tiny.npy -o tiny.edo --tier a:rest:fp16 --allow-underflow -q
no_leftovers .

# --- 8. SIGINT, SIGTERM and SIGHUP remove temporaries; the exit says which signal
# Job control, so that background jobs do not start with SIGINT ignored.
set -m
$py -c "import numpy as n; r=n.random.default_rng(0); n.save('wide.npy', r.standard_normal((400000, 64), dtype=n.float32))"
for sig in INT TERM HUP; do
  "$Q" wide.npy -o sig.edo --codec int2:group=8 --threads 1 -q >/dev/null 2>&1 &
  pid=$!
  for _ in $(seq 200); do
    compgen -G '.sig.edo.tmp-*' >/dev/null && break
    sleep 0.05
  done
  compgen -G '.sig.edo.tmp-*' >/dev/null || fail "SIG$sig: the temporary never appeared"
  kill -s "$sig" "$pid"; wait "$pid"; code=$?
  [ "$code" -gt 128 ] || fail "SIG$sig: exit $code, not a signal exit"
  [ -e sig.edo ] && fail "SIG$sig: a half-written output appeared"
  no_leftovers .
done
# The stdin spool, while stdin is still open.
mkdir spool
(cat wide.npy; sleep 3) | TMPDIR="$work/spool" "$Q" - -o in.edo --codec int8 -q >/dev/null 2>&1 &
for _ in $(seq 200); do
  compgen -G 'spool/edo-stdin-*' >/dev/null && break
  sleep 0.05
done
qpid="$(pgrep -n -f "edo-quantize - -o in.edo")"
if [ -n "$qpid" ]; then
  kill -TERM "$qpid"; sleep 0.5
  no_leftovers spool
else
  fail "the stdin spool test could not find its process"
fi
wait 2>/dev/null
set +m

# --- 9. hostile HDF5 shapes and frequency files name their file
expect 1 "$Q" "$hostile/cols_2e31.h5:/emb" -o w.edo --codec int8; err_has "cols_2e31.h5:/emb: 2147483648 columns"
expect 1 "$P" "$hostile/sparse_1e12_rows.h5:/emb"; err_has "sparse_1e12_rows.h5:/emb"
$py -c "import numpy as n; n.save('zero.npy', n.zeros(10000))"
expect 1 "$E" g.npy q.edo --eval-freq zero.npy; err_has "zero.npy: every count is 0"
# A full disk: one line naming the output (needs a small tmpfs: root only).
mkdir full
if mount -t tmpfs -o size=600k tmpfs full 2>/dev/null; then
  expect 1 "$U" q.edo -o full/x.h5:/emb; err_has "No space left on device"
  expect 1 "$U" q.edo -o full/x.npy; err_has "No space left on device"
  [ -z "$(ls -A full)" ] || fail "a full disk kept a partial file: $(ls -A full)"
  umount full
fi

# --- 10. small work stays on one thread: test/test_parallel.cpp checks it

# --- 11. required format features (FORMAT.md 8.1): written by what a file uses, checked by name
expect 0 "$Q" g.npy -o r3.edo --codec int3 -q
expect 0 "$Q" g.npy -o r4.edo --codec rot,int4:scale=fp16 -q
requires() { $py -c "import json,struct,sys; d=open(sys.argv[1],'rb').read(); o,l=struct.unpack_from('<QQ',d,24); \
print(','.join(json.loads(d[o:o+l]).get('requires',[])))" "$1"; }
[ "$(requires r3.edo)" = "codec:int3" ] || fail "int3 file requires '$(requires r3.edo)'"
[ "$(requires r4.edo)" = "codec:rot,scale=fp16" ] || fail "rot,int4:scale=fp16 file requires '$(requires r4.edo)'"
[ -z "$(requires q.edo)" ] || fail "an int8 file requires '$(requires q.edo)'"
$py "$src/test/cli/reseal_manifest.py" r3.edo future.edo "m['requires'] = ['codec:int3', 'codec:int7']"
for cmd in "$U future.edo -o x.npy" "$P future.edo" "$E g.npy future.edo" "$build/edo-lookup future.edo --ids -"; do
  expect 1 $cmd </dev/null; err_has "future.edo: the file requires format feature 'codec:int7'"
done
$py "$src/test/cli/reseal_manifest.py" r3.edo badreq.edo "m['requires'] = 'codec:int3'"
expect 1 "$U" badreq.edo -o x.npy; err_has "\"requires\" must be an array"
no_leftovers .

echo "hostile: $failures failure(s)"
[ "$failures" -eq 0 ]
