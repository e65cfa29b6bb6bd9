# SPDX-License-Identifier: Apache-2.0
"""The edo package against edo-unpack's rows: lookups, bags, indexing, the File's life, the build's facts."""
import numpy as np
import pytest

import edo


@pytest.mark.parametrize("name", ["tiers", "sparse", "hash"])
def test_rows_equal_unpack(samples, name):
    want = np.load(samples / f"{name}.npy")
    ids = np.random.default_rng(3).integers(0, 10000, 5000)
    r = edo.open(str(samples / f"{name}.edo"))
    assert (r.rows, r.dim, len(r)) == (10000, 50, 10000)
    got = r.lookup(ids)
    assert got.dtype == np.float32 and got.shape == (5000, 50)
    assert got.tobytes() == want[ids].tobytes()
    assert r.decode_all().tobytes() == want.tobytes()
    assert r.lookup(ids.astype(np.int32)).tobytes() == got.tobytes()  # any integer array
    assert r.manifest["rows"] == 10000 and "tiers" in r.manifest
    assert sum(t["rows"] for t in r.tiers) == 10000
    bounded = edo.open(str(samples / f"{name}.edo"), max_resident=1 << 20)
    assert bounded.lookup(ids).tobytes() == got.tobytes()


def test_bags_sum_mean_max_weights(samples):
    want = np.load(samples / "tiers.npy")
    f = edo.open(str(samples / "tiers.edo"), placement="memory")
    ids = np.array([5, 9, 2, 7, 7, 1], dtype=np.int64)
    offsets = np.array([0, 2, 2, 5], dtype=np.int64)
    bags = [ids[0:2], ids[2:2], ids[2:5], ids[5:]]
    weights = np.linspace(-1, 2, len(ids)).astype(np.float32)
    assert np.allclose(f.lookup_bags(offsets, ids), [want[b].sum(0) if len(b) else np.zeros(50) for b in bags], atol=1e-5)
    assert np.allclose(f.lookup_bags(offsets, ids, mode="mean")[0], want[bags[0]].mean(0), atol=1e-5)
    assert np.array_equal(f.lookup_bags(offsets, ids, mode="max")[2], want[bags[2]].max(0))
    got = f.lookup_bags(offsets, ids, weights=weights)
    assert np.allclose(got[0], (want[ids[0:2]] * weights[0:2, None]).sum(0), atol=1e-5)
    out = np.empty((4, 50), np.float32)
    assert f.lookup_bags(offsets, ids, out=out) is out


def test_file_life_and_indexing(samples):
    with edo.open(str(samples / "tiers.edo")) as f:
        whole = f.decode_all()
        assert f.shape == (10000, 50) and f.dtype == np.float32 and len(f) == 10000 and edo.__version__
        assert f[7].tobytes() == whole[7].tobytes() and f[-1].tobytes() == whole[-1].tobytes()
        assert f[10:20].tobytes() == whole[10:20].tobytes() and f[::-997].tobytes() == whole[::-997].tobytes()
        assert f[[3, 1]].tobytes() == whole[[3, 1]].tobytes()
        with pytest.raises(IndexError):
            f[10000]
        with pytest.raises(TypeError):
            f[1.0]
        with pytest.raises(TypeError):
            f[[0.5]]
    assert f.closed and "closed" in repr(f)
    with pytest.raises(ValueError):
        f.lookup([0])


def test_tiers_and_unknown_ids(samples):
    tiers = edo.open(str(samples / "tiers.edo")).tiers
    assert [t["name"] for t in tiers] == ["hot", "warm", "cold", "rare"]
    assert tiers[3]["kind"] == "default" and tiers[2]["codec"].startswith("pq")
    assert set(tiers[0]) == set(edo.TierInfo.__annotations__)
    r = edo.open(str(samples / "tiers.edo"), unknown="default")
    assert r.lookup(np.array([10005])).tobytes() == r.lookup(np.array([9999])).tobytes()  # the rare tier's vector


def test_build_info():
    info = edo.build_info()
    assert info["version"] == edo.__version__ and info["cpu_path"] == edo.cpu_path()
    assert set(info) == set(edo.BuildInfo.__annotations__)
    assert info["commit"] and info["build_type"] and info["cuda_architectures"]
    assert edo.set_threads(1) == 1


class DeviceArray:
    """What a CUDA library shares of device memory (__cuda_array_interface__), with no memory behind it:
    every call below must refuse it before touching the pointer."""

    def __init__(self, shape, typestr="<f4", readonly=False, strides=None):
        self.__cuda_array_interface__ = {"shape": shape, "typestr": typestr, "data": (0, readonly),
                                         "strides": strides, "version": 3}


def test_device_out_refused_without_a_gpu_reader(samples):
    f = edo.open(str(samples / "tiers.edo"))
    for wrong in (DeviceArray((3, 49)), DeviceArray((3, 50), "<f8"), DeviceArray((3, 50), readonly=True),
                  DeviceArray((3, 50), strides=(400, 4))):
        with pytest.raises(ValueError, match="writable C-contiguous float32 device array of 3 x 50"):
            f.lookup([1, 2, 3], out=wrong)
    with pytest.raises(edo.UsageError, match="needs a reader opened with device = cuda"):
        f.lookup([1, 2, 3], out=DeviceArray((3, 50), strides=(200, 4)))
    with pytest.raises(edo.UsageError, match="needs a reader opened with device = cuda"):
        f.lookup_bags([0, 1], [1, 2, 3], out=DeviceArray((2, 50)))
    with pytest.raises(edo.UsageError, match="device='gpu': expected 'cpu' or 'cuda'"):
        edo.open(str(samples / "tiers.edo"), device="gpu")  # type: ignore[arg-type]
    with pytest.raises(edo.UsageError, match="expected copy, mapped or managed"):
        edo.open(str(samples / "tiers.edo"), host_access="pinned")  # type: ignore[arg-type]
    try:  # a GPU reader opens where there is a GPU; elsewhere it says why not
        edo.open(str(samples / "tiers.edo"), device="cuda").close()
    except edo.Error as e:
        assert "device cuda: no CUDA GPU" in str(e) or "device cuda: this edo was built without CUDA" in str(e), e
