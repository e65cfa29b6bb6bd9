#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# --device on every tool (docs/CLI.md, "Conventions"): each lists it in
# --help and refuses a device it does not know (exit 2); without a GPU,
# --device cuda exits 1 with the same one line on every tool, prints
# nothing on stdout and leaves no output, never falling back to the CPU.
# edo-lookup serves on the CPU unless asked: auto and cpu give the same
# rows without a GPU, and on a GPU --device cuda (Reader::lookup_device)
# gives the CPU's rows.
# usage: device_flag.sh BUILD_DIR SOURCE_DIR
set -uo pipefail
source "$(dirname "$0")/checks.bash" "$@"  # build, src, work (removed at exit), expect, fail, err_has
cd "$work" || exit 1
cp "$src/data-samples/glove.6B.50d.10k.npy" g.npy
"$build/edo-quantize" g.npy -o g8.edo --codec int8 -q >/dev/null || fail "fixture"
"$build/edo-pack" g.npy -o r.edo --tier hot:rows=10%:int8:gpu --tier cold:rest:int4 -q >/dev/null || fail "fixture"
printf '0\n5\n9\n' >ids.txt
seq 0 1999 >ids2k.txt
gpu=0
if command -v nvidia-smi >/dev/null && nvidia-smi -L >/dev/null 2>&1; then gpu=1; fi

# tool -> one ordinary run writing out.* (when it writes), to which --device is added.
declare -A runs=(
  [edo-profile]="g.npy"
  [edo-quantize]="g.npy -o out.edo --codec int4"
  [edo-pack]="g.npy -o out.edo --tier hot:rows=10%:fp16 --tier cold:rest:int8"
  [edo-sparsify]="g.npy -o out.edo --density 0.5 --eval --queries 100"
  [edo-hash]="g.npy -o out.edo --scheme hash:buckets=500"
  [edo-unpack]="g8.edo -o out.npy"
  [edo-lookup]="g8.edo --ids ids.txt -o out.npy"
  [edo-eval]="g.npy g8.edo --queries 200"
)
for tool in "${!runs[@]}"; do
  expect 0 "$build/$tool" --help
  grep -qe "--device" "$work/out" || fail "$tool --help has no --device"
  # shellcheck disable=SC2086
  expect 2 "$build/$tool" ${runs[$tool]} --device gpu
  grep -q "^$tool: error: --device" "$work/err" || fail "$tool --device gpu: $(cat "$work/err")"
  [ "$gpu" = 1 ] && continue
  rm -f out.edo out.npy
  # shellcheck disable=SC2086
  expect 1 "$build/$tool" ${runs[$tool]} --device cuda
  err_has "$tool: error: --device cuda: "
  grep -qE "no CUDA GPU|without CUDA" "$work/err" || fail "$tool --device cuda: reason missing: $(cat "$work/err")"
  [ ! -s "$work/out" ] || fail "$tool --device cuda printed on stdout: $(head -c 200 "$work/out")"
  [ ! -e out.edo ] && [ ! -e out.npy ] || fail "$tool --device cuda left an output"
done

# edo-lookup: cpu by default; with cuda, rows and pooled bags (--offsets) are
# served on the GPU, as the CPU serves them bit for bit.
L="$build/edo-lookup"
expect 0 "$L" r.edo --ids ids2k.txt -o cpu.npy -q
expect 0 "$L" r.edo --ids ids2k.txt -o dflt.npy --device cpu -q
cmp -s cpu.npy dflt.npy || fail "edo-lookup: --device cpu differs from the default"
expect 0 "$L" r.edo --ids ids2k.txt -o auto.npy --device auto --batch 500 -q
cmp -s cpu.npy auto.npy || fail "edo-lookup: --device auto differs from cpu"
if [ "$gpu" = 0 ]; then
  expect 1 "$L" r.edo --ids ids.txt --offsets ids.txt -o bags.npy --device cuda
  err_has "--device cuda: "
  expect 0 "$L" r.edo --ids ids2k.txt -o s.npy --stats --device auto -q
  grep -q "gpu (served from host)" "$work/err" || fail "edo-lookup --stats: a gpu tier not served from host"
else
  expect 0 "$L" r.edo --ids ids2k.txt -o gpu.npy --device cuda --batch 500 -q
  cmp -s cpu.npy gpu.npy || fail "edo-lookup: --device cuda rows differ from the CPU's"
  expect 0 "$L" r.edo --ids ids2k.txt -o s.npy --json --device cuda
  grep -q '"served_from": "gpu"' "$work/out" || fail "edo-lookup --device cuda --json: no tier served from gpu"
  expect 0 "$L" r.edo --ids ids.txt --offsets ids.txt -o bags.npy --device cuda -q
  expect 0 "$L" r.edo --ids ids.txt --offsets ids.txt -o cpu_bags.npy -q
  cmp -s bags.npy cpu_bags.npy || fail "edo-lookup --offsets --device cuda: bags differ from the CPU's"
fi

if [ "$failures" -ne 0 ]; then echo "$failures check(s) failed"; exit 1; fi
echo "all --device checks passed"
