#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Budgets in bytes and ratios (docs/PACK.md, "Budgets in bytes and ratios"):
# edo-pack TABLE --budget plans and packs in one run, the whole file at most
# the cap and within 1% of it; edo-profile --plan takes the same budgets and
# its plan packs under the cap; a model's plan file (edo-profile MODEL --plan
# --plan-config) packs to the bytes of the one-run pack; a model under an
# accuracy floor meets it on every table; size budgets are never access-weighted; bad
# budgets and flags are refused with one line and nothing written.
#   pack_budget.sh BUILD_DIR SOURCE_DIR
set -uo pipefail
source "$(dirname "$0")/checks.bash" "$@"  # build, src, work (removed at exit), expect, fail, err_has
P="$build/edo-pack"; R="$build/edo-profile"
py=/usr/bin/python3
"$py" -c "
import numpy as np
r = np.random.default_rng(0)
x = (r.standard_normal((2000, 16)) * r.uniform(0.5, 2, (2000, 1))).astype(np.float32)
np.save('$work/t.npy', x)
np.save('$work/z.npy', 1e6 / (np.arange(2000) + 1))
import os; os.makedirs('$work/model'); np.save('$work/model/a.npy', x); np.save('$work/model/b.npy', x[:, :8])"
fp32=$((2000 * 16 * 4))
# A short ladder keeps each plan to a second or two (the default one: edo-profile --help).
L=(--plan-queries 200 --plan-codecs fp16 --plan-codecs int8 --plan-codecs int4 --plan-codecs int2
  --plan-codecs pq:m=4,codebooks=int8)

# within[FILE JSON CAP]: the file is at most CAP bytes and at least 99% of it, as the JSON report says.
within() {
  "$py" - "$1" "$2" "$3" <<'PY' || fail "budget bounds: $1 $3"
import json, os, sys
path, report, cap = sys.argv[1], json.load(open(sys.argv[2])), int(sys.argv[3])
size = os.path.getsize(path)
b = report["budget"]
assert b["cap_bytes"] == cap, (b["cap_bytes"], cap)
assert b["file_bytes"] == size, (b["file_bytes"], size)
assert 0.99 * cap <= size <= cap, (size, cap, b["fill"])
PY
}

expect 0 "$P" "$work/t.npy" -o "$work/r8.edo" --freq "$work/z.npy" --budget 'ratio>=6' --json -q "${L[@]}"
within "$work/r8.edo" "$work/out" $((fp32 / 6))
expect 0 "$P" "$work/t.npy" -o "$work/b30.edo" --freq "$work/z.npy" --budget 'bytes<=20K' --json -q "${L[@]}"
within "$work/b30.edo" "$work/out" 20480
# Two budgets: the tighter holds.
expect 0 "$P" "$work/t.npy" -o "$work/two.edo" --freq "$work/z.npy" --budget 'ratio>=3' --budget 'bytes<=20K' --json -q "${L[@]}"
within "$work/two.edo" "$work/out" 20480
# The text summary says how full the file is.
expect 0 "$P" "$work/t.npy" -o "$work/r8t.edo" --freq "$work/z.npy" --budget 'ratio>=6' "${L[@]}"
grep -q "of the 21333 allowed" "$work/out" || fail "no cap line: $(cat "$work/out")"
cmp -s "$work/r8.edo" "$work/r8t.edo" || fail "same budget, seed and input gave different bytes"

# An accuracy budget alone: the smallest plan that meets it, packed.
expect 0 "$P" "$work/t.npy" -o "$work/acc.edo" --freq "$work/z.npy" --budget 'recall@10>=0.5' --json -q "${L[@]}"
"$py" -c "import json; b = json.load(open('$work/out'))['budget']; assert 'cap_bytes' not in b and b['planned']['w.recall@10'] >= 0.5, b" ||
  fail "accuracy budget report"

# edo-profile --plan under a size: the plan packs with --config under the cap; the size is not weighted.
expect 0 "$R" "$work/t.npy" --freq "$work/z.npy" --plan --budget 'ratio>=6' --plan-config "$work/p8.json" --json \
  "${L[@]}"
grep -q "size budget: a file of at most 21333 bytes" "$work/err" || fail "no size note: $(cat "$work/err")"
"$py" -c "import json; j = json.load(open('$work/out'))['plan']; assert j['budget'] == ['w.recall@10 >= 0'], j['budget']" ||
  fail "a size budget was read as a weighted metric"
expect 0 "$P" "$work/t.npy" -o "$work/p8.edo" --freq "$work/z.npy" --config "$work/p8.json" -q
[ "$(stat -c %s "$work/p8.edo")" -le $((fp32 / 6)) ] || fail "edo-profile's plan packs over the cap"
# Near-ties of the best plan under a cap (within the sample's confidence interval) are evaluated again
# with four times the queries, and the one chosen is among them (GloVe at 8x: 16 of them).
expect 0 "$R" "$src/data-samples/glove.6B.50d.10k.npy" --plan --budget 'ratio>=8' --json -q
"$py" -c "
import json; p = json.load(open('$work/out'))['plan']
again = [t for t in p['tried'] if 'rescored' in t]
assert p['rescored_queries'] > 0 and len(again) >= 2 and 'rescored' in p['tried'][p['chosen']], p['rescored_queries']
assert p['tried'][p['chosen']]['rescored'] == max(t['rescored'] for t in again)" || fail "planner near-ties"
# A cap that holds the table as stored is that plan, with no search.
expect 0 "$P" "$work/t.npy" -o "$work/stored.edo" --budget 'ratio>=0.5' --json -q
"$py" -c "
import json; j = json.load(open('$work/out'))['budget']
assert j['as_stored'] and j['tiers'][0]['codec'] == 'fp32' and j['plan_evaluated'] == 0, j" || fail "as stored"

# ---- bad input: one line, nothing written --------------------------------------------------
expect 1 "$P" "$work/t.npy" -o "$work/x.edo" --freq "$work/z.npy" --budget 'bytes<=100' "${L[@]}"
err_has "below the"
err_has "most compact codec takes about bytes<="
expect 1 "$P" "$work/t.npy" -o "$work/x.edo" --freq "$work/z.npy" --budget 'bytes<=5000' "${L[@]}"
err_has "the smallest plan of the ladder takes"
expect 1 "$R" "$work/t.npy" --plan --budget 'bytes<=5000' -q "${L[@]}"
err_has "smallest reachable file is about bytes<="
expect 1 "$P" "$work/t.npy" -o "$work/x.edo" --freq "$work/z.npy" --budget 'recall@10>=1' --budget 'ratio>=6' "${L[@]}"
err_has "no plan meets w.recall@10 >= 1"
for bad in 'bytes<=2GBB' 'bytes<=-1' 'bytes<=' 'bytes>=1K' 'ratio<=4' 'ratio>=0' 'w.ratio>=8' 'w.bytes<=1M' 'recall@10>=x'; do
  expect 2 "$P" "$work/t.npy" -o "$work/x.edo" --budget "$bad"
  err_has "'"
done
expect 2 "$P" "$work/t.npy" -o "$work/x.edo" --budget 'ratio>=8' --tier all:rest:int8
err_has "one of them"
expect 2 "$P" "$work/t.npy" -o "$work/x.edo" --tier all:rest:int8 --plan-codecs int8
err_has "go with --budget"
expect 2 "$P" "$work/t.npy" -o "$work/x.edo" --budget 'ratio>=8' --eval
err_has "evaluate with edo-eval"
expect 2 "$P" "$work/t.npy" -o "$work/x.edo" --budget 'ratio>=8' --shard 1/2
err_has "--budget plans the whole table"

# ---- a model: one budget planned jointly over its tables -----------------------------------
expect 0 "$P" "$work/model" -o "$work/m.edo" --budget 'ratio>=6' --json -q
"$py" - "$work/out" "$work/m.edo" <<'PY' || fail "joint plan report"
import json, os, sys
j = json.load(open(sys.argv[1]))["joint_plan"]
size = os.path.getsize(sys.argv[2])
assert j["file_bytes"] == size and size <= j["cap_bytes"] == (2000 * 16 + 2000 * 8) * 4 // 6, (j["file_bytes"], size)
assert [t["name"] for t in j["tables"]] == ["a", "b"] and abs(sum(t["share"] for t in j["tables"]) - 1) < 1e-9, j
assert j["objective"] <= j["same_ratio_objective"] and j["cold_weight"] == 0 and j["objective"] == j["weighted_error"] > 0, j
assert j["allocation"] == "exact" and j["shares"] == "rows" and j["objective_name"] == "sum w_t s_t E_t", j
PY
# The plan scores its candidates (trained ones among them) two at a time: the same bytes at one thread.
expect 0 "$P" "$work/model" -o "$work/m1.edo" --budget 'ratio>=6' --threads 1 -q
cmp -s "$work/m.edo" "$work/m1.edo" || fail "a model's joint plan packed other bytes at one thread"
expect 0 "$P" "$work/model" -o "$work/m.edo" --budget 'ratio>=6' --table-weight a=5 -q
grep -q "joint plan:" "$work/out" || fail "no joint plan in the summary: $(cat "$work/out")"
# A cap the frontiers cannot fill (fp16 and int8 only, 1.5x): every table at its most precise option, and
# the summary and the JSON say why the file is under 99% of the cap.
expect 0 "$P" "$work/model" -o "$work/m.edo" --budget 'ratio>=1.5' --plan-codecs fp16 --plan-codecs int8 --json -q
"$py" -c "
import json; j = json.load(open('$work/out'))['joint_plan']
assert j['cap_used'] < 0.99 and 'most precise option' in j['short_of_cap'], j
assert all(t['tiers'] == [{'name': 'all', 'share': 'rest', 'codec': 'fp16', 'residency': 'host'}] or
           [x['codec'] for x in t['tiers']] == ['fp16'] for t in j['tables']), j['tables']" ||
  fail "no reason for a file under 99% of its cap"
expect 0 "$P" "$work/model" -o "$work/m.edo" --budget 'ratio>=1.5' --plan-codecs fp16 --plan-codecs int8 -q
grep -q "under 99% of the cap: every table already has" "$work/out" || fail "no reason in the summary: $(cat "$work/out")"
# A trained codec takes no table of fewer than 256 rows: one the user names alone for such a table leaves it
# no codec, said with the table's name.
mkdir "$work/small" && "$py" -c "
import numpy as np; x = np.load('$work/t.npy'); np.save('$work/small/s.npy', x[:100]); np.save('$work/small/u.npy', x[:100, :8])"
expect 1 "$P" "$work/small" -o "$work/x.edo" --budget 'ratio>=1' --plan-codecs pq:m=4 -q
err_has "table s: no codec of the plan's list takes its sample (100 rows; a trained codec needs 256)"
[ -e "$work/x.edo" ] && fail "a refused plan left its output"
expect 1 "$P" "$work/model" -o "$work/x.edo" --budget 'ratio>=100' -q
err_has "smallest model file the planner can make is about bytes<="
expect 2 "$P" "$work/model" -o "$work/x.edo" --budget 'recall@10>=0.9' --budget 'ratio>=6' -q
err_has "not both"
expect 2 "$P" "$work/model" -o "$work/x.edo" --budget 'recall@10>=0.9' --table-weight a=2 -q
err_has "a floor holds on each"
expect 2 "$P" "$work/model" -o "$work/x.edo" --budget 'ratio>=6' --table-weight c=2 -q
err_has "not a chosen table"
expect 2 "$P" "$work/model" -o "$work/x.edo" --budget 'ratio>=6' --table-weight a=0 -q
err_has "above 0"
expect 2 "$P" "$work/model" -o "$work/x.edo" --tier all:rest:int8 --table-weight a=2 -q
err_has "go with a model's --budget"
expect 2 "$P" "$work/model" -o "$work/x.edo" --budget 'ratio>=6' --cold-weight -1 -q
expect 2 "$P" "$work/model" -o "$work/x.edo" --budget 'ratio>=6' --cold-weight inf -q
expect 2 "$R" "$work/model" --plan --budget 'ratio>=6' --cold-weight nan -q
expect 2 "$P" "$work/model" -o "$work/x.edo" --tier all:rest:int8 --cold-weight 2 -q
err_has "go with a model's --budget"
expect 2 "$P" "$work/model" -o "$work/x.edo" --budget 'recall@10>=0.9' --cold-weight 2 -q
err_has "a floor holds on each"
expect 2 "$P" "$work/t.npy" -o "$work/x.edo" --budget 'ratio>=6' --cold-weight 2 -q
err_has "go with a model's --budget"
expect 2 "$R" "$work/t.npy" --plan --budget 'ratio>=6' --cold-weight 2 -q
err_has "go with a model's --plan"
[ -e "$work/x.edo" ] && fail "a refused run left its output"

# ---- a model's plan for review: edo-profile writes the plan the one-run pack packs ---------
"$py" -c "
import numpy as np, os
os.makedirs('$work/counts'); np.save('$work/counts/a.npy', 1e6 / (np.arange(2000) + 1))"
expect 0 "$R" "$work/model" --plan --budget 'ratio>=6' --freq-dir "$work/counts" --table-weight b=2 \
  --plan-config "$work/joint.json" -q
grep -q "joint plan:" "$work/out" || fail "no joint plan in edo-profile's summary: $(cat "$work/out")"
ls -a "$work" | grep -q '\.tmp-' && fail "edo-profile left its trial model file"
expect 0 "$P" "$work/model" -o "$work/one.edo" --budget 'ratio>=6' --freq-dir "$work/counts" --table-weight b=2 -q
expect 0 "$P" "$work/model" -o "$work/cfg.edo" --config "$work/joint.json" --freq-dir "$work/counts" -q
cmp -s "$work/one.edo" "$work/cfg.edo" || fail "the reviewed plan packs other bytes than the one-run --budget pack"
"$py" - "$work/joint.json" "$work/cfg.edo" <<'PY' || fail "joint plan file"
import json, os, sys
j = json.load(open(sys.argv[1]))
assert j["budget"] == "ratio>=6" and j["file_bytes"] == os.path.getsize(sys.argv[2]) <= j["cap_bytes"], j
assert [t["name"] for t in j["tables"]] == ["a", "b"] and all(t["tiers"] for t in j["tables"]), j
tables = j["tables"]
json.dump(dict(j, tables=tables[:1]), open(sys.argv[1] + ".a", "w"))
json.dump(dict(j, tables=tables + [dict(tables[0], name="c")]), open(sys.argv[1] + ".abc", "w"))
PY
# Each table's recall@10 in the plan, as edo-eval measures the file (w. where the table has counts).
expect 0 "$build/edo-eval" "$work/model" "$work/cfg.edo" --freq-dir "$work/counts" --json -q
"$py" - "$work/out" "$work/joint.json" <<'PY' || fail "the plan's recall@10 differs from edo-eval's"
import json, sys
ev, plan = json.load(open(sys.argv[1]))["tables"], json.load(open(sys.argv[2]))["tables"]
assert plan[0]["w.recall@10"] == ev["a"]["w.recall@10"] and plan[1]["w.recall@10"] == ev["b"]["recall@10"], (plan, ev)
PY
expect 2 "$P" "$work/model" -o "$work/x.edo" --config "$work/joint.json.a" -q
err_has "the plan has no table 'b'"
expect 2 "$P" "$work/model" -o "$work/x.edo" --config "$work/joint.json.abc" -q
err_has "the plan's table 'c' is not a chosen table"
expect 2 "$R" "$work/model" --plan --budget 'recall@10>=0.9' -q
err_has "a model's --plan takes a size"
expect 2 "$R" "$work/t.npy" --plan --budget 'ratio>=6' --freq-dir "$work/counts" -q
err_has "go with a model's --plan"

# ---- a model under an accuracy floor: every table planned alone and packed, each meeting it --
"$py" "$src/scripts/make_models.py" sample "$src/data-samples" "$work/sample.safetensors" || fail "make_models.py sample"
"$py" -c "
import numpy as np, os
os.makedirs('$work/scounts'); np.save('$work/scounts/emb.words.weight.npy', 1e6 / (np.arange(10000) + 1))"
FL=(--plan-queries 300 --plan-codecs fp16 --plan-codecs int8 --plan-codecs int5:scale=fp16 --plan-codecs int4
  --plan-codecs int2)
expect 0 "$P" "$work/sample.safetensors" -o "$work/floor.edo" --freq-dir "$work/scounts" \
  --budget 'w.recall@10>=0.95' "${FL[@]}" --json -q
cp "$work/out" "$work/floor.json"
# Measured on the packed model by edo-eval, with the plan's queries: counted tables by w.recall@10, the others
# (one lookup a row) by recall@10.
expect 0 "$build/edo-eval" "$work/sample.safetensors" "$work/floor.edo" --freq-dir "$work/scounts" --queries 300 --json -q
"$py" - "$work/out" "$work/floor.json" <<'PY' || fail "a table under the floor"
import json, sys
ev, packed = json.load(open(sys.argv[1]))["tables"], json.load(open(sys.argv[2]))
assert sorted(ev) == ["emb.items.weight", "emb.tiny.weight", "emb.words.weight"], ev.keys()
assert ev["emb.words.weight"]["w.recall@10"] >= 0.95, ev["emb.words.weight"]
for name, t in ev.items():
    assert t.get("w.recall@10", t["recall@10"]) >= 0.95, (name, t)
floor = {f["name"]: f["budget"] for f in packed["floor"]}
assert floor["emb.words.weight"]["budget"] == ["w.recall@10>=0.95"], floor
assert floor["emb.items.weight"]["budget"] == ["recall@10>=0.95"], floor
json.dump([t["spec"] for t in floor["emb.words.weight"]["tiers"]], open(sys.argv[2] + ".words", "w"))
PY
# The smallest plan that meets the floor: the one edo-pack TABLE --budget packs for that table alone.
expect 0 "$P" "$work/sample.safetensors:emb.words.weight" -o "$work/words.edo" \
  --freq "$work/scounts/emb.words.weight.npy" --budget 'w.recall@10>=0.95' "${FL[@]}" --json -q
"$py" - "$work/out" "$work/floor.json.words" <<'PY' || fail "the floor's table plan differs from the table's own"
import json, sys
assert [t["spec"] for t in json.load(open(sys.argv[1]))["budget"]["tiers"]] == json.load(open(sys.argv[2]))
PY
expect 1 "$P" "$work/sample.safetensors" -o "$work/x.edo" --budget 'recall@10>=0.9999' --plan-codecs int2 \
  --plan-queries 300 -q
err_has "no plan meets"
[ ! -e "$work/x.edo" ] || fail "a refused run wrote its output"

[ "$failures" -eq 0 ] && echo "pack_budget: ok"
exit "$failures"
