# SPDX-License-Identifier: Apache-2.0
"""Type stubs of the edo module (python/edo_module.cpp): read .edo files into numpy."""

from types import TracebackType
from typing import Any, Dict, List, Literal, Optional, Sequence, Tuple, Type, TypedDict, Union, overload

import numpy as np
import numpy.typing as npt

__version__: str

class Error(RuntimeError):
    """edo's error: one line naming the file and the problem."""

class UsageError(Error, ValueError):
    """A usage mistake: an edo.Error that is also a ValueError."""

IdArray = Union[npt.NDArray[np.integer[Any]], Sequence[int]]

class File:
    """An open .edo file (memory-mapped); a closed file raises ValueError."""

    @property
    def path(self) -> str: ...
    @property
    def rows(self) -> int: ...
    @property
    def dim(self) -> int: ...
    @property
    def shape(self) -> Tuple[int, int]: ...
    @property
    def dtype(self) -> np.dtype[np.float32]: ...
    @property
    def file_bytes(self) -> int: ...
    @property
    def tiers(self) -> List[Dict[str, Any]]: ...
    @property
    def manifest(self) -> Dict[str, Any]: ...
    @property
    def closed(self) -> bool: ...
    @property
    def tables(self) -> List[str]: ...
    def table(self, name: str) -> "File": ...
    def lookup(
        self, ids: IdArray, out: Optional[npt.NDArray[np.float32]] = ...
    ) -> npt.NDArray[np.float32]: ...
    def lookup_bags(
        self,
        offsets: IdArray,
        ids: IdArray,
        mode: str = ...,
        weights: Optional[Union[npt.NDArray[np.floating[Any]], Sequence[float]]] = ...,
        out: Optional[npt.NDArray[np.float32]] = ...,
    ) -> npt.NDArray[np.float32]: ...
    def decode_all(self) -> npt.NDArray[np.float32]: ...
    def close(self) -> None: ...
    @overload
    def __getitem__(self, key: str) -> "File": ...
    @overload
    def __getitem__(self, key: Union[int, slice, IdArray]) -> npt.NDArray[np.float32]: ...
    def __len__(self) -> int: ...
    def __enter__(self) -> "File": ...
    def __exit__(
        self,
        exc_type: Optional[Type[BaseException]],
        exc: Optional[BaseException],
        tb: Optional[TracebackType],
    ) -> None: ...

Reader = File

def open(
    path: str,
    unknown: str = ...,
    verify: Union[str, bool] = ...,
    max_resident: int = ...,
    placement: str = ...,
) -> File: ...

def set_threads(threads: int) -> int: ...
def cpu_path() -> Literal["avx512", "avx2", "portable"]: ...

class BuildInfo(TypedDict):
    version: str
    commit: str
    build_type: str
    cpu_target: str
    cpu_path: Literal["avx512", "avx2", "portable"]
    cuda_architectures: str
    faiss: str

def build_info() -> BuildInfo: ...
