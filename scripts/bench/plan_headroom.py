# SPDX-License-Identifier: Apache-2.0
"""Issue 15 item 3: how far scalar tiers can go on GloVe 10k with Zipf counts at w.recall@10 >= 0.99.

Composes tiered tables from decoded single-codec files (edo-quantize + edo-unpack, plain and after a
centred random rotation) and a numpy row-wise min/max int7 with fp16 pairs (a code edo lacks), and scores
each with edo-eval --eval-freq (the planner's access-weighted recall). Prints one line a plan: its tiers,
data bytes, ratio to fp32 and w.recall@10.

usage: scripts/bench/plan_headroom.py BUILD_DIR GLOVE.npy WORK_DIR   (a few minutes; needs numpy)
"""
import json
import subprocess
import sys

import numpy as np

build, glove, work = sys.argv[1:4]
X = np.load(glove).astype(np.float32)
rows, dim = X.shape
np.save(f"{work}/zipf.npy", 1.0 / (np.arange(rows) + 1))
mu = X.mean(0, dtype=np.float64)
rot, _ = np.linalg.qr(np.random.default_rng(7).standard_normal((dim, dim)))
np.save(f"{work}/rot.npy", ((X - mu) @ rot).astype(np.float32))


def decoded(table, codec):
    name = f"{work}/{'r' if table == 'rot' else 'o'}-{codec.replace(':', '_').replace('=', '_')}"
    src = f"{work}/rot.npy" if table == "rot" else glove
    subprocess.run([f"{build}/edo-quantize", src, "-o", name + ".edo", "--codec", codec, "-q"], check=True,
                   stdout=subprocess.DEVNULL)
    subprocess.run([f"{build}/edo-unpack", name + ".edo", "-o", name + ".npy", "-q"], check=True)
    y = np.load(name + ".npy").astype(np.float64)
    return (y @ rot.T + mu).astype(np.float32) if table == "rot" else y.astype(np.float32)


def int7(a):
    lo, hi = a.min(1, keepdims=True), a.max(1, keepdims=True)
    s = ((hi - lo) / 127).astype(np.float16).astype(np.float32)
    m = lo.astype(np.float16).astype(np.float32)
    return np.clip(np.rint((a - m) / s), 0, 127) * s + m


codes = {"fp16": (decoded("plain", "fp16"), 100)}
for bits, size in [(8, 54), (6, 42), (5, 36), (4, 29)]:
    codes[f"int{bits}"] = (decoded("plain", f"int{bits}:scale=fp16"), size)
    codes[f"rot,int{bits}"] = (decoded("rot", f"int{bits}:scale=fp16"), size)
codes["int7"] = (int7(X), 48)
codes["rot,int7"] = ((int7(np.load(f"{work}/rot.npy")).astype(np.float64) @ rot.T + mu).astype(np.float32), 48)


def score(plan):
    table = np.concatenate([codes[c][0][a:b] for c, a, b in plan])
    np.save(f"{work}/plan.npy", table)
    out = subprocess.run([f"{build}/edo-eval", glove, f"{work}/plan.npy", "--eval-freq", f"{work}/zipf.npy", "--k", "10",
                          "--json"], capture_output=True, text=True, check=True)
    report = json.loads(out.stdout)
    return (report["files"][0]["metrics"] if "files" in report else report)["w.recall@10"]


def show(plan):
    data = sum(codes[c][1] * (b - a) for c, a, b in plan)
    r = score(plan)
    cuts = " / ".join(f"{c} {a}-{b}" for c, a, b in plan)
    print(f"{cuts:70s} {data:8d} {4 * rows * dim / data:5.2f}x  {r:.4f}{'  *' if r >= 0.99 else ''}", flush=True)


h = rows // 50  # the hot 2%, fp16
for warm in ["int8", "int7", "rot,int7"]:
    for cold in ["int5", "int4", "rot,int4"]:
        for cut in [4 * rows // 10, rows // 2]:
            show([("fp16", 0, h), (warm, h, cut), (cold, cut, rows)])
for warm in ["int8", "rot,int8", "rot,int7"]:
    for mid in ["int5", "rot,int5", "int6", "rot,int6"]:
        for cold in ["int4", "rot,int4"]:
            for a, b in [(2, 6), (3, 7), (4, 7), (3, 8), (2, 8)]:
                plan = [("fp16", 0, h), (warm, h, a * rows // 10), (mid, a * rows // 10, b * rows // 10),
                        (cold, b * rows // 10, rows)]
                if sum(codes[c][1] * (y - x) for c, x, y in plan) <= 390000:
                    show(plan)
