#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""A numpy model of the int2..int6 MSE range searches (issue 15): error and
candidate evaluations of today's search against the search the issue was
filed against, and against the cheaper searches that would fit a memory-speed
encode.

The model mirrors lib/decoders/include/edo/codec_math.hpp's affine_params_search in double
(plain min/max; the low end clipped along a walk of steps of 0.4 / steps of
the range, stopping after `patience` steps that do not improve; the high end
likewise from the best low end; then least-squares refits while they
improve). It rounds as numpy does, not as the encoder does, so its errors
match edo-quantize's closely, not bit for bit (GloVe and BIGANN, int4,
int4:group=32 and int2: within 6e-5 of the MSE `edo-quantize --json`
reports, relative); what it is for is the ratio of two searches on the same
groups and the number of candidates each measures. "Candidates a value" counts every candidate a group's search
measures (each costs one pass over the group), averaged over values.

usage: /usr/bin/python3 scripts/bench/affine_search_model.py [DATA_DIR]
DATA_DIR defaults to ../shared/data beside the checkout (GloVe 50d 10k and
BIGANN 10k).
"""
import os
import sys

import numpy as np

MAX_CLIP = 0.4


def squared_error(x, scale, offset, qmax):
    scale = np.maximum(scale, 1e-30)
    q = np.clip(np.rint((x - offset[:, None]) / scale[:, None]), 0, qmax)
    r = x - (q * scale[:, None] + offset[:, None])
    return (r * r).sum(1), q


class Best:
    """Each group's best candidate so far and how many candidates it measured."""

    def __init__(self, x, scale, offset, qmax):
        self.err, self.q = squared_error(x, scale, offset, qmax)
        self.scale, self.offset = scale.copy(), offset.copy()
        self.measured = np.ones(len(x))

    def offer(self, x, scale, offset, qmax, active):
        err, q = squared_error(x, scale, offset, qmax)
        self.measured += active
        better = active & (err < self.err)
        self.err = np.where(better, err, self.err)
        self.scale = np.where(better, scale, self.scale)
        self.offset = np.where(better, offset, self.offset)
        self.q = np.where(better[:, None], q, self.q)
        return err


def refits(x, best, qmax, count):
    n = x.shape[1]
    active = np.ones(len(x), bool)
    for _ in range(count):
        q = best.q
        sq, sqq, sx, sqx = q.sum(1), (q * q).sum(1), x.sum(1), (q * x).sum(1)
        den = n * sqq - sq * sq
        ok = den > 0
        scale = np.where(ok, (n * sqx - sq * sx) / np.where(ok, den, 1), 0)
        offset = (sx - scale * sq) / n
        active &= ok & (scale > 0)
        if not active.any():
            break
        before = best.err.copy()
        err = best.offer(x, np.where(active, scale, best.scale), np.where(active, offset, best.offset), qmax, active)
        active &= err < before
    return best


def search(x, qmax, steps, patience, refit_count):
    lo, hi = x.min(1), x.max(1)
    span = hi - lo
    best = Best(x, span / qmax, lo, qmax)
    best_lo = lo.copy()
    for side in range(2):
        chosen = lo.copy() if side == 0 else hi.copy()
        previous = best.err.copy()
        stalls = np.zeros(len(x))
        for k in range(1, steps + 1):
            active = stalls < patience
            if not active.any():
                break
            end = lo + span * MAX_CLIP * k / steps if side == 0 else hi - span * MAX_CLIP * k / steps
            first, last = (end, hi) if side == 0 else (best_lo, end)
            before = best.err.copy()
            err = best.offer(x, (last - first) / qmax, first, qmax, active)
            chosen = np.where(active & (err < before), end, chosen)
            stalls = np.where(active, np.where(err < previous, 0, stalls + 1), stalls)
            previous = np.where(active, err, previous)
        if side == 0:
            best_lo = chosen
    return refits(x, best, qmax, refit_count)


def today(qmax):
    """clip_walk() and kRefits in lib/decoders/include/edo/codec_math.hpp."""
    if qmax <= 3:
        return dict(steps=8, patience=3, refit_count=3)
    return dict(steps=8 if qmax >= 63 else 16, patience=1, refit_count=3)


SEARCHES = {
    "filed against (8 steps of 5%, no early stop, 2 refits)": lambda qmax: dict(steps=8, patience=99, refit_count=2),
    "today": today,
    "today with 1 refit": lambda qmax: dict(today(qmax), refit_count=1),
    "min/max and 1 refit": lambda qmax: dict(steps=0, patience=1, refit_count=1),
    "min/max only": lambda qmax: dict(steps=0, patience=1, refit_count=0),
}


def evaluate(table, group, qmax, params):
    total, measured = 0.0, 0.0
    for begin in range(0, table.shape[1], group):
        x = table[:, begin:begin + group].astype(np.float64)
        best = search(x, qmax, **params)
        total += best.err.sum()
        measured += (best.measured * x.shape[1]).sum()
    return total / table.size, measured / table.size


def main():
    data_dir = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "../../../shared/data")
    tables = {
        "GloVe": np.load(os.path.join(data_dir, "glove.6B.50d.10k.npy")).astype(np.float32),
        "BIGANN": np.load(os.path.join(data_dir, "bigann10k_base.npy")).astype(np.float32),
    }
    names = list(SEARCHES)
    print("MSE of each search / MSE of the search filed against (candidates measured a value)")
    print("| table | codec | " + " | ".join(names) + " |")
    print("| --- | --- |" + " ---: |" * len(names))
    for table_name, table in tables.items():
        for codec, qmax in (("int4", 15), ("int3", 7), ("int2", 3)):
            for group in (table.shape[1], 32):
                spec = codec if group == table.shape[1] else f"{codec}:group={group}"
                results = [evaluate(table, group, qmax, SEARCHES[n](qmax)) for n in names]
                base = results[0][0]
                cells = [f"{mse / base:.4f} ({count:.1f})" for mse, count in results]
                print(f"| {table_name} | {spec} | " + " | ".join(cells) + " |", flush=True)


if __name__ == "__main__":
    main()
