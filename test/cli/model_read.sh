#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Reading model files (docs/FORMAT.md section 10): edo-unpack writes every
# table back under its name (safetensors, HDF5) bit for bit (fp32 codec), or
# one with --table (npy); edo-lookup --table gives edo-unpack's rows (and
# pools bags); the Python module's tables / table() / f["name"]; the
# independent reader (scripts/edo_reader.py) lists and decodes the tables;
# bad input: a missing table, npy or lookups of a model without --table
# (exit 2, the tables named), --table on a one-table file not its name.
#   model_read.sh BUILD_DIR SOURCE_DIR
set -uo pipefail
source "$(dirname "$0")/checks.bash" "$@"  # build, src, work (removed at exit), expect, fail, err_has
py=/usr/bin/python3
Q="$build/edo-quantize"; U="$build/edo-unpack"; L="$build/edo-lookup"
if ! "$py" -c 'import numpy' 2>/dev/null; then
  echo "model_read: skipped ($py has no numpy)"
  exit 0
fi
expect 0 "$py" "$src/scripts/make_models.py" sample "$src/data-samples" "$work/model.safetensors"
expect 0 "$Q" "$work/model.safetensors" -o "$work/m.edo" --codec fp32 -q
tables="emb.words.weight emb.items.weight emb.tiny.weight"

# --- every table back under its name, bit for bit
expect 0 "$U" "$work/m.edo" -o "$work/back.safetensors" -q
"$py" - "$work/model.safetensors" "$work/back.safetensors" <<'PY' || fail "safetensors round trip"
import json, struct, sys
import numpy as np
def read(path):
    b = open(path, "rb").read()
    n = struct.unpack("<Q", b[:8])[0]
    h = json.loads(b[8:8 + n])
    out = {}
    for k, v in h.items():
        if k == "__metadata__":
            continue
        s, e = v["data_offsets"]
        out[k] = np.frombuffer(b[8 + n + s:8 + n + e], dtype={"F32": "<f4", "F16": "<f2"}[v["dtype"]]).reshape(v["shape"])
    return out, list(h)
a, _ = read(sys.argv[1])
b, order = read(sys.argv[2])
want = ["emb.words.weight", "emb.items.weight", "emb.tiny.weight"]
assert sorted(b) == sorted(want), sorted(b)
for k in want:
    assert b[k].dtype == np.float32 and np.array_equal(a[k].astype(np.float32), b[k]), k
PY
expect 0 "$U" "$work/m.edo" -o "$work/back.h5" -q
# Read back by the tools (HDF5 datasets at /NAME): the same rows as the safetensors output.
for t in $tables; do
  expect 0 "$Q" "$work/back.h5:/$t" -o "$work/h5.$t.edo" --codec fp32 -q
  expect 0 "$U" "$work/h5.$t.edo" -o "$work/h5.$t.npy" -q
done

# --- one table: --table to npy equals the table of the safetensors output; edo-lookup equals it
for t in $tables; do
  expect 0 "$U" "$work/m.edo" --table "$t" -o "$work/$t.npy" -q
  "$py" -c "import sys, numpy as np; n = np.load(sys.argv[1]).shape[0]; open(sys.argv[2], 'w').write(''.join('%d\n' % i for i in [n - 1, 0, n // 2, 0]))" \
    "$work/$t.npy" "$work/ids.$t.txt" || fail "ids of $t"
  expect 0 "$L" "$work/m.edo" --table "$t" --ids "$work/ids.$t.txt" -o "$work/look.$t.npy" -q
done
expect 0 "$py" - "$work" $tables <<'PY'
import sys, numpy as np
w, names = sys.argv[1], sys.argv[2:]
for t in names:
    whole = np.load(w + "/" + t + ".npy")
    h5 = np.load(w + "/h5." + t + ".npy")
    assert np.array_equal(whole, h5), t + ": HDF5 output"
    ids = [int(x) for x in open(w + "/ids." + t + ".txt").read().split()]
    assert np.array_equal(np.load(w + "/look." + t + ".npy"), whole[ids]), t + ": edo-lookup"
PY
# Pooled bags on a table: two bags of the words table.
printf '0\n2\n' >"$work/offsets.txt"; printf '5\n9\n7\n' >"$work/bag_ids.txt"
expect 0 "$L" "$work/m.edo" --table emb.words.weight --ids "$work/bag_ids.txt" --offsets "$work/offsets.txt" \
  --mode sum -o "$work/bags.npy" -q
expect 0 "$py" -c "import sys, numpy as np; w = np.load(sys.argv[1]); b = np.load(sys.argv[2]); \
assert np.array_equal(b, np.stack([w[5] + w[9], w[7]]))" "$work/emb.words.weight.npy" "$work/bags.npy"

# --- bad input: exit 2, the tables named
expect 2 "$U" "$work/m.edo" --table emb.none -o "$work/x.npy"
err_has "emb.words.weight, emb.items.weight, emb.tiny.weight"
expect 2 "$U" "$work/m.edo" -o "$work/x.npy"
err_has "--table"
grep -qF "emb.tiny.weight" "$work/err" || fail "npy of a model: tables not named"
expect 2 "$U" "$work/m.edo" -o "$work/x.safetensors:one"
err_has "emb.items.weight"
[ ! -e "$work/x.npy" ] || fail "a refused unpack wrote x.npy"
expect 2 "$L" "$work/m.edo" --ids "$work/ids.emb.tiny.weight.txt" -o "$work/x.npy"
err_has "emb.words.weight, emb.items.weight, emb.tiny.weight"
expect 2 "$L" "$work/m.edo" --table emb.none --ids "$work/ids.emb.tiny.weight.txt" -o "$work/x.npy"
err_has "no table 'emb.none'"
# A one-table file: its name is "table" (none recorded); another name is refused.
expect 0 "$Q" "$src/data-samples/glove.6B.50d.10k.npy" -o "$work/g.edo" --codec int8 -q
expect 0 "$L" "$work/g.edo" --table table --ids "$work/ids.emb.tiny.weight.txt" -o "$work/g.npy" -q
expect 2 "$L" "$work/g.edo" --table emb.words.weight --ids "$work/ids.emb.tiny.weight.txt" -o "$work/g.npy"
err_has "no table 'emb.words.weight'"
expect 0 "$U" "$work/g.edo" -o "$work/g_all.npy" -q  # as before

# --- the independent reader: the tables listed, each decoded as edo-unpack decodes it
reader="$src/scripts/edo_reader.py"
expect 0 "$py" "$reader" "$work/m.edo" --tables
[ "$(tr '\n' ' ' <"$work/out")" = "$tables " ] || fail "edo_reader --tables: $(cat "$work/out")"
expect 0 "$py" "$reader" "$work/m.edo"
grep -qF "a model of 3 tables" "$work/out" || fail "edo_reader summary: $(cat "$work/out")"
for t in $tables; do
  expect 0 "$py" "$reader" "$work/m.edo" --table "$t" --decode "$work/py.$t.npy"
  expect 0 "$py" -c "import sys, numpy as np; assert np.array_equal(np.load(sys.argv[1]), np.load(sys.argv[2]))" \
    "$work/py.$t.npy" "$work/$t.npy"
done
expect 1 "$py" "$reader" "$work/m.edo" --decode "$work/py.npy"
grep -qF "name one with --table" "$work/err" || fail "edo_reader: a model decoded without --table"
expect 1 "$py" "$reader" "$work/m.edo" --table emb.none --decode "$work/py.npy"
# A duplicate name and a section named twice (resealed, so only the directory is wrong): both readers refuse.
reseal="$src/test/cli/reseal_manifest.py"
expect 0 "$py" "$reseal" "$work/m.edo" "$work/dup.edo" "m['model']['tables'][1]['name'] = 'emb.words.weight'"
expect 0 "$py" "$reseal" "$work/m.edo" "$work/twice.edo" "m['model']['tables'][1]['section'] = 'tables/0'"
for bad in dup twice; do
  expect 1 "$py" "$reader" "$work/$bad.edo" --tables
  expect 1 "$U" "$work/$bad.edo" -o "$work/$bad.safetensors"
  [ ! -e "$work/$bad.safetensors" ] || fail "$bad.edo unpacked"
done

# --- the Python module
if ls "$build"/python/edo/_edo*.so >/dev/null 2>&1; then
  PYTHONPATH="$build/python" expect 0 "$py" - "$work" $tables <<'PY'
import sys, numpy as np, edo
w, names = sys.argv[1], sys.argv[2:]
f = edo.open(w + "/m.edo")
assert f.tables == names, f.tables
for t in names:
    whole = np.load(w + "/" + t + ".npy")
    tab = f.table(t)
    assert tab.shape == whole.shape and len(tab) == whole.shape[0] and tab.dtype == np.float32
    assert np.array_equal(tab.decode_all(), whole), t
    assert np.array_equal(tab[0:3], whole[0:3]) and np.array_equal(tab[-1], whole[-1])
    assert np.array_equal(f[t].lookup([0, whole.shape[0] - 1]), whole[[0, -1]])
    assert tab.tiers[0]["codec"] == "fp32"
words = f["emb.words.weight"]
pooled = words.lookup_bags([0, 2], [5, 9, 7], mode="sum")
whole = np.load(w + "/emb.words.weight.npy")
assert np.array_equal(pooled, np.stack([whole[5] + whole[9], whole[7]]))
try:
    f.table("emb.none")
    raise SystemExit("a missing table opened")
except KeyError as e:
    assert "emb.words.weight" in str(e), e
for call in (lambda: f[0], lambda: f.lookup([0]), lambda: f.shape, lambda: f.decode_all()):
    try:
        call()
        raise SystemExit("a row call on a model worked")
    except edo.Error as e:
        assert "emb.tiny.weight" in str(e), e
f.close()
assert np.array_equal(words[1], whole[1])  # the table keeps the file mapped after its File is closed
del words, f
g = edo.open(w + "/g.edo")
assert g.tables == ["table"] and g["table"].shape == g.shape
PY
  [ -s "$work/err" ] && fail "python: $(cat "$work/err")"
fi

[ "$failures" = 0 ] || { echo "$failures failure(s)"; exit 1; }
echo "model_read: ok"
