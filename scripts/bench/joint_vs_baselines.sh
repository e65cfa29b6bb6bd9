#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Benchmark (issue 57): a model's joint plan (edo-pack MODEL --budget 'ratio>=R') against both baselines,
# at 4x, 8x and 16x, on three bundled models (scripts/make_models.py):
#   sample       GloVe 10,000 x 50 and BIGANN 10,000 x 128 (fp16) and a 3 x 8 table, no counts
#   transformer  a BERT-style encoder's word (GloVe), position (512 x 50) and token-type (2 x 50) tables
#   criteo       the 26 Criteo cardinalities capped at 10,000 rows, dim 64, Zipf counts per table
# Baselines: "same ratio", every table at the ratio over the joint plan's own options (the plan's
# estimate, on its sample), and "alone", each table packed by itself as a user would
# (edo-pack MODEL --tables NAME --budget 'ratio>=R'; a table whose headers alone pass its cap is kept
# as stored). Every file is measured by edo-eval against the model: the objective sum_t s_t E_t (E_t the
# table's rel_fro squared, w.rel_fro with counts; s_t edo-eval's shares) and the model's recall@10
# (w.recall@10 with counts); beside the joint file, the plan's own estimates and the run's wall time at
# --threads 1.
#
# usage: scripts/bench/joint_vs_baselines.sh [DIR]    (default /tmp)
# Needs /usr/bin/python3 with numpy. Everything it writes is removed on exit.
set -euo pipefail
cd "$(dirname "$0")/../.."
dir="${1:-/tmp}"
build="${EDO_BUILD_DIR:-build}"
P="$build/edo-pack"; E="$build/edo-eval"
[ -x "$P" ] || { echo "build first: scripts/build.sh" >&2; exit 1; }
work=$(mktemp -d "$dir/edo-joint-baselines.XXXXXX")
trap 'rm -rf "$work"' EXIT
echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)," \
  "load average $(cut -d' ' -f1 /proc/loadavg); $(date -u +%F)"
/usr/bin/python3 scripts/make_models.py sample data-samples "$work/sample.safetensors"
/usr/bin/python3 scripts/make_models.py transformer data-samples "$work/transformer.safetensors"
/usr/bin/python3 scripts/make_models.py criteo "$work/criteo" --freq-dir "$work/freq" >/dev/null

# measure MODEL FILE [COUNTS_DIR]: "objective recall@10" of FILE against MODEL.
measure() {
  local counts=()
  [ -n "${3:-}" ] && counts=(--freq-dir "$3")
  "$E" "$1" "$2" "${counts[@]}" --json -q >"$work/eval.json" 2>/dev/null
  /usr/bin/python3 - "$work/eval.json" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
t = j["tables"]
w = lambda x: x.get("w.rel_fro", x["rel_fro"])
obj = sum(s * w(t[n]) ** 2 for n, s in j["shares"].items())
print(f'{obj:.4g} {j["model"].get("w.recall@10", j["model"]["recall@10"]):.4f}')
PY
}

printf '%-12s %-6s %12s %12s %12s %28s %10s %10s %8s\n' model budget "joint obj" "joint est*" "same-ratio*" \
  "alone obj (alone/joint B)" "joint r@10" "alone r@10" "joint s"
for model in sample transformer criteo; do
  case $model in
    criteo) input="$work/criteo"; counts="$work/freq" ;;
    *) input="$work/$model.safetensors"; counts="" ;;
  esac
  cflag=()
  [ -n "$counts" ] && cflag=(--freq-dir "$counts")
  tables=$("$build/edo-profile" "$input" --list-tables --json -q 2>/dev/null | /usr/bin/python3 -c "
import json, sys
j = json.load(sys.stdin)
print(' '.join(t['name'] for t in j['tables'] if t.get('default', True)))")
  for r in 4 8 16; do
    /usr/bin/time -f '%e' -o "$work/t" "$P" "$input" -o "$work/j.edo" "${cflag[@]}" --budget "ratio>=$r" \
      --threads 1 --json -q >"$work/j.json"
    wall=$(cat "$work/t")
    read -r est same <<<"$(/usr/bin/python3 -c "
import json; j = json.load(open('$work/j.json'))['joint_plan']
print(f'{j[\"objective\"]:.4g} {j[\"same_ratio_objective\"]:.4g}')")"
    read -r jo jr <<<"$(measure "$input" "$work/j.edo" "$counts")"
    # Each table alone, then the tables' files as one model (edo-pack --config of their tiers).
    /usr/bin/python3 - "$work/alone.json" <<'PY'
import json, sys
json.dump({"tables": []}, open(sys.argv[1], "w"))
PY
    missing=""
    for t in $tables; do
      f=()
      [ -n "$counts" ] && f=(--freq "$counts/$t.npy")
      if "$P" "$input" --tables "$t" -o "$work/a.edo" "${f[@]}" --budget "ratio>=$r" --json -q >"$work/a.json" 2>/dev/null; then
        tiers=$(/usr/bin/python3 -c "import json; print(json.dumps(json.load(open('$work/a.json'))['budget']['tiers']))")
      elif (( $("$build/edo-profile" "$input" --list-tables --json -q 2>/dev/null | /usr/bin/python3 -c "
import json, sys
print(next(t['shape'][0] * t['shape'][1] for t in json.load(sys.stdin)['tables'] if t['name'] == '$t'))") * 4 < 65536 )); then
        # A table of a few KB cannot pay its own headers at the ratio: a user keeps it as stored.
        tiers='[{"name": "all", "share": "rest", "codec": "fp32", "residency": "host", "spec": "all:rest:fp32:host"}]'
      else
        missing="$missing $t"
        continue
      fi
      /usr/bin/python3 - "$work/alone.json" "$t" "$tiers" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
j["tables"].append({"name": sys.argv[2], "tiers": json.loads(sys.argv[3])})
json.dump(j, open(sys.argv[1], "w"))
PY
    done
    if [ -n "$missing" ]; then
      ao="n/a"; ar="n/a"
      echo "  ($model ${r}x alone: no plan reaches the ratio for$missing)"
    else
      "$P" "$input" -o "$work/alone.edo" "${cflag[@]}" --config "$work/alone.json" -q >/dev/null
      read -r ao ar <<<"$(measure "$input" "$work/alone.edo" "$counts")"
      ao="$ao ($(stat -c %s "$work/alone.edo")/$(stat -c %s "$work/j.edo") B)"
    fi
    printf '%-12s %-6s %12s %12s %12s %28s %10s %10s %8s\n' "$model" "${r}x" "$jo" "$est" "$same" "$ao" "$jr" "$ar" "$wall"
  done
done
echo "* the plan's estimate on its sample; the other objectives are measured on the files written"
