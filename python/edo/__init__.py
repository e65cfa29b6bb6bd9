# SPDX-License-Identifier: Apache-2.0
"""Read .edo files (edo's compressed embedding tables): lookups and pooled bags by id into numpy.

    import edo
    with edo.open("table.edo") as f:
        rows = f.lookup([3, 1, 4])               # float32 (3, dim)
        bags = f.lookup_bags([0, 2], [5, 9, 2])  # as torch.nn.EmbeddingBag(mode="sum")

edo.open gives an edo.File; help(edo.File) lists what it does. Errors: edo.Error, with
edo.UsageError (also a ValueError), edo.CorruptFileError, edo.FileIOError (also an OSError) and
edo.UnsupportedError for the problems a caller may answer apart. The compiled part is edo._edo.
"""
import os as _os
import sys as _sys

from ._types import (
    BuildInfo,
    CpuPath,
    Device,
    HostAccess,
    IdArray,
    Placement,
    PoolMode,
    Residency,
    TierInfo,
    UnknownIds,
    VerifyMode,
    WeightArray,
)

try:
    from ._edo import (
        CorruptFileError,
        Error,
        File,
        FileIOError,
        Reader,
        UnsupportedError,
        UsageError,
        __version__,
        build_info,
        cpu_path,
        open,
        set_threads,
    )
except ImportError as _e:  # pragma: no cover - the message is the point
    from importlib.machinery import EXTENSION_SUFFIXES as _suffixes

    _here = _os.path.dirname(__file__)
    _built = sorted(n for n in _os.listdir(_here) if n.startswith("_edo") and n.endswith(".so"))
    # Only a compiled part this interpreter cannot name is another Python's; any other failure is raised as it is.
    if not _built or any(n == "_edo" + s for n in _built for s in _suffixes):
        raise
    raise ImportError(
        f"edo: the compiled module here ({', '.join(_built)}) was built for another Python; this is "
        f"{_sys.executable} (Python {_sys.version.split()[0]}). Use the interpreter it was built for, or "
        "pip install . for this one."
    ) from _e

__all__ = [
    "BuildInfo",
    "CorruptFileError",
    "CpuPath",
    "Device",
    "Error",
    "File",
    "FileIOError",
    "HostAccess",
    "IdArray",
    "Placement",
    "PoolMode",
    "Reader",
    "Residency",
    "TierInfo",
    "UnknownIds",
    "UnsupportedError",
    "UsageError",
    "VerifyMode",
    "WeightArray",
    "__version__",
    "build_info",
    "cpu_path",
    "open",
    "set_threads",
]
