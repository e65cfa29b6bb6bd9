#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# edo-eval ORIGINAL a.edo b.edo ...: one table smallest first with the front
# marked, every file's metrics equal to its own edo-eval run (the original's
# k-NN reused), every gate on every file (exit 3 when one fails), JSON with
# one entry a file.
#   eval_compare.sh BUILD_DIR SOURCE_DIR
set -uo pipefail
source "$(dirname "$0")/checks.bash" "$@"  # build, src, work (removed at exit), expect, fail, err_has
glove="$src/data-samples/glove.6B.50d.10k.npy"
E="$build/edo-eval"
q=(--queries 150 --k 1,10)
for codec in int8 int4 int2; do
  expect 0 "$build/edo-quantize" "$glove" -o "$work/$codec.edo" --codec "$codec" -q
  expect 0 "$E" "$glove" "$work/$codec.edo" "${q[@]}" --json
  cp "$work/out" "$work/$codec.json"
done
expect 0 "$E" "$glove" "$work/int8.edo" "$work/int2.edo" "$work/int4.edo" "${q[@]}" --json --report-json "$work/r.json"
/usr/bin/python3 - "$work" <<'PY' || fail "compared metrics differ from single runs"
import json, sys
w = sys.argv[1]
r = json.load(open(w + '/out'))
assert r == json.load(open(w + '/r.json'))
files = [f['file'].split('/')[-1] for f in r['files']]
assert files == ['int2.edo', 'int4.edo', 'int8.edo'], files
assert [f['pareto_front'] for f in r['files']] == [True, True, True]
for f in r['files']:
    one = json.load(open(w + '/' + f['file'].split('/')[-1].replace('.edo', '.json')))
    for key in ('recall@1', 'recall@10', 'rel_fro', 'cos.mean', 'ratio'):
        assert f[key] == one[key], (f['file'], key, f[key], one[key])
PY
expect 0 "$E" "$glove" "$work/int8.edo" "$work/int4.edo" "${q[@]}"
grep -q "smallest first" "$work/out" || fail "no table: $(cat "$work/out")"
# A gate holds for every file: int2 misses it, so exit 3 naming int2.
expect 3 "$E" "$glove" "$work/int8.edo" "$work/int2.edo" "${q[@]}" --gate 'recall@10>=0.9'
err_has "int2.edo: recall@10>=0.9"
expect 2 "$E" "$glove" "$work/int8.edo" "$work/int4.edo" --show-neighbours 3
err_has "--show-neighbours compares one file"
expect 1 "$E" "$glove" "$work/int8.edo" "$src/data-samples/bigann10k_base.npy" "${q[@]}"
err_has "does not match"

[ "$failures" = 0 ] || { echo "$failures failure(s)"; exit 1; }
echo "eval_compare: ok"
