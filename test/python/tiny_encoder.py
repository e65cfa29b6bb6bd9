# SPDX-License-Identifier: Apache-2.0
"""The small real transformer edo.check's tests run: a one-layer encoder over GloVe's word vectors,
trained here in a few seconds (seeded, on the CPU) on the word2vec analogy questions of
data-samples/ (predict the fourth word from the first three), with its own word-level tokenizer over
GloVe's vocabulary. Its tables are real: GloVe 6B 50d (Stanford NLP, Public Domain Dedication and
License v1.0) as "embeddings.word_embeddings.weight", kept frozen, and the trained
"embeddings.position_embeddings.weight" (8 x 50). A text's output is the mean of the encoder's last
hidden states over its known words.

As a MODEL of `python -m edo.check`: tiny_encoder.py:load, with $TINY_ENCODER the state saved by
save() (trained anew when unset).
"""
import os
import re
from pathlib import Path
from typing import Any, List, Tuple

import numpy as np
import torch

DATA = Path(os.environ.get("EDO_SOURCE_DIR", Path(__file__).resolve().parents[2])) / "data-samples"
MAX_WORDS = 8


class Tokenizer:
    """Lower-cased words of GloVe's vocabulary; other words are left out (a text with none reads as row 0,
    "the": attention over no token at all is NaN)."""

    def __init__(self, vocab: List[str]) -> None:
        self.rows = {w: i for i, w in enumerate(vocab)}

    def __call__(self, texts: List[str]) -> Tuple[torch.Tensor, torch.Tensor]:
        ids = [[self.rows[w] for w in re.findall(r"[\w'-]+", t.lower()) if w in self.rows][:MAX_WORDS] or [0]
               for t in texts]
        width = max(1, max(len(r) for r in ids))
        mask = torch.tensor([[j < len(r) for j in range(width)] for r in ids])
        return torch.tensor([r + [0] * (width - len(r)) for r in ids], dtype=torch.int64), mask


class TinyEncoder(torch.nn.Module):
    def __init__(self, words: np.ndarray) -> None:
        super().__init__()
        dim = words.shape[1]
        self.embeddings = torch.nn.Module()
        self.embeddings.word_embeddings = torch.nn.Embedding.from_pretrained(torch.from_numpy(words), freeze=True)
        self.embeddings.position_embeddings = torch.nn.Embedding(MAX_WORDS, dim)
        self.mask_vector = torch.nn.Parameter(torch.zeros(dim))
        self.layer = torch.nn.TransformerEncoderLayer(dim, 2, 2 * dim, dropout=0.0, batch_first=True)

    def hidden(self, ids: torch.Tensor, keep: torch.Tensor, masked: int = -1) -> torch.Tensor:
        x = self.embeddings.word_embeddings(ids)
        if masked >= 0:
            x = x.clone()
            x[:, masked] = self.mask_vector
        positions = torch.arange(ids.shape[1]).expand_as(ids)
        return self.layer(x + self.embeddings.position_embeddings(positions), src_key_padding_mask=~keep)

    def forward(self, ids: torch.Tensor, keep: torch.Tensor) -> torch.Tensor:
        h = self.hidden(ids, keep) * keep.unsqueeze(-1)
        return h.sum(1) / keep.sum(1, keepdim=True).clamp(min=1)


def vocab() -> List[str]:
    return (DATA / "glove.6B.50d.10k.vocab.txt").read_text().split("\n")[:10000]


def questions() -> List[str]:
    return [line for line in (DATA / "questions-words.txt").read_text().splitlines() if not line.startswith(":")]


def train(steps: int = 150, seed: int = 0) -> TinyEncoder:
    torch.manual_seed(seed)
    words = np.load(DATA / "glove.6B.50d.10k.npy").astype(np.float32)
    model = TinyEncoder(words)
    ids, keep = Tokenizer(vocab())(questions())
    whole = keep.all(1) & (keep.sum(1) == 4)
    ids = ids[whole]
    optimiser = torch.optim.Adam([p for p in model.parameters() if p.requires_grad], lr=3e-3)
    table = model.embeddings.word_embeddings.weight
    generator = torch.Generator().manual_seed(seed)
    for _ in range(steps):
        batch = ids[torch.randint(0, ids.shape[0], (256,), generator=generator)]
        h = model.hidden(batch, torch.ones_like(batch, dtype=torch.bool), masked=3)[:, 3]
        loss = torch.nn.functional.cross_entropy(h @ table.T, batch[:, 3])
        optimiser.zero_grad()
        loss.backward()
        optimiser.step()
    return model.eval()


def embedder() -> Any:
    tokenizer = Tokenizer(vocab())

    def embed(model: TinyEncoder, texts: List[str]) -> torch.Tensor:
        return model(*tokenizer(texts))

    return embed


def save(model: TinyEncoder, path: Path) -> None:
    torch.save(model.state_dict(), path)


def load() -> Tuple[TinyEncoder, Any]:
    state = os.environ.get("TINY_ENCODER")
    if not state:
        return train(), embedder()
    model = TinyEncoder(np.zeros((10000, 50), np.float32))
    model.load_state_dict(torch.load(state))
    return model.eval(), embedder()


def tables(model: TinyEncoder) -> dict:
    """The model's embedding tables by parameter name (what edo-pack takes as a safetensors)."""
    e = model.embeddings
    return {f"embeddings.{n}.weight": getattr(e, n).weight.detach().numpy().copy()
            for n in ("word_embeddings", "position_embeddings")}
