#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Sharded runs (docs/SCALE.md): edo-quantize, edo-pack, edo-sparsify and
# edo-hash --shard I/N (or the launcher's environment) and edo-pack --merge
# give the file one process writes, byte for byte, for two and three uneven
# shards, with and without a trained state (--train-only / --trained) and
# words, for every tier kind that shards; lone shards and trained states are
# not tables; bad shard sets are refused with nothing written.
#   shards.sh BUILD_DIR SOURCE_DIR
set -uo pipefail
source "$(dirname "$0")/checks.bash" "$@"  # build, src, work (removed at exit), expect, fail, err_has
Q="$build/edo-quantize"; P="$build/edo-pack"; U="$build/edo-unpack"
glove="$src/data-samples/glove.6B.50d.10k.npy"
vocab="$src/data-samples/glove.6B.50d.10k.vocab.txt"
# The launchers' variables must not leak in from the machine running the tests.
unset SLURM_ARRAY_TASK_ID SLURM_ARRAY_TASK_COUNT SLURM_ARRAY_TASK_MIN SLURM_ARRAY_TASK_MAX SLURM_PROCID \
  SLURM_NTASKS JOB_COMPLETION_INDEX OMPI_COMM_WORLD_RANK OMPI_COMM_WORLD_SIZE PMI_RANK PMI_SIZE

same() {  # whole merged: byte identity
  cmp -s "$1" "$2" || fail "$2 differs from the one-process $1"
}

# ---- plain codecs: shards need no trained state --------------------------------------
for codec in int8 int4:group=16; do
  name=$(echo "$codec" | tr ':=' '__')
  expect 0 "$Q" "$glove" -o "$work/$name.edo" --codec "$codec" --vocab "$vocab" -q
  for n in 2 3; do
    parts=()
    for ((i = 0; i < n; i++)); do
      expect 0 "$Q" "$glove" -o "$work/$name.$i-$n.edo" --codec "$codec" --vocab "$vocab" --shard "$i/$n" -q
      grep -q "shard $i/$n (rows" "$work/err" || fail "no shard line on stderr under -q: $(cat "$work/err")"
      parts+=("$work/$name.$i-$n.edo")
    done
    # Any order on the command line.
    expect 0 "$P" --merge $(printf '%s\n' "${parts[@]}" | sort -r) -o "$work/$name.m$n.edo" -q
    same "$work/$name.edo" "$work/$name.m$n.edo"
  done
done
# The split rule: multiples of 2048 rows, the last shard to the end.
grep -q "shard 2/3 (rows 6144 to 10000 of 10000)" <("$Q" "$glove" -o "$work/x.edo" --codec int8 --shard 2/3 -q 2>&1) ||
  fail "shard 2/3 of 10000 rows is not rows 6144 to 10000"

# ---- a trained codec: --train-only once, --trained in every shard -----------------------
expect 0 "$Q" "$glove" -o "$work/pq.edo" --codec pq:m=10 --seed 5 --train-rows 4000 -q
expect 0 "$Q" "$glove" -o "$work/pq.model.edo" --codec pq:m=10 --seed 5 --train-rows 4000 --train-only -q
expect 2 "$Q" "$glove" -o "$work/pq.0.edo" --codec pq:m=10 --shard 0/2 -q
err_has "--train-only"
for n in 2 3; do
  parts=()
  for ((i = 0; i < n; i++)); do
    expect 0 "$Q" "$glove" -o "$work/pq.$i-$n.edo" --trained "$work/pq.model.edo" --shard "$i/$n" -q
    parts+=("$work/pq.$i-$n.edo")
  done
  expect 0 "$P" --merge "${parts[@]}" -o "$work/pq.m$n.edo" -q
  same "$work/pq.edo" "$work/pq.m$n.edo"
done
# --trained alone (no shard) is the whole-table run too.
expect 0 "$Q" "$glove" -o "$work/pq.t.edo" --trained "$work/pq.model.edo" -q
same "$work/pq.edo" "$work/pq.t.edo"

# ---- edo-pack: tiered shards (frequency order, a trained tier, a zero tier) -------------
/usr/bin/python3 -c "import numpy as np; np.save('$work/zipf.npy', 1.0 / (np.random.default_rng(1).permutation(10000) + 1.0))"
tiers=(--freq "$work/zipf.npy" --tier hot:rows=10%:fp16 --tier warm:rows=30%:pq:m=10 --tier cold:rows=50%:int8
  --tier drop:rest:zero --vocab "$vocab" --train-rows 3000)
expect 0 "$P" "$glove" -o "$work/pack.edo" "${tiers[@]}" -q
expect 0 "$P" "$glove" -o "$work/pack.model.edo" "${tiers[@]}" --train-only -q
expect 2 "$P" "$glove" -o "$work/bad.edo" "${tiers[@]}" --shard 0/2 -q
err_has "--train-only"
for n in 2 3; do
  parts=()
  for ((i = 0; i < n; i++)); do
    expect 0 "$P" "$glove" -o "$work/pack.$i-$n.edo" "${tiers[@]}" --trained "$work/pack.model.edo" --shard "$i/$n" -q
    parts+=("$work/pack.$i-$n.edo")
  done
  expect 0 "$P" --merge "${parts[@]}" -o "$work/pack.m$n.edo" -q
  same "$work/pack.edo" "$work/pack.m$n.edo"
done
# Counts falling with the id (a frequency-sorted vocabulary): one process
# writes the row map as runs (FORMAT.md 9.2), and so does the merge.
/usr/bin/python3 -c "import numpy as np; np.save('$work/ordered.npy', 1.0 / (np.arange(10000) + 1.0))"
runs=(--freq "$work/ordered.npy" --tier hot:rows=10%:fp16 --tier cold:rest:int8)
expect 0 "$P" "$glove" -o "$work/runs.edo" "${runs[@]}" -q
grep -q '"runs":"rowmap/runs"' "$work/runs.edo" || fail "GloVe in frequency order was not written with a runs map"
expect 0 "$P" "$glove" -o "$work/runs.0.edo" "${runs[@]}" --shard 0/2 -q
expect 0 "$P" "$glove" -o "$work/runs.1.edo" "${runs[@]}" --shard 1/2 -q
expect 0 "$P" --merge "$work/runs.1.edo" "$work/runs.0.edo" -o "$work/runs.m.edo" -q
same "$work/runs.edo" "$work/runs.m.edo"
expect 0 "$P" --shard-set "$work/pack.0-3.edo" "$work/pack.1-3.edo" "$work/pack.2-3.edo" -o "$work/pack.edoset" -q
expect 0 "$U" "$work/pack.edo" -o "$work/pack.whole.npy" -q
expect 0 "$U" "$work/pack.edoset" -o "$work/pack.set.npy" -q
cmp -s "$work/pack.whole.npy" "$work/pack.set.npy" || fail "the tiered shard set decodes differently from the one file"
# edo-lookup serves a set as the one file: the same rows and the same lookups a tier.
L="$build/edo-lookup"
printf '%s\n' 0 9999 2047 2048 6143 6144 17 5000 >"$work/ids.txt"
expect 0 "$L" "$work/pack.edo" --ids "$work/ids.txt" -o "$work/l.whole.npy" --stats
grep "lookups (" "$work/err" >"$work/l.whole.stats"
expect 0 "$L" "$work/pack.edoset" --ids "$work/ids.txt" -o "$work/l.set.npy" --stats
grep "lookups (" "$work/err" >"$work/l.set.stats"
cmp -s "$work/l.whole.npy" "$work/l.set.npy" || fail "edo-lookup answers a shard set differently from the one file"
cmp -s "$work/l.whole.stats" "$work/l.set.stats" || fail "edo-lookup counts a shard set's tiers differently"
expect 2 "$L" "$work/pack.edoset" --ids "$work/ids.txt" -o "$work/bad.npy" --max-resident 1G
err_has "is a shard set"
expect 2 "$P" "$glove" -o "$work/bad.edo" --freq "$work/zipf.npy" --tier hot:rows=10%:fp16 --tier rest:rest:default \
  --shard 0/2
err_has "fits on every row of its tier"
expect 2 "$P" "$glove" -o "$work/bad.edo" --tier hot:rows=10%:fp16 --tier rest:rest:group:clusters=8 --shard 0/2
err_has "does not shard"
expect 2 "$P" "$glove" -o "$work/bad.edo" --freq "$work/zipf.npy" --tier hot:rows=20%:fp16 --tier warm:rest:pq:m=10 \
  --trained "$work/pack.model.edo" --shard 0/2
err_has "trained for other tiers"
[ ! -e "$work/bad.edo" ] || fail "a refused pack left a file"

# ---- every tier kind that shards: pruned, fallback and hashed tiers (edo-sparsify,
# edo-hash, edo-pack), with their global phases in --train-only ----------------------------
sharded_same() {  # TOOL NAME ARGS...: --train-only when it has a state, 2 and 3 shards, merged == one process
  local tool=$1 name=$2; shift 2
  expect 0 "$tool" "$glove" -o "$work/$name.edo" "$@" -q
  local trained=()
  if "$tool" "$glove" -o "$work/$name.model.edo" "$@" --train-only -q 2>"$work/err"; then
    trained=(--trained "$work/$name.model.edo")
  else
    grep -q "no tier trains or fits a state" "$work/err" || fail "$name: --train-only: $(cat "$work/err")"
  fi
  for n in 2 3; do
    local parts=()
    for ((i = 0; i < n; i++)); do
      expect 0 "$tool" "$glove" -o "$work/$name.$i-$n.edo" "$@" "${trained[@]}" --shard "$i/$n" -q
      parts+=("$work/$name.$i-$n.edo")
    done
    expect 0 "$P" --merge "${parts[@]}" -o "$work/$name.m$n.edo" -q
    same "$work/$name.edo" "$work/$name.m$n.edo"
  done
}
S="$build/edo-sparsify"; H="$build/edo-hash"
sharded_same "$S" sp-density --density 0.3 --values int8 --seed 3
sharded_same "$S" sp-mean --freq "$work/zipf.npy" --drop rows=30% --per-row-k 12 --values fp16
sharded_same "$S" sp-centroids --freq "$work/zipf.npy" --drop rows=40% --fallback centroids:32 --codec int8
sharded_same "$S" sp-nearest --freq "$work/zipf.npy" --drop rows=40% --fallback nearest:l2 --codec int4
sharded_same "$S" sp-int4 --freq "$work/zipf.npy" --drop mass=5% --threshold 0.3 --form csr --values int4 --force
sharded_same "$H" hash-k2 --scheme hash:buckets=2000,k=2 --freq "$work/zipf.npy"
sharded_same "$H" hash-qr --scheme qr:buckets=500 --keep-top rows=10% --freq "$work/zipf.npy"
# No --freq: the hot order by row norm, which each shard computes over the whole table.
sharded_same "$P" pack-norm --tier hot:rows=20%:fp16 --tier mid:rows=50%:bitmap:density=0.4,values=int8 \
  --tier cold:rest:default
# Pruned and centroid shards read as one table in a shard set; hashed and nearest ones do not.
expect 0 "$P" --shard-set "$work/sp-centroids.0-3.edo" "$work/sp-centroids.1-3.edo" "$work/sp-centroids.2-3.edo" \
  -o "$work/sp.edoset" -q
expect 0 "$U" "$work/sp-centroids.edo" -o "$work/sp.whole.npy" -q
expect 0 "$U" "$work/sp.edoset" -o "$work/sp.set.npy" -q
cmp -s "$work/sp.whole.npy" "$work/sp.set.npy" || fail "the pruned shard set decodes differently from the one file"
expect 2 "$P" --shard-set "$work/hash-k2.0-2.edo" "$work/hash-k2.1-2.edo" -o "$work/bad.edoset" -q
err_has "merge the shards"
[ ! -e "$work/bad.edoset" ] || fail "a refused shard set left a file"
sed "s/sp-centroids/sp-nearest/g" "$work/sp.edoset" >"$work/near.edoset"
expect 1 "$U" "$work/near.edoset" -o "$work/bad.npy" -q
err_has "answers ids with rows outside this shard"
expect 2 "$S" "$glove" -o "$work/bad.edo" --freq "$work/zipf.npy" --drop rows=40% --fallback centroids:32 --shard 0/2
err_has "--train-only"
expect 2 "$H" "$glove" -o "$work/bad.edo" --scheme hash:buckets=2000 --trained "$work/sp-density.model.edo" \
  --shard 0/2
err_has "trained for other tiers"
# The same tiers with another share: the trained mean is of other rows.
expect 2 "$S" "$glove" -o "$work/bad.edo" --freq "$work/zipf.npy" --drop rows=40% --per-row-k 12 --values fp16 \
  --trained "$work/sp-mean.model.edo" --shard 0/2
err_has "trained for other tiers"
# A trained state whose hashed fit report was tampered with (resealed) is refused, not trusted.
/usr/bin/python3 "$src/test/cli/reseal_manifest.py" "$work/hash-k2.model.edo" "$work/bad.model.edo" \
  "del m['tiers'][0]['trained']['collisions']['buckets']"
expect 2 "$H" "$glove" -o "$work/bad.edo" --scheme hash:buckets=2000,k=2 --freq "$work/zipf.npy" \
  --trained "$work/bad.model.edo" --shard 0/2
err_has "holds no fit report"
[ ! -e "$work/bad.edo" ] || fail "a refused shard run left a file"

# ---- the launchers' environments give the same shards ----------------------------------
env_run() {  # out env...: shard 1 of 2 of int8 by the environment
  local out=$1; shift
  expect 0 env "$@" "$Q" "$glove" -o "$out" --codec int8 --vocab "$vocab" -q
  same "$work/int8.1-2.edo" "$out"
}
env_run "$work/e1.edo" SLURM_ARRAY_TASK_ID=1 SLURM_ARRAY_TASK_COUNT=2
grep -q "from SLURM_ARRAY_TASK_ID=1" "$work/err" || fail "the shard line does not say where it came from"
env_run "$work/e2.edo" SLURM_ARRAY_TASK_ID=8 SLURM_ARRAY_TASK_MIN=7 SLURM_ARRAY_TASK_MAX=8
env_run "$work/e3.edo" SLURM_PROCID=1 SLURM_NTASKS=2
expect 0 env JOB_COMPLETION_INDEX=1 "$Q" "$glove" -o "$work/e4.edo" --codec int8 --vocab "$vocab" -q --shard-count 2
same "$work/int8.1-2.edo" "$work/e4.edo"
env_run "$work/e5.edo" OMPI_COMM_WORLD_RANK=1 OMPI_COMM_WORLD_SIZE=2
env_run "$work/e6.edo" PMI_RANK=1 PMI_SIZE=2
# Slurm's array variables come before its task variables.
env_run "$work/e7.edo" SLURM_ARRAY_TASK_ID=1 SLURM_ARRAY_TASK_COUNT=2 SLURM_PROCID=0 SLURM_NTASKS=4
# --shard none ignores the launcher; one task is the whole table.
expect 0 env SLURM_ARRAY_TASK_ID=1 SLURM_ARRAY_TASK_COUNT=2 "$Q" "$glove" -o "$work/n.edo" --codec int8 \
  --vocab "$vocab" --shard none -q
same "$work/int8.edo" "$work/n.edo"
expect 0 env SLURM_PROCID=0 SLURM_NTASKS=1 "$Q" "$glove" -o "$work/n1.edo" --codec int8 --vocab "$vocab" -q
same "$work/int8.edo" "$work/n1.edo"

# ---- edo-profile: parts merge into the one-process report ------------------------------
# A table with rows repeated across shard boundaries, NaN and Inf rows, zero rows.
/usr/bin/python3 - "$work/dup.npy" <<'PY'
import sys
import numpy as np
rng = np.random.default_rng(4)
x = rng.standard_normal((7000, 16)).astype(np.float32)
x[5000] = x[10]; x[6999] = x[10]; x[2100] = x[2047]; x[3000] = 0; x[4100, 3] = np.nan; x[100, 0] = np.inf
np.save(sys.argv[1], x)
PY
expect 0 "$build/edo-profile" "$work/dup.npy" --json -q
cp "$work/out" "$work/prof.json"
for n in 2 3; do
  parts=()
  for ((i = 0; i < n; i++)); do
    expect 0 "$build/edo-profile" "$work/dup.npy" --shard "$i/$n" --json -q
    cp "$work/out" "$work/prof.$i-$n.json"
    parts+=("$work/prof.$i-$n.json")
  done
  expect 0 "$build/edo-profile" --merge $(printf '%s\n' "${parts[@]}" | sort -r) --json
  /usr/bin/python3 -c "
import json, sys
a, b = json.load(open('$work/prof.json')), json.load(open('$work/out'))
assert b.pop('merged_parts') == $n
assert a == b, [k for k in a if a[k] != b.get(k)]
assert a['duplicates'] == {'rows': 3, 'groups': 2}, a['duplicates']  # across shard edges
" || fail "edo-profile --merge of $n parts differs from the one-process profile"
done
# The access skew comes from --freq given to the merge, as a one-process run gives it.
/usr/bin/python3 -c "import numpy as np; np.save('$work/dup.freq.npy', 1.0 / (np.arange(7000) + 1.0))"
expect 0 "$build/edo-profile" "$work/dup.npy" --freq "$work/dup.freq.npy" --json -q
cp "$work/out" "$work/prof.freq.json"
expect 0 "$build/edo-profile" --merge "$work/prof.0-2.json" "$work/prof.1-2.json" --freq "$work/dup.freq.npy" --json
/usr/bin/python3 -c "
import json
a, b = json.load(open('$work/prof.freq.json')), json.load(open('$work/out'))
b.pop('merged_parts')
assert a == b and 'access' in a, [k for k in a if a[k] != b.get(k)]
" || fail "edo-profile --merge --freq differs from the one-process profile with --freq"
expect 0 "$build/edo-profile" --merge "$work/prof.0-2.json" "$work/prof.1-2.json"
grep -q "merged .*from 2 shard parts" "$work/out" || fail "the merged text report does not say it was merged"
expect 2 "$build/edo-profile" "$work/dup.npy" --shard 0/2 --json --freq "$work/dup.freq.npy"
err_has "give --json, and --freq or --plan to the merge"
expect 0 env SLURM_PROCID=1 SLURM_NTASKS=2 "$build/edo-profile" "$work/dup.npy" --json -q
cmp -s "$work/out" "$work/prof.1-2.json" || fail "edo-profile's part from SLURM_PROCID differs from --shard 1/2's"
expect 2 "$build/edo-profile" "$work/dup.npy" --shard 0/2
err_has "give --json"
expect 2 "$build/edo-profile" --merge "$work/prof.0-3.json" "$work/prof.1-3.json" --json
err_has "but 2 parts given"
expect 1 "$build/edo-profile" --merge "$work/prof.0-2.json" "$work/prof.0-2.json" --json
expect 1 "$build/edo-profile" --merge "$work/prof.0-2.json" "$work/prof.1-3.json" --json
expect 1 "$build/edo-profile" --merge "$work/prof.json" --json
err_has "not a profile part"
sed 's/"hashes":"[A-Za-z0-9+]/"hashes":"!/' "$work/prof.1-2.json" >"$work/bad-part.json"
expect 1 "$build/edo-profile" --merge "$work/prof.0-2.json" "$work/bad-part.json" --json
err_has "is not base64"

# ---- shard sets: the shards read as one table where they lie ----------------------------
mkdir -p "$work/sets/below"
cp "$work/int8.1-3.edo" "$work/sets/below/"
expect 0 "$P" --shard-set "$work/int8.2-3.edo" "$work/int8.0-3.edo" "$work/sets/below/int8.1-3.edo" \
  -o "$work/sets/int8.edoset"
grep -q '"file": "below/int8.1-3.edo"' "$work/sets/int8.edoset" || fail "a shard below the set is not named relative to it"
expect 0 "$U" "$work/int8.edo" -o "$work/int8.whole.npy" -q
expect 0 "$U" "$work/sets/int8.edoset" -o "$work/int8.set.npy" -q
cmp -s "$work/int8.whole.npy" "$work/int8.set.npy" || fail "the shard set decodes differently from the one file"
expect 0 "$U" "$work/sets/int8.edoset" -o "$work/int8.set.vec" -q
head -c 4 "$work/int8.set.vec" | grep -q "^1000" || fail "the shard set's words are not the table's"
expect 0 "$build/edo-eval" "$glove" "$work/sets/int8.edoset" --json
grep -q '"recall@10"' "$work/out" || fail "edo-eval of a shard set"
expect 2 "$U" "$work/sets/int8.edoset" -o "$work/x.faiss"
err_has "need one file"
# A shard rewritten since the set was made; a set missing a shard; a set that is not one.
cp "$work/int8.0-3.edo" "$work/sets/keep.edo"
expect 0 "$P" --shard-set "$work/sets/keep.edo" "$work/int8.1-3.edo" "$work/int8.2-3.edo" -o "$work/sets/changed.edoset" -q
expect 0 "$Q" "$glove" -o "$work/sets/keep.edo" --codec int8 --shard 0/3 -q
expect 1 "$U" "$work/sets/changed.edoset" -o "$work/x.npy"
err_has "changed since"
expect 2 "$P" --shard-set "$work/int8.0-3.edo" "$work/int8.2-3.edo" -o "$work/bad.edoset"
err_has "missing: 1"
printf '{"edo_shard_set": 1, "rows": 5, "dim": 2, "shards": [{"file": "nope.edo"}]}' >"$work/sets/bad.edoset"
expect 1 "$U" "$work/sets/bad.edoset" -o "$work/x.npy"
err_has "bad.edoset"
[ ! -e "$work/x.npy" ] && [ ! -e "$work/bad.edoset" ] || fail "a refused set left a file"

# ---- bad input: exit 2 for usage, 1 for files; nothing written -----------------------------
for bad in 2/2 1/0 x 1/ /2 -1/2; do
  expect 2 "$Q" "$glove" -o "$work/bad.edo" --codec int8 --shard "$bad"
done
expect 2 "$Q" "$glove" -o "$work/bad.edo" --codec int8 --shard 0/6
err_has "at most 5"
expect 2 env JOB_COMPLETION_INDEX=0 "$Q" "$glove" -o "$work/bad.edo" --codec int8
err_has "--shard-count"
expect 2 env SLURM_PROCID=x SLURM_NTASKS=2 "$Q" "$glove" -o "$work/bad.edo" --codec int8
expect 2 "$Q" "$glove" -o "$work/bad.edo" --codec int8 --shard 0/2 --eval
expect 2 "$Q" "$glove" -o "$work/bad.edo" --trained "$work/pq.model.edo" --codec pq:m=5
err_has "holds pq:m=10"
expect 2 "$Q" "$glove" -o "$work/bad.edo" --trained "$work/pq.model.edo" --seed 9
err_has "was trained with --seed 5"
expect 2 "$Q" "$glove" -o "$work/bad.edo" --codec int8 --train-only
err_has "no tier trains or fits a state"
[ ! -e "$work/bad.edo" ] || fail "a refused run left a file"
expect 2 "$P" --merge "$work/int8.0-3.edo" "$work/int8.1-3.edo" -o "$work/bad.edo"
err_has "but 2 shard files given (missing: 2)"
expect 1 "$P" --merge "$work/int8.0-3.edo" "$work/int8.1-3.edo" "$work/int8.1-3.edo" -o "$work/bad.edo"
err_has "twice"
expect 1 "$P" --merge "$work/int8.0-2.edo" "$work/int8.1-3.edo" -o "$work/bad.edo"
expect 1 "$P" --merge "$work/int8.0-2.edo" "$work/int4_group_16.1-2.edo" -o "$work/bad.edo"
err_has "another codec"
expect 1 "$P" --merge "$work/int8.0-2.edo" "$work/int8.edo" -o "$work/bad.edo"
err_has "not a shard"
# Shards trained apart do not merge.
expect 0 "$Q" "$glove" -o "$work/pq.other.edo" --codec pq:m=10 --seed 6 --train-rows 4000 --train-only -q
expect 0 "$Q" "$glove" -o "$work/pq.o1.edo" --trained "$work/pq.other.edo" --shard 1/2 -q
expect 1 "$P" --merge "$work/pq.0-2.edo" "$work/pq.o1.edo" -o "$work/bad.edo"
err_has "trained state"
[ ! -e "$work/bad.edo" ] || fail "a refused merge left a file"
# A lone shard and a trained state are not tables.
expect 1 "$U" "$work/int8.1-2.edo" -o "$work/x.npy"
err_has "shard 1/2 of a table (its rows 4096 to 10000 of 10000)"
expect 1 "$build/edo-eval" "$glove" "$work/int8.0-2.edo"
expect 1 "$U" "$work/pq.model.edo" -o "$work/x.npy"
err_has "--train-only"
[ ! -e "$work/x.npy" ] || fail "a refused read left a file"

[ "$failures" = 0 ] || { echo "$failures failure(s)"; exit 1; }
echo "shards: ok"
