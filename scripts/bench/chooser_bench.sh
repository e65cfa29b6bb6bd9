#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Issue 46, figure 2: the codec chooser (edo-quantize --codec auto:bits=B) on
# four real tables of different kinds, at 4.5, 5, 6 and 8.5 bits a value,
# against the best of llama.cpp's block quantizers at or under the same bits
# (Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, MXFP4 and TQ2_0 from the `gguf` package's
# numpy reference, scripts/bench/llama_quants.py: widths padded to the block
# with zero columns, the padding counted), same run. Both files scored
# alike: cos recall@10 of 1000 query rows against the table (edo-eval, seed
# 0); bits a value from the whole .edo file (edo) or the blocks with their
# scales (GGML). Then the choice's own time on a 1,000,000 x 128 synthetic
# table (make_synthetic.py), from the run's JSON (codec_choice.seconds).
#
# Tables: GloVe 6B 50d and BIGANN SIFT (data-samples/, 10,000 rows each);
# wordllama 0.4.0.post1's token table (PyPI wheel, weights/
# l2_supercat_256.safetensors, 32,000 x 256 fp16: LLaMA-2-vocabulary token
# embeddings distilled from large transformers' input embeddings); and,
# with no real recommender table reachable, table C3 of the Criteo-like
# synthetic model of scripts/make_models.py (capped at 100,000 x 64).
#
# usage: scripts/bench/chooser_bench.sh [BUDGET...]   (needs PyPI for gguf and wordllama; ~15 minutes on 2 cores)
set -euo pipefail
cd "$(dirname "$0")/../.."
B="${EDO_BUILD_DIR:-build}"
budgets=("$@")
[ ${#budgets[@]} -gt 0 ] || budgets=(4.5 5 6 8.5)
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
venv="${EDO_GGUF_VENV:-${TMPDIR:-/tmp}/edo-gguf-venv}"
if [ ! -x "$venv/bin/python" ] || ! "$venv/bin/python" -c 'import gguf' 2>/dev/null; then
  /usr/bin/python3 -m venv --system-site-packages "$venv"
  "$venv/bin/pip" install -q 'gguf==0.19.0' || { echo "cannot install gguf from PyPI: no peer" >&2; exit 1; }
fi
py=/usr/bin/python3

# The tables, as fp32 npy.
$py -c "import numpy as n; n.save('$work/glove.npy', n.load('data-samples/glove.6B.50d.10k.npy').astype('f4'))"
$py -c "import numpy as n; n.save('$work/bigann.npy', n.load('data-samples/bigann10k_base.npy').astype('f4'))"
"$venv/bin/pip" download -q 'wordllama==0.4.0.post1' --no-deps -d "$work/wheel" >/dev/null
$py - "$work" <<'PY'
import glob, json, struct, sys, zipfile
import numpy as np
work = sys.argv[1]
z = zipfile.ZipFile(glob.glob(work + "/wheel/wordllama-*.whl")[0])
data = z.read("wordllama/weights/l2_supercat_256.safetensors")
n = struct.unpack("<Q", data[:8])[0]
meta = json.loads(data[8:8 + n])["embedding.weight"]
assert meta["dtype"] == "F16", meta
begin, end = meta["data_offsets"]
x = np.frombuffer(data[8 + n + begin:8 + n + end], dtype="<f2").reshape(meta["shape"])
np.save(work + "/tokens.npy", x.astype("f4"))
PY
$py scripts/make_models.py criteo "$work/criteo" --cap 100000 --seed 0 >/dev/null
mv "$work/criteo/C3.npy" "$work/criteo_c3.npy"

recall() {  # TABLE DECODED: cos recall@10 of 1000 query rows
  "$B/edo-eval" "$1" "$2" --metric cos --k 10 --queries 1000 --seed 0 --json 2>/dev/null |
    $py -c 'import json,sys; print("%.4f" % json.load(sys.stdin)["recall@10"])'
}

printf '%-12s %6s  %-40s %7s %9s %7s  %-6s %7s %9s\n' table budget "edo's pick" bits recall@10 "choice" llama bits recall@10
for name in glove bigann tokens criteo_c3; do
  t="$work/$name.npy"
  shape=$($py -c "import numpy as n; a = n.load('$t', mmap_mode='r'); print('%dx%d' % a.shape)")
  # llama.cpp's types once per table: NAME BITS RECALL
  "$venv/bin/python" scripts/bench/llama_quants.py "$t" "$work" Q4_0 Q4_1 Q5_0 Q5_1 Q8_0 MXFP4 TQ2_0 |
    while read -r q bits path; do echo "$q $bits $(recall "$t" "$path")"; rm -f "$path"; done >"$work/llama.txt"
  for budget in "${budgets[@]}"; do
    "$B/edo-quantize" "$t" --codec "auto:bits=$budget" -o "$work/e.edo" --json -q >"$work/e.json"
    read -r spec bits secs < <($py -c "
import json; j = json.load(open('$work/e.json'))
print(j['codec'], '%.3f' % j['bits_per_value'], '%.1f' % j['codec_choice']['seconds'])")
    peer=$(awk -v b="$budget" '$2 <= b + 1e-9 { if ($3 > best) { best = $3; line = $1 " " sprintf("%.3f", $2) " " $3 } }
      END { print (line == "" ? "none - -" : line) }' "$work/llama.txt")
    printf '%-12s %6s  %-40s %7s %9s %6ss  %-6s %7s %9s\n' "$name($shape)" "$budget" "$spec" "$bits" \
      "$(recall "$t" "$work/e.edo")" "$secs" $peer
  done
done

# The choice's time on 1M x 128 (the budget filters before any trial).
$py scripts/bench/make_synthetic.py "$work/big.npy" 1000000 128 0
for budget in 4.5 8.5; do
  /usr/bin/time -f '%e %M' -o "$work/time.txt" \
    "$B/edo-quantize" "$work/big.npy" --codec "auto:bits=$budget" -o "$work/big.edo" --json -q >"$work/big.json"
  $py -c "
import json; c = json.load(open('$work/big.json'))['codec_choice']
tried = sum(r['outcome'] == 'tried' for r in c['candidates'])
print('1000000x128 auto:bits=$budget: chose %s in %.1f s (%d of %d candidates tried); whole run %s s, peak RSS %s KB'
      % (c['chosen'], c['seconds'], tried, len(c['candidates']), *open('$work/time.txt').read().split()))"
done
