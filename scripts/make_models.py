#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Writes the models edo's tests, demo and benchmarks use (docs/PACK.md, "Models").

  make_models.py sample DATA_DIR OUT.safetensors
      GloVe's 10,000 x 50 word vectors and BIGANN's 10,000 x 128 SIFT
      descriptors (data-samples/, see its README) as one safetensors model:
      "emb.words.weight" (F32), "emb.items.weight" (F16), "emb.tiny.weight"
      (3 x 8, F32), and two tensors a model also holds that are not embedding
      tables: "bias" (1-D) and "head.dense.weight" (16 x 50, no "emb").

  make_models.py transformer DATA_DIR OUT.safetensors
      A BERT-style encoder's tensors, named as Hugging Face names them:
      "embeddings.word_embeddings.weight" (GloVe's 10,000 x 50 word vectors),
      "embeddings.position_embeddings.weight" (512 x 50, the sinusoidal
      position code of "Attention is all you need" at GloVe's scale),
      "embeddings.token_type_embeddings.weight" (2 x 50, seeded), and the
      rest of a 6-layer encoder at width 50 (attention, feed-forward and
      pooler weights, biases, layer norms: 101 tensors that are no
      embedding table), seeded.

  make_models.py criteo OUT_DIR [--cap ROWS] [--dim D] [--seed S] [--freq-dir DIR]
      A synthetic recommender of 26 tables C1..C26 with the cardinalities of
      the Criteo display-advertising dataset's 26 categorical features (as
      the DLRM reference publishes them for the Kaggle release), each capped
      at --cap rows (default 10,000; the benchmark uses 1,000,000), dim 64,
      as OUT_DIR/C1.npy ... (a folder of .npy is a model). Values: a seeded
      mix of a few shared directions and noise, in float32; with --freq-dir,
      Zipf-like (s = 1.05) lookup counts per table, seeded, as DIR/CN.npy.

Only numpy is needed; safetensors are written by hand (8-byte header length,
JSON header, raw little-endian data).
"""
import json
import pathlib
import struct
import sys

import numpy as np

# Criteo Kaggle's 26 categorical cardinalities (DLRM, dlrm_data_pytorch.py's counts).
CRITEO_CARDINALITIES = [
    1460, 583, 10131227, 2202608, 305, 24, 12517, 633, 3, 93145, 5683, 8351593, 3194, 27, 14992, 5461306, 10, 5652,
    2173, 4, 7046547, 18, 15, 286181, 105, 142572,
]


def write_safetensors(path, tensors):
    """tensors: list of (name, numpy array); dtypes float32 or float16."""
    header, offset, blobs = {}, 0, []
    for name, a in tensors:
        a = np.ascontiguousarray(a)
        dtype = {np.dtype("float32"): "F32", np.dtype("float16"): "F16"}[a.dtype]
        data = a.astype(a.dtype.newbyteorder("<"), copy=False).tobytes()
        header[name] = {"dtype": dtype, "shape": list(a.shape), "data_offsets": [offset, offset + len(data)]}
        offset += len(data)
        blobs.append(data)
    text = json.dumps(header, separators=(",", ":"), sort_keys=True).encode()
    text += b" " * (-len(text) % 8)
    tmp = pathlib.Path(str(path) + ".tmp")
    with open(tmp, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for b in blobs:
            f.write(b)
    tmp.replace(path)


def read_safetensors(path):
    """The tensors of a file write_safetensors wrote (F32 or F16), by name, as numpy arrays."""
    data = pathlib.Path(path).read_bytes()
    (n,) = struct.unpack_from("<Q", data, 0)
    out = {}
    for name, t in json.loads(data[8 : 8 + n]).items():
        if name == "__metadata__":
            continue
        begin, end = t["data_offsets"]
        dtype = {"F32": "<f4", "F16": "<f2"}[t["dtype"]]
        out[name] = np.frombuffer(data[8 + n + begin : 8 + n + end], dtype).reshape(t["shape"])
    return out


def sample(data_dir, out):
    data_dir = pathlib.Path(data_dir)
    words = np.load(data_dir / "glove.6B.50d.10k.npy").astype(np.float32)
    items = np.load(data_dir / "bigann10k_base.npy").astype(np.float16)
    rng = np.random.default_rng(7)
    write_safetensors(out, [
        ("emb.words.weight", words),
        ("emb.items.weight", items),
        ("emb.tiny.weight", rng.standard_normal((3, 8)).astype(np.float32)),
        ("bias", rng.standard_normal(50).astype(np.float32)),
        ("head.dense.weight", rng.standard_normal((16, 50)).astype(np.float32)),
    ])


def transformer(data_dir, out):
    data_dir = pathlib.Path(data_dir)
    words = np.load(data_dir / "glove.6B.50d.10k.npy").astype(np.float32)
    dim = words.shape[1]
    scale = float(np.sqrt(np.mean(words ** 2)))
    pos = np.arange(512, dtype=np.float64)[:, None]
    rate = 1.0 / 10000 ** (np.arange(0, dim, 2, dtype=np.float64) / dim)
    positions = np.empty((512, dim), np.float64)
    positions[:, 0::2] = np.sin(pos * rate)
    positions[:, 1::2] = np.cos(pos * rate)
    rng = np.random.default_rng(11)
    tensors = [
        ("embeddings.word_embeddings.weight", words),
        ("embeddings.position_embeddings.weight", (positions * scale).astype(np.float32)),
        ("embeddings.token_type_embeddings.weight", (rng.standard_normal((2, dim)) * scale).astype(np.float32)),
        ("embeddings.LayerNorm.weight", np.ones(dim, np.float32)),
        ("embeddings.LayerNorm.bias", np.zeros(dim, np.float32)),
    ]
    def dense(name, rows, cols):
        tensors.append((name + ".weight", (rng.standard_normal((rows, cols)) * 0.02).astype(np.float32)))
        tensors.append((name + ".bias", np.zeros(rows, np.float32)))
    for layer in range(6):
        at = f"encoder.layer.{layer}."
        for part in ("attention.self.query", "attention.self.key", "attention.self.value", "attention.output.dense"):
            dense(at + part, dim, dim)
        tensors.append((at + "attention.output.LayerNorm.weight", np.ones(dim, np.float32)))
        tensors.append((at + "attention.output.LayerNorm.bias", np.zeros(dim, np.float32)))
        dense(at + "intermediate.dense", 4 * dim, dim)
        dense(at + "output.dense", dim, 4 * dim)
        tensors.append((at + "output.LayerNorm.weight", np.ones(dim, np.float32)))
        tensors.append((at + "output.LayerNorm.bias", np.zeros(dim, np.float32)))
    dense("pooler.dense", dim, dim)
    write_safetensors(out, tensors)


def criteo(out_dir, cap=10000, dim=64, seed=0, freq_dir=None):
    out_dir = pathlib.Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    if freq_dir:
        pathlib.Path(freq_dir).mkdir(parents=True, exist_ok=True)
    for i, card in enumerate(CRITEO_CARDINALITIES):
        rows = min(card, cap)
        rng = np.random.default_rng([seed, i])
        # A few directions every row leans on (as trained tables have), plus noise.
        basis = rng.standard_normal((8, dim)).astype(np.float32)
        table = np.empty((rows, dim), dtype=np.float32)
        block = 1 << 16
        for start in range(0, rows, block):
            n = min(block, rows - start)
            mix = rng.standard_normal((n, 8)).astype(np.float32)
            table[start:start + n] = mix @ basis * 0.05 + rng.standard_normal((n, dim)).astype(np.float32) * 0.02
        np.save(out_dir / f"C{i + 1}.npy", table)
        if freq_dir:
            ranks = rng.permutation(rows) + 1
            counts = np.floor(1e6 / ranks.astype(np.float64) ** 1.05) + 1
            np.save(pathlib.Path(freq_dir) / f"C{i + 1}.npy", counts.astype(np.int64))


def main(argv):
    if len(argv) >= 3 and argv[0] == "sample":
        sample(argv[1], argv[2])
        return 0
    if len(argv) >= 3 and argv[0] == "transformer":
        transformer(argv[1], argv[2])
        return 0
    if len(argv) >= 2 and argv[0] == "criteo":
        out, opts, rest = argv[1], {"--cap": 10000, "--dim": 64, "--seed": 0, "--freq-dir": None}, argv[2:]
        while rest:
            if rest[0] not in opts or len(rest) < 2:
                raise SystemExit(f"make_models.py: unknown or incomplete option {rest[0]}")
            opts[rest[0]] = rest[1] if rest[0] == "--freq-dir" else int(rest[1])
            rest = rest[2:]
        criteo(out, opts["--cap"], opts["--dim"], opts["--seed"], opts["--freq-dir"])
        return 0
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
