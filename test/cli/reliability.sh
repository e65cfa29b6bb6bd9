#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The second adversarial run's findings, one check each (special files as
# outputs, existing containers, thread counts from the environment, HDF5
# values kept in other files, OpenMP's wait policy).
# usage: reliability.sh BUILD_DIR SOURCE_DIR
set -uo pipefail
source "$(dirname "$0")/checks.bash" "$@"  # build, src, work (removed at exit), expect, fail, err_has
py=/usr/bin/python3
hostile="$src/test/data/hostile"
Q="$build/edo-quantize"; U="$build/edo-unpack"; E="$build/edo-eval"; L="$build/edo-lookup"; P="$build/edo-profile"
K="$build/edo-pack"
cd "$work" || exit 1
cp "$src/data-samples/glove.6B.50d.10k.npy" g.npy
expect 0 "$Q" g.npy -o g8.edo --codec int8 -q
no_leftovers() {
  local left
  left="$(find "${1:-.}" -maxdepth 1 -name '.*.tmp-*' | head -3)"
  [ -z "$left" ] || fail "left behind in ${1:-.}: $left"
}

# --- 1. an output naming a device, FIFO or /dev/stdout is written through, never replaced
mkdir dev spool
if mknod dev/null c 1 3 2>/dev/null; then
  for flag in --report-html --report-json --report-md; do
    expect 0 env TMPDIR="$work/spool" "$E" g.npy g8.edo $flag dev/null
    [ -c dev/null ] || fail "$flag dev/null: the device node was replaced by $(stat -c %F dev/null)"
  done
  expect 0 env TMPDIR="$work/spool" "$U" g8.edo -o dev/null --to npy -q
  [ -c dev/null ] || fail "-o dev/null: the device node was replaced"
  expect 0 env TMPDIR="$work/spool" "$Q" g.npy -o dev/null --codec int8 -q
  [ -c dev/null ] || fail "edo-quantize -o dev/null: the device node was replaced"
  # Two outputs may both be a device.
  expect 0 env TMPDIR="$work/spool" "$E" g.npy g8.edo --report-json dev/null --report-md dev/null
  no_leftovers spool
else
  echo "reliability: mknod not permitted; the device-node checks use /dev/null only"
fi
expect 0 env TMPDIR="$work/spool" "$E" g.npy g8.edo --report-html /dev/null
[ -c /dev/null ] || fail "/dev/null was replaced"
no_leftovers spool
# A FIFO gets the whole file, and stays a FIFO.
mkfifo pipe
timeout 120 cat pipe >from_pipe.html &
reader=$!
expect 0 env TMPDIR="$work/spool" "$E" g.npy g8.edo --report-html pipe
wait "$reader"
[ -p pipe ] || fail "the FIFO was replaced"
grep -q "</html>" from_pipe.html || fail "the FIFO did not carry the whole report"
timeout 120 cat pipe >from_pipe.edo &
reader=$!
expect 0 env TMPDIR="$work/spool" "$Q" g.npy -o pipe --codec int8 -q
wait "$reader"
cmp -s g8.edo from_pipe.edo || fail "the .edo written through a FIFO differs from the file"
# /dev/stdout carries the results: refused there; another descriptor is written through.
expect 2 "$E" g.npy g8.edo --report-json /dev/stdout; err_has "stdout carries the tool's own results"
expect 2 "$Q" g.npy -o /dev/fd/1 --codec int8;        err_has "stdout carries the tool's own results"
[ -L /dev/stdout ] || fail "/dev/stdout is no longer a link"
env TMPDIR="$work/spool" "$E" g.npy g8.edo --report-json /dev/fd/3 3>fd3.json >/dev/null 2>"$work/err" ||
  fail "--report-json /dev/fd/3: $(cat "$work/err")"
$py -c "import json; json.load(open('fd3.json'))" 2>/dev/null || fail "--report-json /dev/fd/3 is not JSON"
env TMPDIR="$work/spool" "$Q" g.npy -o /dev/stderr --codec int8 -q 2>via_stderr.edo >/dev/null
cmp -s g8.edo via_stderr.edo || fail "-o /dev/stderr differs from the file"
no_leftovers spool
no_leftovers .

# --- 2. writing into an existing HDF5 or safetensors file never drops its other contents
$py - <<'PY'
import numpy as np, struct, json
a = np.arange(12, dtype=np.float32).reshape(3, 4)
hdr = json.dumps({"keep": {"dtype": "F32", "shape": [3, 4], "data_offsets": [0, 48]}}).encode()
hdr += b" " * (-len(hdr) % 8)
open("m.safetensors", "wb").write(struct.pack("<Q", len(hdr)) + hdr + a.tobytes())
PY
expect 0 "$U" g8.edo -o m.h5:/first -q
sum_h5="$(cksum <m.h5)"
expect 2 "$U" g8.edo -o m.h5:/decoded -q;          err_has "m.h5: already holds 1 other object (/first)"
[ "$(cksum <m.h5)" = "$sum_h5" ] || fail "a refused write changed m.h5"
printf '0\n1\n' >two.txt
expect 2 "$L" g8.edo --ids two.txt -o m.h5:/rows -q; err_has "--force"
sum_st="$(cksum <m.safetensors)"
expect 2 "$U" g8.edo -o m.safetensors:emb -q;       err_has "m.safetensors: already holds 1 other tensor (keep)"
expect 2 "$U" g8.edo -o m.safetensors:emb --codes -q; err_has "already holds 1 other tensor"
expect 2 "$U" g8.edo -o m.safetensors:emb --to fbgemm -q; err_has "already holds 1 other tensor"
[ "$(cksum <m.safetensors)" = "$sum_st" ] || fail "a refused write changed m.safetensors"
# The same dataset again replaces it (nothing else is lost); --force replaces the whole file.
expect 0 "$U" g8.edo -o m.h5:/first -q
expect 0 "$U" g8.edo -o m.h5:/decoded --force -q
expect 0 "$U" g8.edo -o m.safetensors:emb --force -q
expect 0 "$Q" m.safetensors:emb -o back.edo --codec fp16 -q
no_leftovers .

# --- 3. OMP_NUM_THREADS is a thread count like --threads: 1 to 1024, else exit 2 naming it
printf '0\n' >ids.txt
for n in 100000 0 -3 abc 1025 ' '; do
  for cmd in "$P g.npy" "$Q g.npy -o t.edo --codec int8" "$U g8.edo -o t.npy" "$E g.npy g8.edo" \
             "$K g.npy -o t.edo --tier a:rest:int8" "$L g8.edo --ids ids.txt -o t.npy" \
             "$build/edo-sparsify g.npy -o t.edo --density 0.5" "$build/edo-hash g.npy -o t.edo --scheme hash:buckets=100"; do
    expect 2 env OMP_NUM_THREADS="$n" $cmd; err_has "OMP_NUM_THREADS=$n: not a thread count from 1 to 1024"
  done
done
# --threads wins over the environment; a valid count above the cores is capped, not refused.
expect 0 env OMP_NUM_THREADS=100000 "$U" g8.edo -o t.npy --threads 2 -q
expect 0 env OMP_NUM_THREADS=1024 "$P" g.npy -q
expect 0 env OMP_NUM_THREADS=3,2 "$U" g8.edo -o t.npy -q
OMP_NUM_THREADS=100000 PYTHONPATH="$build/python" $py -c "import edo" 2>"$work/err" &&
  fail "the Python module imported under OMP_NUM_THREADS=100000"
grep -q "OMP_NUM_THREADS=100000: not a thread count" "$work/err" || fail "python: $(tail -1 "$work/err")"
OMP_NUM_THREADS=64 PYTHONPATH="$build/python" $py -c "
import edo, numpy as n
r = edo.open('g8.edo'); assert r.lookup(n.arange(5)).shape == (5, 50)" || fail "python under OMP_NUM_THREADS=64"

# --- 4. HDF5 values kept in other files are refused unless --allow-external, and then only beside the input
expect 1 "$Q" "$hostile/external_passwd.h5:/emb" -o x.edo --codec fp16 -q
err_has "external_passwd.h5:/emb: '/emb' keeps its values in another file (/etc/passwd); refused"
expect 1 "$Q" "$hostile/external_passwd.h5:/emb" -o x.edo --codec fp16 --allow-external -q
err_has "only files in the input's directory"
expect 1 "$P" "$hostile/external_link.h5:/emb";   err_has "'/emb' is a link to another file (../outside.h5)"
expect 1 "$P" "$hostile/external_link.h5:/emb" --allow-external; err_has "only files in the input's directory"
expect 1 "$P" "$hostile/virtual_outside.h5:/emb"; err_has "keeps its values in another file (/etc/hostile_source.h5)"
expect 1 "$Q" "$hostile/external_beside.h5:/emb" -o x.edo --codec fp16 -q; err_has "pass --allow-external"
expect 0 "$Q" "$hostile/external_beside.h5:/emb" -o x.edo --codec fp32 --allow-external -q
expect 0 "$U" x.edo -o x.npy -q
$py -c "
import numpy as n
want = (n.arange(256, dtype=n.float32).reshape(64, 4) / 7).astype(n.float32)
assert (n.load('x.npy') == want).all()" || fail "external storage beside the input read wrong values"
[ -e x.edo ] && rm x.edo
no_leftovers .

# --- 5. scale: the same table in other units gives the same neighbours, fits and refusals
$py - <<'PY'
import numpy as n
g = n.load("g.npy").astype(n.float64)
for name, s in (("s1", 1.0), ("s19", 2.0 ** 63), ("s40", 2.0 ** -133), ("s22", 2.0 ** -73), ("s10", 2.0 ** -33)):
    n.save(name + ".npy", (g * s).astype(n.float32))
PY
# edo-eval's recall is the table's, whatever its units (the scales are powers of two, so every codec's
# relative error is the same and so must recall be).
for s in s1 s19 s22; do
  expect 0 "$Q" "$s.npy" -o "$s.edo" --codec int8 -q
  expect 0 "$E" "$s.npy" "$s.edo" --json --k 10
  $py -c "import json; print(json.load(open('$work/out'))['recall@10'])" >"$s.recall"
done
[ "$(cat s1.recall)" = "$(cat s19.recall)" ] && [ "$(cat s1.recall)" = "$(cat s22.recall)" ] ||
  fail "recall@10 moves with the table's scale: $(cat s1.recall) at 1, $(cat s19.recall) at 2^63, $(cat s22.recall) at 2^-73"
# --fallback nearest points at the same rows at every scale.
for s in s1 s19 s40; do
  expect 0 "$K" "$s.npy" -o "$s.near.edo" --tier hot:rows=50%:int8 --tier cold:rest:nearest -q
  expect 0 "$U" "$s.near.edo" -o "$s.near.npy" -q
done
$py - <<'PY' || fail "nearest fallback picks other rows at extreme scales"
import numpy as n
g = n.load("g.npy").astype(n.float64)
a = n.load("s1.near.npy").astype(n.float64)
base = n.linalg.norm(a - g) / n.linalg.norm(g)
# 2^63: the same numbers, so the same rows. 2^-133: subnormal, a few values rounded, so a few near-ties go the
# other way; its error against the table must stay the table's (it was 0.59 against 0.33).
b = n.load("s19.near.npy").astype(n.float64) / 2.0 ** 63
assert (a == b).all(), "2^63"
c = n.load("s40.near.npy").astype(n.float64) / 2.0 ** -133
rel = n.linalg.norm(c - g) / n.linalg.norm(g)
assert abs(rel - base) < 0.01, (rel, base)
PY
# fp16 sparse values that would all round to zero are refused, as edo-quantize refuses them.
expect 1 "$build/edo-sparsify" s10.npy -o sp.edo --density 0.5 --values fp16 -q
err_has "s10.npy: row 0: nonzero, but"
[ -e sp.edo ] && fail "a sparse table of zeros was written"
expect 0 "$build/edo-sparsify" s10.npy -o sp.edo --density 0.5 --values int8 -q
# A weighted hash fit of a table at 1e-22 keeps its rows (it came out all zeros).
expect 0 "$build/edo-hash" s22.npy -o s22.hash.edo --scheme hash:buckets=500,k=2,weights=1 -q
expect 0 "$U" s22.hash.edo -o s22.hash.npy -q
$py -c "
import numpy as n
x = n.load('s22.npy').astype(n.float64); y = n.load('s22.hash.npy').astype(n.float64)
rel = n.linalg.norm(x - y) / n.linalg.norm(x)
assert n.abs(y).max() > 0 and rel < 0.99, rel" || fail "the weighted hash fit at 2^-73 decodes to zeros"
no_leftovers .

# --- 7. inputs that would run or grow without bound
# A safetensors index naming 100,000 shard files is refused quickly (the listing was quadratic).
$py - <<'PY'
import json
json.dump({"weight_map": {f"t{i}": f"part-{i}.safetensors" for i in range(100000)}}, open("huge.safetensors.index.json", "w"))
PY
expect 1 timeout 60 "$P" huge.safetensors.index.json; err_has "part-0.safetensors: cannot open"
# A few KB of HDF5 declaring 10^12 rows of fill value: refused; accepted with --allow-fill, the output
# that would not fit on the disk is refused before anything is written.
expect 1 "$Q" "$hostile/sparse_1e12_rows.h5:/emb" -o fill.edo --codec int8 -q; err_has "would be its fill value"
expect 1 timeout 60 "$Q" "$hostile/sparse_1e12_rows.h5:/emb" -o fill.edo --codec int8 --allow-fill -q
err_has "the output needs at least"
[ -e fill.edo ] && fail "a fill-value table was written"
# An output that cannot fit on its file system is refused before the work (root: a small tmpfs).
mkdir small
if mount -t tmpfs -o size=700k tmpfs small 2>/dev/null; then
  expect 1 "$Q" g.npy -o small/x.edo --codec fp16 -q; err_has "needs at least 1000000 bytes"
  [ -z "$(ls -A small)" ] || fail "a refused output left $(ls -A small)"
  umount small
fi

# --- 6. merges refuse shards of another table, shards a reader would refuse, and --shard-set checks checksums
mkdir -p a b c
cp g.npy a/t.npy; cp g.npy c/u.npy
$py -c "import numpy as n; n.save('b/t.npy', n.load('g.npy')[::-1].copy())"
expect 0 "$Q" a/t.npy -o whole.edo --codec int8 -q
expect 0 "$Q" a/t.npy -o a0.edo --codec int8 --shard 0/2 -q
expect 0 "$Q" b/t.npy -o b1.edo --codec int8 --shard 1/2 -q
expect 0 "$Q" c/u.npy -o c1.edo --codec int8 --shard 1/2 -q
expect 1 "$K" --merge a0.edo b1.edo -o ab.edo -q; err_has "b1.edo: cut from another table than"
[ -e ab.edo ] && fail "shards of two tables merged"
expect 1 "$K" --shard-set a0.edo b1.edo -o ab.edoset -q; err_has "cut from another table"
# The same table under another name merges, into the file one process writes.
expect 0 "$K" --merge a0.edo c1.edo -o ac.edo -q
cmp -s whole.edo ac.edo || fail "shards of one table under two names do not merge into the one-process file"
# A resealed shard whose codes section is one row short (checksums recomputed) is refused, naming it.
$py "$src/test/cli/reseal_manifest.py" c1.edo short.edo "
for s in m['sections']:
    if s['name'].endswith('/codes'):
        s['length'] -= 58
        s['xxh64'] = '%016x' % xxh64(bytes(data[s['offset']:s['offset'] + s['length']]))"
expect 1 "$K" --merge a0.edo short.edo -o short_m.edo -q; err_has "short.edo"
[ -e short_m.edo ] && fail "a short shard merged"
# A shard that claims a row more than its codes hold (rows, tier rows and table rows resealed together).
$py "$src/test/cli/reseal_manifest.py" c1.edo long.edo "
m['rows'] += 1; m['tiers'][0]['rows'] += 1; m['shard']['table_rows'] += 1"
$py "$src/test/cli/reseal_manifest.py" a0.edo a0long.edo "m['shard']['table_rows'] += 1"
expect 1 "$K" --merge a0long.edo long.edo -o long_m.edo -q; err_has "long.edo"
[ -e long_m.edo ] && fail "a shard with a row too many merged"
# --shard-set verifies every section checksum, as --merge does.
cp c1.edo flipped.edo
printf '\x01' | dd of=flipped.edo bs=1 seek=100 conv=notrunc status=none
expect 1 "$K" --shard-set a0.edo flipped.edo -o f.edoset -q; err_has "flipped.edo"
expect 1 "$K" --merge a0.edo flipped.edo -o f.edo -q; err_has "flipped.edo"
[ -e f.edoset ] || [ -e f.edo ] && fail "a shard with a flipped byte was accepted"
no_leftovers .

# --- 10. a plan meets its budget on the whole table, not just on its sample
$py -c "
import numpy as n
r = n.random.default_rng(3)
c = r.zipf(1.1, 10000).astype(n.float64); c[c > 1e6] = 1e6
n.save('zipf.npy', c)"
expect 0 "$P" g.npy --freq zipf.npy --plan --budget 'w.recall@10>=0.9' --plan-sample-rows 2500 \
  --plan-codecs fp16 --plan-codecs int8 --plan-codecs int4 --plan-codecs int2 --plan-codecs pq:m=10 \
  --plan-config plan.json --json -q
$py - "$work/out" <<'PY' || fail "the plan was not checked on the whole table"
import json, sys
j = json.load(open(sys.argv[1]))["plan"]
checks = j["checks_on_table"]
assert checks and checks[-1]["passed"], checks
assert json.load(open("plan.json"))["estimate"]["measured_on_table"]["w.recall@10"] >= 0.9
PY
expect 0 "$K" g.npy -o planned.edo --config plan.json --freq zipf.npy --eval --gate 'w.recall@10>=0.9' -q
# A budget no metric can reach is refused at once.
expect 2 "$P" g.npy --plan --budget 'recall@10>=3'; err_has "no plan can meet it"

# --- 9. quieter defects
# A failed run takes back what it had published: the old output is back, nothing new is left.
cp g8.edo keep.edo; keep_sum="$(cksum <keep.edo)"
expect 1 "$Q" g.npy -o keep.edo --codec int4 --eval --report-json r.json --report-md no/such/dir/r.md -q
[ "$(cksum <keep.edo)" = "$keep_sum" ] || fail "a failed run left its new output in place of the old one"
[ -e r.json ] && fail "a failed run left the report it wrote before failing"
expect 1 "$Q" g.npy -o fresh.edo --codec int4 --eval --report-json r.json --report-md no/such/dir/r.md -q
[ -e fresh.edo ] && fail "a failed run left a new output"
compgen -G '.*.old-*' >/dev/null && fail "a failed run left a kept copy: $(ls -A | grep old-)"
expect 0 "$Q" g.npy -o keep.edo --codec int4 --eval --report-json r.json -q
[ -e r.json ] && [ "$(cksum <keep.edo)" != "$keep_sum" ] || fail "a successful run did not publish"
compgen -G '.*.old-*' >/dev/null && fail "a successful run left a kept copy"
# A .edo whose payload was altered is not read as a table: not re-encoded, evaluated or profiled.
cp g8.edo bad.edo
printf '\x7f' | dd of=bad.edo bs=1 seek=5000 conv=notrunc status=none
for cmd in "$Q bad.edo -o re.edo --codec int4" "$K bad.edo -o re.edo --tier a:rest:int4" \
           "$build/edo-sparsify bad.edo -o re.edo --density 0.5" "$build/edo-hash bad.edo -o re.edo --scheme hash:buckets=100" \
           "$E g.npy bad.edo" "$E bad.edo g8.edo" "$P bad.edo"; do
  expect 1 $cmd; err_has "bad.edo"
  grep -q "checksum" "$work/err" || fail "$cmd: $(cat "$work/err")"
done
[ -e re.edo ] && fail "a corrupt .edo was re-encoded into a valid one"
# --max-resident beyond what the file needs is clamped, not allocated; units in either case.
printf '0\n5\n9999\n' >ids.txt
for budget in 64G 1g 64t; do
  expect 0 "$L" g8.edo --ids ids.txt -o r.npy --max-resident "$budget" -q
done
# The Python module refuses negative ids (whatever the unknown-id policy) and paths with a NUL.
PYTHONPATH="$build/python" $py - <<'PY' || fail "python: negative ids or a NUL path were accepted"
import edo, numpy as n
r = edo.open("g8.edo", unknown="default")
for bad in (n.array([0, -1]), n.array([-5])):
    try:
        r.lookup(bad)
    except edo.Error as e:
        assert "negative" in str(e), e
    else:
        raise SystemExit("negative id accepted")
for bad in ([1.5, 2.9], n.array([True, False]), n.array([0.0])):
    try:
        r.lookup(bad)
    except TypeError as e:
        assert "integers" in str(e), e
    else:
        raise SystemExit("non-integer ids accepted: %r" % (bad,))
assert r.lookup([0, 3]).shape == (2, 50) and r.lookup(n.array([1], n.uint32)).shape == (1, 50)
try:
    edo.open("g8.edo\0junk")
except edo.Error as e:
    assert "NUL" in str(e), e
else:
    raise SystemExit("a path with a NUL opened")
PY
# Shard numbers beyond 64 bits, and a launcher range that runs backwards, are usage errors.
expect 2 "$Q" g.npy -o s.edo --codec int8 --shard 18446744073709551616/2; err_has "expected I/N"
expect 2 "$Q" g.npy -o s.edo --codec int8 --shard 0/18446744073709551618; err_has "expected I/N"
expect 2 env SLURM_ARRAY_TASK_ID=3 SLURM_ARRAY_TASK_MIN=5 SLURM_ARRAY_TASK_MAX=2 "$Q" g.npy -o s.edo --codec int8
err_has "SLURM_ARRAY_TASK_MAX 2 is below SLURM_ARRAY_TASK_MIN 5"
# The reader example refuses ids that are not numbers.
expect 2 "$build/example_lookup" g8.edo abc; grep -q "'abc' is not a row id" "$work/err" || fail "example_lookup abc"
expect 2 "$build/example_lookup" g8.edo 12x
expect 0 "$build/example_lookup" g8.edo 0 9999
# A vocabulary that repeats a word is refused where it is stored, as edo-eval refuses it.
{ head -n 9999 "$src/data-samples/glove.6B.50d.10k.vocab.txt"; echo the; } >dup.txt
expect 1 "$Q" g.npy -o v.edo --codec int8 --vocab dup.txt -q
err_has "dup.txt: line 10000 repeats 'the' of line 1"
[ -e v.edo ] && fail "a vocabulary with a repeated word was stored"
# .vec values below float32's range read as zero; above it they are refused as such; a BOM is not a word.
printf '2 3\nfoo 1e-50 0.5 -2\nbar 1 2 3\n' >tiny.vec
expect 0 "$Q" tiny.vec -o tiny.edo --codec fp32 -q
expect 0 "$U" tiny.edo -o tiny.npy -q
$py -c "import numpy as n; a=n.load('tiny.npy'); assert a[0,0]==0 and a[0,1]==0.5 and a[1,2]==3, a" ||
  fail "1e-50 in a .vec did not read as 0"
printf '2 3\nfoo 1e50 0.5 -2\nbar 1 2 3\n' >huge.vec
expect 1 "$Q" huge.vec -o huge.edo --codec fp32 -q; err_has "huge.vec: line 2: value 1 '1e50' is beyond float32's range"
printf '\xef\xbb\xbf2 3\nfoo 1 0.5 -2\nbar 1 2 3\n' >bom.vec
expect 0 "$Q" bom.vec -o bom.edo --codec fp32 -q
expect 0 "$U" bom.edo -o bom.vec2.vec -q
head -c 3 bom.vec2.vec | grep -q "^2 3" || fail "a BOM before the header was not dropped"
printf '\xef\xbb\xbfthe\n' >bomvocab.txt; tail -n +2 "$src/data-samples/glove.6B.50d.10k.vocab.txt" >>bomvocab.txt
expect 0 "$E" g.npy g8.edo --vocab bomvocab.txt --probe the
no_leftovers .

# --- 8. the tools' OpenMP threads sleep when idle, unless the user chose otherwise
# (libgomp shows the policy it runs with as GOMP_SPINCOUNT: 0 when passive, 300000 by default)
OMP_DISPLAY_ENV=verbose "$Q" --version >/dev/null 2>"$work/err"
grep -q "GOMP_SPINCOUNT = '0'" "$work/err" || fail "edo-quantize does not wait passively: $(grep SPIN "$work/err")"
OMP_DISPLAY_ENV=verbose "$K" g.npy -o w.edo --tier a:rest:int8 -q >/dev/null 2>"$work/err"
grep -q "GOMP_SPINCOUNT = '0'" "$work/err" || fail "edo-pack does not wait passively: $(grep SPIN "$work/err")"
OMP_DISPLAY_ENV=verbose OMP_WAIT_POLICY=active "$Q" --version >/dev/null 2>"$work/err"
grep -q "OMP_WAIT_POLICY = 'ACTIVE'" "$work/err" || fail "a user's OMP_WAIT_POLICY was overridden"
OMP_DISPLAY_ENV=verbose GOMP_SPINCOUNT=1000 "$Q" --version >/dev/null 2>"$work/err"
grep -q "GOMP_SPINCOUNT = '1000'" "$work/err" || fail "a user's GOMP_SPINCOUNT was overridden"
# Under a tracer (strace, a debugger) the tool is not run again: the traced process does the work.
if command -v strace >/dev/null; then
  strace -f -e trace=execve -o "$work/trace" "$Q" --version >/dev/null 2>&1
  [ "$(grep -c execve "$work/trace")" = 1 ] || fail "a traced tool ran itself again: $(grep execve "$work/trace")"
fi

echo "reliability: $failures failure(s)"
[ "$failures" -eq 0 ]
