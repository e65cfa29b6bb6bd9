# SPDX-License-Identifier: Apache-2.0
"""edo tables as PyTorch modules, for inference: rows and pooled bags served from a .edo file.

    import edo.torch
    bag = edo.torch.EmbeddingBag("table.edo", mode="sum")      # as torch.nn.EmbeddingBag
    pooled = bag(torch.tensor([5, 9, 2]), torch.tensor([0, 2]))
    report = edo.torch.swap_embeddings(model, "model.edo")      # every nn.Embedding the file has a table for

The modules hold no parameters and compute no gradients: their rows come from the file through the
reader's kernels (edo.File.lookup and lookup_bags, the GIL released), decoded straight into numpy
arrays that torch takes without a copy (torch.from_numpy). With device="cuda" the file is opened for the
GPU (its tiers marked 'gpu' in device memory; host_access says how the others are reached) and the
rows and bags are gathered, decoded and pooled by edo's kernels straight into a CUDA tensor on the
current CUDA device, the one edo's reader uses (ids may be on either device: they are read on the
host); the call synchronises before it returns. torch is
imported here only: `import edo` works without it.
"""
import gc
import os
from typing import Any, Dict, List, Optional, Tuple, TypedDict, Union, cast

import numpy as np

try:
    import torch
except ImportError as _e:
    raise ImportError(
        "edo.torch needs PyTorch, which is not installed here: pip install torch (or the Debian package "
        "python3-torch); the rest of edo works without it"
    ) from _e

from ._edo import File, UsageError
from ._edo import open as _open
from ._types import Device, HostAccess, Placement, PoolMode, UnknownIds

Source = Union[str, "os.PathLike[str]", File]


def _table(
    source: Source,
    table: Optional[str],
    unknown: UnknownIds,
    placement: Placement,
    device: Device = "cpu",
    host_access: HostAccess = "copy",
) -> File:
    f = (
        source
        if isinstance(source, File)
        else _open(os.fspath(source), unknown=unknown, placement=placement, device=device, host_access=host_access)
    )
    if table is not None:
        return f.table(table)
    if len(f.tables) > 1:
        raise UsageError(f"{f.path}: a model of {len(f.tables)} tables ({', '.join(f.tables)}): name one with table=")
    return f


def _ids(t: torch.Tensor, what: str, device: Device = "cpu") -> "np.ndarray[Any, Any]":
    if not isinstance(t, torch.Tensor):
        raise TypeError(f"{what} must be a torch.Tensor, not {type(t).__name__}")
    if t.device.type != "cpu":
        if device != "cuda":
            raise ValueError(
                f"{what} is on {t.device}: this module serves CPU tensors (move the ids with .cpu(), or build "
                "the module with device='cuda')"
            )
        t = t.cpu()
    if t.dtype not in (torch.int64, torch.int32):
        raise TypeError(f"{what} must hold int64 or int32, not {t.dtype}")
    ids: "np.ndarray[Any, Any]" = t.detach().contiguous().numpy()
    return ids


class Embedding(torch.nn.Module):
    """torch.nn.Embedding over a .edo table: forward(input) gives input.shape + (dim,) float32 rows.

    source: a path or an edo.File; table: the table of a model file (None: the file's only one);
    padding_idx: kept for torch's interface (the stored row is returned, as torch returns its weight's
    row); unknown, placement, device, host_access: as edo.open's (device 'cuda': rows served into CUDA
    tensors by edo's GPU reader).
    """

    def __init__(
        self,
        source: Source,
        table: Optional[str] = None,
        padding_idx: Optional[int] = None,
        unknown: UnknownIds = "error",
        placement: Placement = "mapped",
        device: Device = "cpu",
        host_access: HostAccess = "copy",
    ) -> None:
        super().__init__()
        self.file = _table(source, table, unknown, placement, device, host_access)
        self.device: Device = device
        self.num_embeddings, self.embedding_dim = self.file.shape
        self.padding_idx = _padding(padding_idx, self.num_embeddings)

    def forward(self, input: torch.Tensor) -> torch.Tensor:
        ids = _ids(input, "input", self.device).reshape(-1)
        if self.device == "cuda":
            rows = torch.empty((ids.size, self.embedding_dim), dtype=torch.float32, device="cuda")
            if ids.size:
                self.file.lookup(ids, out=rows)
            return rows.reshape(*input.shape, self.embedding_dim)
        out = np.empty((ids.size, self.embedding_dim), np.float32)
        if ids.size:
            self.file.lookup(ids, out=out)
        return torch.from_numpy(out).reshape(*input.shape, self.embedding_dim)

    def extra_repr(self) -> str:
        return f"{self.num_embeddings}, {self.embedding_dim}, file={self.file.path!r}" + (
            f", padding_idx={self.padding_idx}" if self.padding_idx is not None else ""
        )


class EmbeddingBag(torch.nn.Module):
    """torch.nn.EmbeddingBag over a .edo table, with its forward(input, offsets, per_sample_weights).

    input: 2-D (B, N), a bag a row, offsets None; or 1-D ids with 1-D offsets (bag b starts at
    offsets[b]; include_last_offset: offsets ends with len(input)). mode 'sum', 'mean' or 'max';
    per_sample_weights with 'sum' only; ids equal to padding_idx are left out of their bag (and of
    its mean's count); an empty bag gives zeros. Returns float32 (B, dim).
    """

    def __init__(
        self,
        source: Source,
        table: Optional[str] = None,
        mode: PoolMode = "mean",
        padding_idx: Optional[int] = None,
        include_last_offset: bool = False,
        unknown: UnknownIds = "error",
        placement: Placement = "mapped",
        device: Device = "cpu",
        host_access: HostAccess = "copy",
    ) -> None:
        super().__init__()
        if mode not in ("sum", "mean", "max"):
            raise UsageError(f"mode={mode!r}: expected 'sum', 'mean' or 'max'")
        self.file = _table(source, table, unknown, placement, device, host_access)
        self.device: Device = device
        self.num_embeddings, self.embedding_dim = self.file.shape
        self.mode: PoolMode = mode
        self.padding_idx = _padding(padding_idx, self.num_embeddings)
        self.include_last_offset = include_last_offset

    def forward(
        self,
        input: torch.Tensor,
        offsets: Optional[torch.Tensor] = None,
        per_sample_weights: Optional[torch.Tensor] = None,
    ) -> torch.Tensor:
        ids, starts = self._bags(input, offsets)
        weights = None
        if per_sample_weights is not None:
            if per_sample_weights.shape != input.shape:
                raise ValueError(f"per_sample_weights of shape {tuple(per_sample_weights.shape)}: one per id wanted")
            weights = per_sample_weights.detach().cpu().to(torch.float32).contiguous().numpy().reshape(-1)
        if self.padding_idx is not None:
            ids, starts, weights = _without(ids, starts, weights, self.padding_idx)
        if self.device == "cuda":
            pooled = torch.empty((starts.size, self.embedding_dim), dtype=torch.float32, device="cuda")
            if starts.size:
                self.file.lookup_bags(starts, ids, mode=self.mode, weights=weights, out=pooled)
            return pooled
        out = np.empty((starts.size, self.embedding_dim), np.float32)
        if starts.size:
            self.file.lookup_bags(starts, ids, mode=self.mode, weights=weights, out=out)
        return torch.from_numpy(out)

    def _bags(
        self, input: torch.Tensor, offsets: Optional[torch.Tensor]
    ) -> Tuple["np.ndarray[Any, Any]", "np.ndarray[Any, Any]"]:
        if input.dim() == 2:
            if offsets is not None:
                raise ValueError("offsets must be None when input is 2-D (a bag a row)")
            rows, n = input.shape
            return _ids(input, "input", self.device).reshape(-1), np.arange(rows, dtype=np.int64) * n
        if input.dim() != 1 or offsets is None or offsets.dim() != 1:
            raise ValueError("input must be 2-D, or 1-D with 1-D offsets")
        starts = _ids(offsets, "offsets", self.device).astype(np.int64)
        if self.include_last_offset:
            if starts.size == 0 or starts[-1] != input.shape[0]:
                raise ValueError("include_last_offset: offsets must end with len(input)")
            starts = starts[:-1]
        return _ids(input, "input", self.device), starts

    def extra_repr(self) -> str:
        return f"{self.num_embeddings}, {self.embedding_dim}, mode={self.mode!r}, file={self.file.path!r}"


def _padding(padding_idx: Optional[int], rows: int) -> Optional[int]:
    if padding_idx is None:
        return None
    if not -rows <= padding_idx < rows:
        raise ValueError(f"padding_idx {padding_idx} is outside the table's {rows} rows")
    return padding_idx + rows if padding_idx < 0 else padding_idx


def _without(
    ids: "np.ndarray[Any, Any]",
    starts: "np.ndarray[Any, Any]",
    weights: "Optional[np.ndarray[Any, Any]]",
    padding_idx: int,
) -> Tuple["np.ndarray[Any, Any]", "np.ndarray[Any, Any]", "Optional[np.ndarray[Any, Any]]"]:
    keep = ids != padding_idx
    if keep.all():
        return ids, starts, weights
    kept_before = np.concatenate(([0], np.cumsum(keep)))  # kept ids before each position
    return ids[keep], kept_before[starts], None if weights is None else weights[keep]


class SwapReport(TypedDict):
    """What swap_embeddings replaced and the memory it gave back."""

    replaced: Dict[str, str]  # the module's parameter name -> the file's table
    param_bytes_before: int
    param_bytes_after: int
    rss_before: int  # the process's resident bytes (0 where /proc is not there)
    rss_after: int
    file_bytes: int


def swap_embeddings(
    model: torch.nn.Module,
    source: Union[str, "os.PathLike[str]"],
    unknown: UnknownIds = "error",
    placement: Placement = "mapped",
    device: Optional[Device] = None,
    host_access: HostAccess = "copy",
) -> SwapReport:
    """Replaces every nn.Embedding and nn.EmbeddingBag of `model` whose weight has a table in the .edo
    file `source` (its name, as edo-pack kept it from the safetensors; the module's name, as a folder
    of C1.npy ... names a module dict's tables; or one ending with either at a '.') by the edo module
    of that table, shapes checked; the rest of the model is
    untouched. Returns what it replaced and the parameter and resident bytes before and after. A file
    none of whose tables matches an embedding is a ValueError listing both sides. device: where the
    modules serve ('cpu', 'cuda'; None: 'cuda' when an embedding replaced is on a GPU).
    """
    f = _open(os.fspath(source), unknown=unknown, placement=placement)
    embeddings = _embeddings(model)
    replaced = _matching(f, embeddings)
    if device is None:
        device = "cuda" if any(embeddings[p].weight.device.type == "cuda" for p in replaced) else "cpu"
    if device != "cpu":
        f = _open(os.fspath(source), unknown=unknown, placement=placement, device=device, host_access=host_access)
    before, rss_before = _param_bytes(model), _rss()
    for param, t in replaced.items():
        old = embeddings[param]
        new: torch.nn.Module
        if isinstance(old, torch.nn.EmbeddingBag):
            new = EmbeddingBag(
                f, t, cast(PoolMode, old.mode), old.padding_idx, old.include_last_offset, device=device
            )
        else:
            new = Embedding(f, t, old.padding_idx, device=device)
        parent, _, child = param[: -len(".weight")].rpartition(".")
        setattr(model.get_submodule(parent) if parent else model, child, new)
    del old, embeddings
    gc.collect()
    return SwapReport(
        replaced=replaced,
        param_bytes_before=before,
        param_bytes_after=_param_bytes(model),
        rss_before=rss_before,
        rss_after=_rss(),
        file_bytes=f.file_bytes,
    )


def matching_tables(model: torch.nn.Module, source: Union[str, "os.PathLike[str]"]) -> Dict[str, str]:
    """What swap_embeddings(model, source) would replace, without replacing it: the model's parameter
    name -> the file's table; the same errors (no table matches, a shape that differs, a table two
    embeddings claim)."""
    with _open(os.fspath(source)) as f:
        return _matching(f, _embeddings(model))


_TorchEmbedding = Union[torch.nn.Embedding, torch.nn.EmbeddingBag]


def _embeddings(model: torch.nn.Module) -> Dict[str, _TorchEmbedding]:
    return {
        f"{name}.weight": module
        for name, module in model.named_modules()
        if isinstance(module, (torch.nn.Embedding, torch.nn.EmbeddingBag))
    }


def _matching(f: File, embeddings: Dict[str, _TorchEmbedding]) -> Dict[str, str]:
    tables = f.tables
    matches = {param: _match(param, tables) for param in embeddings}
    replaced = {param: t for param, t in matches.items() if t is not None}
    if not replaced:
        raise ValueError(
            f"{f.path}: no table matches an embedding of the model: tables {tables}; embeddings {sorted(embeddings)}"
        )
    claimed: Dict[str, str] = {}
    for param, t in replaced.items():
        if t in claimed and embeddings[claimed[t]] is not embeddings[param]:
            raise ValueError(f"{f.path}: table '{t}' matches two embeddings of the model, {claimed[t]} and {param}")
        claimed[t] = param
        rows, dim = f.table(t).shape
        shape = tuple(embeddings[param].weight.shape)
        if shape != (rows, dim):
            raise ValueError(f"{f.path}: table '{t}' is {rows} x {dim}, the model's {param} is {shape[0]} x {shape[1]}")
    return replaced


def _match(param: str, tables: List[str]) -> Optional[str]:
    """The table of parameter `param`: its name, else its module's ("C3" for "C3.weight": a table saved
    from a module dict by module name), else the one table that ends with either at a '.' or that
    either ends with."""
    module = param[: -len(".weight")]
    for exact in (param, module):
        if exact in tables:
            return exact
    near = [
        t
        for t in tables
        if any(t.endswith("." + name) or name.endswith("." + t) for name in (param, module))
    ]
    return near[0] if len(near) == 1 else None


def _param_bytes(model: torch.nn.Module) -> int:
    seen = {}
    for p in model.parameters():
        seen[p.data_ptr()] = p.numel() * p.element_size()  # a tied weight once
    return sum(seen.values())


def _rss() -> int:
    try:
        with open("/proc/self/statm") as statm:
            return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return 0
