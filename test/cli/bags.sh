#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Pooled lookups (Reader::lookup_bags): edo-lookup --offsets and the Python
# module's lookup_bags pool the rows edo-unpack decodes, as
# torch.nn.EmbeddingBag does (sum, mean, max; per-id weights with sum; an
# empty bag is zeros), over a tiered file; malformed bags are usage errors.
#   bags.sh BUILD_DIR SOURCE_DIR
set -uo pipefail
source "$(dirname "$0")/checks.bash" "$@"  # build, src, work (removed at exit), expect, fail, err_has
py=/usr/bin/python3
cd "$work" || exit 1
glove="$src/data-samples/glove.6B.50d.10k.npy"
expect 0 "$build/edo-pack" "$glove" -o t.edo --tier hot:rows=10%:fp16 --tier warm:rows=40%:int8 \
  --tier 'cold:rows=40%:csr:density=0.25,values=int8' --tier rare:rest:default -q
expect 0 "$build/edo-unpack" t.edo -o t.npy -q
$py - <<'PY'
import numpy as n
r = n.random.default_rng(7)
sizes = r.integers(0, 40, 500); sizes[::9] = 0
n.save("offsets.npy", n.concatenate([[0], n.cumsum(sizes)[:-1]]).astype(n.int64))
n.save("ids.npy", r.integers(0, 10000, int(sizes.sum())).astype(n.int64))
PY
for mode in sum mean max; do
  expect 0 "$build/edo-lookup" t.edo --ids ids.npy --offsets offsets.npy --mode "$mode" -o "$mode.npy" -q
done
$py - <<'PY' || fail "edo-lookup --offsets does not pool as EmbeddingBag does"
import numpy as n
rows, ids, off = n.load("t.npy"), n.load("ids.npy"), n.load("offsets.npy")
ends = list(off[1:]) + [len(ids)]
for mode in ("sum", "mean", "max"):
    got = n.load(mode + ".npy")
    assert got.shape == (len(off), rows.shape[1]), got.shape
    for b, (s, e) in enumerate(zip(off, ends)):
        bag = rows[ids[s:e]].astype(n.float64)
        want = n.zeros(rows.shape[1]) if e == s else {"sum": bag.sum(0), "mean": bag.mean(0), "max": bag.max(0)}[mode]
        assert n.allclose(got[b], want, rtol=1e-5, atol=1e-5), (mode, b)
PY
PYTHONPATH="$build/python" $py - <<'PY' || fail "the Python module's lookup_bags is wrong"
import numpy as n
import edo
rows, ids, off = n.load("t.npy"), n.load("ids.npy"), n.load("offsets.npy")
w = n.random.default_rng(1).standard_normal(len(ids)).astype(n.float32)
with edo.open("t.edo") as f:
    for mode in ("sum", "mean", "max"):
        assert f.lookup_bags(off, ids, mode=mode).tobytes() == n.load(mode + ".npy").tobytes(), mode
    got = f.lookup_bags(off, ids, weights=w)
    ends = list(off[1:]) + [len(ids)]
    for b, (s, e) in enumerate(zip(off, ends)):
        want = (rows[ids[s:e]].astype(n.float64) * w[s:e, None]).sum(0)
        assert n.allclose(got[b], want, rtol=1e-4, atol=1e-4), b
    for call, kind in ((lambda: f.lookup_bags([1], [0]), ValueError), (lambda: f.lookup_bags([0, 2, 1], [0, 1, 2]), ValueError),
                       (lambda: f.lookup_bags([0, 5], [0]), ValueError), (lambda: f.lookup_bags([0], [0, 1], weights=[1.0]), ValueError),
                       (lambda: f.lookup_bags([0], [0], mode="avg"), edo.Error),
                       (lambda: f.lookup_bags([0], [0], mode="max", weights=[1.0]), edo.Error),
                       (lambda: f.lookup_bags([0], [0.5]), TypeError), (lambda: f.lookup_bags([0], [-1]), edo.Error)):
        try:
            call()
            raise SystemExit("accepted a bad bag")
        except kind:
            pass
PY
$py -c "import numpy as n; n.save('w.npy', n.random.default_rng(1).standard_normal(len(n.load('ids.npy'))).astype(n.float32))"
expect 0 "$build/edo-lookup" t.edo --ids ids.npy --offsets offsets.npy --weights w.npy -o wsum.npy -q
PYTHONPATH="$build/python" $py -c "
import numpy as n, edo
f = edo.open('t.edo')
want = f.lookup_bags(n.load('offsets.npy'), n.load('ids.npy'), weights=n.load('w.npy'))
assert n.load('wsum.npy').tobytes() == want.tobytes()" || fail "edo-lookup --weights differs from lookup_bags"
# out=: the caller's buffer filled in place and returned; a wrong one is a ValueError.
PYTHONPATH="$build/python" $py - <<'PY' || fail "lookup/lookup_bags out= is wrong"
import numpy as n
import edo
ids, off = n.load("ids.npy"), n.load("offsets.npy")
f = edo.open("t.edo")
buf = n.empty((len(off), f.dim), n.float32)
assert f.lookup_bags(off, ids, out=buf) is buf and buf.tobytes() == n.load("sum.npy").tobytes()
rows = n.empty((len(ids), f.dim), n.float32)
assert f.lookup(ids, out=rows) is rows and rows.tobytes() == f.lookup(ids).tobytes()
for bad in (n.empty((len(ids), f.dim), n.float64), n.empty((len(ids) + 1, f.dim), n.float32),
            n.empty((f.dim, len(ids)), n.float32).T, [0.0]):
    try:
        f.lookup(ids, out=bad)
        raise SystemExit("accepted a bad out=")
    except ValueError:
        pass
PY
# Several Python threads pooling through one File at once (the GIL released) get what one thread gets.
PYTHONPATH="$build/python" $py - <<'PY' || fail "lookup_bags from several Python threads differs"
import threading
import numpy as n
import edo
ids, off = n.load("ids.npy"), n.load("offsets.npy")
f = edo.open("t.edo")
want = n.load("sum.npy").tobytes()
bad = []
def work():
    for _ in range(20):
        if f.lookup_bags(off, ids).tobytes() != want or f.lookup(ids).shape != (len(ids), f.dim):
            bad.append(1)
threads = [threading.Thread(target=work) for _ in range(4)]
for t in threads: t.start()
for t in threads: t.join()
assert not bad, len(bad)
PY
# The file read into memory (huge pages) serves the same bags; with a resident bound it is refused.
expect 0 "$build/edo-lookup" t.edo --ids ids.npy --offsets offsets.npy --mode mean --placement memory -o mem.npy -q
cmp -s mem.npy mean.npy || fail "edo-lookup --placement memory pools other bags than the mapping"
expect 2 "$build/edo-lookup" t.edo --ids ids.npy --placement memory --max-resident 1M -o x.npy
err_has "choose one"
PYTHONPATH="$build/python" $py -c "
import numpy as n, edo
f = edo.open('t.edo', placement='memory')
assert f.lookup_bags(n.load('offsets.npy'), n.load('ids.npy'), mode='mean').tobytes() == n.load('mean.npy').tobytes()
try:
    edo.open('t.edo', placement='huge')
    raise SystemExit('accepted placement huge')
except edo.Error:
    pass" || fail "the Python module's placement='memory' is wrong"
expect 2 "$build/edo-lookup" t.edo --ids ids.npy --offsets offsets.npy --weights w.npy --mode max -o x.npy
err_has "mode sum only"
expect 2 "$build/edo-lookup" t.edo --ids ids.npy --mode mean -o x.npy; err_has "give --offsets"
printf '0\n2\n1\n' >bad_offsets.txt
expect 1 "$build/edo-lookup" t.edo --ids ids.npy --offsets bad_offsets.txt -o bad.npy
err_has "offsets: bag offset 2 (1) is below the one before it"
[ -e bad.npy ] && fail "malformed bags left an output"
# The kernels' CPU path: asked for by EDO_CPU_PATH, the same bits on every
# path the machine runs (the portable one stands for a CPU without AVX2), named
# by --version and --stats; a path that is no path is a usage error.
for path in portable avx2 avx512; do
  EDO_CPU_PATH=$path "$build/edo-lookup" --version 2>/dev/null | grep -q "kernels $path" || continue
  expect 0 env EDO_CPU_PATH=$path "$build/edo-lookup" t.edo --ids ids.npy --offsets offsets.npy --mode mean \
    -o "path_$path.npy" -q --stats
  grep -q "pooling kernels: $path" "$work/err" || fail "--stats does not name the path $path"
  cmp -s "path_$path.npy" mean.npy || fail "EDO_CPU_PATH=$path pools other bits"
done
expect 2 env EDO_CPU_PATH=sse9 "$build/edo-lookup" t.edo --ids ids.npy -o x.npy
err_has "EDO_CPU_PATH=sse9: expected portable, avx2 or avx512"
echo "bags: $failures failure(s)"
[ "$failures" -eq 0 ]
