#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Pooled lookups against the peers a recommender team runs (docs/BENCHMARKS.md,
"Pooled lookups against torch and FBGEMM"), all in one process, same ids and
offsets, same tables:

  edo        Reader.lookup_bags on int8 (136-byte rows), int4 (72) and fp16 (256)
             files, read into huge pages (placement memory) and mapped (4 KB pages)
  torch      nn.EmbeddingBag fp32 (F.embedding_bag), fp16 embedding_bag, and the
             quantized row-wise ops embedding_bag_byte_rowwise_offsets (int8,
             136-byte rows) and embedding_bag_4bit_rowwise_offsets (int4, 68)
  FBGEMM     IntNBitTableBatchedEmbeddingBagsCodegen, int8 and int4, on the CPU
             (fbgemm-gpu-cpu)
  numpy      np.add.reduceat over a fancy-indexed fp32 gather
  ceiling    torch.index_select of 136-byte rows (random reads of the bytes an
             int8 row holds, nothing decoded)

Tables ROWS x 128 of seeded normal values; batches of 4,096 bags of 1 to 100
ids, Zipf(1.05) over a seeded permutation of the rows or uniform; sum pooling.
Every pass of a figure alternates with the others', best of --passes. Torch
tensors are allocated with THP_MEM_ALLOC_ENABLE=1 (huge pages), numpy's are
advised huge by numpy itself, edo's "memory" placement madvises its copy; the
script prints the AnonHugePages of the process so that this can be checked.

usage: pooled_peers.py --venv DIR [--rows 1000000,4000000] [--threads 1]
                       [--busy] [--build build] [--work DIR] [--passes 5] [--json out.json]

--venv: a virtual environment with torch and fbgemm-gpu-cpu from PyPI (the
script runs itself under it); --busy: another process spins on one core the
whole run; --threads: torch's and edo's threads (edo.set_threads).
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DIM = 128
BAGS = 4096


def make_ids(rows, dist, batches, seed):
    import numpy as np
    rng = np.random.default_rng(seed)
    lengths = rng.integers(1, 101, size=batches * BAGS)
    total = int(lengths.sum())
    if dist == "zipf":
        perm = rng.permutation(rows)
        ids = perm[(rng.zipf(1.05, size=total) - 1) % rows]
    else:
        ids = rng.integers(0, rows, size=total)
    ids = ids.astype(np.int64)
    out = []
    at = 0
    for b in range(batches):
        ls = lengths[b * BAGS:(b + 1) * BAGS]
        offsets = np.zeros(BAGS, np.int64)
        offsets[1:] = np.cumsum(ls)[:-1]
        n = int(ls.sum())
        out.append((ids[at:at + n].copy(), offsets))
        at += n
    return out


def anon_huge_mb():
    try:
        with open("/proc/self/smaps_rollup") as f:
            for line in f:
                if line.startswith("AnonHugePages:"):
                    return int(line.split()[1]) // 1024
    except OSError:
        pass
    return -1


def run(args):
    import numpy as np
    import torch
    import edo
    from fbgemm_gpu.split_embedding_configs import SparseType
    from fbgemm_gpu.split_table_batched_embeddings_ops_common import EmbeddingLocation, PoolingMode
    from fbgemm_gpu.split_table_batched_embeddings_ops_inference import IntNBitTableBatchedEmbeddingBagsCodegen

    torch.set_num_threads(args.threads)
    edo.set_threads(args.threads)
    quantize = os.path.join(args.build, "edo-quantize")
    results = []
    print(f"# torch {torch.__version__} (CPU capability {torch.backends.cpu.get_cpu_capability()}), "
          f"edo {edo.__version__} (kernels {edo.cpu_path()}), threads {args.threads}", file=sys.stderr)
    for rows in args.rows:
        rng = np.random.default_rng(rows)
        table = (rng.standard_normal((rows, DIM), dtype=np.float32) * 0.1).astype(np.float32)
        npy = os.path.join(args.work, f"t{rows}.npy")
        np.save(npy, table)
        files = {}
        for codec, name in (("int8", "int8"), ("int4", "int4"), ("fp16", "fp16")):
            path = os.path.join(args.work, f"t{rows}.{name}.edo")
            if not os.path.exists(path):
                subprocess.run([quantize, npy, "-o", path, "--codec", codec, "--quiet"], check=True)
            files[name] = path
        os.remove(npy)
        w32 = torch.from_numpy(table).clone()
        del table
        w16 = w32.to(torch.float16)
        w8 = torch.ops.quantized.embedding_bag_byte_prepack(w32)
        w4 = torch.ops.quantized.embedding_bag_4bit_prepack(w32)
        np32 = w32.numpy()
        tbe = {}
        for ty in ("int8", "int4"):
            sparse = SparseType.INT8 if ty == "int8" else SparseType.INT4
            m = IntNBitTableBatchedEmbeddingBagsCodegen(
                embedding_specs=[("t", rows, DIM, sparse, EmbeddingLocation.HOST)], device="cpu",
                pooling_mode=PoolingMode.SUM, output_dtype=SparseType.FP32)
            m.fill_random_weights()
            tbe[ty] = m
        readers = {}
        for name, path in files.items():
            readers[(name, "memory")] = edo.open(path, placement="memory")
            readers[(name, "mapped")] = edo.open(path, placement="mapped")
        row_bytes = {"int8": 136, "int4": 72, "fp16": 256, "fp32": 512, "t_int4": 68,
                     "tbe_int8": tbe["int8"].split_embedding_weights()[0][0].shape[1],
                     "tbe_int4": tbe["int4"].split_embedding_weights()[0][0].shape[1]}
        print(f"# rows {rows}: AnonHugePages {anon_huge_mb()} MB; FBGEMM rows {row_bytes['tbe_int8']} "
              f"and {row_bytes['tbe_int4']} bytes", file=sys.stderr)
        for dist in args.dists:
            batches = make_ids(rows, dist, args.batches, seed=rows + (1 if dist == "zipf" else 2))
            tb = [(torch.from_numpy(i), torch.from_numpy(o)) for i, o in batches]
            tb32 = [(i.int(), torch.cat([o, torch.tensor([len(i)])]).int()) for i, o in tb]
            out = np.empty((BAGS, DIM), np.float32)
            total_ids = sum(len(i) for i, _ in batches)

            def edo_pass(key):
                r = readers[key]
                return lambda: [r.lookup_bags(o, i, mode="sum", out=out) for i, o in batches]

            passes = {
                "edo int8": edo_pass(("int8", "memory")),
                "edo int8 mapped": edo_pass(("int8", "mapped")),
                "edo int4": edo_pass(("int4", "memory")),
                "edo fp16": edo_pass(("fp16", "memory")),
                "torch fp32": lambda: [torch.nn.functional.embedding_bag(i, w32, o, mode="sum") for i, o in tb],
                "torch fp16": lambda: [torch.nn.functional.embedding_bag(i, w16, o, mode="sum") for i, o in tb],
                "torch int8": lambda: [torch.ops.quantized.embedding_bag_byte_rowwise_offsets(
                    w8, i, o, False, 0, False, None, None, False) for i, o in tb],
                "torch int4": lambda: [torch.ops.quantized.embedding_bag_4bit_rowwise_offsets(
                    w4, i, o, False, 0, False, None, None, False) for i, o in tb],
                "fbgemm int8": lambda: [tbe["int8"](i, o) for i, o in tb32],
                "fbgemm int4": lambda: [tbe["int4"](i, o) for i, o in tb32],
                "numpy fp32": lambda: [np.add.reduceat(np32[i], o, axis=0) for i, o in batches],
                "ceiling 136 B": lambda: [torch.index_select(w8, 0, i) for i, _ in tb],
            }
            best = {k: float("inf") for k in passes}
            for _ in range(args.passes):
                for k, fn in passes.items():
                    t0 = time.perf_counter()
                    fn()
                    best[k] = min(best[k], time.perf_counter() - t0)
            bytes_of = {"edo int8": 136, "edo int8 mapped": 136, "edo int4": 72, "edo fp16": 256, "torch fp32": 512,
                        "torch fp16": 256, "torch int8": 136, "torch int4": 68, "fbgemm int8": row_bytes["tbe_int8"],
                        "fbgemm int4": row_bytes["tbe_int4"], "numpy fp32": 512, "ceiling 136 B": 136}
            figures = {k: {"mids": total_ids / t / 1e6, "gbs": total_ids * bytes_of[k] / t / 1e9}
                       for k, t in best.items()}
            results.append({"rows": rows, "dist": dist, "threads": args.threads, "busy": args.busy,
                             "figures": figures})
            print(json.dumps(results[-1]), file=sys.stderr)
        del readers, tbe, w32, w16, w8, w4, np32
    return results


RATIOS = [
    ("int8 / FBGEMM int8", "edo int8", "fbgemm int8"),
    ("int8 / torch int8 op", "edo int8", "torch int8"),
    ("int8 mapped (4 KB) / FBGEMM int8", "edo int8 mapped", "fbgemm int8"),
    ("int4 / FBGEMM int4", "edo int4", "fbgemm int4"),
    ("fp16 / torch fp16", "edo fp16", "torch fp16"),
    ("int8 / torch fp32 EmbeddingBag", "edo int8", "torch fp32"),
    ("int8 / ceiling", "edo int8", "ceiling 136 B"),
]


def report(results):
    lines = ["| rows | ids | " + " | ".join(r[0] for r in RATIOS) + " |",
             "|---|---|" + "---|" * len(RATIOS)]
    for r in results:
        f = r["figures"]
        cells = [f"{f[a]['mids'] / f[b]['mids']:.2f}x" for _, a, b in RATIOS]
        lines.append(f"| {r['rows']:,} | {r['dist']} | " + " | ".join(cells) + " |")
    lines += ["", "| rows | ids | " + " | ".join(results[0]["figures"]) + " |",
              "|---|---|" + "---|" * len(results[0]["figures"])]
    for r in results:
        f = r["figures"]
        lines.append(f"| {r['rows']:,} | {r['dist']} | " +
                     " | ".join(f"{v['mids']:.1f} ({v['gbs']:.2f})" for v in f.values()) + " |")
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--venv", required=True)
    ap.add_argument("--rows", default="1000000,4000000")
    ap.add_argument("--dists", default="zipf,uniform")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--batches", type=int, default=6)
    ap.add_argument("--passes", type=int, default=5)
    ap.add_argument("--busy", action="store_true")
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--work", default=None)
    ap.add_argument("--json", default=None)
    ap.add_argument("--inner", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    args.rows = [int(r) for r in args.rows.split(",")]
    args.dists = args.dists.split(",")
    if not args.inner:
        env = dict(os.environ, THP_MEM_ALLOC_ENABLE="1", OMP_NUM_THREADS=str(args.threads),
                   PYTHONPATH=os.path.join(args.build, "python"))
        busy = subprocess.Popen([sys.executable, "-c", "while True: pass"]) if args.busy else None
        try:
            with tempfile.TemporaryDirectory(dir=args.work) as work:
                cmd = [os.path.join(args.venv, "bin", "python"), os.path.abspath(__file__), "--inner"] + \
                    sys.argv[1:] + ["--work", work]  # the last --work wins
                sys.exit(subprocess.run(cmd, env=env).returncode)
        finally:
            if busy:
                busy.kill()
    results = run(args)
    print(report(results))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)


if __name__ == "__main__":
    main()
