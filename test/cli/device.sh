#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# --device on the tools that compute (edo-eval's k-NN, edo-profile's PCA,
# edo-unpack's decoding; edo-quantize's and edo-pack's encoding elsewhere):
# cpu always works; cuda runs on a GPU and agrees with the CPU, and without
# one exits 1 with one line saying why, never falling back to the CPU.
# usage: device.sh BUILD_DIR SOURCE_DIR
set -uo pipefail
build="$1"; src="$2"
data="$src/data-samples/glove.6B.50d.10k.npy"
work="$(mktemp -d)"; trap 'rm -rf "$work"' EXIT
source "$(dirname "$0")/checks.bash"

P="$build/edo-profile"; Q="$build/edo-quantize"; E="$build/edo-eval"
gpu=0
if command -v nvidia-smi >/dev/null && nvidia-smi -L >/dev/null 2>&1; then gpu=1; fi

for t in "$P" "$E"; do
  expect 0 "$t" --help
  grep -q -- "--device TEXT:{auto,cpu,cuda}" "$work/out" || fail "$t --help lacks --device"
  grep -q "auto (GPU when present), cpu or cuda (an error without a GPU)" "$work/out" || fail "$t --device help differs"
  expect 2 "$t" "$data" --device gpu
done
expect 0 "$Q" "$data" -o "$work/q.edo" --codec int8 --device cpu -q

# --device cpu works, and is what auto means without a GPU.
expect 0 "$P" "$data" --device cpu --json; cp "$work/out" "$work/p_cpu.json"
expect 0 "$E" "$data" "$work/q.edo" --device cpu --json --queries 200; cp "$work/out" "$work/e_cpu.json"
grep -q '"recall@10"' "$work/e_cpu.json" || fail "edo-eval --device cpu printed no recall"
if [ "$gpu" = 0 ]; then
  expect 0 "$P" "$data" --json
  cmp -s "$work/out" "$work/p_cpu.json" || fail "edo-profile: auto differs from cpu without a GPU"
  expect 0 "$E" "$data" "$work/q.edo" --json --queries 200
  cmp -s "$work/out" "$work/e_cpu.json" || fail "edo-eval: auto differs from cpu without a GPU"
  # cuda without a GPU: exit 1, one line naming the reason, nothing on stdout.
  for cmd in "$P $data" "$E $data $work/q.edo"; do
    # shellcheck disable=SC2086
    expect 1 $cmd --device cuda
    err_has "--device cuda"
    grep -qE "no CUDA GPU|without CUDA" "$work/err" || fail "$cmd --device cuda: reason missing: $(cat "$work/err")"
    [ ! -s "$work/out" ] || fail "$cmd --device cuda printed a report"
  done
  expect 1 "$E" "$data" "$work/q.edo" --device cuda --report-json "$work/r.json"
  [ ! -e "$work/r.json" ] || fail "edo-eval --device cuda wrote a report"
else
  # On a GPU: the same profile up to the PCA fractions' last bits, and recalls within 0.002.
  expect 0 "$P" "$data" --device cuda --json; cp "$work/out" "$work/p_gpu.json"
  expect 0 "$E" "$data" "$work/q.edo" --device cuda --json --queries 200; cp "$work/out" "$work/e_gpu.json"
  /usr/bin/python3 - "$work" <<'PY' || fail "GPU and CPU reports disagree"
import json, sys
w = sys.argv[1]
pc, pg = (json.load(open(f"{w}/p_{d}.json")) for d in ("cpu", "gpu"))
assert pc["pca"]["dims_for_variance"] == pg["pca"]["dims_for_variance"], (pc["pca"], pg["pca"])
assert all(abs(a - b) <= 1e-12 for a, b in zip(pc["pca"]["explained"], pg["pca"]["explained"]))
for key in ("values", "row_norms", "duplicates", "footprints"):
    assert pc[key] == pg[key], key
ec, eg = (json.load(open(f"{w}/e_{d}.json")) for d in ("cpu", "gpu"))
for k, v in ec.items():
    if k.startswith(("recall", "1-recall", "recall_drop")):
        assert abs(v - eg[k]) <= 0.002, (k, v, eg[k])
    elif isinstance(v, float):
        assert v == eg[k], (k, v, eg[k])
PY
fi

# edo-unpack decodes on the CPU by default (decoding waits on the file, not
# on arithmetic); --device cuda decodes on the GPU, to the same bytes.
U="$build/edo-unpack"
expect 0 "$U" --help
grep -q -- "--device" "$work/out" || fail "edo-unpack --help lacks --device"
"$build/edo-pack" "$data" -o "$work/p.edo" --tier hot:rows=10%:fp16 --tier cold:rest:int4 -q >/dev/null ||
  fail "edo-pack failed"
for f in q p; do
  expect 0 "$U" "$work/$f.edo" -o "$work/$f.cpu.npy" --device cpu -q
  expect 0 "$U" "$work/$f.edo" -o "$work/$f.auto.npy" -q
  cmp -s "$work/$f.cpu.npy" "$work/$f.auto.npy" || fail "edo-unpack: the default differs from --device cpu"
  if [ "$gpu" = 0 ]; then
    expect 1 "$U" "$work/$f.edo" -o "$work/$f.gpu.npy" --device cuda -q
    grep -qE "no CUDA GPU|without CUDA" "$work/err" || fail "edo-unpack --device cuda: reason missing"
    [ ! -e "$work/$f.gpu.npy" ] || fail "edo-unpack --device cuda left an output"
  else
    expect 0 "$U" "$work/$f.edo" -o "$work/$f.gpu.npy" --device cuda -q
    cmp -s "$work/$f.cpu.npy" "$work/$f.gpu.npy" || fail "edo-unpack: GPU rows differ from the CPU's"
  fi
done

if [ "$failures" -ne 0 ]; then echo "$failures check(s) failed"; exit 1; fi
echo "all device checks passed"
