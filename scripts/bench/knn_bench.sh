#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Benchmark (issue 4): exact 10-NN of 10,000 queries over 1,000,000 x 128 fp32
# through edo::knn, against the OpenBLAS sgemm rate and FAISS IndexFlat search
# measured in the same run, with edo's working memory.
#
# usage: scripts/bench/knn_bench.sh [REPEAT]   (default best of 2; ~5 minutes on 2 cores)
set -euo pipefail
cd "$(dirname "$0")/../.."
bin="${EDO_BUILD_DIR:-build}/scripts/bench/edo_bench_knn"
[ -x "$bin" ] || { echo "build first: cmake --build build (with -DEDO_BUILD_BENCH=ON)" >&2; exit 1; }
"$bin" --rows 1000000 --queries 10000 --dim 128 -k 10 --repeat "${1:-2}"
