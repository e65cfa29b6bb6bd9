#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# edo-quantize --sweep: several codecs in one run, nothing written; each
# point's bytes are those of the file edo-quantize writes for that codec;
# the text table is smallest first with the Pareto front marked; bad items
# and -o are usage errors.
#   quantize_sweep.sh BUILD_DIR SOURCE_DIR
set -uo pipefail
source "$(dirname "$0")/checks.bash" "$@"  # build, src, work (removed at exit), expect, fail, err_has
glove="$src/data-samples/glove.6B.50d.10k.npy"
Q="$build/edo-quantize"
quick=(--queries 100 --k 10)

expect 0 "$Q" "$glove" --sweep 'int8;int4;fp16;int4:group=25' "${quick[@]}" --json
cp "$work/out" "$work/sweep.json"
for codec in int8 int4 fp16 int4:group=25; do
  expect 0 "$Q" "$glove" -o "$work/one.edo" --codec "$codec" -q
  bytes=$(stat -c %s "$work/one.edo")
  /usr/bin/python3 - "$work/sweep.json" "$codec" "$bytes" <<'PY' || fail "$codec: sweep bytes differ from the file"
import json, sys
points = {p['spec']: p for p in json.load(open(sys.argv[1]))['sweep']}
assert points[sys.argv[2]]['file_bytes'] == int(sys.argv[3]), (points[sys.argv[2]]['file_bytes'], sys.argv[3])
PY
done
expect 0 "$Q" "$glove" --sweep 'fp16;int4;int8' "${quick[@]}"
order=$(awk 'NR > 2 { print $1 }' "$work/out" | tr '\n' ' ')
[ "$order" = "int4 int8 fp16 " ] || fail "not smallest first: '$order'"
[ "$(grep -c ' \* ' "$work/out")" = 3 ] || fail "the front: $(cat "$work/out")"
[ -z "$(ls "$work" | grep -v 'out\|err\|sweep.json\|one.edo')" ] || fail "the sweep left files: $(ls "$work")"

expect 2 "$Q" "$glove" --sweep 'int8;nope'
err_has "unknown codec 'nope'"
expect 2 "$Q" "$glove" --sweep 'int8' -o "$work/x.edo"
err_has "--sweep writes nothing"
expect 2 "$Q" "$glove" --sweep 'int8;;int4'

[ "$failures" = 0 ] || { echo "$failures failure(s)"; exit 1; }
echo "quantize_sweep: ok"
