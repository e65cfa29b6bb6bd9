#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Models (docs/PACK.md, "Models"; FORMAT.md section 10): edo-quantize,
# edo-pack, edo-sparsify and edo-hash take a model (a safetensors file, a
# folder of .npy) and write one model file, each table the file a run over
# that table alone writes; the selection is said on stderr; one table taken
# alone records its name; counts go per table; shards of a model merge into
# the one-process file; bad inputs are refused with nothing written.
#   model.sh BUILD_DIR SOURCE_DIR
set -uo pipefail
source "$(dirname "$0")/checks.bash" "$@"  # build, src, work (removed at exit), expect, fail, err_has
Q="$build/edo-quantize"; P="$build/edo-pack"; S="$build/edo-sparsify"; H="$build/edo-hash"; U="$build/edo-unpack"
PY=/usr/bin/python3
unset SLURM_ARRAY_TASK_ID SLURM_ARRAY_TASK_COUNT SLURM_ARRAY_TASK_MIN SLURM_ARRAY_TASK_MAX SLURM_PROCID \
  SLURM_NTASKS JOB_COMPLETION_INDEX OMPI_COMM_WORLD_RANK OMPI_COMM_WORLD_SIZE PMI_RANK PMI_SIZE
model="$work/model.safetensors"
$PY "$src/scripts/make_models.py" sample "$src/data-samples" "$model" || fail "make_models.py sample"
$PY "$src/scripts/make_models.py" criteo "$work/criteo" --cap 3000 --freq-dir "$work/freq" || fail "make_models.py criteo"

# table NAME of model file M written to OUT (its bytes as stored), per FORMAT.md 10.
extract() {
  $PY - "$1" "$2" "$3" <<'PYEOF'
import json, struct, sys
path, name, out = sys.argv[1:]
b = open(path, "rb").read()
off, length = struct.unpack("<QQ", b[24:40])
m = json.loads(b[off:off + length])
section = {t["name"]: t["section"] for t in m["model"]["tables"]}[name]
s = next(s for s in m["sections"] if s["name"] == section)
open(out, "wb").write(b[s["offset"]:s["offset"] + s["length"]])
PYEOF
}
names() {  # the table names of model file $1, one a line
  $PY -c "
import json, struct, sys
b = open(sys.argv[1], 'rb').read(); off, n = struct.unpack('<QQ', b[24:40])
print('\n'.join(t['name'] for t in json.loads(b[off:off + n])['model']['tables']))" "$1"
}

# ---- the default choice, said on stderr ----------------------------------------------------
expect 0 "$Q" "$model" -o "$work/m.edo" --codec int8
grep -q 'took    emb.words.weight (10000 x 50)' "$work/err" || fail "the selection does not name emb.words.weight"
grep -q 'skipped bias: not 2-D' "$work/err" || fail "the 1-D bias is not said to be skipped"
grep -q "skipped head.dense.weight: not a default table (no 'emb' in its name" "$work/err" || fail "head.dense.weight's skip has no reason"
[ "$(names "$work/m.edo" | tr '\n' ' ')" = "emb.words.weight emb.items.weight emb.tiny.weight " ] ||
  fail "tables: $(names "$work/m.edo" | tr '\n' ' ')"
grep -q '^  model ' "$work/out" || fail "no model line in the summary"

# ---- each table is the file a run over it alone writes ------------------------------------------
for t in emb.words.weight emb.items.weight emb.tiny.weight; do
  expect 0 "$Q" "$model:$t" -o "$work/alone.edo" --codec int8 -q
  extract "$work/m.edo" "$t" "$work/inside.edo"
  cmp -s "$work/alone.edo" "$work/inside.edo" || fail "table $t differs from its one-table run"
done
# ... and the same run again is the same bytes.
expect 0 "$Q" "$model" -o "$work/m2.edo" --codec int8 -q
cmp -s "$work/m.edo" "$work/m2.edo" || fail "two runs of one model differ"
# A table taken alone is a one-table file that records its name.
expect 0 "$Q" "$model" --tables 'emb.w*' -o "$work/one.edo" --codec fp16 -q
grep -q '"table_name":"emb.words.weight"' "$work/one.edo" || fail "a table taken alone does not record its name"
grep -q '"model":' "$work/one.edo" && fail "one table taken alone was written as a model"
# A model of one 2-D table (the file alone) is the one-table file of today, byte for byte.
$PY - "$work/lone.safetensors" "$src/data-samples/glove.6B.50d.10k.npy" <<'PYEOF' || fail "writing a one-tensor safetensors"
import sys; sys.path.insert(0, sys.argv[0].rsplit('/', 1)[0])
import numpy as np, json, struct
a = np.load(sys.argv[2]).astype("<f4"); h = json.dumps({"emb": {"dtype": "F32", "shape": list(a.shape), "data_offsets": [0, a.nbytes]}}).encode()
h += b" " * (-len(h) % 8); open(sys.argv[1], "wb").write(struct.pack("<Q", len(h)) + h + a.tobytes())
PYEOF
expect 0 "$Q" "$work/lone.safetensors" -o "$work/lone.edo" --codec int8 -q
grep -q '"table_name"\|"model":' "$work/lone.edo" && fail "a one-tensor file changed what it writes"

# ---- every writer, and per-table counts ------------------------------------------------------------
expect 0 "$P" "$work/criteo" -o "$work/c.edo" --tier hot:rows=10%:fp16 --tier cold:rest:int4 --freq-dir "$work/freq" -q
[ "$(names "$work/c.edo" | wc -l)" = 26 ] || fail "the recommender model does not hold 26 tables"
order=$(names "$work/c.edo" | tr '\n' ' ')
[ "${order:0:9}" = "C1 C2 C3 " ] || fail "tables not in their numeric order: $order"
expect 0 "$P" "$work/criteo/C3.npy" -o "$work/c3.edo" --tier hot:rows=10%:fp16 --tier cold:rest:int4 \
  --freq "$work/freq/C3.npy" -q
extract "$work/c.edo" C3 "$work/c3.inside.edo"
$PY - "$work/c3.edo" "$work/c3.inside.edo" <<'PYEOF' || fail "C3 packed in the model differs from C3 packed alone"
import json, struct, sys
def body(p):
    b = open(p, "rb").read(); off, n = struct.unpack("<QQ", b[24:40]); m = json.loads(b[off:off + n])
    del m["provenance"]  # the input's name differs: criteo/C3.npy alone, criteo:C3 inside
    return b[64:off], m
a, b = body(sys.argv[1]), body(sys.argv[2])
sys.exit(0 if a == b else 1)
PYEOF
expect 0 "$P" "$work/criteo" --tables 'C1,C2' -o "$work/c12.edo" --tier all:rest:int8 --freq "C2=$work/freq/C2.npy" -q
expect 0 "$S" "$work/criteo" --tables 'C1*' -o "$work/s.edo" --density 0.5 -q
expect 0 "$H" "$work/criteo" --tables 'C2?' -o "$work/h.edo" --scheme hash:buckets=2 -q
[ "$(names "$work/h.edo" | wc -l)" = 7 ] || fail "--tables 'C2?' did not take C20 to C26"
# Round trips: a table of each writer's model decodes as the same table written alone.
roundtrip() {  # MODEL_FILE TABLE TOOL ARGS... (the tool's one-table run of TABLE with ARGS)
  local m=$1 t=$2; shift 2
  expect 0 "$@" -o "$work/alone.edo" -q
  expect 0 "$U" "$m" --table "$t" -o "$work/from_model.npy" -q
  expect 0 "$U" "$work/alone.edo" -o "$work/from_alone.npy" -q
  cmp -s "$work/from_model.npy" "$work/from_alone.npy" || fail "table $t of $m decodes differently from its run alone"
}
roundtrip "$work/c.edo" C7 "$P" "$work/criteo/C7.npy" --tier hot:rows=10%:fp16 --tier cold:rest:int4 \
  --freq "$work/freq/C7.npy"
roundtrip "$work/s.edo" C13 "$S" "$work/criteo/C13.npy" --density 0.5
roundtrip "$work/h.edo" C21 "$H" "$work/criteo/C21.npy" --scheme hash:buckets=2

# ---- shards of a model merge into the one-process file ---------------------------------------------
expect 0 "$Q" "$work/criteo" -o "$work/whole.edo" --codec int8 -q
for i in 0 1; do expect 0 "$Q" "$work/criteo" -o "$work/part$i.edo" --codec int8 --shard "$i/2" -q; done
expect 0 "$P" --merge "$work/part1.edo" "$work/part0.edo" -o "$work/merged.edo" -q
cmp -s "$work/whole.edo" "$work/merged.edo" || fail "a model merged from shards differs from the one-process file"
expect 2 "$P" --shard-set "$work/part0.edo" "$work/part1.edo" -o "$work/set.edoset" -q
err_has "--merge them"
# A trained codec: the model's trained state, then each shard with it.
expect 0 "$Q" "$work/criteo" --tables 'C1,C3' -o "$work/pq.edo" --codec pq:m=8 --train-rows 500 -q
expect 0 "$Q" "$work/criteo" --tables 'C1,C3' -o "$work/pq.state.edo" --codec pq:m=8 --train-rows 500 --train-only -q
for i in 0 1; do
  expect 0 "$Q" "$work/criteo" --tables 'C1,C3' -o "$work/pq$i.edo" --trained "$work/pq.state.edo" --shard "$i/2" -q
done
# Shard 1 of 2 holds no rows of C1 (one chunk of rows: whole in shard 0); of C1 and C2 alone, none at all.
expect 2 "$Q" "$work/criteo" --tables 'C1,C2' -o "$work/bad.edo" --codec int8 --shard 1/2 -q
err_has "holds no rows"
expect 0 "$P" --merge "$work/pq0.edo" "$work/pq1.edo" -o "$work/pq.merged.edo" -q
cmp -s "$work/pq.edo" "$work/pq.merged.edo" || fail "a trained model merged from shards differs from the one-process file"

# ---- bad input: clear errors, nothing written --------------------------------------------------------
expect 2 "$Q" "$model" --tables 'nothing*' -o "$work/bad.edo" --codec int8
err_has "matches no tensor"; grep -q 'emb.words.weight' "$work/err" || fail "the glob error does not list the tensors"
expect 2 "$Q" "$model" --tables 'bias,emb.*' -o "$work/bad.edo" --codec int8
err_has "tensor 'bias' is not 2-D"
expect 2 "$Q" "$src/data-samples/glove.6B.50d.10k.npy" --tables 'x' -o "$work/bad.edo" --codec int8
err_has "is one table, not a model"
expect 2 "$P" "$work/criteo" -o "$work/bad.edo" --tier all:rest:int8 --freq "$work/freq/C3.npy" -q
err_has "counts per table"
mkdir -p "$work/strayfreq" && cp "$work/freq/C3.npy" "$work/strayfreq/C99.npy"
expect 2 "$P" "$work/criteo" -o "$work/bad.edo" --tier all:rest:int8 --freq-dir "$work/strayfreq" -q
err_has "'C99', which is no table of"
expect 1 "$P" "$work/criteo" -o "$work/bad.edo" --tier all:rest:int8 --freq "C3=$work/freq/C1.npy" -q
grep -q 'C1.npy' "$work/err" || fail "a count file of the wrong length is not named: $(cat "$work/err")"
expect 2 "$Q" "$model" -o "$work/bad.edo" --codec int8 --eval
[ -e "$work/bad.edo" ] && fail "a refused run left $work/bad.edo"
ls -a "$work" | grep -q '\.table-' && fail "temporary tables left behind: $(ls -a "$work" | grep '\.table-')"

[ "$failures" -eq 0 ] || { echo "$failures failure(s)"; exit 1; }
echo "model: ok"
