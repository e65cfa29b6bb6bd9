#!/usr/bin/env python3
"""llama.cpp's block quantizers as the peer of edo's grouped codecs
(issue 15, item 4): each GGML type quantized and dequantized by the `gguf`
package's numpy implementation (gguf-py, the reference the llama.cpp project
ships), written as an npy table for edo-eval, with its exact bits a value.

    llama_quants.py TABLE.npy OUT_DIR TYPE...

Prints one line per type: NAME BITS_PER_VALUE PATH. The width must be a
multiple of 32 (GGML's block). Run it with a Python that has gguf installed
(scripts/bench/llama_quants_bench.sh makes a venv for it); edo does not
depend on gguf.
"""
import os
import sys

import numpy as np
from gguf import GGMLQuantizationType
from gguf.quants import dequantize, quantize

table, out_dir, *types = sys.argv[1:]
x = np.load(table).astype(np.float32)
rows, dim = x.shape
if dim % 32 != 0:
    sys.exit(f"{table}: width {dim} is not a multiple of 32 (GGML's block)")
for name in types:
    qtype = getattr(GGMLQuantizationType, name)
    q = quantize(x, qtype)
    y = dequantize(q, qtype).reshape(rows, dim).astype(np.float32)
    path = os.path.join(out_dir, f"{name}.npy")
    np.save(path, y)
    print(name, 8.0 * q.nbytes / (rows * dim), path)
