#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""numpy's fp32 -> fp16 conversion rates, the peers of edo's fp16 encode.

usage: numpy_astype.py ROWS DIM REPEAT
Prints two lines "NAME=GBPS" (GB/s of fp32 input, best of REPEAT runs):
x.astype(float16), which allocates its result as users write it, and
np.copyto into a preallocated fp16 array, as the C++ benchmark's codecs do.
"""
import sys
import time

import numpy as np


def best_seconds(repeat, fn):
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def main():
    rows, dim, repeat = (int(a) for a in sys.argv[1:4])
    x = np.random.default_rng(1).standard_normal((rows, dim), dtype=np.float32)
    out = np.zeros((rows, dim), dtype=np.float16)
    t_astype = best_seconds(repeat, lambda: x.astype(np.float16))
    t_copyto = best_seconds(repeat, lambda: np.copyto(out, x, casting="same_kind"))
    print(f"numpy astype(float16), 1 thread={x.nbytes / t_astype / 1e9:.3f}")
    print(f"numpy copyto fp16 preallocated, 1 thread={x.nbytes / t_copyto / 1e9:.3f}")


if __name__ == "__main__":
    main()
