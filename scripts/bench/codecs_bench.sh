#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Benchmark (issue 3): scalar codec encode/decode rates against memcpy of the
# same bytes, FAISS ScalarQuantizer and numpy, all in one run.
#
# usage: scripts/bench/codecs_bench.sh [ROWS] [DIM] [REPEAT]
# default 2097152 x 128 fp32 = 1 GiB, best of 3. Needs a build with
# EDO_BUILD_BENCH=ON (the default) and /usr/bin/python3 with numpy for the numpy row.
set -euo pipefail
cd "$(dirname "$0")/../.."
rows="${1:-2097152}"; dim="${2:-128}"; repeat="${3:-3}"
bin="${EDO_BUILD_DIR:-build}/scripts/bench/edo_bench_codecs"
[ -x "$bin" ] || { echo "build first: cmake --build build (with -DEDO_BUILD_BENCH=ON)" >&2; exit 1; }
peers=()
if /usr/bin/python3 -c 'import numpy' 2>/dev/null; then
  while IFS= read -r line; do peers+=(--peer "$line"); done \
    < <(/usr/bin/python3 scripts/bench/numpy_astype.py "$rows" "$dim" "$repeat")
else
  echo "(no numpy in /usr/bin/python3: numpy rows skipped)"
fi
"$bin" --rows "$rows" --dim "$dim" --repeat "$repeat" "${peers[@]}"
