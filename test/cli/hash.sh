#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# edo-hash from the command line: each scheme written and read back by
# edo-unpack, reproducible whatever the thread count, --keep-top, --export,
# --sweep, and bad input (one line, nothing written).
#   hash.sh BUILD_DIR SOURCE_DIR
set -uo pipefail
source "$(dirname "$0")/checks.bash" "$@"  # build, src, work (removed at exit), expect, fail, err_has
glove="$src/data-samples/glove.6B.50d.10k.npy"
py=/usr/bin/python3
H="$build/edo-hash"
"$py" -c "import numpy as np; np.save('$work/zipf.npy', 1.0 / (np.arange(10000) + 1)); np.save('$work/short.npy', np.ones(5))"

# Each scheme: written, its fit and buckets reported, and the same bytes on one thread and on two.
for scheme in hash:buckets=1000,fit=none hash:buckets=1000 hash:buckets=500,k=2,weights=1 qr:buckets=100 \
              qr:buckets=100,op=mul; do
  OMP_NUM_THREADS=1 expect 0 "$H" "$glove" -o "$work/a.edo" --freq "$work/zipf.npy" --scheme "$scheme" -q
  grep -q "^  fit " "$work/out" || fail "$scheme: no fit line: $(cat "$work/out")"
  grep -q "^  buckets " "$work/out" || fail "$scheme: no buckets line"
  OMP_NUM_THREADS=2 expect 0 "$H" "$glove" -o "$work/b.edo" --freq "$work/zipf.npy" --scheme "$scheme" -q
  cmp -s "$work/a.edo" "$work/b.edo" || fail "$scheme: one thread and two wrote different files"
done

# Group-shared rows: labels (37 groups) with an fp32 residual read back within float rounding of the table.
"$py" -c "open('$work/labels.txt', 'w').write(''.join('%d\n' % (i % 37) for i in range(10000)))"
expect 0 "$H" "$glove" -o "$work/g.edo" --scheme group:labels,residual=fp32 --group-labels "$work/labels.txt" -q
grep -q "^  groups     37 for 10000 rows" "$work/out" || fail "group labels: $(cat "$work/out")"
expect 0 "$build/edo-unpack" "$work/g.edo" -o "$work/g.npy" -q
"$py" - "$glove" "$work/g.npy" <<'PY' || fail "group round trip"
import numpy as np, sys
g = np.load(sys.argv[1]); y = np.load(sys.argv[2])
assert np.abs(g - y).max() <= 1e-6 * max(1.0, np.abs(g).max()), np.abs(g - y).max()
PY
expect 0 "$H" "$glove" -o "$work/c.edo" --scheme 'group:clusters=64,residual=[int4:group=25]' -q

# --keep-top: the top 1% by frequency (ids 0-99) read back exactly at fp32, the rest from the buckets.
expect 0 "$H" "$glove" -o "$work/k.edo" --freq "$work/zipf.npy" --scheme hash:buckets=1000,k=2 --keep-top rows=1% \
  --keep-codec fp32 -q --json
expect 0 "$build/edo-unpack" "$work/k.edo" -o "$work/k.npy" -q
"$py" - "$glove" "$work/k.npy" "$work/k.edo" <<'PY' || fail "keep-top round trip"
import json, numpy as np, sys
g = np.load(sys.argv[1]); y = np.load(sys.argv[2])
assert np.array_equal(g[:100], y[:100])
assert not np.array_equal(g[100:200], y[100:200])
PY

# --export: the tables as npy and a description that rebuilds every row.
expect 0 "$H" "$glove" -o "$work/e.edo" --scheme hash:buckets=300,k=2,seed=5 --export "$work/fit" -q
expect 0 "$build/edo-unpack" "$work/e.edo" -o "$work/e.npy" -q
"$py" - "$work/fit" "$work/e.npy" <<'PY' || fail "export"
import json, numpy as np, sys
d = json.load(open(sys.argv[1] + "/hash.json")); y = np.load(sys.argv[2])
assert d["scheme"] == "hash" and d["k"] == 2 and d["seed"] == 5 and d["buckets"] == 300, d
b = np.load(sys.argv[1] + "/" + d["files"]["buckets"]["file"])
M = (1 << 64) - 1
def mix(x):
    x = (x + 0x9e3779b97f4a7c15) & M
    x = ((x ^ (x >> 30)) * 0xbf58476d1ce4e5b9) & M
    x = ((x ^ (x >> 27)) * 0x94d049bb133111eb) & M
    return x ^ (x >> 31)
for i in (0, 1, 777, 9999):
    row = b[mix(i ^ mix(5 + 0)) % 300] + b[mix(i ^ mix(5 + 1)) % 300]
    assert np.array_equal(row.astype(np.float32), y[i]), i
PY

# --sweep: every scheme and the dense baselines, nothing written.
expect 0 "$H" "$glove" --freq "$work/zipf.npy" --sweep 'hash:buckets=1000,fit=none;hash:buckets=1000;qr:buckets=100' \
  --k 10 --queries 200 --json -q
"$py" - "$work/out" <<'PY' || fail "sweep JSON"
import json, sys
s = json.load(open(sys.argv[1]))["sweep"]
assert [p["spec"] for p in s] == ["hash:buckets=1000,k=1,weights=0,fit=none,seed=0", "hash:buckets=1000,k=1,weights=0,fit=ls,seed=0",
                                  "qr:buckets=100,op=sum", "int8", "int4", "int4:group=32"], [p["spec"] for p in s]
assert s[1]["eval"]["w.rel_fro"] < s[0]["eval"]["w.rel_fro"], "the fit is no better than the naive baseline"
PY

# A fit that stops short: exit 1 and nothing written, unless --allow-partial.
expect 1 "$H" "$glove" -o "$work/p.edo" --scheme hash:buckets=500,k=2 --max-iterations 2 --tolerance 1e-9 -q
err_has "--allow-partial"
[ ! -e "$work/p.edo" ] || fail "a fit short of its tolerance was written"
expect 0 "$H" "$glove" -o "$work/p.edo" --scheme hash:buckets=500,k=2 --max-iterations 2 --tolerance 1e-9 --allow-partial -q
grep -q "partial" "$work/out" || fail "--allow-partial: the summary does not say the fit is partial"

# Bad input: one line, usage or runtime exit, nothing written.
expect 2 "$H" "$glove" -o "$work/x.edo" --scheme hash:buckets=10000; err_has "share nothing"
expect 2 "$H" "$glove" -o "$work/x.edo" --scheme hash:buckets=100,k=0; err_has "k=0 is outside 1..8"
expect 2 "$H" "$glove" -o "$work/x.edo" --scheme hash:buckets=100,k=2,fit=none; err_has "fit=none"
expect 2 "$H" "$glove" -o "$work/x.edo" --scheme lsh:bits=8; err_has "--scheme lsh:bits=8"
expect 2 "$H" "$glove" -o "$work/x.edo" --scheme group:labels; err_has "--group-labels"
"$py" -c "open('$work/neg.txt', 'w').write('3\n' * 9999 + '-1\n'); open('$work/few.txt', 'w').write('1\n' * 10)"
expect 2 "$H" "$glove" -o "$work/x.edo" --scheme group:labels --group-labels "$work/neg.txt"; err_has "negative"
expect 1 "$H" "$glove" -o "$work/x.edo" --scheme group:labels --group-labels "$work/few.txt"; err_has "10 labels for 10000 rows"
expect 2 "$H" "$glove" -o "$work/x.edo"; err_has "--scheme are required"
expect 2 "$H" "$glove" -o "$work/x.edo" --scheme hash:buckets=100 --keep-top rest; err_has "--keep-top rest"
expect 1 "$H" "$glove" -o "$work/x.edo" --scheme hash:buckets=100 --freq "$work/short.npy"
[ "$(wc -l <"$work/err")" -eq 1 ] || fail "short frequency file: $(cat "$work/err")"
[ ! -e "$work/x.edo" ] || fail "bad input wrote a file"
expect 0 "$H" --help
grep -q -- "--keep-top" "$work/out" || fail "--help lacks --keep-top"

[ "$failures" -eq 0 ] && echo "hash: ok"
exit $((failures > 0))
