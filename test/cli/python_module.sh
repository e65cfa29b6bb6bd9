#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The edo Python module (python/edo_module.cpp, built into BUILD_DIR/python):
# lookups and decode_all equal edo-unpack's rows for every tier kind, the
# manifest and tiers read, bad ids and files raise edo.Error with edo's line.
#   python_module.sh BUILD_DIR SOURCE_DIR
set -uo pipefail
source "$(dirname "$0")/checks.bash" "$@"  # build, src, work (removed at exit), expect, fail, err_has
glove="$src/data-samples/glove.6B.50d.10k.npy"
py=/usr/bin/python3
[ -n "$(ls "$build"/python/edo.*.so 2>/dev/null)" ] || { echo "FAIL: no module in $build/python"; exit 1; }
"$py" -c "import numpy as np; np.save('$work/zipf.npy', 1.0 / (np.arange(10000) + 1))"
quick=(-q --train-rows 2000 --freq "$work/zipf.npy")
expect 0 "$build/edo-pack" "$glove" -o "$work/tiers.edo" "${quick[@]}" \
  --tier hot:rows=5%:fp16 --tier warm:rows=30%:int8 --tier cold:rows=50%:pq:m=10 --tier rare:rest:default
expect 0 "$build/edo-pack" "$glove" -o "$work/sparse.edo" "${quick[@]}" \
  --tier hot:rows=10%:fp16 --tier 'cold:rest:csr:density=0.3,values=int8:disk'
expect 0 "$build/edo-hash" "$glove" -o "$work/hash.edo" --freq "$work/zipf.npy" --scheme hash:buckets=1000,k=2 -q
for name in tiers sparse hash; do
  expect 0 "$build/edo-unpack" "$work/$name.edo" -o "$work/$name.npy" -q
done
PYTHONPATH="$build/python" "$py" - "$work" <<'PY' || fail "the Python module's rows, manifest or errors are wrong"
import sys
import numpy as np
import edo
w = sys.argv[1]
rng = np.random.default_rng(3)
ids = rng.integers(0, 10000, 5000)
for name in ('tiers', 'sparse', 'hash'):
    want = np.load(f'{w}/{name}.npy')
    r = edo.open(f'{w}/{name}.edo')
    assert (r.rows, r.dim, len(r)) == (10000, 50, 10000), (r.rows, r.dim)
    got = r.lookup(ids)
    assert got.dtype == np.float32 and got.shape == (5000, 50)
    assert got.tobytes() == want[ids].tobytes(), name
    assert r.decode_all().tobytes() == want.tobytes(), name
    assert r.lookup(ids.astype(np.int32)).tobytes() == got.tobytes()  # any integer array
    assert r.manifest['rows'] == 10000 and 'tiers' in r.manifest
    assert sum(t['rows'] for t in r.tiers) == 10000
    bounded = edo.open(f'{w}/{name}.edo', max_resident=1 << 20)
    assert bounded.lookup(ids).tobytes() == got.tobytes(), name
# numpy users' reach: a context manager, close(), indexing, shape, dtype, __version__.
with edo.open(f'{w}/tiers.edo') as f:
    whole = f.decode_all()
    assert f.shape == (10000, 50) and f.dtype == np.float32 and len(f) == 10000 and edo.__version__
# The build, as the tools' --version says it.
info = edo.build_info()
assert info['version'] == edo.__version__ and info['cpu_path'] == edo.cpu_path(), info
assert set(info) == {'version', 'commit', 'build_type', 'cpu_target', 'cpu_path', 'cuda_architectures', 'faiss'}, info
assert info['commit'] and info['build_type'] and info['cuda_architectures'], info
with edo.open(f'{w}/tiers.edo') as f:
    assert f[7].tobytes() == whole[7].tobytes() and f[-1].tobytes() == whole[-1].tobytes()
    assert f[10:20].tobytes() == whole[10:20].tobytes() and f[::-997].tobytes() == whole[::-997].tobytes()
    assert f[[3, 1]].tobytes() == whole[[3, 1]].tobytes()
    for bad, kind in ((lambda: f[10000], IndexError), (lambda: f[1.0], TypeError), (lambda: f[[0.5]], TypeError)):
        try:
            bad()
            raise SystemExit(f'no {kind.__name__}')
        except kind:
            pass
assert f.closed and 'closed' in repr(f)
try:
    f.lookup([0])
    raise SystemExit('a closed file answered')
except ValueError:
    pass
tiers = edo.open(f'{w}/tiers.edo').tiers
assert [t['name'] for t in tiers] == ['hot', 'warm', 'cold', 'rare'], tiers
assert tiers[3]['kind'] == 'default' and tiers[2]['codec'].startswith('pq'), tiers
r = edo.open(f'{w}/tiers.edo', unknown='default')
assert r.lookup(np.array([10005])).tobytes() == r.lookup(np.array([9999])).tobytes()  # the rare tier's vector
for call, text in ((lambda: edo.open(f'{w}/tiers.edo').lookup(np.array([10000])), 'is outside the table'),
                   (lambda: edo.open(f'{w}/missing.edo'), 'missing.edo: cannot open'),
                   (lambda: edo.open(f'{w}/tiers.edo', unknown='maybe'), "unknown='maybe'"),
                   (lambda: edo.open(f'{w}/tiers.edo').lookup(np.zeros((2, 2), dtype=np.int64)), 'one-dimensional')):
    try:
        call()
        raise SystemExit(f'no error for {text}')
    except edo.Error as e:
        assert text in str(e), (text, str(e))
# Usage mistakes are ValueErrors too (edo.UsageError); file problems are not.
f = edo.open(f'{w}/tiers.edo')
for call in (lambda: f.lookup_bags(np.array([0]), np.array([1]), mode='avg'),
             lambda: edo.open(f'{w}/tiers.edo', placement='zz'), lambda: edo.open(f'{w}/tiers.edo', unknown='maybe')):
    try:
        call()
        raise SystemExit('a usage mistake passed')
    except ValueError as e:
        assert isinstance(e, edo.Error) and isinstance(e, edo.UsageError), type(e)
try:
    edo.open(f'{w}/missing.edo')
except ValueError:
    raise SystemExit('a missing file is a ValueError')
except edo.Error:
    pass
PY
# Another interpreter that cannot load the module is told which one to use.
"$py" "$build/python/edo.py" 2>"$work/err" && fail "edo.py did not refuse"
grep -q "ImportError: edo: the module in this folder was built for /usr/bin/python3" "$work/err" ||
  fail "edo.py: $(tail -1 "$work/err")"
[ "$failures" = 0 ] || { echo "$failures failure(s)"; exit 1; }
echo "python module: ok"
