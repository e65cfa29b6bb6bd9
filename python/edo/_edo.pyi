# SPDX-License-Identifier: Apache-2.0
"""Type stubs of edo._edo (python/_edo_module.cpp), checked against the built module by stubtest (ctest)."""

from types import TracebackType
from typing import Any, Dict, List, Optional, Protocol, Tuple, Type, TypeVar, Union, overload

import numpy as np
import numpy.typing as npt

from ._types import (
    BuildInfo,
    CpuPath,
    Device,
    HostAccess,
    IdArray,
    Placement,
    PoolMode,
    TierInfo,
    UnknownIds,
    VerifyMode,
    WeightArray,
)

class _DeviceArray(Protocol):
    """Device memory as CUDA libraries share it (a torch CUDA tensor, a CuPy array)."""

    @property
    def __cuda_array_interface__(self) -> Dict[str, Any]: ...

_D = TypeVar("_D", bound=_DeviceArray)

__version__: str

class Error(RuntimeError):
    """edo's error: one line naming the file and the problem."""

class UsageError(Error, ValueError):
    """A usage mistake: an edo.Error that is also a ValueError."""

class CorruptFileError(Error):
    """A file that is not what it claims: bad structure, a checksum mismatch, a row out of its bounds."""

class FileIOError(Error, OSError):
    """A file that cannot be opened, read or mapped: an edo.Error and an OSError."""

class UnsupportedError(Error):
    """A well-formed file this build cannot serve."""

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
    def tiers(self) -> List[TierInfo]: ...
    @property
    def manifest(self) -> Dict[str, Any]: ...
    @property
    def closed(self) -> bool: ...
    @property
    def tables(self) -> List[str]: ...
    def table(self, name: str) -> File: ...
    @overload
    def lookup(self, ids: IdArray, out: Optional[npt.NDArray[np.float32]] = ...) -> npt.NDArray[np.float32]: ...
    @overload
    def lookup(self, ids: IdArray, out: _D) -> _D: ...
    @overload
    def lookup_bags(
        self,
        offsets: IdArray,
        ids: IdArray,
        mode: PoolMode = ...,
        weights: Optional[WeightArray] = ...,
        out: Optional[npt.NDArray[np.float32]] = ...,
    ) -> npt.NDArray[np.float32]: ...
    @overload
    def lookup_bags(
        self,
        offsets: IdArray,
        ids: IdArray,
        mode: PoolMode = ...,
        weights: Optional[WeightArray] = ...,
        *,
        out: _D,
    ) -> _D: ...
    def decode_all(self) -> npt.NDArray[np.float32]: ...
    def close(self) -> None: ...
    @overload
    def __getitem__(self, key: str) -> File: ...
    @overload
    def __getitem__(self, key: Union[int, slice, IdArray]) -> npt.NDArray[np.float32]: ...
    def __len__(self) -> int: ...
    def __enter__(self) -> File: ...
    def __exit__(
        self,
        exc_type: Optional[Type[BaseException]],
        exc: Optional[BaseException],
        tb: Optional[TracebackType],
    ) -> None: ...

Reader = File

def open(
    path: str,
    unknown: UnknownIds = ...,
    verify: Union[VerifyMode, bool] = ...,
    max_resident: int = ...,
    placement: Placement = ...,
    device: Device = ...,
    host_access: HostAccess = ...,
) -> File: ...
def set_threads(threads: int) -> int: ...
def cpu_path() -> CpuPath: ...
def build_info() -> BuildInfo: ...
