#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# edo-sparsify from the command line: value pruning in both forms, row
# dropping with the mean fallback, the size rule and --force, bad input.
#   sparsify.sh BUILD_DIR SOURCE_DIR
set -uo pipefail
source "$(dirname "$0")/checks.bash" "$@"  # build, src, work (removed at exit), expect, fail, err_has
glove="$src/data-samples/glove.6B.50d.10k.npy"
py=/usr/bin/python3
"$py" -c "import numpy as np; np.save('$work/zipf.npy', 1.0 / (np.arange(10000) + 1)); np.save('$work/short.npy', np.ones(5))"

# fp32 values by threshold: every kept value exact, the others zero (edo-unpack reads it back).
expect 0 "$build/edo-sparsify" "$glove" -o "$work/t.edo" --threshold 0.4 --form csr -q --json
expect 0 "$build/edo-unpack" "$work/t.edo" -o "$work/t.npy" -q
"$py" - "$glove" "$work/t.npy" <<'PY' || fail "threshold round trip"
import numpy as np, sys
g = np.load(sys.argv[1]); y = np.load(sys.argv[2])
want = np.where(np.abs(g) >= np.float32(0.4), g, 0).astype(np.float32)
assert np.array_equal(want, y), np.abs(want - y).max()
PY

# --form auto picks bitmap at 30% of 50 columns (above 1/8), csr at k=3 (6%); JSON names the tier codec.
expect 0 "$build/edo-sparsify" "$glove" -o "$work/a.edo" --density 0.3 --values int8 -q --json
grep -q '"codec": "bitmap:density=0.3:values=int8"' "$work/out" || fail "auto form at density 0.3: $(head -c 400 "$work/out")"
expect 0 "$build/edo-sparsify" "$glove" -o "$work/k.edo" --per-row-k 3 -q
grep -q "form       csr:k=3" "$work/out" || fail "auto form at k=3: $(cat "$work/out")"

# Larger than dense int8 at 70%: refused with nothing written, unless --force.
expect 1 "$build/edo-sparsify" "$glove" -o "$work/big.edo" --density 0.7 --values int8 --form csr -q
err_has "more than the 580000 bytes of the same rows stored dense"
[ ! -e "$work/big.edo" ] || fail "a refused sparse file was written"
expect 0 "$build/edo-sparsify" "$glove" -o "$work/big.edo" --density 0.7 --values int8 --form csr -q --force

# Dropping the rarest 30% of rows: they answer the access-weighted mean, and the report says how many lookups that is.
expect 0 "$build/edo-sparsify" "$glove" -o "$work/d.edo" --freq "$work/zipf.npy" --drop rows=30% --codec fp16 -q --json
"$py" - "$work/out" <<'PY' || fail "drop report"
import json, sys
j = json.load(open(sys.argv[1]))
t = {x["name"]: x for x in j["tiers"]}
assert t["dropped"]["rows"] == 3000 and t["kept"]["rows"] == 7000, t
assert 0.03 < t["dropped"]["mass"] < 0.04, t["dropped"]["mass"]
PY
expect 0 "$build/edo-unpack" "$work/d.edo" -o "$work/d.npy" -q
"$py" - "$glove" "$work/d.npy" "$work/zipf.npy" <<'PY' || fail "dropped rows decode to the weighted mean"
import numpy as np, sys
g = np.load(sys.argv[1]); y = np.load(sys.argv[2]); f = np.load(sys.argv[3])
dropped = np.arange(7000, 10000)  # the Zipf counts fall with the row id
mean = (g[dropped].astype(np.float64) * f[dropped, None]).sum(0) / f[dropped].sum()
assert np.allclose(y[dropped], mean.astype(np.float32), atol=1e-6)
assert np.array_equal(y[:7000], g[:7000].astype(np.float16).astype(np.float32))
PY

# count<N: the rows looked up fewer than N times (Zipf counts 1/(r+1) < 0.001 for r >= 1000).
expect 0 "$build/edo-sparsify" "$glove" -o "$work/n.edo" --freq "$work/zipf.npy" --drop 'count<0.001' -q --json
"$py" -c "
import json; t = {x['name']: x for x in json.load(open('$work/out'))['tiers']}
assert t['dropped']['rows'] == 9000, t
" || fail "count<N"
expect 0 "$build/edo-sparsify" "$glove" -o "$work/n.edo" --freq "$work/zipf.npy" --drop 'count<1e-9' -q
grep -q "nothing dropped" "$work/err" || fail "count<N with no row below N: $(cat "$work/err")"
expect 2 "$build/edo-sparsify" "$glove" -o "$work/x.edo" --freq "$work/zipf.npy" --drop 'count<x'; err_has "count<N takes"
expect 2 "$build/edo-sparsify" "$glove" -o "$work/x.edo" --freq "$work/zipf.npy" --drop 'count<2'; err_has "leaves nothing"

# The other fallbacks: zeros, and the nearest of C centroids of the dropped rows.
expect 0 "$build/edo-sparsify" "$glove" -o "$work/z.edo" --freq "$work/zipf.npy" --drop mass=2% --fallback zero -q --json
grep -q '"codec": "zero"' "$work/out" || fail "zero fallback: $(head -c 400 "$work/out")"
expect 0 "$build/edo-sparsify" "$glove" -o "$work/c.edo" --freq "$work/zipf.npy" --drop rows=40% --fallback centroids:16 -q
grep -q "centroids:16" "$work/out" || fail "centroids fallback: $(cat "$work/out")"
expect 0 "$build/edo-unpack" "$work/c.edo" -o "$work/c.npy" -q
"$py" -c "
import numpy as np
y = np.load('$work/c.npy')
assert len(np.unique(y[6000:], axis=0)) <= 16, 'more than 16 vectors among the dropped rows'
" || fail "centroid rows"
expect 0 "$build/edo-sparsify" "$glove" -o "$work/nn.edo" --freq "$work/zipf.npy" --drop rows=20% --fallback nearest:l2 -q
grep -q "nearest:l2" "$work/out" || fail "nearest fallback: $(cat "$work/out")"
expect 2 "$build/edo-sparsify" "$glove" -o "$work/x.edo" --freq "$work/zipf.npy" --drop rows=10% --fallback farthest
err_has "mean, zero, centroids:C or nearest"
expect 2 "$build/edo-sparsify" "$glove" -o "$work/x.edo" --density 0.5 --fallback zero; err_has "--fallback is for rows dropped"

# A sweep: every spec and the dense baselines, nothing left behind in TMPDIR.
mkdir -p "$work/tmp"
TMPDIR="$work/tmp" expect 0 "$build/edo-sparsify" "$glove" --sweep 'auto:density=0.2,values=int8;csr:k=5' --k 10 \
  --queries 200 --json -q
"$py" - "$work/out" <<'PY' || fail "sweep JSON"
import json, sys
s = json.load(open(sys.argv[1]))["sweep"]
assert [p["spec"] for p in s] == ["bitmap:density=0.2:values=int8", "csr:k=5:values=fp32", "int8", "int4", "int4:group=32"], s
assert abs(s[0]["density"] - 0.2) < 0.02 and s[2]["density"] == 1 and s[2]["baseline"]
assert all(0 <= p["eval"]["recall@10"] <= 1 and p["file_bytes"] > 0 for p in s)
PY
[ -z "$(ls "$work/tmp")" ] || fail "the sweep left files in TMPDIR: $(ls "$work/tmp")"
expect 2 "$build/edo-sparsify" "$glove" --sweep 'csr:k=5;;int8'; err_has "an empty item"
expect 2 "$build/edo-sparsify" "$glove" --sweep 'int8;lsq:m=3'; err_has "unknown codec 'lsq'"
expect 2 "$build/edo-sparsify" "$glove" --sweep 'rows=30%'; err_has "a drop share needs --freq"
expect 2 "$build/edo-sparsify" "$glove" --sweep 'int8' --codec int4; err_has "the sweep has none"
expect 2 "$build/edo-sparsify" "$glove" --freq "$work/zipf.npy" --sweep 'rows=100%'; err_has "leaves nothing"

# A sweep over drop shares: kept rows int8, dropped ones zero; the share of lookups on the fallback grows with the
# share dropped, mass=5% sends 5% of lookups there, and a codec item sits beside them.
expect 0 "$build/edo-sparsify" "$glove" --freq "$work/zipf.npy" --sweep 'rows=30%;rows=60%;mass=5%;dims:40,int8' \
  --fallback zero --codec int8 --k 10 --queries 200 --json -q
"$py" - "$work/out" <<'PY' || fail "drop-share sweep JSON"
import json, sys
s = json.load(open(sys.argv[1]))["sweep"]
assert [p["spec"] for p in s[:4]] == ["drop rows=30% (zero), kept int8", "drop rows=60% (zero), kept int8",
                                      "drop mass=5% (zero), kept int8", "dims:40,int8"], s
assert 0 < s[0]["fallback_share"] < s[1]["fallback_share"] < 0.2, s
assert abs(s[2]["fallback_share"] - 0.05) < 0.002 and s[3]["fallback_share"] == 0
assert abs(s[0]["density"] - 0.7) < 1e-9 and abs(s[3]["density"] - 0.8) < 1e-9
assert s[0]["file_bytes"] > s[1]["file_bytes"] and s[0]["eval"]["w.recall@10"] > s[1]["eval"]["w.recall@10"]
PY

# --drop-dims: the 10 dimensions of least variance answer their mean, the others are kept exactly at fp32.
expect 0 "$build/edo-sparsify" "$glove" -o "$work/dd.edo" --drop-dims 10 -q --json
grep -q '"codec": "dims:40,fp32"' "$work/out" || fail "--drop-dims codec: $(head -c 400 "$work/out")"
expect 0 "$build/edo-unpack" "$work/dd.edo" -o "$work/dd.npy" -q
"$py" - "$glove" "$work/dd.npy" <<'PY' || fail "--drop-dims round trip"
import numpy as np, sys
g = np.load(sys.argv[1]); y = np.load(sys.argv[2])
same = [j for j in range(50) if np.array_equal(g[:, j], y[:, j])]
flat = [j for j in range(50) if np.all(y[:, j] == y[0, j])]
assert len(same) == 40 and sorted(same + flat) == list(range(50)), (same, flat)
var = g.astype(np.float64).var(axis=0)
assert max(var[flat]) <= min(var[same]), "dropped a dimension of more variance than one kept"
assert np.allclose(y[0, flat], g[:, flat].astype(np.float64).mean(axis=0), atol=1e-6)
PY
expect 2 "$build/edo-sparsify" "$glove" -o "$work/x.edo" --drop-dims 50; err_has "at least one must stay"
expect 2 "$build/edo-sparsify" "$glove" -o "$work/x.edo" --drop-dims 5 --density 0.3; err_has "give one of"
expect 2 "$build/edo-sparsify" "$glove" -o "$work/x.edo" --drop-dims 5 --codec pca:8; err_has "must be the first stage"
expect 2 "$build/edo-sparsify" "$glove" -o "$work/x.edo" --sweep 'csr:k=5'; err_has "--sweep writes nothing"

# Bad input: one line, usage or runtime exit, nothing written.
expect 2 "$build/edo-sparsify" "$glove" -o "$work/x.edo" --density 0; err_has "outside (0, 1]"
expect 2 "$build/edo-sparsify" "$glove" -o "$work/x.edo" --density 0.2 --per-row-k 4; err_has "give one of"
expect 2 "$build/edo-sparsify" "$glove" -o "$work/x.edo" --per-row-k 51; err_has "k=51 is outside 1..50"
expect 2 "$build/edo-sparsify" "$glove" -o "$work/x.edo" --drop rows=10%; err_has "--drop needs --freq"
expect 2 "$build/edo-sparsify" "$glove" -o "$work/x.edo" --freq "$work/zipf.npy" --drop rows=100%; err_has "leaves nothing"
expect 2 "$build/edo-sparsify" "$glove" -o "$work/x.edo" --freq "$work/zipf.npy" --drop rest; err_has "--drop rest"
expect 1 "$build/edo-sparsify" "$glove" -o "$work/x.edo" --freq "$work/short.npy" --drop rows=10%
[ "$(wc -l <"$work/err")" -eq 1 ] || fail "short frequency file: $(cat "$work/err")"
[ ! -e "$work/x.edo" ] || fail "bad input wrote a file"
expect 0 "$build/edo-sparsify" --help
grep -q -- "--drop" "$work/out" || fail "--help lacks --drop"

[ "$failures" -eq 0 ] && echo "sparsify: ok"
exit $((failures > 0))
