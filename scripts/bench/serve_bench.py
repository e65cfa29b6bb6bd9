#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Serving figures (docs/BENCHMARKS.md, "Pooled lookups"): rows and pooled bags
from .edo files of a synthetic ROWS x 128 table, next to an fp32 gather of the
same rows (the ceiling) and numpy's take, fancy indexing and add.reduceat (the
peers), in the same run.

usage: serve_bench.py [--rows 1000000,8000000] [--build build] [--work DIR] [--quick]

For each table size: int8, fp16 and a three-tier plan (5% fp16, 25% int8, the
rest int4, hot rows by Zipf counts); ids a stream of 2^20 drawn Zipf(1.05) over
a seeded permutation of the rows, or uniformly; bags of 1 to 100 ids. Each is
run on an idle machine and while another process keeps one core busy; within
a run the reader's passes at one thread and at the default threads and the
fp32 peers alternate (edo_bench_serve). Prints a markdown table: the reader
next to its ceiling at one thread, the default threads against one thread
in the same run, the Python module against the C++ reader, the peers, and the
reader's resident memory (its file pages and its own).
"""
import argparse
import itertools
import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PY = "/usr/bin/python3"

PY_PEERS = r"""
import json, sys, time
import numpy as np
import edo
table_path, edo_path, ids_path, offsets_path, batch, passes, placement = sys.argv[1:8]
batch, passes = int(batch), int(passes)
ids = np.load(ids_path); offsets = np.load(offsets_path)
def best(fn):
    t = min(_timed(fn) for _ in range(passes))
    return len(ids) / t
def _timed(fn):
    t0 = time.perf_counter(); fn(); return time.perf_counter() - t0
# Consecutive bags of about `batch` ids, as edo_bench_serve walks them.
groups, b = [], 0
while b < len(offsets):
    e = int(np.searchsorted(offsets, offsets[b] + batch, side="left"))
    e = max(e, b + 1)
    groups.append((b, e)); b = e
ends = np.append(offsets[1:], len(ids))
out = {}
f = edo.open(edo_path, placement=placement)
# A serving loop's buffers, reused as the C++ loop reuses its own (out=).
rows_out = np.empty((batch, f.dim), np.float32)
bags_out = np.empty((max(e - b for b, e in groups), f.dim), np.float32)
out["py_edo_rows"] = best(lambda: [f.lookup(ids[i:i + batch], out=rows_out[:min(batch, len(ids) - i)])
                                   for i in range(0, len(ids), batch)])
def edo_bags():
    for b, e in groups:
        lo, hi = offsets[b], ends[e - 1]
        f.lookup_bags(offsets[b:e] - lo, ids[lo:hi], mode="sum", out=bags_out[:e - b])
out["py_edo_bags"] = best(edo_bags)
if table_path != "-":
    t = np.load(table_path)
    out["np_take"] = best(lambda: [np.take(t, ids[i:i + batch], axis=0) for i in range(0, len(ids), batch)])
    out["np_fancy"] = best(lambda: [t[ids[i:i + batch]] for i in range(0, len(ids), batch)])
    def reduceat():
        for b, e in groups:
            lo, hi = offsets[b], ends[e - 1]
            np.add.reduceat(t[ids[lo:hi]], offsets[b:e] - lo, axis=0)
    out["np_reduceat"] = best(reduceat)
print(json.dumps(out))
"""


def run(cmd, env=None):
    return subprocess.run(cmd, check=True, capture_output=True, text=True, env=env).stdout


def make_inputs(work, rows, build):
    table = f"{work}/t{rows}.npy"
    if not os.path.exists(table):
        run([PY, f"{ROOT}/scripts/bench/make_synthetic.py", table, str(rows), "128", "3"])
    rng = np.random.default_rng(11)
    perm = rng.permutation(rows)
    p = 1.0 / np.power(np.arange(1, rows + 1, dtype=np.float64), 1.05)
    p /= p.sum()
    counts = np.zeros(rows)
    counts[perm] = p * 1e9
    np.save(f"{work}/freq{rows}.npy", counts)
    n = 1 << 20
    cum = np.cumsum(p)
    zipf = perm[np.minimum(np.searchsorted(cum, rng.random(n) * cum[-1], side="right"), rows - 1)]
    np.save(f"{work}/zipf{rows}.npy", zipf.astype(np.int64))
    np.save(f"{work}/uniform{rows}.npy", rng.integers(0, rows, n, dtype=np.int64))
    sizes = rng.integers(1, 101, n // 50)
    offsets = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    np.save(f"{work}/offsets{rows}.npy", offsets[offsets < n].astype(np.int64))
    files = {}
    for codec in ("int8", "fp16"):
        files[codec] = f"{work}/{codec}{rows}.edo"
        if not os.path.exists(files[codec]):
            run([f"{build}/edo-quantize", table, "--codec", codec, "-o", files[codec], "-q"])
    files["3-tier"] = f"{work}/tiers{rows}.edo"
    if not os.path.exists(files["3-tier"]):
        run([f"{build}/edo-pack", table, "-o", files["3-tier"], "-q", "--freq", f"{work}/freq{rows}.npy",
             "--tier", "hot:rows=5%:fp16", "--tier", "warm:rows=25%:int8", "--tier", "cold:rest:int4"])
    return table, files


def measure(build, table, edo_path, ids, offsets, busy, passes, placement):
    env = dict(os.environ)
    env.pop("OMP_NUM_THREADS", None)
    env["PYTHONPATH"] = f"{build}/python"
    hog = subprocess.Popen([PY, "-c", "while True: pass"]) if busy else None
    try:
        time.sleep(0.2 if busy else 0)
        c = json.loads(run([f"{build}/scripts/bench/edo_bench_serve", edo_path, table, ids, offsets, "--passes",
                            str(passes), "--placement", placement], env))
        # The Python module at one thread, next to the C++ reader's one-thread figure.
        p = json.loads(run([PY, "-c", PY_PEERS, table, edo_path, ids, offsets, "4096", str(passes), placement],
                           dict(env, OMP_NUM_THREADS="1")))
    finally:
        if hog:
            hog.kill()
            hog.wait()
    c.update(p)
    return c


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", default="1000000,8000000")
    ap.add_argument("--build", default=os.environ.get("EDO_BUILD_DIR", f"{ROOT}/build"))
    ap.add_argument("--work", help="keep tables and files here (default: a temporary folder)")
    ap.add_argument("--passes", type=int, default=5)
    ap.add_argument("--placements", default="mapped", help="mapped, memory or both (comma-separated)")
    ap.add_argument("--json", help="also write every measurement here")
    args = ap.parse_args()
    work = args.work or tempfile.mkdtemp(prefix="edo-serve-")
    os.makedirs(work, exist_ok=True)
    cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "?")
    print(f"machine: {os.cpu_count()} cores, {cpu}; work: {work}", file=sys.stderr)
    results = []
    for rows in [int(r) for r in args.rows.split(",")]:
        table, files = make_inputs(work, rows, args.build)
        for dist in ("zipf", "uniform"):
            for (name, path), placement in itertools.product(files.items(), args.placements.split(",")):
                for mode, busy in (("idle", False), ("1 core busy", True)):
                    m = measure(args.build, table, path, f"{work}/{dist}{rows}.npy", f"{work}/offsets{rows}.npy",
                                busy, args.passes, placement)
                    m.update(rows_total=rows, dist=dist, codec=name, mode=mode)
                    results.append(m)
                    print(json.dumps(m), file=sys.stderr)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)
    print("| rows | ids | file | machine | 1 thread: rows, bags / fp32 gather (+sum) | default threads / 1 thread: "
          "rows, bags | Python / C++, 1 thread: rows, bags | edo 1 thread: rows, bags (M ids/s) | numpy take, fancy, "
          "reduceat (M ids/s) | reader RSS MB |")
    print("|" + "---|" * 10)
    for m in results:
        where = "" if m["placement"] == "mapped" else ", in memory"
        print(f"| {m['rows_total']:,} | {m['dist']} | {m['codec']}{where} | {m['mode']} | "
              f"{m['edo_rows_1'] / m['fp32_rows']:.2f}x, {m['edo_bags_1'] / m['fp32_bags']:.2f}x | "
              f"{m['edo_rows_n'] / m['edo_rows_1']:.2f}x, {m['edo_bags_n'] / m['edo_bags_1']:.2f}x | "
              f"{m['py_edo_rows'] / m['edo_rows_1']:.2f}, {m['py_edo_bags'] / m['edo_bags_1']:.2f} | "
              f"{m['edo_rows_1'] / 1e6:.1f}, {m['edo_bags_1'] / 1e6:.1f} | "
              f"{m['np_take'] / 1e6:.1f}, {m['np_fancy'] / 1e6:.1f}, {m['np_reduceat'] / 1e6:.1f} | "
              f"{m['rss_file_mb'] + m['rss_anon_mb']:.0f} |")

if __name__ == "__main__":
    main()
