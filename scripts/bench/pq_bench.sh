#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Benchmark: edo's pq/opq/rq next to FAISS PQ, OPQ+PQ and RQ at 8x, 16x and
# 32x compression (bits per vector = fp32 bits / ratio), recall@10 and
# training time on each table, then edo's encoders against FAISS's on shared
# codebooks (pq: compute_codes; rq: beam search). About an hour on 2 cores,
# most of it FAISS RQ and OPQ training on BIGANN.
#
# usage: scripts/bench/pq_bench.sh [FAISS_RQ_BEAM] [EDO_RQ_PARAMS]
# One table cell alone: build/scripts/bench/pq/pq_bench --data FILE --metric cos
#   --shapes 25x4 --only rq [--edo-rq beam=4,train_beam=1,refine=1] --faiss-rq-beam 0
# Builds with the tests (build/scripts/bench/pq/pq_bench). OMP_WAIT_POLICY=passive
# keeps OpenMP from spinning when the cores are shared with other work.
set -euo pipefail
cd "$(dirname "$0")/../.."
bin="${EDO_BUILD_DIR:-build}/scripts/bench/pq/pq_bench"
[ -x "$bin" ] || { echo "build first: cmake --build build" >&2; exit 1; }
beam="${1:-8}"; rq="${2:-}"
data=data-samples
echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), load $(cut -d' ' -f1 /proc/loadavg)"
export OMP_WAIT_POLICY=passive
rq_args=(); [ -n "$rq" ] && rq_args=(--edo-rq "$rq")
# GloVe 50d (200 bytes fp32): 8x = 25x8 bits, 16x = 25x4, 32x = 10x5.
"$bin" --data "$data/glove.6B.50d.10k.npy" --metric cos --shapes 25x8,25x4,10x5 --faiss-rq-beam "$beam" "${rq_args[@]}"
echo
# BIGANN 128d (512 bytes as fp32): 8x = 64x8, 16x = 32x8, 32x = 16x8.
"$bin" --data "$data/bigann10k_base.npy" --metric l2 --shapes 16x8,32x8,64x8 --faiss-rq-beam "$beam" "${rq_args[@]}"
echo
"$bin" --data "$data/glove.6B.50d.10k.npy" --rq-encode 25x4 "${rq_args[@]}"
"$bin" --data "$data/bigann10k_base.npy" --rq-encode 16x8 "${rq_args[@]}"
