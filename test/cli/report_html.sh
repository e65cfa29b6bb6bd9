#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# --report-html wherever a tool evaluates: edo-pack/-quantize --eval, edo-eval
# (one file, with words; several files), the sweeps, edo-profile --plan. Each
# page is self-contained (no network, no scripts) and holds one <svg> per
# chart it has data for; the Markdown report links to it.
#   report_html.sh BUILD_DIR SOURCE_DIR
set -uo pipefail
source "$(dirname "$0")/checks.bash" "$@"  # build, src, work (removed at exit), expect, fail, err_has
glove="$src/data-samples/glove.6B.50d.10k.npy"
vocab="$src/data-samples/glove.6B.50d.10k.vocab.txt"
awk 'BEGIN { for (i = 0; i < 10000; i++) printf "%d %.9g\n", i, 1e6 / (i + 1) }' >"$work/counts.txt"
q=(--queries 100 --k 1,10)

# page FILE N ID...: FILE is an offline page with N <svg>s, these ids among them.
page() {
  local file="$1" n="$2"; shift 2
  [ -s "$file" ] || { fail "$file not written"; return; }
  grep -qiE 'https?:|<script|<link| src=|url\(' "$file" && fail "$file reaches outside itself"
  local svgs; svgs=$(grep -o '<svg ' "$file" | wc -l)
  [ "$svgs" = "$n" ] || fail "$file has $svgs <svg>, want $n"
  for id in "$@"; do grep -q "<svg id=\"$id\"" "$file" || fail "$file lacks chart $id"; done
}

expect 0 "$build/edo-pack" "$glove" -o "$work/p.edo" --freq "$work/counts.txt" --tier hot:rows=10%:fp16 \
  --tier warm:rows=40%:int8 --tier cold:rest:int4 --quiet --eval "${q[@]}" --report-html "$work/p.html" \
  --report-md "$work/p.md"
page "$work/p.html" 4 recall-bytes tier-bytes cos-hist buckets
grep -q "Charts: \[p.html\](p.html)" "$work/p.md" || fail "Markdown does not link the HTML: $(tail -3 "$work/p.md")"
grep -q "| metric | all | weighted | hot | warm | cold | head | torso | tail |" "$work/p.md" ||
  fail "Markdown table lacks the tier and bucket columns: $(head -5 "$work/p.md")"

# No frequencies: no buckets chart.
expect 0 "$build/edo-quantize" "$glove" -o "$work/q.edo" --codec int4 --quiet --eval "${q[@]}" \
  --report-html "$work/q.html"
page "$work/q.html" 3 recall-bytes tier-bytes cos-hist

# edo-eval with a vocabulary and word tasks: neighbours and the analogy point.
expect 0 "$build/edo-eval" "$glove" "$work/q.edo" "${q[@]}" --vocab "$vocab" --analogies \
  "$src/data-samples/questions-words.txt" --report-html "$work/e.html"
page "$work/e.html" 3 recall-bytes tier-bytes cos-hist
grep -q "Neighbours before and after" "$work/e.html" || fail "no neighbour table"
grep -q "<td class=\"name\">king</td>" "$work/e.html" || fail "king is not a probe"
grep -q "analogy" "$work/e.html" || fail "no analogy figure"

# Several files: one chart, a row each.
expect 0 "$build/edo-eval" "$glove" "$work/q.edo" "$work/p.edo" "${q[@]}" --report-html "$work/c.html"
page "$work/c.html" 1 recall-bytes
grep -q "q.edo" "$work/c.html" && grep -q "p.edo" "$work/c.html" || fail "compared files missing from the page"

# A sweep writes the page and nothing else.
expect 0 "$build/edo-quantize" "$glove" --sweep 'int8;int4;int2' "${q[@]}" --report-html "$work/s.html" --json
page "$work/s.html" 1 recall-bytes
[ "$(grep -c '<circle' "$work/s.html")" -ge 3 ] || fail "the sweep's three codecs are not all drawn"

# The planner's candidates.
expect 0 "$build/edo-profile" "$glove" --freq "$work/counts.txt" --quiet --plan --budget 'recall@10>=0.95' \
  --plan-codecs int8 --plan-codecs int4 --plan-sample-rows 3000 --plan-queries 200 --report-html "$work/plan.html"
page "$work/plan.html" 1 recall-bytes
grep -q "(chosen)" "$work/plan.html" || fail "the chosen plan is not marked"

# Bad use: --report-html without --plan; a page over an input.
expect 2 "$build/edo-profile" "$glove" --report-html "$work/x.html"
err_has "go with --plan"
expect 2 "$build/edo-eval" "$glove" "$work/q.edo" --report-html "$glove"
err_has "would overwrite the input"
[ "$failures" = 0 ] || exit 1
