#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The main job, end to end on the bundled sample (GloVe 50d, the 10k most
# frequent words, in frequency order): install and build, then profile the
# table, plan tiers under an accuracy budget, pack, evaluate (with word
# neighbours before and after), look up a few words through the reader
# library, decode the file, and write an HTML report; then a model of three
# tables in one file (its path is printed last). Under a minute on a 2-core
# machine once built.
# Outputs go to $EDO_DEMO_DIR (default: a new temporary directory).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/bootstrap.sh
scripts/build.sh
build="${EDO_BUILD_DIR:-build}"
table=data-samples/glove.6B.50d.10k.npy
vocab=data-samples/glove.6B.50d.10k.vocab.txt
out="${EDO_DEMO_DIR:-$(mktemp -d)}"
mkdir -p "$out"
step() { printf '\n== %s\n' "$*"; }

# Lookup counts: rows are in frequency order, so Zipf's law (count ~ 1/(rank+1)) stands in for real logs.
awk 'BEGIN { for (i = 0; i < 10000; i++) printf "%d %.9g\n", i, 1e6 / (i + 1) }' >"$out/counts.txt"

step "1. profile: what is in the table, where its bytes would go, how skewed the lookups are"
"$build/edo-profile" "$table" --freq "$out/counts.txt" --quiet

step "2. plan: the smallest tiering that keeps access-weighted recall@10 >= 0.98"
# The scalar codecs only, to stay under a minute: without --plan-codecs the
# planner also tries PQ at three code sizes, which costs ~30 s of training here.
"$build/edo-profile" "$table" --freq "$out/counts.txt" --quiet --plan --budget 'recall@10>=0.98' \
  --plan-codecs fp16 --plan-codecs int8 --plan-codecs int4 --plan-codecs int2 \
  --plan-config "$out/plan.json" | sed -n '/^plan:/,/^  written/p'

step "3. pack with that plan, and evaluate the file (overall, per tier, access-weighted, bytes per residency)"
"$build/edo-pack" "$table" -o "$out/glove.edo" --freq "$out/counts.txt" --config "$out/plan.json" --quiet \
  --eval --k 1,10 --gate 'w.recall@10>=0.98' --report-md "$out/report.md"

step "4. word neighbours before and after, from the packed file"
"$build/edo-eval" "$table" "$out/glove.edo" --k 10 --show-neighbours 6 --vocab "$vocab" \
  --probe king --probe paris --probe computer | sed -n '/^  king$/,$p'

step "5. look up a few words through the reader library (apps/example_lookup.cpp)"
ids=()
for word in the king queen paris music; do
  ids+=("$(($(grep -nxm1 "$word" "$vocab" | cut -d: -f1) - 1))")
done
echo "ids of the king queen paris music: ${ids[*]}"
"$build/example_lookup" "$out/glove.edo" "${ids[@]}" | cut -c1-110
echo "the same rows from the shell (edo-lookup), with the tiers that served them:"
printf '%s\n' "${ids[@]}" | "$build/edo-lookup" "$out/glove.edo" --ids - --format text --with-ids --stats | cut -c1-110

step "6. decode the whole file back to float32"
"$build/edo-unpack" "$out/glove.edo" -o "$out/glove.decoded.npy" --quiet
step "7. a report to look at: charts of the packed file against fp32, per tier, per frequency bucket, with word tasks"
"$build/edo-eval" "$table" "$out/glove.edo" --k 1,10 --eval-freq "$out/counts.txt" --vocab "$vocab" \
  --analogies data-samples/questions-words.txt --similarity data-samples/wordsim353.tsv \
  --report-html "$out/report.html" --report-md "$out/report.md" |
  grep -E '^  (metric|recall@10|lookups|analogy.3cosadd|sim.wordsim353.rho) '
step "8. a model: GloVe's words and BIGANN's descriptors (and a tiny table) in one safetensors, one run, one file"
/usr/bin/python3 scripts/make_models.py sample data-samples "$out/model.safetensors"
"$build/edo-quantize" "$out/model.safetensors" -o "$out/model.edo" --codec int8
"$build/edo-eval" "$out/model.safetensors" "$out/model.edo" --k 10 --gate 'emb.words.weight:recall@10>=0.95' |
  grep -E '^  *(table|emb\.|model|gate)'
echo "demo: files in $out (plan.json, glove.edo, report.md, report.html, glove.decoded.npy, model.edo)"
echo "demo: open $out/report.html in a browser"
