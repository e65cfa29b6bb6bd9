#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The cost of each integrity mode (docs/PACK.md, "Integrity modes";
# docs/BENCHMARKS.md, "Integrity modes"): open time, the first batch's time
# (small checks a tier's codes there) and lookups/s after, for
# Verify::structure, small and all, on a 1M x 128 synthetic table (seeded)
# quantized to int8 (one tier) and packed in three tiers (5% fp16, 30% int8,
# rest int4, Zipf counts: each tier a run of ids, the row map a few runs),
# the same with the counts shuffled (tiers interleave: the packed row map,
# 5 MB, checked at open by small), uniform ids, batches of 4096, one thread,
# through the Python module, timed in CPU seconds of the calling thread (which
# does all the work at one thread: a busy shared machine's other load is not
# counted). Each (file, mode) runs in a fresh process, the
# file in the kernel's page cache (read once before), 5 processes: the best
# of each column (fastest open, fastest first batch, most rows/s, largest
# peak RSS). A budget case repeats the three-tier file with its int4 tier on
# disk behind max_resident = 256 MiB (small reads its codes past the cache
# once; all is refused with a budget by edo-lookup, and not run).
# usage: scripts/bench/verify_bench.sh    (~3 minutes once built; 1.5 GB in $TMPDIR)
set -euo pipefail
cd "$(dirname "$0")/../.."
build="${EDO_BUILD_DIR:-build}"
py=/usr/bin/python3
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)," \
  "family $(grep -m1 'cpu family' /proc/cpuinfo | cut -d: -f2 | xargs) model $(grep -m1 '^model\s' /proc/cpuinfo | cut -d: -f2 | xargs)"
"$py" scripts/bench/make_synthetic.py "$work/t.npy" 1000000 128 7
"$py" -c "import numpy as np; z = 1.0 / (np.arange(1000000) + 1); np.save('$work/zipf.npy', z)
np.save('$work/shuffled.npy', np.random.default_rng(3).permutation(z))"
export OMP_NUM_THREADS=1
"$build/edo-quantize" "$work/t.npy" -o "$work/int8.edo" --codec int8 -q >/dev/null
"$build/edo-pack" "$work/t.npy" -o "$work/tiers.edo" --freq "$work/zipf.npy" -q --tier hot:rows=5%:fp16 \
  --tier warm:rows=30%:int8 --tier cold:rest:int4 >/dev/null
"$build/edo-pack" "$work/t.npy" -o "$work/mixed.edo" --freq "$work/shuffled.npy" -q --tier hot:rows=5%:fp16 \
  --tier warm:rows=30%:int8 --tier cold:rest:int4 >/dev/null
"$build/edo-pack" "$work/t.npy" -o "$work/disk.edo" --freq "$work/zipf.npy" -q --tier hot:rows=5%:fp16 \
  --tier warm:rows=30%:int8 --tier cold:rest:int4:disk >/dev/null
rm "$work/t.npy"
for f in int8 tiers mixed disk; do
  echo "$f.edo: $(stat -c %s "$work/$f.edo") bytes"
  cat "$work/$f.edo" >/dev/null
done
# One run of FILE in MODE (a fresh process): open ms, first batch ms, rows/s, peak RSS MB.
run() {
  local budget=0
  [ "$1" = disk ] && budget=$((256 << 20))
  PYTHONPATH="$build/python" "$py" - "$work/$1.edo" "$2" "$budget" <<'PY'
import resource, sys, time
import numpy as np
import edo
path, mode, budget = sys.argv[1], sys.argv[2], int(sys.argv[3])
ids = [np.random.default_rng(s).integers(0, 1000000, 4096) for s in range(16)]
clock = time.thread_time  # the calling thread's CPU time: the machine's other load does not count
t0 = clock()
f = edo.open(path, verify=mode, max_resident=budget)
t1 = clock()
f.lookup(ids[0])
t2 = clock()
best = 0.0
for _ in range(3):  # best rows/s over rounds of at least 0.3 s
    n, s0 = 0, clock()
    while True:
        f.lookup(ids[n % len(ids)])
        n += 1
        s = clock() - s0
        if s >= 0.3:
            break
    best = max(best, n * 4096 / s)
rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(f"{(t1 - t0) * 1e3:.2f} {(t2 - t1) * 1e3:.2f} {best:.4g} {rss:.0f}")
PY
}
cases=(int8:structure int8:small int8:all tiers:structure tiers:small tiers:all mixed:structure mixed:small
  mixed:all disk:structure disk:small)
# The modes alternate within each round, so that a change in the machine's load meets them all.
for round in 1 2 3 4 5; do
  for c in "${cases[@]}"; do run "${c%%:*}" "${c#*:}" >>"$work/runs.${c/:/.}"; done
done
printf '%-10s %-10s %10s %14s %14s %10s\n' file mode "open ms" "1st batch ms" "rows/s" "RSS MB"
for c in "${cases[@]}"; do
  read -r open first rate rss < <(awk 'NR == 1 || $1 < o { o = $1 } NR == 1 || $2 < f { f = $2 }
    $3 > r { r = $3 } $4 > m { m = $4 } END { print o, f, r, m }' "$work/runs.${c/:/.}")
  printf '%-10s %-10s %10s %14s %14s %10s\n' "${c%%:*}" "${c#*:}" "$open" "$first" "$rate" "$rss"
done
