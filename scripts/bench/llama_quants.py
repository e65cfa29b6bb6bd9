#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""llama.cpp's block quantizers as the peer of edo's grouped codecs
(issue 15, item 4): each GGML type quantized and dequantized by the `gguf`
package's numpy implementation (gguf-py, the reference the llama.cpp project
ships), written as an npy table for edo-eval, with its exact bits a value.

    llama_quants.py TABLE.npy OUT_DIR TYPE...

Prints one line per type: NAME BITS_PER_VALUE PATH. A width that is not a
multiple of the type's block (32; 256 for the TQ types) is padded with zero
columns, quantized, and cut back after dequantizing; the padding's bytes
count in the bits a value (over the table's own values), as they would in a
GGML tensor of that width. Run it with a Python that has gguf installed
(scripts/bench/llama_quants_bench.sh makes a venv for it); edo does not
depend on gguf.
"""
import os
import sys

import numpy as np
from gguf import GGML_QUANT_SIZES, GGMLQuantizationType
from gguf.quants import dequantize, quantize

table, out_dir, *types = sys.argv[1:]
x = np.load(table).astype(np.float32)
rows, dim = x.shape
for name in types:
    qtype = getattr(GGMLQuantizationType, name)
    block = GGML_QUANT_SIZES[qtype][0]
    padded = -(-dim // block) * block
    q = quantize(np.pad(x, ((0, 0), (0, padded - dim))), qtype)
    y = dequantize(q, qtype).reshape(rows, padded)[:, :dim].astype(np.float32)
    path = os.path.join(out_dir, f"{name}.npy")
    np.save(path, y)
    print(name, 8.0 * q.nbytes / (rows * dim), path)
