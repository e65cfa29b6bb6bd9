#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Lookup throughput of the Python module next to the C++ reader, same file,
# same ids, same run (docs/BENCHMARKS.md, "Python"): GloVe 10k packed with Zipf
# counts (5% fp16, 30% int8, rest int4), batches of 4096 ids drawn by
# frequency, one thread (as a serving thread runs) and all threads.
# usage: scripts/bench/python_lookup_bench.sh    (~1 minute once built)
set -euo pipefail
cd "$(dirname "$0")/../.."
build="${EDO_BUILD_DIR:-build}"
py=/usr/bin/python3
glove=data-samples/glove.6B.50d.10k.npy
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)"
cmake --install "$build" --prefix "$work/prefix" >/dev/null
cmake -S scripts/bench/lookup -B "$work/b" -DCMAKE_PREFIX_PATH="$work/prefix" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$work/b" -j2 >/dev/null
"$py" - "$work" <<'PY'
import sys
import numpy as np
w = sys.argv[1]
freq = 1.0 / (np.arange(10000) + 1)
np.save(w + '/zipf.npy', freq)
cum = np.cumsum(freq)
np.save(w + '/ids.npy', np.searchsorted(cum, np.random.default_rng(5).random(4096) * cum[-1], side='right'))
PY
"$build/edo-pack" "$glove" -o "$work/g.edo" --freq "$work/zipf.npy" -q --tier hot:rows=5%:fp16 \
  --tier warm:rows=30%:int8 --tier cold:rest:int4 >/dev/null
for threads in 1 "$(nproc)"; do
  echo "== OMP_NUM_THREADS=$threads"
  OMP_NUM_THREADS=$threads "$work/b/bench_lookup" "$work/g.edo" "$glove" "$work/zipf.npy" 4096 "$work/ids.npy" |
    grep -E "gather|lookup, mmapped"
  OMP_NUM_THREADS=$threads PYTHONPATH="$build/python" "$py" - "$work" <<'PY'
import sys, time
import numpy as np
import edo
w = sys.argv[1]
r = edo.open(w + '/g.edo')
ids = np.load(w + '/ids.npy')
best = 0.0
for _ in range(5):  # best batches/s over rounds of at least 0.3 s, as bench_lookup
    n, t0 = 0, time.perf_counter()
    while True:
        r.lookup(ids)
        n += 1
        s = time.perf_counter() - t0
        if s >= 0.3:
            break
    best = max(best, n / s)
print(f"python edo.lookup            {best * len(ids):10.3g} rows/s")
PY
done
