# SPDX-License-Identifier: Apache-2.0
"""What each kind of problem raises: usage mistakes ValueError (edo.UsageError), file problems an
edo.Error subclass naming the file (corrupt, I/O, unsupported), each with edo's one line."""
import struct

import numpy as np
import pytest

import edo


def test_usage_mistakes_are_value_errors(samples):
    f = edo.open(str(samples / "tiers.edo"))
    for call, text in (
        (lambda: f.lookup_bags(np.array([0]), np.array([1]), mode="avg"), "avg"),  # type: ignore[arg-type]
        (lambda: edo.open(str(samples / "tiers.edo"), placement="zz"), "zz"),  # type: ignore[arg-type]
        (lambda: edo.open(str(samples / "tiers.edo"), unknown="maybe"), "unknown='maybe'"),  # type: ignore[arg-type]
        (lambda: f.lookup(np.zeros((2, 2), dtype=np.int64)), "one-dimensional"),
    ):
        with pytest.raises(edo.UsageError, match=text) as e:
            call()
        assert isinstance(e.value, ValueError) and isinstance(e.value, edo.Error)
    with pytest.raises(TypeError):
        f.lookup(np.array([0.5]))


def test_id_outside_the_table(samples):
    with pytest.raises(edo.Error, match="is outside the table") as e:
        edo.open(str(samples / "tiers.edo")).lookup(np.array([10000]))
    assert not isinstance(e.value, (ValueError, edo.CorruptFileError))


def test_missing_file_is_an_os_error(samples):
    with pytest.raises(edo.FileIOError, match="missing.edo: cannot open") as e:
        edo.open(str(samples / "missing.edo"))
    assert isinstance(e.value, OSError) and not isinstance(e.value, ValueError)


def test_corrupt_file(samples, tmp_path):
    data = bytearray((samples / "tiers.edo").read_bytes())
    data[0] ^= 0xFF  # the magic
    bad = tmp_path / "bad.edo"
    bad.write_bytes(bytes(data))
    with pytest.raises(edo.CorruptFileError, match="bad.edo: not an .edo file"):
        edo.open(str(bad))
    data = bytearray((samples / "tiers.edo").read_bytes())
    manifest_offset = struct.unpack_from("<Q", data, 24)[0]
    data[manifest_offset + 10] ^= 0x01  # a manifest byte: its checksum fails
    bad.write_bytes(bytes(data))
    with pytest.raises(edo.CorruptFileError, match="checksum mismatch"):
        edo.open(str(bad))


def test_unsupported_version(samples, tmp_path):
    data = bytearray((samples / "tiers.edo").read_bytes())
    major = struct.unpack_from("<H", data, 8)[0]
    struct.pack_into("<H", data, 8, major + 1)
    bad = tmp_path / "newer.edo"
    bad.write_bytes(bytes(data))
    with pytest.raises(edo.UnsupportedError, match="is not supported"):
        edo.open(str(bad))
