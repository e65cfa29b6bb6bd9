#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Benchmark (issue 46): one size budget planned jointly over a model's tables
# (edo-pack MODEL --budget 'ratio>=R') against the same ratio on every table,
# on the synthetic recommender of scripts/make_models.py (the 26 Criteo
# cardinalities capped at CAP rows, dim 64, Zipf counts per table), at 4x, 8x
# and 16x, in the same run. Two baselines: the joint planner's own figure for
# every table held to the ratio over the same options (its estimate on the
# sample, "same-ratio est."), and the files a user writes today with one
# codec for every table (edo-quantize MODEL --codec C), the most precise
# that meets the ratio of two families: the scalar codecs (int6, int3 with
# fp16 scales, bin) and tc (the most bits, in quarter bits, whose file
# meets the ratio; tc is the frontier on these tables). Each file is measured by edo-eval against
# the model with the counts: the access-weighted error sum_t s_t E_t (E_t =
# the table's w.rel_fro squared) and the model's w.recall@10; beside them the
# file's ratio and the writing run's wall time and peak RSS (/usr/bin/time).
#
# usage: scripts/bench/joint_budget_bench.sh [CAP] [DIR]    (default 10000, /tmp)
# Needs /usr/bin/python3 with numpy. Everything it writes is removed on exit.
set -euo pipefail
cd "$(dirname "$0")/../.."
cap="${1:-10000}"; dir="${2:-/tmp}"
build="${EDO_BUILD_DIR:-build}"
P="$build/edo-pack"; Q="$build/edo-quantize"; E="$build/edo-eval"
[ -x "$P" ] || { echo "build first: scripts/build.sh" >&2; exit 1; }
work=$(mktemp -d "$dir/edo-joint-bench.XXXXXX")
trap 'rm -rf "$work"' EXIT
echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)," \
  "$(awk '/^MemTotal/ {printf "%d GiB RAM", $2 / 1048576}' /proc/meminfo), load average $(cut -d' ' -f1 /proc/loadavg)"
/usr/bin/python3 scripts/make_models.py criteo "$work/m" --cap "$cap" --freq-dir "$work/freq" >/dev/null
bytes=$(du -cb "$work"/m/*.npy | tail -1 | cut -f1)
echo "model: 26 tables, $(( bytes / 1000 )) kB of fp32 (cap $cap rows a table), counts per table"

# measure FILE: "error w.recall@10 ratio" of FILE against the model, weighted by the counts.
measure() {
  "$E" "$work/m" "$1" --freq-dir "$work/freq" --json -q >"$work/eval.json" 2>/dev/null || true
  /usr/bin/python3 - "$work/eval.json" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
err = sum(s * j["tables"][t]["w.rel_fro"] ** 2 for t, s in j["shares"].items())
print(f'{err:.3g} {j["model"]["w.recall@10"]:.4f} {j["model"]["ratio"]:.2f}')
PY
}
printf '%-6s %-34s %10s %12s %7s %8s %9s\n' budget file "sum s_t E_t" w.recall@10 ratio "wall s" "RSS MB"
# one_codec CODEC: writes u.edo with CODEC for every table, prints its row.
one_codec() {
  /usr/bin/time -f '%e %M' -o "$work/t" "$Q" "$work/m" -o "$work/u.edo" --codec "$1" -q >/dev/null
  read -r wall rss <"$work/t"
  read -r e w x <<<"$(measure "$work/u.edo")"
  printf '%-6s %-34s %10s %12s %7s %8s %9d\n' "" "one codec: $1" "$e" "$w" "$x" "$wall" $((rss / 1024))
}
for r in 4 8 16; do
  case $r in 4) codec=int6:scale=fp16 ;; 8) codec=int3:scale=fp16 ;; 16) codec=bin ;; esac
  /usr/bin/time -f '%e %M' -o "$work/t" "$P" "$work/m" -o "$work/j.edo" --freq-dir "$work/freq" \
    --budget "ratio>=$r" --json -q >"$work/j.json"
  read -r wall rss <"$work/t"
  est=$(/usr/bin/python3 -c "import json; j = json.load(open('$work/j.json'))['joint_plan']; print(f'{j[\"weighted_error\"]:.3g} {j[\"same_ratio_error\"]:.3g}')")
  read -r e w x <<<"$(measure "$work/j.edo")"
  printf '%-6s %-34s %10s %12s %7s %8s %9d\n' "${r}x" "joint plan" "$e" "$w" "$x" "$wall" $((rss / 1024))
  printf '%-6s %-34s %10s %12s %7s %8s %9s\n' "" "  (plan's estimates: joint, same-ratio)" "${est% *}" "${est#* }" "" "" ""
  one_codec "$codec"
  # The most tc bits, in quarter bits from 32/R down, whose file meets the ratio (state and headers counted).
  for q in $(seq $((128 / r)) -1 4); do
    b=$(awk -v q="$q" 'BEGIN { print q / 4 }')
    "$Q" "$work/m" -o "$work/u.edo" --codec "tc:bits=$b" -q >/dev/null 2>&1 || continue
    if (( bytes >= r * $(stat -c %s "$work/u.edo") )); then one_codec "tc:bits=$b"; break; fi
  done
done
