#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The model-output report (python -m edo.check, docs/EVAL.md "Model outputs") on
# the tests' small real transformer (test/python/tiny_encoder.py: one encoder
# layer over GloVe's frozen 10,000 x 50 word vectors, trained on the analogy
# questions): its tables compressed at int8, at auto:bits=4.5 (the chooser) and
# under the joint budget ratio>=8, each checked on 1,000 texts (analogy lines)
# with SimLex-999 as labelled pairs. Prints a row per file: output cosine (mean,
# p1, min), neighbours kept (recall@10 among the inputs), SimLex rho before and
# after, embedding bytes before and after, and the seconds of the report beyond
# the model's two forward passes. ratio8.freq is the same budget told each
# table's lookups on the texts (python -m edo.check --write-freq, then edo-pack --freq-dir): the position table is read by
# every text, which a plan without counts (one lookup a row) cannot know;
# those counts come from the very inputs checked (texts and pairs), the best
# case. ratio8.other takes its counts from 1,000 other analogy lines and no
# pairs: traffic that is not the test's. Needs PyTorch (python3-torch).
#
# usage: scripts/bench/check_bench.sh   (about a minute)
set -euo pipefail
cd "$(dirname "$0")/../.."
B="$(cd "${EDO_BUILD_DIR:-build}" && pwd)"
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
py=${PYTHON:-/usr/bin/python3}
export PYTHONPATH="$B/python" EDO_EVAL="$B/edo-eval" EDO_SOURCE_DIR="$PWD" TINY_ENCODER="$work/state.pt"
PYTHONPATH="$B/python:test/python:scripts" $py - "$work" <<'PY'
import sys
from pathlib import Path
import tiny_encoder
from make_models import write_safetensors
w = Path(sys.argv[1])
model = tiny_encoder.train()
tiny_encoder.save(model, w / "state.pt")
write_safetensors(w / "model.safetensors", list(tiny_encoder.tables(model).items()))
texts = tiny_encoder.questions()[::19][:1000]
(w / "texts.txt").write_text("\n".join(texts) + "\n")
(w / "other.txt").write_text("\n".join(tiny_encoder.questions()[9::19][:1000]) + "\n")
PY
# Each table's lookups on the texts, for a joint budget that knows the position table is read by every text.
$py -m edo.check test/python/tiny_encoder.py:load --texts "$work/texts.txt" \
  --pairs data-samples/simlex999.txt --write-freq "$work/freq" 2>/dev/null
$py -m edo.check test/python/tiny_encoder.py:load --texts "$work/other.txt" --write-freq "$work/freq.other" 2>/dev/null
"$B/edo-quantize" "$work/model.safetensors" -o "$work/int8.edo" --codec int8 -q >/dev/null
"$B/edo-quantize" "$work/model.safetensors" -o "$work/auto4.5.edo" --codec auto:bits=4.5 -q >/dev/null
"$B/edo-pack" "$work/model.safetensors" -o "$work/ratio8.edo" --budget 'ratio>=8' -q > "$work/ratio8.plan.txt"
"$B/edo-pack" "$work/model.safetensors" -o "$work/ratio8.freq.edo" --budget 'ratio>=8' --freq-dir "$work/freq" -q \
  > "$work/ratio8.freq.plan.txt"
"$B/edo-pack" "$work/model.safetensors" -o "$work/ratio8.other.edo" --budget 'ratio>=8' --freq-dir "$work/freq.other" \
  -q > "$work/ratio8.other.plan.txt"
printf '%-12s %9s %9s %9s %9s %8s %8s %9s %9s %8s\n' file cos.mean cos.p1 cos.min recall@10 rho.orig rho \
  freed.MiB file.MiB report.s
for f in int8 auto4.5 ratio8 ratio8.freq ratio8.other; do
  $py -m edo.check test/python/tiny_encoder.py:load "$work/$f.edo" --texts "$work/texts.txt" \
    --pairs data-samples/simlex999.txt --json > "$work/$f.json"
  $py - "$f" "$work/$f.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[2])); m = r["metrics"]; s = r["seconds"]; mib = 1 << 20
print(f"{sys.argv[1]:<12} {m['output.cos.mean']:9.6f} {m['output.cos.p1']:9.6f} {m['output.cos.min']:9.6f} "
      f"{m['output.recall@10']:9.4f} {m['output.sim.simlex999.rho.original']:8.4f} {m['output.sim.simlex999.rho']:8.4f} "
      f"{(r['param_bytes_before'] - r['param_bytes_after']) / mib:9.3f} {r['file_bytes'] / mib:9.3f} "
      f"{s['swap'] + s['compare']:8.2f}")
PY
done
