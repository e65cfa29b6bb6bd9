#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# edo-quantize --codec auto:bits=B | auto:recall=R[,k=K]: the chooser's
# candidate table on stderr, the winner's own spelling in the file (read by
# the independent reader), within the budget on disk; under --shard the
# choice is made once by --train-only; bad budgets are one-line errors.
#   quantize_auto.sh BUILD_DIR SOURCE_DIR
set -uo pipefail
source "$(dirname "$0")/checks.bash" "$@"  # build, src, work (removed at exit), expect, fail, err_has
Q="$build/edo-quantize"
t="$work/g2k.npy"
/usr/bin/python3 -c "import numpy as n; n.save('$t', n.load('$src/data-samples/glove.6B.50d.10k.npy')[:5000])"
# manifest FILE codec: the codec of the file's one tier; manifest FILE chosen_by: the budget it records.
# Read by FORMAT.md's header layout (the independent reader's), not by edo.
manifest() {
  /usr/bin/python3 - "$src/scripts" "$1" "$2" <<'PY'
import json, sys
sys.path.insert(0, sys.argv[1])
import edo_reader
data = open(sys.argv[2], "rb").read()
m_off, m_len = edo_reader.HEADER.unpack_from(data)[5:7]
m = json.loads(data[m_off:m_off + m_len])
print(m["tiers"][0]["codec"] if sys.argv[3] == "codec" else m["provenance"]["parameters"].get("chosen_by", ""))
PY
}

expect 0 "$Q" "$t" --codec auto:bits=4.5 -o "$work/a.edo" --json
cp "$work/out" "$work/a.json"
grep -q '^spec .*bits/value .*recall@10' "$work/err" || fail "no candidate table on stderr: $(cat "$work/err")"
grep -q '^chosen: ' "$work/err" || fail "no reason on stderr: $(cat "$work/err")"
grep -q 'over budget' "$work/err" || fail "no candidate over the budget: $(cat "$work/err")"
read -r chosen bits file_bits < <(/usr/bin/python3 -c "
import json; j = json.load(open('$work/a.json')); c = j['codec_choice']
w = [r for r in c['candidates'] if r['spec'] == c['chosen']][0]
assert j['codec'] == c['chosen'], (j['codec'], c['chosen'])
assert all(r['outcome'] == ('over budget' if r['bits_per_value'] > 4.5 else 'tried') for r in c['candidates']), c
assert w['recall'] >= max(r.get('recall', 0) for r in c['candidates']) - 0.001, c
print(c['chosen'], w['bits_per_value'], j['bits_per_value'])")
[ "$(manifest "$work/a.edo" codec)" = "$chosen" ] || fail "the file holds $(manifest "$work/a.edo" codec), not $chosen"
[ "$(manifest "$work/a.edo" chosen_by)" = "auto:bits=4.5" ] || fail "the manifest does not record the budget"
/usr/bin/python3 -c "assert $file_bits <= $bits <= 4.5, ($file_bits, $bits)" || fail "file $file_bits bits, sized $bits"
# The same run with that codec named writes the same rows.
expect 0 "$Q" "$t" --codec "$chosen" -o "$work/b.edo" -q
"$build/edo-unpack" "$work/a.edo" -o "$work/a.npy" -q && "$build/edo-unpack" "$work/b.edo" -o "$work/b.npy" -q &&
  cmp -s "$work/a.npy" "$work/b.npy" || fail "auto's file decodes unlike --codec $chosen"

expect 0 "$Q" "$t" --codec auto:recall=0.9,k=5 -o "$work/r.edo" --json -q
[ ! -s "$work/err" ] || fail "-q printed the table: $(cat "$work/err")"
/usr/bin/python3 -c "
import json; c = json.load(open('$work/out'))['codec_choice']
w = [r for r in c['candidates'] if r['spec'] == c['chosen']][0]
assert c['k'] == 5 and w['recall'] >= 0.9, c
assert all(r['outcome'] == 'not run' for r in c['candidates'] if r['file_bytes'] > w['file_bytes']), c
assert all(r['recall'] < 0.9 for r in c['candidates'] if r['file_bytes'] < w['file_bytes']), c" ||
  fail "recall budget: $(head -c 600 "$work/out")"

# The same choice, scores and bytes whatever the thread count.
for n in 1 2; do
  expect 0 "$Q" "$t" --codec auto:bits=6 -o "$work/t$n.edo" --threads "$n" --json -q
  /usr/bin/python3 -c "
import json; c = json.load(open('$work/out'))['codec_choice']
print(json.dumps([c['chosen']] + [[r['spec'], r.get('recall'), r.get('rel_error')] for r in c['candidates']]))" >"$work/t$n.txt"
done
cmp -s "$work/t1.txt" "$work/t2.txt" || fail "the choice moved with the thread count: $(diff "$work/t1.txt" "$work/t2.txt")"
cmp -s "$work/t1.edo" "$work/t2.edo" || fail "the chosen file's bytes moved with the thread count"

# Under --shard: chosen once by --train-only, the state records the winner.
expect 0 "$Q" "$t" --codec auto:bits=4.5 --train-only -o "$work/state.edo" -q
[ "$(manifest "$work/state.edo" codec)" = "$chosen" ] || fail "the trained state holds $(manifest "$work/state.edo" codec)"
expect 0 "$Q" "$t" --shard 1/2 --trained "$work/state.edo" -o "$work/s1.edo" -q
[ "$(manifest "$work/s1.edo" codec)" = "$chosen" ] || fail "the shard holds $(manifest "$work/s1.edo" codec)"
# fp16 has the least error of all, and every recall within 0.001 of its ties: it wins 17 bits, and trains nothing.
expect 2 "$Q" "$t" --codec auto:bits=17 --train-only -o "$work/x.edo" -q
err_has "the chooser picked fp16, which trains nothing, so there is no state to share: run each shard with --codec fp16"
expect 2 "$Q" "$t" --codec auto:bits=4.5 --shard 1/2 -o "$work/x.edo"
err_has "choose once with edo-quantize INPUT --train-only"
expect 2 "$Q" "$t" --codec auto:bits=4.5 --trained "$work/state.edo" -o "$work/x.edo"
err_has "holds the codec its --train-only run chose"

# A model (a folder of .npy) chooses for the model: its bits a value over all its values, a tiny table
# (3 x 8, which no codec stores in 6 bits a value of its own) taking what it needs.
mkdir "$work/model"
cp "$t" "$work/model/words.npy"
/usr/bin/python3 -c "
import numpy as n; n.save('$work/model/items.npy', n.load('$src/data-samples/bigann10k_base.npy')[:5000].astype('f4'))
n.save('$work/model/tiny.npy', n.random.default_rng(1).standard_normal((3, 8)).astype('f4'))"
expect 0 "$Q" "$work/model" --codec auto:bits=6 -o "$work/m.edo" --json -q
/usr/bin/python3 -c "
import json, os; j = json.load(open('$work/out'))
tables = {t['name']: t['summary'] for t in j['tables']}
assert set(tables) == {'words', 'items', 'tiny'}, j
for t in tables.values():
    c = t['codec_choice']
    assert t['codec'] == c['chosen'] and c['budget'] == 'auto:bits=6', t
assert tables['tiny']['bits_per_value'] > 6, tables['tiny']
values = 10000 * 50 + 5000 * 128 + 3 * 8
assert os.path.getsize('$work/m.edo') * 8 / values <= 6, os.path.getsize('$work/m.edo')" ||
  fail "model: $(head -c 800 "$work/out")"
# Near-ties (within the sample's confidence interval of the best recall) are scored again on more queries
# before one is chosen, and the candidate table says so (BIGANN at 4.5 bits: int4:scale=fp16 and tc:bits=4).
expect 0 "$Q" "$src/data-samples/bigann10k_base.npy" --codec auto:bits=4.5 -o "$work/b.edo" --json -q
/usr/bin/python3 -c "
import json; c = json.load(open('$work/out'))['codec_choice']
again = [r for r in c['candidates'] if 'rescored' in r]
assert len(again) >= 2 and c['chosen'] in [r['spec'] for r in again] and c['rescored_rows'] > 0, c" ||
  fail "near-ties: $(head -c 600 "$work/out")"
# A budget under every table's smallest candidate: the model's smallest bits a value and the table named.
expect 1 "$Q" "$work/model" --codec auto:bits=1 -o "$work/x.edo" -q
err_has "no choice fits 1 bits a value over the model's"
err_has "give auto:bits="

expect 2 "$Q" "$t" --codec auto: -o "$work/x.edo"
err_has "give one budget"
expect 2 "$Q" "$t" --codec auto -o "$work/x.edo"
err_has "give one budget"
expect 2 "$Q" "$t" --codec auto:bits=4,recall=0.9 -o "$work/x.edo"
err_has "give one budget"
expect 2 "$Q" "$t" --codec auto:bits=0.5 -o "$work/x.edo"
err_has "a bits budget is at least 1 bit a value"
expect 1 "$Q" "$t" --codec auto:bits=1.5 -o "$work/x.edo"
err_has "no candidate fits 1.5 bits a value on 5000 x 50 rows; the smallest is "
[ ! -e "$work/x.edo" ] || fail "a failed choice left $work/x.edo"

[ "$failures" = 0 ] || { echo "$failures failure(s)"; exit 1; }
echo "quantize_auto: ok"
