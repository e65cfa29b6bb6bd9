#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""A swapped model's embedding memory against its file's bytes (issue: "within 2%").

A module dict holding one nn.EmbeddingBag over a ROWS x DIM float32 table (scripts/bench/make_synthetic.py's
recommender-like values) has its table swapped for the same table in a .edo file
(edo.torch.swap_embeddings), then every row is served once in bags of 4,096 ids. Prints the process's
resident bytes (/proc/self/statm) at each step: the embedding memory before is what the fp32 weight adds,
after is what the mapped file adds once every row was read; both beside the file's bytes.

usage: scripts/bench/swap_memory.py BUILD_DIR [ROWS] [DIM] [CODEC]   (default 1,000,000 x 128, int8)
"""
import gc
import os
import subprocess
import sys
import tempfile

import numpy as np


def rss():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def main(argv):
    build = os.path.abspath(argv[0])
    rows, dim = (int(argv[1]), int(argv[2])) if len(argv) >= 3 else (1_000_000, 128)
    codec = argv[3] if len(argv) >= 4 else "int8"
    if rows < 4096:
        sys.exit("swap_memory.py: at least 4,096 rows (one batch)")
    here = os.path.dirname(os.path.abspath(__file__))
    sys.path.insert(0, os.path.join(build, "python"))
    import torch
    import edo.torch

    with tempfile.TemporaryDirectory() as work:
        npy, edo_path = os.path.join(work, "t.npy"), os.path.join(work, "t.edo")
        subprocess.run([sys.executable, os.path.join(here, "make_synthetic.py"), npy, str(rows), str(dim)], check=True,
                       capture_output=True)
        subprocess.run([os.path.join(build, "edo-quantize"), npy, "-o", edo_path, "--codec", codec, "-q"], check=True,
                       capture_output=True)
        file_bytes = os.path.getsize(edo_path)
        ids = torch.arange(rows)  # the workload's ids, before the baseline: they are no embedding memory
        bag_starts = torch.arange(0, 4096, 8)
        gc.collect()
        base = rss()
        net = torch.nn.ModuleDict({"table": torch.nn.EmbeddingBag.from_pretrained(torch.from_numpy(np.load(npy)),
                                                                                   mode="sum")})
        with_fp32 = rss()
        report = edo.torch.swap_embeddings(net, edo_path)
        gc.collect()
        swapped = rss()
        bag = net["table"]
        bag(ids[:8], bag_starts[:1])  # one bag: the reader's first-call allocations (threads, buffers)
        first = rss()
        for start in range(0, rows - 4095, 4096):
            bag(ids[start:start + 4096], bag_starts)
        bag(ids[rows - 4096:], bag_starts)
        served = rss()
        mib = 1 << 20
        print(f"table {rows} x {dim} fp32 = {rows * dim * 4 / mib:.1f} MiB; {codec} file {file_bytes / mib:.1f} MiB; "
              f"replaced {report['replaced']}")
        print(f"embedding memory with the fp32 weight:       {(with_fp32 - base) / mib:8.1f} MiB")
        print(f"after the swap, before any lookup:          {(swapped - base) / mib:8.1f} MiB")
        print(f"after one bag of 8 rows:                    {(first - base) / mib:8.1f} MiB")
        print(f"after every row was served once:            {(served - base) / mib:8.1f} MiB "
              f"({(served - base) / file_bytes:.3f}x the file's bytes; {(served - first) / file_bytes:.3f}x beyond the "
              "first bag's)")
        print(f"parameter bytes before / after:             {report['param_bytes_before'] / mib:8.1f} / "
              f"{report['param_bytes_after'] / mib:.1f} MiB")


if __name__ == "__main__":
    main(sys.argv[1:])
