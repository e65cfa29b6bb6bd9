#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The conventions docs/CLI.md promises for every tool hold on every tool: each
# takes --help, --version, --threads, -q/--quiet and --json (and --device
# where it computes), a run of each with them gives valid JSON on stdout and
# nothing on stderr, and progress (training passes included) never goes to a
# stderr that is not a terminal.
#   shared_flags.sh BUILD_DIR SOURCE_DIR
set -uo pipefail
source "$(dirname "$0")/checks.bash" "$@"  # build, src, work (removed at exit), expect, fail, err_has
py=/usr/bin/python3
cd "$work" || exit 1
cp "$src/data-samples/glove.6B.50d.10k.npy" g.npy
"$build/edo-quantize" g.npy -o g8.edo --codec int8 -q >/dev/null || fail "fixture"
printf '0\n5\n9\n' >ids.txt

# tool -> one ordinary run (its output under $work), to which the shared flags are added.
declare -A runs=(
  [edo-profile]="g.npy"
  [edo-quantize]="g.npy -o q.edo --codec int4"
  [edo-pack]="g.npy -o p.edo --tier hot:rows=10%:fp16 --tier cold:rest:int8"
  [edo-sparsify]="g.npy -o s.edo --density 0.5"
  [edo-hash]="g.npy -o h.edo --scheme hash:buckets=500"
  [edo-unpack]="g8.edo -o u.npy"
  [edo-lookup]="g8.edo --ids ids.txt -o l.npy"
  [edo-eval]="g.npy g8.edo --queries 200"
)
for tool in "${!runs[@]}"; do
  help="$("$build/$tool" --help)"
  for flag in --help --version --threads --quiet --json; do
    grep -qe "$flag" <<<"$help" || fail "$tool --help has no $flag"
  done
  grep -qe "--device" <<<"$help" || fail "$tool --help has no --device"
  expect 0 "$build/$tool" --version
  grep -q "^$tool " "$work/out" || fail "$tool --version: $(cat "$work/out")"
  # shellcheck disable=SC2086
  expect 0 "$build/$tool" ${runs[$tool]} --threads 1 --quiet --json
  $py -c "import json,sys; json.load(open(sys.argv[1]))" "$work/out" 2>/dev/null ||
    fail "$tool --json: stdout is not JSON: $(head -c 200 "$work/out")"
  [ -s "$work/err" ] && fail "$tool --quiet wrote to stderr: $(head -3 "$work/err")"
done
# Training progress (pq's k-means, a hash fit's iterations) stays off a stderr that is a file.
expect 0 "$build/edo-quantize" g.npy -o pq.edo --codec pq:m=10
[ -s "$work/err" ] && fail "training progress went to a log: $(head -3 "$work/err")"
expect 0 "$build/edo-hash" g.npy -o hk.edo --scheme hash:buckets=500,k=2
[ -s "$work/err" ] && fail "fit progress went to a log: $(head -3 "$work/err")"
# The size a tool prints is the file's: with --eval the file gains its evaluation record, and the
# summary says how big the file on disk is.
expect 0 "$build/edo-pack" g.npy -o ev.edo --tier hot:rows=10%:fp16 --tier cold:rest:int4 --eval --queries 200 --json -q
$py -c "
import json, os, sys
j = json.load(open(sys.argv[1]))
assert j['file_bytes_on_disk'] == os.path.getsize('ev.edo'), (j['file_bytes_on_disk'], os.path.getsize('ev.edo'))" \
  "$work/out" || fail "the size printed with --eval is not the file's"
expect 0 "$build/edo-quantize" g.npy -o ev.edo --codec int4 --eval --queries 200 -q
grep -q "on disk    $(stat -c %s ev.edo) bytes" "$work/out" || fail "edo-quantize --eval: $(grep 'on disk' "$work/out")"
# --json where stdout carries the rows is a usage error.
expect 2 "$build/edo-unpack" g8.edo -o - --json; err_has "stdout carries the rows"
expect 2 "$build/edo-lookup" g8.edo --ids ids.txt --json; err_has "stdout carries the rows"
echo "shared flags: $failures failure(s)"
[ "$failures" -eq 0 ]
