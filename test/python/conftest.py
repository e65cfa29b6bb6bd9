# SPDX-License-Identifier: Apache-2.0
"""Fixtures of the edo package's tests: the build's tools and the sample files they make.

ctest runs these (python.pytest) with EDO_BUILD_DIR and EDO_SOURCE_DIR set and PYTHONPATH=<build>/python;
by hand: EDO_BUILD_DIR=build PYTHONPATH=build/python python3 -m pytest test/python
"""
import os
import subprocess
from pathlib import Path

import numpy as np
import pytest

BUILD = Path(os.environ.get("EDO_BUILD_DIR", "build")).resolve()
SOURCE = Path(os.environ.get("EDO_SOURCE_DIR", Path(__file__).resolve().parents[2])).resolve()
GLOVE = SOURCE / "data-samples" / "glove.6B.50d.10k.npy"


def tool(name, *args):
    """Runs the build's tool `name` with `args`; fails the test on a non-zero exit."""
    done = subprocess.run([str(BUILD / name), *map(str, args)], capture_output=True, text=True)
    assert done.returncode == 0, f"{name} {' '.join(map(str, args))}: exit {done.returncode}: {done.stderr[-2000:]}"
    return done


@pytest.fixture(scope="session")
def samples(tmp_path_factory):
    """Three GloVe files (every tier kind between them) and the rows edo-unpack decodes from each."""
    w = tmp_path_factory.mktemp("samples")
    np.save(w / "zipf.npy", 1.0 / (np.arange(10000) + 1))
    quick = ["-q", "--train-rows", "2000", "--freq", w / "zipf.npy"]
    tool("edo-pack", GLOVE, "-o", w / "tiers.edo", *quick, "--tier", "hot:rows=5%:fp16", "--tier",
         "warm:rows=30%:int8", "--tier", "cold:rows=50%:pq:m=10", "--tier", "rare:rest:default")
    tool("edo-pack", GLOVE, "-o", w / "sparse.edo", *quick, "--tier", "hot:rows=10%:fp16", "--tier",
         "cold:rest:csr:density=0.3,values=int8:disk")
    tool("edo-hash", GLOVE, "-o", w / "hash.edo", "--freq", w / "zipf.npy", "--scheme", "hash:buckets=1000,k=2", "-q")
    for name in ("tiers", "sparse", "hash"):
        tool("edo-unpack", w / f"{name}.edo", "-o", w / f"{name}.npy", "-q")
    return w
