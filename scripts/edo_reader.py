#!/usr/bin/env python3
"""An independent .edo reader, written from docs/FORMAT.md alone (standard
library only), to show the spec is implementable and to cross-check the C++
reader and writer.

    edo_reader.py FILE                 validate (all rules of FORMAT.md section 6), print a summary
    edo_reader.py FILE --manifest      validate, print the manifest
    edo_reader.py FILE --section NAME --out PATH
                                       validate, write one section's payload to PATH
    edo_reader.py FILE --decode OUT.npy
                                       validate, decode a one-tier file of a scalar codec
                                       (fp32, fp16, bf16, int8/int4/int2[:group=G], bin) to
                                       float32 with numpy, following FORMAT.md section 7

Exit status 0 when the file is valid, 1 (with "FILE: problem" on stderr) when not.
"""
import argparse
import json
import re
import struct
import sys

ALIGN = 64
MAGIC = b"\x89EDO\r\n\x1a\n"
MAJOR = 1
MAX_MANIFEST = 64 << 20
MAX_DEPTH = 64
NAME_RE = re.compile(r"[A-Za-z0-9_.:/-]{1,128}\Z")
HEX_RE = re.compile(r"[0-9a-f]{16}\Z")
HEADER = struct.Struct("<8sHHIQQQQIIQ")
MASK = (1 << 64) - 1
P1, P2, P3, P4, P5 = (0x9E3779B185EBCA87, 0xC2B2AE3D27D4EB4F, 0x165667B19E3779F9,
                      0x85EBCA77C2B2AE63, 0x27D4EB2F165667C5)


class Invalid(Exception):
    pass


def _rotl(x, r):
    return ((x << r) | (x >> (64 - r))) & MASK


def _round(acc, lane):
    return (_rotl((acc + lane * P2) & MASK, 31) * P1) & MASK


def xxh64(data, seed=0):
    n = len(data)
    i = 0
    if n >= 32:
        v = [(seed + P1 + P2) & MASK, (seed + P2) & MASK, seed, (seed - P1) & MASK]
        lanes = struct.unpack_from("<%dQ" % (n // 32 * 4), data)
        for s in range(0, len(lanes), 4):
            v = [_round(v[k], lanes[s + k]) for k in range(4)]
        h = (_rotl(v[0], 1) + _rotl(v[1], 7) + _rotl(v[2], 12) + _rotl(v[3], 18)) & MASK
        for k in range(4):
            h = (((h ^ _round(0, v[k])) * P1) + P4) & MASK
        i = n // 32 * 32
    else:
        h = (seed + P5) & MASK
    h = (h + n) & MASK
    while i + 8 <= n:
        h ^= _round(0, struct.unpack_from("<Q", data, i)[0])
        h = (_rotl(h, 27) * P1 + P4) & MASK
        i += 8
    if i + 4 <= n:
        h ^= (struct.unpack_from("<I", data, i)[0] * P1) & MASK
        h = (_rotl(h, 23) * P2 + P3) & MASK
        i += 4
    while i < n:
        h ^= (data[i] * P5) & MASK
        h = (_rotl(h, 11) * P1) & MASK
        i += 1
    h ^= h >> 33
    h = (h * P2) & MASK
    h ^= h >> 29
    h = (h * P3) & MASK
    return h ^ (h >> 32)


def align_up(x):
    return (x + ALIGN - 1) // ALIGN * ALIGN


def require(cond, message):
    if not cond:
        raise Invalid(message)


def json_depth(text):
    depth = deepest = 0
    in_string = escaped = False
    for c in text:
        if in_string:
            if escaped:
                escaped = False
            elif c == "\\":
                escaped = True
            elif c == '"':
                in_string = False
        elif c == '"':
            in_string = True
        elif c in "{[":
            depth += 1
            deepest = max(deepest, depth)
        elif c in "}]":
            depth -= 1
    return deepest


def no_duplicate_keys(pairs):
    keys = [k for k, _ in pairs]
    require(len(keys) == len(set(keys)), "manifest has a duplicate key")
    return dict(pairs)


def is_uint(v):
    return isinstance(v, int) and not isinstance(v, bool) and 0 <= v <= MASK


def check_zero(data, start, end, what):
    require(data[start:end].count(0) == end - start, "non-zero byte in the padding " + what)


def validate(data, verify_sections=True):
    size = len(data)
    require(size >= 64, "file is too short for the .edo header")
    (magic, major, minor, flags, file_size, m_off, m_len, m_sum, count, reserved,
     h_sum) = HEADER.unpack_from(data)
    require(magic == MAGIC, "not an .edo file (bad magic)")
    require(major == MAJOR, "format version %d.%d is not supported" % (major, minor))
    require(xxh64(data[:56]) == h_sum, "header checksum mismatch")
    require(flags == 0 and reserved == 0, "header flags or reserved field not zero")
    require(file_size == size, "header file size %d, actual %d" % (file_size, size))
    require(1 <= m_len <= MAX_MANIFEST, "manifest length %d out of range" % m_len)
    require(m_off >= 64 and m_off % ALIGN == 0, "manifest offset not aligned")
    require(m_off + m_len <= size and align_up(m_off + m_len) == size, "manifest out of place")
    text = data[m_off:m_off + m_len]
    require(xxh64(text) == m_sum, "manifest checksum mismatch")
    check_zero(data, m_off + m_len, size, "after the manifest")

    try:
        decoded = text.decode("utf-8")
        require(json_depth(decoded) <= MAX_DEPTH, "manifest nests too deep")
        manifest = json.loads(decoded, object_pairs_hook=no_duplicate_keys,
                              parse_constant=lambda c: require(False, "manifest has " + c))
    except (UnicodeDecodeError, ValueError) as e:
        raise Invalid("manifest is not valid JSON: %s" % e)
    require(isinstance(manifest, dict), "manifest is not a JSON object")

    table = manifest.get("sections")
    require(isinstance(table, list) and len(table) == count, "bad sections table")
    sections = {}
    prev_off, prev_end = 0, 64
    for i, s in enumerate(table):
        require(isinstance(s, dict), "sections[%d] is not an object" % i)
        name, off, length, digest = s.get("name"), s.get("offset"), s.get("length"), s.get("xxh64")
        require(isinstance(name, str) and NAME_RE.match(name), "sections[%d]: bad name" % i)
        require(name not in sections, "section %r appears twice" % name)
        require(is_uint(off) and is_uint(length), "section %r: bad offset or length" % name)
        require(isinstance(digest, str) and HEX_RE.match(digest), "section %r: bad xxh64" % name)
        require(off % ALIGN == 0, "section %r: unaligned" % name)
        require(off + length <= MASK, "section %r: offset + length overflows" % name)
        require(off + length <= m_off, "section %r runs past the manifest" % name)
        require(off >= prev_off and off >= prev_end, "section %r overlaps or is out of order" % name)
        require(off == align_up(prev_end), "section %r is not packed" % name)
        check_zero(data, prev_end, off, "before section %r" % name)
        sections[name] = (off, length, int(digest, 16))
        prev_off, prev_end = off, off + length
    require(m_off == align_up(prev_end), "manifest is not right after the last section")
    check_zero(data, prev_end, m_off, "before the manifest")

    require(manifest.get("format") == "edo", '"format" must be "edo"')
    for key in ("rows", "dim"):
        require(is_uint(manifest.get(key)) and manifest[key] > 0, '"%s" must be a positive integer' % key)
    require(isinstance(manifest.get("provenance"), dict), '"provenance" must be an object')
    tiers = manifest.get("tiers")
    require(isinstance(tiers, list) and tiers, '"tiers" must be a non-empty array')
    tier_names = set()
    for t in tiers:
        require(isinstance(t, dict), "a tier is not an object")
        for key in ("name", "codec"):
            require(isinstance(t.get(key), str) and t[key], "tier %s must be a non-empty string" % key)
        require(t["name"] not in tier_names, "tier %r appears twice" % t["name"])
        tier_names.add(t["name"])
        require(is_uint(t.get("rows")) and t["rows"] <= manifest["rows"], "tier %r: bad rows" % t["name"])
        roles = t.get("sections")
        require(isinstance(roles, dict), "tier %r: sections must be an object" % t["name"])
        for role, name in roles.items():
            require(isinstance(name, str) and name in sections,
                    "tier %r refers to missing section %r" % (t["name"], name))
        require(t.get("residency", "host") in ("gpu", "host", "disk"), "tier %r: bad residency" % t["name"])

    if verify_sections:
        for name, (off, length, digest) in sections.items():
            require(xxh64(data[off:off + length]) == digest, "section %r checksum mismatch" % name)
    return manifest, sections, (major, minor)


def parse_codec(spec):
    """(name, bits, group or None) of a scalar codec spec (FORMAT.md 7.2)."""
    stages = spec.split(",")
    require(len(stages) == 1, "codec %r: --decode handles plain scalar codecs only" % spec)
    parts = stages[0].split(":")
    name, params = parts[0], parts[1:]
    bits = {"fp32": 32, "fp16": 16, "bf16": 16, "int8": 8, "int4": 4, "int2": 2, "bin": 1}.get(name)
    require(bits is not None, "codec %r: --decode does not handle it" % spec)
    group = None
    for p in params:
        key, _, value = p.partition("=")
        require(key == "group" and value.isdigit() and int(value) > 0, "codec %r: unknown parameter %r" % (spec, p))
        group = int(value)
    return name, bits, group


def decode_scalar(data, manifest, sections):
    import numpy as np

    rows, dim = manifest["rows"], manifest["dim"]
    tiers = manifest["tiers"]
    require(len(tiers) == 1 and tiers[0]["rows"] == rows, "--decode handles one-tier files only")
    tier = tiers[0]
    name, bits, group = parse_codec(tier["codec"])
    group = group or dim
    groups = -(-dim // group)
    header = {"fp8": 4, "bin": 4}.get(name, 8 * groups if name.startswith("int") else 0)
    code_size = header + (dim * bits + 7) // 8
    require(tier.get("code_size") == code_size, "code_size %r, expected %d" % (tier.get("code_size"), code_size))
    off, length, _ = sections[tier["sections"]["codes"]]
    require(length == rows * code_size, "codes section has %d bytes, expected %d" % (length, rows * code_size))
    codes = np.frombuffer(data, dtype=np.uint8, count=length, offset=off).reshape(rows, code_size)
    payload = codes[:, header:]
    if name == "fp32":
        return payload.copy().view("<f4")
    if name == "fp16":
        return payload.copy().view("<f2").astype(np.float32)
    if name == "bf16":
        return (payload.copy().view("<u2").astype(np.uint32) << 16).view(np.float32)
    if name == "bin":
        scale = codes[:, :4].copy().view("<f4")
        signs = np.unpackbits(payload, axis=1, bitorder="little")[:, :dim]
        return np.where(signs == 1, -scale, scale).astype(np.float32)
    # int8 / int4 / int2: value j is the bits [j*bits, (j+1)*bits) of the payload.
    bit_planes = np.unpackbits(payload, axis=1, bitorder="little")[:, :dim * bits].reshape(rows, dim, bits)
    q = (bit_planes.astype(np.uint32) << np.arange(bits, dtype=np.uint32)).sum(axis=2)
    params = codes[:, :header].copy().view("<f4").reshape(rows, groups, 2)
    g = np.arange(dim) // group
    scale = params[:, g, 0].astype(np.float64)
    offset = params[:, g, 1].astype(np.float64)
    # q * scale is exact in float64; one rounding to float32 equals the decoder's fma.
    return (q * scale + offset).astype(np.float32)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("file")
    ap.add_argument("--manifest", action="store_true", help="print the manifest as JSON")
    ap.add_argument("--section", help="section to extract (with --out)")
    ap.add_argument("--out", help="where to write the section payload")
    ap.add_argument("--decode", metavar="OUT.npy", help="decode a one-tier scalar-codec file to float32 .npy")
    args = ap.parse_args()
    if bool(args.section) != bool(args.out):
        ap.error("--section and --out go together")
    try:
        with open(args.file, "rb") as f:
            data = f.read()
        manifest, sections, version = validate(data)
        if args.section:
            require(args.section in sections, "no section named %r" % args.section)
            off, length, _ = sections[args.section]
            with open(args.out, "wb") as f:
                f.write(data[off:off + length])
        if args.decode:
            import numpy as np

            decoded = decode_scalar(data, manifest, sections)
            np.save(args.decode, decoded)
            return 0
    except (Invalid, OSError) as e:
        print("%s: %s" % (args.file, e), file=sys.stderr)
        return 1
    if args.manifest:
        print(json.dumps(manifest, indent=2, sort_keys=True))
    elif not args.section:
        print("%s: edo %d.%d, %d x %d, %d sections, %d tiers, %d bytes: OK" % (
            args.file, version[0], version[1], manifest["rows"], manifest["dim"], len(sections),
            len(manifest["tiers"]), len(data)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
