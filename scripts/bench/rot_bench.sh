#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The rot transform against the same codec unrotated: bytes a row, MSE and
# cos recall@10 over 1000 query rows (edo-eval, seed 0), on GloVe 50d (a
# trained embedding with a few outlying dimensions) and the BIGANN sample
# (SIFT: non-negative whole numbers, many zeros); then the 65,536 x 768
# synthetic table's MSE and the rotation's training and encoding seconds.
#
# usage: scripts/bench/rot_bench.sh   (about a minute)
set -euo pipefail
cd "$(dirname "$0")/../.."
B="${EDO_BUILD_DIR:-build}"
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
export OMP_WAIT_POLICY=passive
field() { /usr/bin/python3 -c "import json,sys; j=json.load(open(sys.argv[1])); v=j; [v := v[k] for k in sys.argv[2].split('/')]; print(v)" "$@"; }
row() {  # TABLE CODEC
  "$B/edo-quantize" "$1" -o "$work/q.edo" --codec "$2" --eval --k 10 --metric cos --json -q > "$work/q.json"
  printf '| %s | %s | %s | %.4g | %.4f | %.3f | %.3f |\n' "$(basename "$1" .npy)" "$2" \
    "$(field "$work/q.json" code_size)" "$(field "$work/q.json" mse)" "$(field "$work/q.json" eval/recall@10)" \
    "$(field "$work/q.json" train_seconds)" "$(field "$work/q.json" encode_seconds)"
}
echo "| table | codec | bytes a row | MSE | recall@10 | train s | encode s |"
echo "| --- | --- | ---: | ---: | ---: | ---: | ---: |"
for t in data-samples/glove.6B.50d.10k.npy ../shared/data/bigann10k_base.npy; do
  for c in int4:scale=fp16 int5:scale=fp16 int6:scale=fp16 int8:scale=fp16 int4:group=32,scale=fp16; do
    [ "$c" = int4:group=32,scale=fp16 ] && [[ "$t" == *glove* ]] && c=int4:group=25,scale=fp16
    row "$t" "$c"
    row "$t" "rot,$c"
  done
done
/usr/bin/python3 scripts/bench/make_synthetic.py "$work/s768.npy" 65536 768 768 >/dev/null
for c in int4:scale=fp16 rot,int4:scale=fp16; do
  "$B/edo-quantize" "$work/s768.npy" -o "$work/q.edo" --codec "$c" --json -q > "$work/q.json"
  printf '| s768 | %s | %s | %.4g | - | %.3f | %.3f |\n' "$c" "$(field "$work/q.json" code_size)" \
    "$(field "$work/q.json" mse)" "$(field "$work/q.json" train_seconds)" "$(field "$work/q.json" encode_seconds)"
done
