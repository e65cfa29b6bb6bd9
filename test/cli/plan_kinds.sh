#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# edo-profile --plan with sparse tiers and dropped-row fallbacks in the
# ladder: the chosen plan's config packs with edo-pack, and the sparse
# estimate is near what edo-pack writes.
#   plan_kinds.sh BUILD_DIR SOURCE_DIR
set -uo pipefail
source "$(dirname "$0")/checks.bash" "$@"  # build, src, work (removed at exit), expect, fail, err_has
glove="$src/data-samples/glove.6B.50d.10k.npy"
py=/usr/bin/python3

"$py" -c "import numpy as np; np.save('$work/zipf.npy', 1.0 / (np.arange(10000) + 1))"

# Any plan passes a zero budget, so the cheapest wins: a hot csr tier and the rest answered by nearest.
expect 0 "$build/edo-profile" "$glove" --freq "$work/zipf.npy" -q --plan --budget 'recall@10>=0' --plan-queries 200 \
  --plan-codecs 'csr:density=0.3,values=int8' --plan-codecs nearest --plan-codecs centroids:32 --plan-codecs zero \
  --plan-config "$work/plan.json"
grep -q 'chosen: #' "$work/out" || fail "no chosen plan"
expect 0 "$build/edo-pack" "$glove" -o "$work/p.edo" --freq "$work/zipf.npy" -q --json --config "$work/plan.json"
"$py" - "$work/plan.json" "$work/out" <<'PY'
import json, sys
plan = json.load(open(sys.argv[1]))
rep = json.load(open(sys.argv[2]))
codecs = [t["codec"] for t in plan["tiers"]]
assert codecs[0] == "csr:density=0.3:values=int8" and codecs[-1] in ("zero", "nearest:cos", "centroids:32"), codecs
assert [t["codec"] for t in rep["tiers"]] == codecs, rep["tiers"]
est, got = plan["estimate"]["bytes"], rep["data_bytes"]
assert abs(est - got) <= 0.1 * got, (est, got)
PY
[ $? -eq 0 ] || fail "the sparse and fallback plan does not pack as estimated"

# Hashed and group tiers as candidates: on the whole table as the sample, a hash tier's estimate
# is the file's own w.recall@10 (the buckets scale by the sample's share: here 1), and a plan
# of group and hash tiers packs from its config with the estimated bytes exactly.
expect 0 "$build/edo-profile" "$glove" --freq "$work/zipf.npy" -q --plan --budget 'recall@10>=0.6' \
  --plan-queries 200 --plan-codecs 'group:clusters=64,residual=[int4:group=25]' \
  --plan-codecs hash:buckets=2000,k=2 --plan-config "$work/plan2.json" --json
cp "$work/out" "$work/plan2.out"
expect 0 "$build/edo-pack" "$glove" -o "$work/h.edo" --freq "$work/zipf.npy" -q --json \
  --tier all:rest:hash:buckets=2000,k=2 --eval --eval-freq "$work/zipf.npy" --queries 200
cp "$work/out" "$work/h.out"
expect 0 "$build/edo-pack" "$glove" -o "$work/p2.edo" --freq "$work/zipf.npy" -q --json --config "$work/plan2.json"
"$py" - "$work/plan2.json" "$work/plan2.out" "$work/h.out" "$work/out" <<'PY'
import json, sys
plan, tried, hashed, packed = (json.load(open(f)) for f in sys.argv[1:])
# A tried plan's tiers are spec strings (NAME:SHARE:CODEC:RESIDENCY).
hash_only = [c for c in tried["plan"]["tried"]
             if len(c["tiers"]) == 1 and ":hash:buckets=2000,k=2,weights=0,fit=ls,seed=0:" in c["tiers"][0]]
assert len(hash_only) == 1, tried["plan"]["tried"]
est, got = hash_only[0]["metrics"]["w.recall@10"], hashed["eval"]["w.recall@10"]
assert abs(est - got) < 1e-9, (est, got)
codecs = [t["codec"] for t in plan["tiers"]]
assert codecs == ["group:clusters=64,residual=[int4:group=25]"], codecs
assert plan["estimate"]["bytes"] == packed["data_bytes"], (plan["estimate"]["bytes"], packed["data_bytes"])
PY
[ $? -eq 0 ] || fail "the hash and group plan does not pack as estimated"
# Group tiers drawn from labels are not candidates (the planner clusters), nor is B >= rows.
expect 2 "$build/edo-profile" "$glove" -q --plan --budget 'recall@10>=0.5' --plan-codecs group:labels
grep -q 'k-means' "$work/err" || fail "group:labels: $(cat "$work/err")"
expect 2 "$build/edo-profile" "$glove" -q --plan --budget 'recall@10>=0.5' --plan-codecs hash:buckets=10000
grep -q 'B must be below' "$work/err" || fail "B >= rows: $(cat "$work/err")"

# Fallbacks alone are refused, as is a sparse spec larger than dense storage.
expect 2 "$build/edo-profile" "$glove" -q --plan --budget 'recall@10>=0.5' --plan-codecs zero --plan-codecs nearest
grep -q 'only answers dropped rows' "$work/err" || fail "fallbacks alone: $(cat "$work/err")"
expect 2 "$build/edo-profile" "$glove" -q --plan --budget 'recall@10>=0.5' --plan-codecs int8 \
  --plan-codecs 'csr:density=0.9,values=int8'
grep -q 'stored dense' "$work/err" || fail "sparse larger than dense: $(cat "$work/err")"
# grep reads the whole help (with -q it would stop at the match and the writer die of SIGPIPE under pipefail).
"$build/edo-profile" --help | grep -F 'nearest[:cos|l2]' >/dev/null || fail "--help does not name the fallbacks"
[ "$failures" -eq 0 ] && echo "plan_kinds: ok"
exit $((failures > 0))
