#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Rewrites a .edo file's manifest and reseals it (the manifest and header
checksums recomputed), for tests of hostile files whose checksums hold.

    reseal_manifest.py SRC DST STATEMENT

STATEMENT is Python run with `m` bound to the parsed manifest (`data`: the
file's bytes, `xxh64`: the checksum), e.g.
"m['dim'] = 2000000000". The manifest must be the file's last part, as
edo's writers place it (FORMAT.md 3).
"""
import json
import os
import struct
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts"))
from edo_reader import xxh64  # noqa: E402

src, dst, statement = sys.argv[1:4]
data = bytearray(open(src, "rb").read())
moff, mlen = struct.unpack_from("<QQ", data, 24)
m = json.loads(data[moff:moff + mlen])
exec(statement, {"m": m, "data": data, "xxh64": xxh64})
text = json.dumps(m, separators=(",", ":")).encode()
out = data[:moff] + text
out += b"\0" * ((-len(out)) % 64)
struct.pack_into("<QQQQ", out, 16, len(out), moff, len(text), xxh64(text))
struct.pack_into("<Q", out, 56, xxh64(bytes(out[:56])))
open(dst, "wb").write(out)
