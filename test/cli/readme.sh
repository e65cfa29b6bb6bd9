#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# README.md has at most 150 lines, and every example of it runs as written: each ```sh block that calls the
# tools through $B (the tour from the repository's root, as a new user runs
# it; the main job and the conversions from a scratch folder holding
# stand-ins for the files they name: counts.txt, model.safetensors,
# vectors.vec). A block that fails fails the test, with its output.
#   readme.sh BUILD_DIR SOURCE_DIR
set -uo pipefail
source "$(dirname "$0")/checks.bash" "$@"  # build, src, work (removed at exit), expect, fail, err_has
py=/usr/bin/python3
mkdir -p "$work/run" "$work/blocks"
cd "$work/run" || exit 1
G="$src/data-samples/glove.6B.50d.10k.npy"
awk 'BEGIN { for (i = 0; i < 10000; i++) printf "%d %.9g\n", i, 1e6 / (i + 1) }' >counts.txt
$py - "$G" "$src/data-samples/glove.6B.50d.10k.vocab.txt" <<'PY'
import json, struct, sys
import numpy as np
g = np.load(sys.argv[1])[:2000]
words = open(sys.argv[2]).read().split("\n")[:2000]
name = "embeddings.word_embeddings.weight"
hdr = json.dumps({name: {"dtype": "F32", "shape": list(g.shape), "data_offsets": [0, g.nbytes]}}).encode()
hdr += b" " * (-len(hdr) % 8)
open("model.safetensors", "wb").write(struct.pack("<Q", len(hdr)) + hdr + g.tobytes())
with open("vectors.vec", "w") as f:
    f.write(f"{g.shape[0]} {g.shape[1]}\n")
    for w, row in zip(words, g):
        f.write(w + " " + " ".join(repr(float(v)) for v in row) + "\n")
PY
sh_blocks "$src/README.md" "$work/blocks"
ran=0
for block in "$work"/blocks/*.sh; do
  grep -q '\$B/' "$block" || continue  # bootstrap, build and test commands: run by CI itself
  ran=$((ran + 1))
  if grep -q '^B=build' "$block"; then
    # The tour: from the repository's root, with the build the test was given.
    (cd "$src" && TMPDIR="$work" B="$build" bash -eo pipefail <(sed "s#^B=build;#B=$build;#" "$block")) >"$work/out" 2>&1
  else
    (B="$build" G="$G" bash -eo pipefail "$block") >"$work/out" 2>&1
  fi
  code=$?
  [ "$code" = 0 ] || fail "README block $(basename "$block") exited $code: $(tail -5 "$work/out")"
done
[ "$ran" -ge 2 ] || fail "only $ran README blocks found"
# A README that reads in two minutes: at most 150 lines (timings and details live in docs/).
lines=$(wc -l <"$src/README.md")
[ "$lines" -le 150 ] || fail "README.md has $lines lines (at most 150)"
echo "readme: $ran blocks, $failures failure(s)"
[ "$failures" -eq 0 ]
