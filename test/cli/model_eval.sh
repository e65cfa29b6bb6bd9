#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# edo-eval MODEL model.edo: each table against its namesake and the whole
# model weighted by shares of lookups, gates per table and on the whole;
# edo-profile MODEL: per-table sections and a total line; --list-tables.
#   model_eval.sh BUILD_DIR SOURCE_DIR
set -uo pipefail
source "$(dirname "$0")/checks.bash" "$@"  # build, src, work (removed at exit), expect, fail, err_has
E="$build/edo-eval"
m="$work/model.safetensors"
/usr/bin/python3 "$src/scripts/make_models.py" sample "$src/data-samples" "$m" || fail "make_models.py sample"
expect 0 "$build/edo-quantize" "$m" -o "$work/m.edo" --codec int8 -q
q=(--queries 100 --k 1,10 -q)

# Per-table lines, then the model line.
expect 0 "$E" "$m" "$work/m.edo" "${q[@]}"
for t in emb.words.weight emb.items.weight emb.tiny.weight; do
  grep -q "^  $t " "$work/out" || fail "no line for $t: $(cat "$work/out")"
done
grep -q "^  model " "$work/out" || fail "no model line: $(cat "$work/out")"

# JSON: every table, the model, the shares (one lookup a row without counts).
expect 0 "$E" "$m" "$work/m.edo" "${q[@]}" --json --report-html "$work/r.html"
/usr/bin/python3 - "$work/out" <<'PY' || fail "model JSON: $(head -c 400 "$work/out")"
import json, sys
r = json.load(open(sys.argv[1]))
names = ['emb.words.weight', 'emb.items.weight', 'emb.tiny.weight']
assert sorted(r['tables']) == sorted(names), r['tables'].keys()
s = r['shares']
assert abs(s['emb.words.weight'] - 10000 / 20003) < 1e-12, s
assert abs(sum(s.values()) - 1) < 1e-12, s
t = r['tables']
want = sum(s[n] * t[n]['recall@10'] for n in names)
assert abs(r['model']['recall@10'] - want) < 1e-12, (r['model']['recall@10'], want)
assert r['model']['rows'] == 20003
assert r['model']['cos.min'] == min(t[n]['cos.min'] for n in names)
assert r['gates_passed'] is True
PY
grep -q 'id="model-tables"' "$work/r.html" || fail "HTML report has no table-by-table section"
grep -q 'emb.items.weight' "$work/r.html" || fail "HTML report lacks a table row"

# Gates: on a table (exact name), on the whole model; a failure exits 3.
expect 0 "$E" "$m" "$work/m.edo" "${q[@]}" --gate 'emb.words.weight:recall@10>=0.95' --gate 'recall@10>=0.9'
grep -q "gate emb.words.weight:recall@10>=0.95" "$work/out" || fail "no per-table gate line: $(cat "$work/out")"
expect 3 "$E" "$m" "$work/m.edo" "${q[@]}" --gate 'emb.tiny.weight:rel_fro<=0.0000001'
err_has "gate failed: emb.tiny.weight:rel_fro<=0.0000001"
expect 3 "$E" "$m" "$work/m.edo" "${q[@]}" --gate 'recall@10>=0.99999'
err_has "gate failed: model: recall@10>=0.99999"
expect 2 "$E" "$m" "$work/m.edo" "${q[@]}" --gate 'emb.nothere.weight:recall@10>=0.9'
err_has "'emb.nothere.weight' is not a table of the model"

# Shares from counts: --freq-dir (emb.words.weight's counts; the others one a row).
mkdir -p "$work/freq"
/usr/bin/python3 -c "
import numpy as np, sys
np.save(sys.argv[1], (np.arange(10000, 0, -1) ** 2 % 97 + 1).astype(np.int64))" "$work/freq/emb.words.weight.npy"
expect 0 "$E" "$m" "$work/m.edo" "${q[@]}" --freq-dir "$work/freq" --json
/usr/bin/python3 - "$work/out" "$work/freq/emb.words.weight.npy" <<'PY' || fail "shares from counts: $(head -c 400 "$work/out")"
import json, sys
import numpy as np
r = json.load(open(sys.argv[1]))
c = float(np.load(sys.argv[2]).astype(np.float64).sum())
want = c / (c + 10000 + 3)
assert abs(r['shares']['emb.words.weight'] - want) < 1e-12, (r['shares'], want)
assert 'w.recall@10' in r['tables']['emb.words.weight']
PY
expect 0 "$E" "$m" "$work/m.edo" "${q[@]}" --freq "emb.words.weight=$work/freq/emb.words.weight.npy" --json
grep -q '"w.recall@10"' "$work/out" || fail "--freq NAME=counts.npy gave no w. metrics"

# --tables narrows both sides; a table the file lacks is an error naming it.
expect 0 "$E" "$m" "$work/m.edo" "${q[@]}" --tables 'emb.w*' --json
/usr/bin/python3 -c "import json,sys; r=json.load(open(sys.argv[1])); assert list(r['tables'])==['emb.words.weight'], r['tables'].keys()" "$work/out" \
  || fail "--tables did not narrow"
expect 0 "$build/edo-quantize" "$m" -o "$work/two.edo" --codec int8 --tables 'emb.words.weight,emb.items.weight' -q
expect 2 "$E" "$m" "$work/two.edo" "${q[@]}" --tables '*'
grep -q "emb.tiny.weight\|head.dense.weight\|bias" "$work/err" || fail "missing table not named: $(cat "$work/err")"
expect 2 "$E" "$src/data-samples/glove.6B.50d.10k.npy" "$work/m.edo" "${q[@]}"
err_has "is a model file"

# edo-profile MODEL: per-table sections and a total line; --list-tables the listing.
P="$build/edo-profile"
expect 0 "$P" "$m" -q
for t in emb.words.weight emb.items.weight emb.tiny.weight; do
  grep -q "$t" "$work/out" || fail "edo-profile: no section for $t"
done
grep -q "^total" "$work/out" || fail "edo-profile: no total line: $(tail -5 "$work/out")"
expect 0 "$P" "$m" --list-tables
grep -q "head.dense.weight" "$work/out" || fail "--list-tables lacks a tensor: $(cat "$work/out")"
expect 0 "$P" "$work/m.edo" -q
grep -q "^total" "$work/out" || fail "edo-profile m.edo: no total line: $(tail -5 "$work/out")"

[ "$failures" -eq 0 ] || exit 1
echo "model_eval: ok"
