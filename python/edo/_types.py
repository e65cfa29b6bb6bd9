# SPDX-License-Identifier: Apache-2.0
"""The closed sets and dict results of the edo package, as types (python/edo/_edo.pyi uses them)."""
from typing import Any, Literal, Sequence, TypedDict, Union

import numpy as np
import numpy.typing as npt

IdArray = Union[npt.NDArray[np.integer[Any]], Sequence[int]]
"""Ids or offsets: a 1-D integer array or a sequence of ints."""
WeightArray = Union[npt.NDArray[np.floating[Any]], Sequence[float]]
"""Per-id weights of File.lookup_bags."""
PoolMode = Literal["sum", "mean", "max"]
"""How File.lookup_bags pools a bag's rows (torch.nn.EmbeddingBag's modes)."""
UnknownIds = Literal["error", "default", "hash"]
"""What edo.open's `unknown` gives ids beyond the table."""
VerifyMode = Literal["structure", "small", "all"]
"""The checksums edo.open checks (docs/PACK.md, "Integrity modes")."""
Placement = Literal["mapped", "memory"]
"""Where edo.open puts the file's bytes."""
Device = Literal["cpu", "cuda"]
"""Where edo.open serves lookups whose out= is in device memory from ('cuda': a GPU)."""
HostAccess = Literal["copy", "mapped", "managed"]
"""How a GPU lookup reaches tiers not marked 'gpu' (edo.open's host_access)."""
CpuPath = Literal["avx512", "avx2", "portable"]
"""The instruction set of the pooled lookups' kernels."""
Residency = Literal["gpu", "host", "disk"]
"""Where a tier's bytes are meant to live (docs/FORMAT.md)."""


class TierInfo(TypedDict):
    """One tier of a File (File.tiers)."""

    name: str
    kind: str
    codec: str
    residency: Residency
    rows: int
    code_size: int
    bytes: int


class BuildInfo(TypedDict):
    """What the tools' --version says (edo.build_info())."""

    version: str
    commit: str
    build_type: str
    cpu_target: str
    cpu_path: CpuPath
    cuda_architectures: str
    faiss: str
