#!/usr/bin/env bash
# The main job on the bundled sample: install, build, then profile the GloVe
# table, compress it, measure what that cost, and show word neighbours before
# and after. Outputs go to ${EDO_DEMO_DIR:-/tmp/edo-demo}.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/bootstrap.sh
scripts/build.sh >/dev/null
B="${EDO_BUILD_DIR:-build}"
G=data-samples/glove.6B.50d.10k.npy
V=data-samples/glove.6B.50d.10k.vocab.txt
out="${EDO_DEMO_DIR:-/tmp/edo-demo}"
mkdir -p "$out"
# Zipf lookup counts by frequency rank: GloVe rows are in frequency order.
awk 'BEGIN { for (r = 0; r < 10000; r++) printf "%d %d\n", r, int(1000000 / (r + 1)) }' >"$out/zipf.txt"

step() { printf '\n== %s\n' "$*"; }

step "1. Profile: what is in the table and where its bytes would go"
"$B/edo-profile" "$G" --freq "$out/zipf.txt"

step "2. Quantize to int4 (groups of 32), evaluate inline, gate on recall@10"
"$B/edo-quantize" "$G" -o "$out/glove.int4g32.edo" --codec int4:group=32 --eval --k 1,10 \
  --gate 'recall@10>=0.85' --report-md "$out/report.md"

step "3. Evaluate again from the file, with word neighbours before and after"
"$B/edo-eval" "$G" "$out/glove.int4g32.edo" --k 10 --show-neighbours 6 --vocab "$V" --probe king --probe france

step "4. Inspect and decode the .edo file"
"$B/edo-profile" "$out/glove.int4g32.edo"
"$B/edo-unpack" "$out/glove.int4g32.edo" -o "$out/glove.decoded.npy"
echo "decoded to $out/glove.decoded.npy; Markdown report in $out/report.md"
