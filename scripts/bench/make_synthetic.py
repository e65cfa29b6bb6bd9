#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Write a large synthetic float32 .npy table in chunks (bounded memory).

usage: make_synthetic.py OUT.npy ROWS DIM [SEED]

Rows are Gaussian with a decaying per-dimension scale (so PCA has structure)
plus a heavy-tailed row norm, roughly like trained embeddings.
"""
import sys

import numpy as np


def main():
    if len(sys.argv) < 4:
        sys.exit(__doc__)
    out, rows, dim = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    seed = int(sys.argv[4]) if len(sys.argv) > 4 else 0
    rng = np.random.default_rng(seed)
    scale = (1.0 / np.sqrt(1.0 + np.arange(dim))).astype(np.float32)
    arr = np.lib.format.open_memmap(out, mode="w+", dtype=np.float32, shape=(rows, dim))
    chunk = max(1, (64 << 20) // (4 * dim))
    for begin in range(0, rows, chunk):
        n = min(chunk, rows - begin)
        block = rng.standard_normal((n, dim), dtype=np.float32) * scale
        block *= rng.lognormal(0.0, 0.3, size=(n, 1)).astype(np.float32)
        arr[begin:begin + n] = block
    arr.flush()
    del arr


if __name__ == "__main__":
    main()
