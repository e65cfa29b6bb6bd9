#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# edo-pack and edo-profile --plan from the command line: tiers, config files,
# evaluation with per-tier metrics, gates, and the exit codes of bad input.
#   pack_cli.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
build=$(cd "$1" && pwd)
src=$(cd "$2" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
glove="$src/data-samples/glove.6B.50d.10k.npy"
py=/usr/bin/python3
fail() { echo "FAIL: $*"; exit 1; }
# expect CODE CMD...: runs CMD, checks its exit code.
expect() {
  local want=$1; shift
  local rc=0
  "$@" >"$tmp/out" 2>"$tmp/err" || rc=$?
  [[ $rc == "$want" ]] || { cat "$tmp/out" "$tmp/err"; fail "exit $rc, wanted $want: $*"; }
}

"$py" -c "import numpy as np; np.save('$tmp/zipf.npy', 1.0 / (np.arange(10000) + 1))"

# Tiers on the command line, with --eval: per-tier and weighted metrics, bytes per residency.
expect 0 "$build/edo-pack" "$glove" -o "$tmp/a.edo" --freq "$tmp/zipf.npy" -q --json --eval --k 10 --queries 200 \
  --tier hot:rows=5%:fp16:gpu --tier warm:rows=25%:int8:host --tier cold:rest:int4:disk --tier drop:rows=10%:default
"$py" - "$tmp/out" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
assert [t["rows"] for t in j["tiers"]] == [500, 2500, 6000, 1000], j["tiers"]
assert j["bytes_gpu"] == 500 * 50 * 2, j["bytes_gpu"]
e = j["eval"]
for k in ["recall@10", "w.recall@10", "hot.recall@10", "cold.cos.mean", "drop.rows", "bytes_gpu", "bytes_disk", "ratio"]:
    assert k in e, k
assert e["hot.cos.mean"] > 0.9999 and e["drop.rows"] == 1000
PY
# The manifest records the evaluation; the file reads back through edo-unpack.
expect 0 "$build/edo-unpack" "$tmp/a.edo" -o "$tmp/a.npy" -q
"$py" -c "
import numpy as np
a = np.load('$tmp/a.npy'); g = np.load('$glove')
assert a.shape == g.shape
assert np.array_equal(a[:500], g[:500].astype(np.float16).astype(np.float32))  # the hot rows are the top 5%
assert np.allclose(a[-1000:], a[-1], atol=0)  # the dropped rows share one vector
"

# Plan, then pack from the plan file: same bytes as the same tiers given as flags.
expect 0 "$build/edo-profile" "$glove" --freq "$tmp/zipf.npy" -q --plan --budget 'recall@10>=0.95' \
  --plan-queries 200 --plan-codecs fp16 --plan-codecs int8 --plan-codecs int4 --plan-config "$tmp/plan.json"
grep -q 'chosen: #' "$tmp/out" || fail "no chosen plan"
expect 0 "$build/edo-pack" "$glove" -o "$tmp/p1.edo" --freq "$tmp/zipf.npy" -q --config "$tmp/plan.json"
tiers=$("$py" -c "import json; print(' '.join('--tier ' + t['spec'] for t in json.load(open('$tmp/plan.json'))['tiers']))")
# shellcheck disable=SC2086
expect 0 "$build/edo-pack" "$glove" -o "$tmp/p2.edo" --freq "$tmp/zipf.npy" -q $tiers
cmp "$tmp/p1.edo" "$tmp/p2.edo" || fail "--config and --tier files differ"
# A budget nothing can meet under a tiny byte cap: exit 3, no plan file.
expect 3 "$build/edo-profile" "$glove" -q --plan --budget 'recall@10>=0.95' --max-bytes 1000 --plan-codecs int2 --plan-config "$tmp/none.json"
[[ ! -e "$tmp/none.json" ]] || fail "plan written without a plan"

# Without --freq: the norm proxy, said on stderr.
expect 0 "$build/edo-pack" "$glove" -o "$tmp/n.edo" --tier a:rows=10%:fp16 --tier b:rest:int8
grep -q 'row L2 norm' "$tmp/err" || fail "no note about the norm proxy"

# Bad input: usage errors (2) name the tier; runtime errors (1); failed gates (3) leave no file.
expect 2 "$build/edo-pack" "$glove" -o "$tmp/x.edo" --tier a:rows=60%:fp16 --tier b:rows=30%:int8
grep -q 'add up' "$tmp/err" || fail "shares message"
expect 2 "$build/edo-pack" "$glove" -o "$tmp/x.edo" --tier a:rows=5%:fp16 --tier b:rest:pq9
grep -q "tier 'b'" "$tmp/err" || fail "codec message"
expect 2 "$build/edo-pack" "$glove" -o "$tmp/x.edo" --tier a:mass=50%:fp16 --tier b:rest:int8
expect 2 "$build/edo-pack" "$glove" -o "$tmp/x.edo" --tier a:rows=5%
expect 2 "$build/edo-pack" "$glove" -o "$tmp/x.edo"
echo '{"tiers": 3}' >"$tmp/bad.json"
expect 1 "$build/edo-pack" "$glove" -o "$tmp/x.edo" --config "$tmp/bad.json"
grep -q 'bad.json' "$tmp/err" || fail "config message"
expect 3 "$build/edo-pack" "$glove" -o "$tmp/x.edo" -q --tier all:rest:int2 --gate 'recall@10>=0.99' --queries 100
[[ ! -e "$tmp/x.edo" ]] || fail "file written despite a failed gate"
[[ -z "$(ls "$tmp" | grep unevaluated || true)" ]] || fail "intermediate left behind"
echo "pack_cli: ok"
