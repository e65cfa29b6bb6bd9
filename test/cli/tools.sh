#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# End-to-end checks of the command-line tools: exit codes, error lines,
# nothing left behind, determinism, and agreement between tools.
# usage: tools.sh BUILD_DIR SOURCE_DIR
set -uo pipefail
build="$1"; src="$2"
data="$src/data-samples/glove.6B.50d.10k.npy"
sift="$src/data-samples/bigann10k_base.npy"
work="$(mktemp -d)"; trap 'rm -rf "$work"' EXIT
source "$(dirname "$0")/checks.bash"

P="$build/edo-profile"; Q="$build/edo-quantize"; U="$build/edo-unpack"; E="$build/edo-eval"

# --- usage and version
for t in "$P" "$Q" "$U" "$E"; do
  expect 0 "$t" --help; grep -q "Examples" "$work/out" || fail "$t --help has no examples"
  expect 0 "$t" --version; grep -q "CUDA" "$work/out" || fail "$t --version lacks build options"
  for part in "commit " " build, CPU target '" "kernels " "CUDA architectures " "FAISS "; do
    grep -qF "$part" "$work/out" || fail "$t --version lacks '$part': $(cat "$work/out")"
  done
  expect 2 "$t" --no-such-flag
done
# A mistyped flag on every tool: one line, the closest flag it has.
for pair in "edo-profile --freqq=3 --freq" "edo-quantize --codex --codec" "edo-sparsify --densty --density" \
  "edo-hash --schem --scheme" "edo-pack --tierr --tier" "edo-eval --gates --gate" "edo-unpack --outpt --output" \
  "edo-lookup --offset --offsets"; do
  read -r tool typo want <<<"$pair"
  expect 2 "$build/$tool" "$data" "$typo" x
  err_has "(${typo%%=*}: did you mean $want?)"
done
expect 2 "$Q" "$data" --zzzzzz -o "$work/x.edo"   # nothing close: no guess
grep -q "did you mean" "$work/err" && fail "a guess for --zzzzzz: $(cat "$work/err")"
expect 2 "$P"
expect 2 "$Q" "$data" -o "$work/x.edo"            # no --codec
expect 2 "$Q" "$data" -o "$work/x.edo" --codec int9
err_has "int9"
expect 2 "$Q" "$data" -o "$data" --codec int8      # would overwrite the input
expect 2 "$E" "$data" "$data" --gate 'recall@10 >> 3'

# --- edo-profile: text, JSON, stdin, HDF5 copy, frequencies, bad files
expect 0 "$P" "$data"
grep -q "PCA" "$work/out" || fail "profile text lacks PCA"
expect 0 "$P" "$data" --json; cp "$work/out" "$work/p_npy.json"
expect 0 "$Q" "$data" -o "$work/f32.edo" --codec fp32 -q
expect 0 "$U" "$work/f32.edo" -o "$work/copy.h5:/emb/glove"
expect 0 "$P" "$work/copy.h5:/emb/glove" --json; cp "$work/out" "$work/p_h5.json"
# Same statistics: everything but where the table came from.
strip() { grep -vE '"(path|format)"' "$1"; }
diff <(strip "$work/p_npy.json") <(strip "$work/p_h5.json") >/dev/null || fail "npy and HDF5 profiles differ"
"$P" - --json <"$data" >"$work/p_stdin.json" 2>"$work/err" || fail "profile of stdin failed"
diff <(strip "$work/p_npy.json") <(strip "$work/p_stdin.json") >/dev/null || fail "stdin profile differs"
awk 'BEGIN { for (r = 0; r < 10000; r++) printf "%d %d\n", r, int(100000 / (r + 1)) }' >"$work/zipf.txt"
expect 0 "$P" "$data" --freq "$work/zipf.txt" --json
grep -q '"zipf_exponent"' "$work/out" || fail "no access skew in profile"
expect 1 "$P" "$data" --freq "$work/missing.txt"
err_has "missing.txt"
head -c 1000 "$data" >"$work/trunc.npy"
expect 1 "$P" "$work/trunc.npy"; err_has "trunc.npy"
printf 'hello' >"$work/junk.npy"
expect 1 "$P" "$work/junk.npy"; err_has "junk.npy"
expect 1 "$P" "$work/nope.npy"; err_has "nope.npy"
expect 1 "$P" "$work/copy.h5:/emb/missing"; err_has "missing"

# --- edo-quantize and edo-unpack
expect 0 "$Q" --list
for c in fp16 bf16 fp8:e4m3 fp8:e5m2 int8 int4 int4:group=32 int2 bin pca:32,int8; do
  grep -q "^${c%%[:,]*} " "$work/out" || fail "--list lacks ${c%%[:,]*}"
done
expect 0 "$Q" "$data" -o "$work/a.edo" --codec int4:group=16 --threads 1 -q
expect 0 "$Q" "$data" -o "$work/b.edo" --codec int4:group=16 --threads 2 -q
cmp -s "$work/a.edo" "$work/b.edo" || fail "int4 output depends on the thread count"
expect 0 "$Q" "$data" -o "$work/p1.edo" --codec pca:24,int8 --seed 3 --threads 1 -q
expect 0 "$Q" "$data" -o "$work/p2.edo" --codec pca:24,int8 --seed 3 --threads 2 -q
cmp -s "$work/p1.edo" "$work/p2.edo" || fail "pca output depends on the thread count"
expect 0 "$Q" "$data" -o "$work/i8.edo" --codec int8 --json
grep -q '"ratio"' "$work/out" || fail "quantize --json lacks ratio"
expect 0 "$U" "$work/i8.edo" -o "$work/i8.npy"
"$U" "$work/i8.edo" -o - >"$work/i8_stdout.npy" 2>/dev/null || fail "unpack to stdout failed"
cmp -s "$work/i8.npy" "$work/i8_stdout.npy" || fail "unpack to stdout differs from unpack to a file"
expect 0 "$Q" "$sift" -o "$work/s.edo" --codec int8 -q   # uint8 input
if /usr/bin/python3 -c 'import numpy' 2>/dev/null; then
  for c in fp16 int8; do
    "$Q" "$data" -o "$work/py.edo" --codec $c -q >/dev/null 2>&1
    "$U" "$work/py.edo" -o "$work/py1.npy" 2>/dev/null
    /usr/bin/python3 "$src/scripts/edo_reader.py" "$work/py.edo" --decode "$work/py2.npy" ||
      fail "python reader failed on $c"
    cmp -s "$work/py1.npy" "$work/py2.npy" || fail "python reader decodes $c differently from edo-unpack"
  done
fi
# A corrupted byte is caught by edo-unpack (checksums), and nothing is written.
cp "$work/i8.edo" "$work/bad.edo"
printf '\x55' | dd of="$work/bad.edo" bs=1 seek=300 conv=notrunc status=none
expect 1 "$U" "$work/bad.edo" -o "$work/bad.npy"; err_has "bad.edo"
[ ! -e "$work/bad.npy" ] || fail "failed unpack left an output"
# Non-finite input: refused naming row and column; nothing left behind.
/usr/bin/python3 - "$work/nan.npy" <<'PY' 2>/dev/null
import sys, numpy as np
x = np.ones((4, 3), np.float32); x[2, 1] = np.nan; np.save(sys.argv[1], x)
PY
if [ -f "$work/nan.npy" ]; then
  before=$(ls -a "$work" | wc -l)
  expect 1 "$Q" "$work/nan.npy" -o "$work/nan.edo" --codec int8; err_has "row 2"
  [ "$(ls -a "$work" | wc -l)" = "$before" ] || fail "failed quantize left files behind"
  expect 0 "$Q" "$work/nan.npy" -o "$work/nan.edo" --codec fp16 --allow-nonfinite -q
fi
if ! command -v nvidia-smi >/dev/null || ! nvidia-smi -L >/dev/null 2>&1; then
  expect 1 "$Q" "$data" -o "$work/gpu.edo" --codec int8 --device cuda; err_has "GPU"
  [ ! -e "$work/gpu.edo" ] || fail "--device cuda left an output"
fi

# --- edo-eval and --eval: gates, reports, agreement
expect 0 "$E" "$data" "$work/f32.edo" --json
grep -q '"recall@10": 1.0' "$work/out" || fail "fp32 recall is not exactly 1"
grep -q '"rel_fro": 0.0' "$work/out" || fail "fp32 error is not exactly 0"
expect 3 "$E" "$data" "$work/a.edo" --gate 'recall@10>=0.999' --report-md "$work/r.md" --report-json "$work/r.json"
grep -q "recall@10>=0.999" "$work/err" || fail "failed gate not reported"
[ -s "$work/r.md" ] && [ -s "$work/r.json" ] || fail "reports not written on gate failure"
expect 0 "$E" "$data" "$work/a.edo" --gate 'recall@10>=0.5' --gate 'ratio>=3'
expect 2 "$E" "$data" "$work/a.edo" --gate 'no_such_metric>=1'
expect 3 "$Q" "$data" -o "$work/gated.edo" --codec bin --gate 'recall@10>=0.9' -q
[ ! -e "$work/gated.edo" ] || fail "an output that failed its gate was written"
expect 0 "$Q" "$data" -o "$work/ev.edo" --codec int4 --eval --seed 5 --json -q
/usr/bin/python3 - "$work/out" <<'PY' >"$work/inline.json" 2>/dev/null
import json, sys; j = json.load(open(sys.argv[1]))["eval"]; j.pop("gates"); print(json.dumps(j, sort_keys=True))
PY
expect 0 "$E" "$data" "$work/ev.edo" --seed 5 --json
/usr/bin/python3 - "$work/out" <<'PY' >"$work/standalone.json" 2>/dev/null
import json, sys; j = json.load(open(sys.argv[1])); j.pop("gates"); print(json.dumps(j, sort_keys=True))
PY
if [ -s "$work/inline.json" ]; then
  cmp -s "$work/inline.json" "$work/standalone.json" || fail "--eval and edo-eval disagree"
fi

# Word neighbours before and after compression.
vocab="$src/data-samples/glove.6B.50d.10k.vocab.txt"
expect 0 "$E" "$data" "$work/a.edo" --show-neighbours 5 --vocab "$vocab" --probe king --k 10
grep -q "queen" "$work/out" || fail "king's neighbours lack queen"
expect 1 "$E" "$data" "$work/a.edo" --show-neighbours 5 --vocab "$vocab" --probe notaword1234
err_has "notaword1234"
expect 1 "$E" "$data" "$work/a.edo" --show-neighbours 5 --vocab "$work/zipf.txt.missing"
expect 2 "$E" "$data" "$work/a.edo" --show-neighbours 5 --json

# FAISS outputs: the kind said on stderr, a usable file; flags that do not apply refused.
expect 0 "$build/edo-unpack" "$work/a.edo" -o "$work/a.faiss" --metric ip
grep -q "IndexFlat (the decoded rows)" "$work/err" || fail "edo-unpack -o x.faiss: $(cat "$work/err")"
[ -s "$work/a.faiss" ] || fail "no FAISS index written"
expect 2 "$build/edo-unpack" "$work/a.edo" -o "$work/a2.npy" --metric ip
err_has "--metric is for FAISS outputs"
expect 2 "$build/edo-unpack" "$work/a.edo" -o "$work/a2.faiss" --vocab "$work/zipf.txt"
err_has "do not apply to a FAISS index"
[ -e "$work/a2.faiss" ] && fail "a FAISS index was written from bad flags"

# --- a trained codec's fixed-size state is reported, and said when it outweighs the codes
/usr/bin/python3 -c "import numpy as n; n.save('$work/small.npy', n.load('$data')[:1000])"
expect 0 "$Q" "$work/small.npy" -o "$work/s.pq.edo" --codec pq:m=25 --train-rows 1000
grep -q "state          51200 bytes .*more than the codes, which outweigh it from about 2048 rows.*codebooks=fp16 would halve" "$work/out" ||
  fail "pq on 1000 rows does not say its codebooks outweigh its codes: $(cat "$work/out")"
expect 0 "$Q" "$work/small.npy" -o "$work/s.pq16.edo" --codec pq:m=25,codebooks=fp16 --train-rows 1000
grep -q "state          25600 bytes .*more than the codes.*codebooks=int8 would store a byte a value" "$work/out" &&
  ! grep -q "would halve" "$work/out" || fail "pq with fp16 codebooks misreports its state: $(cat "$work/out")"
# int8 codebooks of 2-value codewords: 6400 codewords of 3 bytes, now less than the codes.
expect 0 "$Q" "$work/small.npy" -o "$work/s.pq8.edo" --codec pq:m=25,codebooks=int8 --train-rows 1000
grep -q "state          19200 bytes (43% of the file; the codes take 25000)$" "$work/out" ||
  fail "pq with int8 codebooks misreports its state: $(cat "$work/out")"
expect 0 "$Q" "$data" -o "$work/s.pq.edo" --codec pq:m=25
grep -q "state          51200 bytes" "$work/out" && ! grep -q "more than the codes" "$work/out" ||
  fail "pq on 10000 rows misreports its state: $(cat "$work/out")"
expect 0 "$Q" "$work/small.npy" -o "$work/s.i8.edo" --codec int8
grep -q "state " "$work/out" && fail "int8 reports a state it does not have"

if [ "$failures" -ne 0 ]; then echo "$failures check(s) failed"; exit 1; fi
echo "all tool checks passed"
