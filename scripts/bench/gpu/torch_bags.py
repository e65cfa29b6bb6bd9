#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""torch's EmbeddingBag on the GPU: the peer of edo_bench_gpu's
lookup_bags_device figure (issue 56, item 6), run by scripts/gpu-check.sh
where a Python with a CUDA build of torch is found.

The same shapes as the bench's "lookup" section: an fp32 table of
--rows x --dim, batches of --batch ids drawn with weight 1/rank over a
fixed permutation, bags of 1 + (start * 7919 % 100) ids, mode sum. Timed
twice: ids and offsets copied from the host on every call (as
lookup_bags_device takes them) and already on the device. Best of
--repeat, each call synchronized. With --edo-json (the bench's json), the
edo figure of the same batch is printed beside torch's, with the ratio.
Prints one line a figure; --json writes them.
"""
import argparse
import json
import sys
import time

import numpy as np


def best_seconds(repeat, fn, torch):
    best = float("inf")
    for _ in range(repeat):
        torch.cuda.synchronize()
        t = time.perf_counter()
        fn()
        torch.cuda.synchronize()
        best = min(best, time.perf_counter() - t)
    return best


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rows", type=int, default=1 << 20)
    ap.add_argument("--dim", type=int, default=128)
    ap.add_argument("--batch", type=int, default=65536)
    ap.add_argument("--repeat", type=int, default=20)
    ap.add_argument("--edo-json", help="edo_bench_gpu's --json output, for the same-machine ratio")
    ap.add_argument("--json", help="write the figures here")
    args = ap.parse_args()
    try:
        import torch
    except ImportError:
        print("torch_bags.py: no torch in this Python", file=sys.stderr)
        return 3
    if not torch.cuda.is_available():
        print("torch_bags.py: torch sees no GPU", file=sys.stderr)
        return 3
    rng = np.random.default_rng(7)
    rank = (np.arange(args.rows, dtype=np.uint64) * np.uint64(2654435761)) % np.uint64(args.rows) + np.uint64(1)
    p = 1.0 / rank.astype(np.float64)
    ids = rng.choice(args.rows, size=args.batch, p=p / p.sum()).astype(np.int64)
    offsets, at = [], 0
    while at < args.batch:
        offsets.append(at)
        at += 1 + (at * 7919 % 100)
    offsets = np.asarray(offsets, dtype=np.int64)
    table = torch.nn.EmbeddingBag(args.rows, args.dim, mode="sum").cuda().eval()
    ids_h, offsets_h = torch.from_numpy(ids).pin_memory(), torch.from_numpy(offsets).pin_memory()
    ids_d, offsets_d = ids_h.cuda(), offsets_h.cuda()
    with torch.no_grad():
        t_host = best_seconds(args.repeat, lambda: table(ids_h.cuda(), offsets_h.cuda()), torch)
        t_dev = best_seconds(args.repeat, lambda: table(ids_d, offsets_d), torch)
    out = {
        "torch": torch.__version__,
        "gpu": torch.cuda.get_device_name(),
        "rows": args.rows,
        "dim": args.dim,
        "batch": args.batch,
        "bags": len(offsets),
        "torch_fp32_host_ids_per_s": args.batch / t_host,
        "torch_fp32_device_ids_per_s": args.batch / t_dev,
    }
    print(f"torch {out['torch']} EmbeddingBag fp32 on {out['gpu']}, {args.rows} x {args.dim}, "
          f"batch {args.batch} ids in {len(offsets)} bags: {out['torch_fp32_host_ids_per_s']:.4g} ids/s "
          f"(ids from the host), {out['torch_fp32_device_ids_per_s']:.4g} ids/s (ids on the device)")
    if args.edo_json:
        with open(args.edo_json) as f:
            figures = json.load(f).get("figures", [])
        want = f"lookup_bags_device batch {args.batch} ids"
        edo = next((g["value"] for g in figures if g["name"].startswith(want)), None)
        if edo is not None:
            out["edo_lookup_bags_device_ids_per_s"] = edo
            out["edo_over_torch_host_ids"] = edo / out["torch_fp32_host_ids_per_s"]
            print(f"edo lookup_bags_device (fp16/int8/int4 tiers, ids from the host): {edo:.4g} ids/s, "
                  f"{out['edo_over_torch_host_ids']:.2f}x torch fp32 with ids from the host")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(out, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
