#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Pooled lookups against the peers a recommender team runs (docs/BENCHMARKS.md,
"Pooled lookups against torch and FBGEMM"), all in one process, same ids and
offsets, same tables:

  edo        Reader.lookup_bags on int8 (136-byte rows), int4 (72) and fp16 (256)
             files, read into huge pages (placement memory) and mapped (4 KB pages)
  edo.torch  edo.torch.EmbeddingBag(mode="sum") on the int8 file: torch tensors
             in and out, the module a PyTorch user swaps in
  torch      nn.EmbeddingBag fp32 (F.embedding_bag), fp16 embedding_bag, and the
             quantized row-wise ops embedding_bag_byte_rowwise_offsets (int8,
             136-byte rows) and embedding_bag_4bit_rowwise_offsets (int4, 68)
  FBGEMM     IntNBitTableBatchedEmbeddingBagsCodegen, int8 and int4, on the CPU
             (fbgemm-gpu-cpu)
  numpy      np.add.reduceat over a fancy-indexed fp32 gather
  gather     torch.index_select of the 136-byte rows (the bytes an int8 row
             holds read and copied, nothing decoded or summed)
  ceiling    edo_bench_random_read: the same ids' 136-byte rows read from a
             table in huge pages, every cache line of a row loaded, 8, 16 or
             32 rows prefetched ahead (the best), nothing decoded or summed (the memory's
             random-read rate for rows of that size, one thread)
  --kinds    the other tier kinds (bf16, fp8, grouped int8/int4 with fp16
             scales, int3, pq, a sparse tier, a hashed tier, three tiers behind
             a row map), each against torch's fp32 EmbeddingBag

Tables ROWS x 128 of seeded normal values; batches of 4,096 bags of 1 to 100
ids, Zipf(1.05) over a seeded permutation of the rows or uniform; sum pooling.
Every pass of a figure alternates with the others', best of --passes. Torch
tensors are allocated with THP_MEM_ALLOC_ENABLE=1 (huge pages), numpy's are
advised huge by numpy itself, edo's "memory" placement madvises its copy; the
script prints the AnonHugePages of the process so that this can be checked.

usage: pooled_peers.py --venv DIR [--rows 1000000,4000000] [--threads 1] [--kinds]
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


# Tier kinds beyond the peers' own formats (--kinds, on the first table size
# only), each held against torch's fp32 EmbeddingBag: scalar codecs the
# kernels decode, a width they decode a row at a time, product codes, a
# sparse tier, a hashed one, and three tiers behind a row map.
OTHER_CODECS = [("bf16", "bf16"), ("fp8", "fp8"), ("int8:group=32,scale=fp16", "int8-g32"),
                ("int4:group=32,scale=fp16", "int4-g32"), ("int3", "int3"), ("pq:m=32", "pq32")]


def other_kind_files(args, npy, rows):
    import numpy as np
    build = args.build
    out = {}
    sparse = os.path.join(args.work, f"t{rows}.csr.edo")
    subprocess.run([f"{build}/edo-sparsify", npy, "-o", sparse, "--density", "0.25", "--values", "int8", "-q"],
                   check=True, stdout=subprocess.DEVNULL)
    out["csr"] = sparse
    hashed = os.path.join(args.work, f"t{rows}.hash.edo")
    subprocess.run([f"{build}/edo-hash", npy, "-o", hashed, "--scheme", f"hash:buckets={rows // 8}", "-q"],
                   check=True, stdout=subprocess.DEVNULL)
    out["hash"] = hashed
    # Three tiers by Zipf counts over the same permutation the zipf ids use.
    rng = np.random.default_rng(rows + 1)
    lengths = rng.integers(1, 101, size=args.batches * BAGS)
    perm = rng.permutation(rows)
    freq = np.empty(rows, np.float64)
    freq[perm] = 1.0 / np.arange(1, rows + 1) ** 1.05
    np.save(os.path.join(args.work, "freq.npy"), freq)
    del lengths
    tiers = os.path.join(args.work, f"t{rows}.3tier.edo")
    subprocess.run([f"{build}/edo-pack", npy, "-o", tiers, "-q", "--freq", os.path.join(args.work, "freq.npy"),
                    "--tier", "hot:rows=5%:fp16", "--tier", "warm:rows=25%:int8", "--tier", "cold:rest:int4"],
                   check=True, stdout=subprocess.DEVNULL)
    out["3tier"] = tiers
    return out


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
    import edo.torch as edo_torch
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
        codecs = [("int8", "int8"), ("int4", "int4"), ("fp16", "fp16")]
        if args.kinds and rows == args.rows[0]:
            codecs += OTHER_CODECS
        for codec, name in codecs:
            path = os.path.join(args.work, f"t{rows}.{name}.edo")
            if not os.path.exists(path):
                subprocess.run([quantize, npy, "-o", path, "--codec", codec, "--quiet"], check=True,
                               stdout=subprocess.DEVNULL)
            files[name] = path
        if args.kinds and rows == args.rows[0]:
            files.update(other_kind_files(args, npy, rows))
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
        # A TBE row: its codes and, where FBGEMM keeps them apart, its scale and bias.
        tbe_row = {ty: sum(t.shape[1] for t in tbe[ty].split_embedding_weights()[0] if t is not None)
                   for ty in ("int8", "int4")}
        row_bytes = {"int8": 136, "int4": 72, "fp16": 256, "fp32": 512, "t_int4": 68,
                     "tbe_int8": tbe_row["int8"], "tbe_int4": tbe_row["int4"]}
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

            others = {f"edo {name}": edo_pass((name, "memory")) for name in files if name not in ("int8", "int4", "fp16")}
            # edo.torch's module on the int8 file: torch tensors in and out (no copy either way).
            torch_bag = edo_torch.EmbeddingBag(readers[("int8", "memory")], mode="sum")
            passes = {
                **others,
                "edo int8": edo_pass(("int8", "memory")),
                "edo int8 mapped": edo_pass(("int8", "mapped")),
                "edo int4": edo_pass(("int4", "memory")),
                "edo fp16": edo_pass(("fp16", "memory")),
                "edo.torch int8": lambda: [torch_bag(i, o) for i, o in tb],
                "torch fp32": lambda: [torch.nn.functional.embedding_bag(i, w32, o, mode="sum") for i, o in tb],
                "torch fp16": lambda: [torch.nn.functional.embedding_bag(i, w16, o, mode="sum") for i, o in tb],
                "torch int8": lambda: [torch.ops.quantized.embedding_bag_byte_rowwise_offsets(
                    w8, i, o, False, 0, False, None, None, False) for i, o in tb],
                "torch int4": lambda: [torch.ops.quantized.embedding_bag_4bit_rowwise_offsets(
                    w4, i, o, False, 0, False, None, None, False) for i, o in tb],
                "fbgemm int8": lambda: [tbe["int8"](i, o) for i, o in tb32],
                "fbgemm int4": lambda: [tbe["int4"](i, o) for i, o in tb32],
                "numpy fp32": lambda: [np.add.reduceat(np32[i], o, axis=0) for i, o in batches],
                "gather 136 B": lambda: [torch.index_select(w8, 0, i) for i, _ in tb],
            }
            ids_npy = os.path.join(args.work, "ids.npy")
            np.save(ids_npy, np.concatenate([i for i, _ in batches]))
            ceiling = json.loads(subprocess.run(
                [os.path.join(args.build, "scripts", "bench", "edo_bench_random_read"), str(rows), "136", ids_npy,
                 "--passes", str(args.passes)], check=True, capture_output=True, text=True).stdout)
            os.remove(ids_npy)
            best = {k: float("inf") for k in passes}
            for _ in range(args.passes):
                for k, fn in passes.items():
                    t0 = time.perf_counter()
                    fn()
                    best[k] = min(best[k], time.perf_counter() - t0)
            bytes_of = {k: readers[(k[4:], "memory")].file_bytes / rows for k in others}
            bytes_of |= {"edo int8": 136, "edo.torch int8": 136, "edo int8 mapped": 136, "edo int4": 72, "edo fp16": 256, "torch fp32": 512,
                        "torch fp16": 256, "torch int8": 136, "torch int4": 68, "fbgemm int8": row_bytes["tbe_int8"],
                        "fbgemm int4": row_bytes["tbe_int4"], "numpy fp32": 512, "gather 136 B": 136}
            figures = {k: {"mids": total_ids / t / 1e6, "gbs": total_ids * bytes_of[k] / t / 1e9}
                       for k, t in best.items()}
            figures["ceiling 136 B"] = {"mids": ceiling["mids"], "gbs": ceiling["gbs"]}
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
    ("int8 / gather of its bytes", "edo int8", "gather 136 B"),
    ("int8 / random-read ceiling", "edo int8", "ceiling 136 B"),
    ("edo.torch int8 / torch fp32 EmbeddingBag", "edo.torch int8", "torch fp32"),
    ("edo.torch int8 / torch int8 op", "edo.torch int8", "torch int8"),
]


def report(results):
    lines = ["| rows | ids | threads | load | " + " | ".join(r[0] for r in RATIOS) + " |",
             "|---|---|---|---|" + "---|" * len(RATIOS)]
    for r in results:
        f = r["figures"]
        cells = [f"{f[a]['mids'] / f[b]['mids']:.2f}x" for _, a, b in RATIOS]
        load = "1 core busy" if r["busy"] else "idle"
        lines.append(f"| {r['rows']:,} | {r['dist']} | {r['threads']} | {load} | " + " | ".join(cells) + " |")
    kinds = [k for k in results[0]["figures"] if k.startswith("edo ") and k[4:] not in
             ("int8", "int8 mapped", "int4", "fp16", "torch int8")]
    if kinds:
        lines += ["", "| rows | ids | " + " | ".join(f"{k} / torch fp32" for k in kinds) + " |",
                  "|---|---|" + "---|" * len(kinds)]
        for r in results:
            f = r["figures"]
            if not all(k in f for k in kinds):
                continue
            lines.append(f"| {r['rows']:,} | {r['dist']} | " +
                         " | ".join(f"{f[k]['mids'] / f['torch fp32']['mids']:.2f}x" for k in kinds) + " |")
    for r in results:
        f = r["figures"]
        lines += ["", f"{r['rows']:,} rows, {r['dist']} ids, {r['threads']} thread(s), "
                  f"{'1 core busy' if r['busy'] else 'idle'}: M ids/s (GB/s of rows read)", "",
                  "| " + " | ".join(f) + " |", "|" + "---|" * len(f),
                  "| " + " | ".join(f"{v['mids']:.1f} ({v['gbs']:.2f})" for v in f.values()) + " |"]
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
    ap.add_argument("--kinds", action="store_true", help="also the other tier kinds, on the first table size")
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
