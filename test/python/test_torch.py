# SPDX-License-Identifier: Apache-2.0
"""edo.torch: the modules against torch's own over the decoded table, every tier kind; swap_embeddings on a
BERT-style model. Skipped, saying so, where PyTorch is not installed (scripts/bootstrap.sh installs the
Debian package python3-torch)."""
import subprocess
import sys

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="PyTorch is not installed: edo.torch's tests need it (python3-torch)")
import edo  # noqa: E402
import edo.torch  # noqa: E402
from conftest import SOURCE, tool  # noqa: E402

sys.path.insert(0, str(SOURCE / "scripts"))
from make_models import read_safetensors  # noqa: E402

TOLERANCE = 1e-5  # sums and means: torch may add a bag's rows in another order or scale by another rounding


def test_embedding_equals_torch_on_every_kind(samples):
    ids = torch.from_numpy(np.random.default_rng(5).integers(0, 10000, (64, 7)))
    for name in ("tiers", "sparse", "hash"):
        decoded = torch.from_numpy(np.load(samples / f"{name}.npy"))
        want = torch.nn.Embedding.from_pretrained(decoded)(ids)
        got = edo.torch.Embedding(samples / f"{name}.edo")(ids)
        assert got.shape == (64, 7, 50) and got.dtype == torch.float32 and not got.requires_grad
        assert torch.equal(got, want), name
        assert edo.torch.Embedding(samples / f"{name}.edo")(ids.to(torch.int32)).equal(want)


@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
def test_embedding_bag_equals_torch(samples, mode):
    rng = np.random.default_rng(6)
    ids = torch.from_numpy(rng.integers(0, 10000, 500))
    offsets = torch.tensor([0, 3, 3, 40, 41, 200, 499])
    weights = torch.from_numpy(rng.uniform(-1, 2, 500).astype(np.float32))
    for name in ("tiers", "sparse", "hash"):
        decoded = torch.from_numpy(np.load(samples / f"{name}.npy"))
        for padding_idx in (None, int(ids[5])):
            kw = dict(mode=mode, padding_idx=padding_idx)
            want_bag = torch.nn.EmbeddingBag.from_pretrained(decoded, **kw)
            got_bag = edo.torch.EmbeddingBag(samples / f"{name}.edo", **kw)
            assert torch.allclose(got_bag(ids, offsets), want_bag(ids, offsets), atol=TOLERANCE), (name, padding_idx)
            grid = ids[:490].reshape(49, 10)  # 2-D: a bag a row
            assert torch.allclose(got_bag(grid), want_bag(grid), atol=TOLERANCE)
            if mode == "sum":
                assert torch.allclose(got_bag(ids, offsets, weights), want_bag(ids, offsets, weights), atol=1e-4)
        last = edo.torch.EmbeddingBag(samples / f"{name}.edo", mode=mode, include_last_offset=True)
        full = torch.cat([offsets, torch.tensor([500])])
        assert torch.allclose(last(ids, full), edo.torch.EmbeddingBag(samples / f"{name}.edo", mode=mode)(ids, offsets))


def test_bad_input(samples):
    bag = edo.torch.EmbeddingBag(samples / "tiers.edo", mode="sum")
    with pytest.raises(TypeError, match="int64 or int32"):
        bag(torch.tensor([0.5]), torch.tensor([0]))
    with pytest.raises(ValueError, match="1-D offsets"):
        bag(torch.tensor([1, 2]))
    with pytest.raises(ValueError, match="include_last_offset"):
        edo.torch.EmbeddingBag(samples / "tiers.edo", include_last_offset=True)(torch.tensor([1]), torch.tensor([0]))
    with pytest.raises(edo.UsageError, match="with mode sum only"):
        edo.torch.EmbeddingBag(samples / "tiers.edo", mode="max")(
            torch.tensor([1]), torch.tensor([0]), torch.tensor([1.0])
        )
    with pytest.raises(edo.Error, match="is outside the table"):
        bag(torch.tensor([10000]), torch.tensor([0]))
    assert torch.equal(
        edo.torch.Embedding(samples / "tiers.edo", unknown="default")(torch.tensor([10007])),
        edo.torch.Embedding(samples / "tiers.edo")(torch.tensor([9999])),  # the rare tier's vector
    )
    with pytest.raises(edo.UsageError, match="mode='avg'"):
        edo.torch.EmbeddingBag(samples / "tiers.edo", mode="avg")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="padding_idx 10000"):
        edo.torch.Embedding(samples / "tiers.edo", padding_idx=10000)


def test_cuda_modules(samples):
    """device='cuda': rows and bags served into CUDA tensors equal the CPU modules' bit for bit (the GPU
    pooling kernel folds in the CPU's order); without a GPU, the modules say why they cannot be built."""
    path = samples / "tiers.edo"
    with pytest.raises(ValueError, match="build the module with device='cuda'"):
        edo.torch.Embedding(path)(torch.zeros(1, dtype=torch.int64, device="meta"))
    if not torch.cuda.is_available():
        try:  # edo's reader opens for a GPU wherever there is one, whatever this torch was built for
            edo.torch.EmbeddingBag(path, device="cuda")
        except edo.Error as e:
            assert "device cuda: no CUDA GPU" in str(e) or "device cuda: this edo was built without CUDA" in str(e), e
        pytest.skip("no CUDA GPU here (torch.cuda.is_available() is False): the GPU modules were not run")
    rng = np.random.default_rng(8)
    ids = torch.from_numpy(rng.integers(0, 10000, 600))
    offsets = torch.tensor([0, 5, 5, 80, 300])
    for access in ("copy", "mapped", "managed"):
        rows = edo.torch.Embedding(path, device="cuda", host_access=access)(ids.cuda())
        assert rows.device.type == "cuda" and torch.equal(rows.cpu(), edo.torch.Embedding(path)(ids))
        for mode in ("sum", "mean", "max"):
            bag = edo.torch.EmbeddingBag(path, mode=mode, device="cuda", host_access=access)
            assert torch.equal(bag(ids, offsets).cpu(), edo.torch.EmbeddingBag(path, mode=mode)(ids, offsets))


class Bert(torch.nn.Module):
    """The embedding block of a BERT-style encoder, named as transformers names it."""

    def __init__(self, tensors):
        super().__init__()
        self.embeddings = torch.nn.Module()
        for part in ("word_embeddings", "position_embeddings", "token_type_embeddings"):
            weight = torch.from_numpy(tensors[f"embeddings.{part}.weight"].copy())
            setattr(self.embeddings, part, torch.nn.Embedding.from_pretrained(weight))
        self.pooler = torch.nn.Linear(50, 50)

    def forward(self, ids):
        positions = torch.arange(ids.shape[1]).expand_as(ids)
        e = self.embeddings
        x = e.word_embeddings(ids) + e.position_embeddings(positions) + e.token_type_embeddings(torch.zeros_like(ids))
        return self.pooler(x.mean(1))


def test_swap_embeddings(tmp_path):
    model_path = tmp_path / "model.safetensors"
    subprocess.run([sys.executable, str(SOURCE / "scripts/make_models.py"), "transformer", str(SOURCE / "data-samples"),
                    str(model_path)], check=True, capture_output=True)
    tool("edo-quantize", model_path, "-o", tmp_path / "emb.edo", "--codec", "fp16", "-q")
    tensors = read_safetensors(model_path)
    model = Bert(tensors)
    ids = torch.from_numpy(np.random.default_rng(7).integers(0, tensors["embeddings.word_embeddings.weight"].shape[0],
                                                             (16, 12)))
    with torch.no_grad():
        want = model(ids)
    report = edo.torch.swap_embeddings(model, tmp_path / "emb.edo")
    assert set(report["replaced"]) == {f"embeddings.{p}.weight" for p in
                                        ("word_embeddings", "position_embeddings", "token_type_embeddings")}
    assert isinstance(model.embeddings.word_embeddings, edo.torch.Embedding)
    with torch.no_grad():
        got = model(ids)
    assert torch.allclose(got, want, atol=1e-2)  # fp16's rounding of the tables
    stored = sum(t.size * 4 for name, t in tensors.items() if name.startswith("embeddings.") and t.ndim == 2
                 and name.endswith("_embeddings.weight"))
    assert report["param_bytes_before"] - report["param_bytes_after"] == stored
    # A file whose tables match nothing, and a shape that differs.
    with pytest.raises(ValueError, match="no table matches an embedding of the model: tables"):
        edo.torch.swap_embeddings(torch.nn.Sequential(torch.nn.Embedding(4, 50)), tmp_path / "emb.edo")
    # A table two embeddings claim (a module name under two parents) is refused, naming both.
    (tmp_path / "dict").mkdir()
    for name in ("C3", "C4"):
        np.save(tmp_path / "dict" / f"{name}.npy", np.random.default_rng(9).normal(size=(300, 8)).astype(np.float32))
    tool("edo-quantize", tmp_path / "dict", "-o", tmp_path / "dict.edo", "--codec", "int8", "-q")
    twice = torch.nn.ModuleDict({p: torch.nn.ModuleDict({"C3": torch.nn.EmbeddingBag(300, 8)}) for p in ("a", "b")})
    with pytest.raises(ValueError, match="table 'C3' matches two embeddings of the model, a.C3.weight and b.C3.weight"):
        edo.torch.swap_embeddings(twice, tmp_path / "dict.edo")
    small = Bert(tensors)
    small.embeddings.position_embeddings = torch.nn.Embedding(3, 50)
    with pytest.raises(ValueError, match="the model's embeddings.position_embeddings.weight is 3 x 50"):
        edo.torch.swap_embeddings(small, tmp_path / "emb.edo")
