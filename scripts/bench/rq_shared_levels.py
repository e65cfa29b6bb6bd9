#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Would rq levels that share a codebook earn their place? (issue 15, item 2)

usage: rq_shared_levels.py [DATA_DIR]   (default ../shared/data beside the checkout)

A numpy model of greedy residual quantization (256 codewords a level,
k-means of 15 Lloyd iterations from seeded rows, nearest-codeword encoding,
no beam and no refit: the same for every variant, so the comparison is fair
even though edo's rq, with its beam and refits, errs less). Each variant
trains on and measures the whole table (10,000 rows), and prints its mean
squared error next to the codebook floats it stores:

  independent   one codebook a level (what edo's rq stores)
  share=S       each run of S levels shares the first level's codebook,
                the later levels taking it times a least-squares scale
                (one float a level), chosen from 26 steps in [0.2, 1.2]
  fewer levels  m/2 independent levels: the same codebook floats as
                share=2, half the code bytes

The result is compared in docs/BENCHMARKS.md with int8 codebooks, which
already store a codebook in a quarter of fp32's bytes at the same recall.
"""
import os
import sys

import numpy as np


def nearest(x, c):
    d = (x * x).sum(1)[:, None] - 2.0 * x @ c.T + (c * c).sum(1)[None, :]
    return d.argmin(1)


def kmeans(x, k, seed, iterations=15):
    rng = np.random.default_rng(seed)
    c = x[rng.choice(len(x), k, replace=False)].copy()
    for _ in range(iterations):
        a = nearest(x, c)
        for j in range(k):
            members = a == j
            if members.any():
                c[j] = x[members].mean(0)
    return c


def residual_quantize(x, levels, share):
    """Mean squared error and codebook floats of `levels` greedy levels, a codebook every `share` of them."""
    r = x.copy()
    floats = 0
    book = None
    for level in range(levels):
        if level % share == 0:
            book = kmeans(r, 256, seed=level)
            floats += book.size
            q = book[nearest(r, book)]
        else:
            best = None
            for scale in np.linspace(0.2, 1.2, 26):
                q = scale * book[nearest(r, scale * book)]
                err = ((r - q) ** 2).sum()
                if best is None or err < best[0]:
                    best = (err, q)
            q = best[1]
            floats += 1
        r = r - q
    return (r ** 2).sum() / r.size, floats


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    data = sys.argv[1] if len(sys.argv) > 1 else os.path.join(here, "..", "..", "..", "shared", "data")
    for name, file in (("GloVe", "glove.6B.50d.10k.npy"), ("BIGANN", "bigann10k_base.npy")):
        x = np.load(os.path.join(data, file)).astype(np.float64)
        for levels in (8, 16):
            base, base_floats = residual_quantize(x, levels, 1)
            print(f"{name} m={levels} independent: mse {base:.5g}, codebook floats {base_floats}")
            for share in (2, 4):
                err, floats = residual_quantize(x, levels, share)
                print(f"{name} m={levels} share={share}: mse {err:.5g} ({100 * (err / base - 1):+.1f}%), "
                      f"codebook floats {floats}")
            fewer, fewer_floats = residual_quantize(x, levels // 2, 1)
            print(f"{name} m={levels // 2} fewer levels: mse {fewer:.5g}, codebook floats {fewer_floats}")
            sys.stdout.flush()


if __name__ == "__main__":
    main()
