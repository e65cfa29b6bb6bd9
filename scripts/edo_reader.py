#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""An independent .edo reader, written from docs/FORMAT.md alone, to show the spec is
implementable and to cross-check the C++ reader and writer. Validation needs the standard
library only; --decode needs numpy.

    edo_reader.py FILE                 validate (all rules of FORMAT.md section 6), print a summary
    edo_reader.py FILE --manifest      validate, print the manifest
    edo_reader.py FILE --section NAME --out PATH
                                       validate, write one section's payload to PATH
    edo_reader.py FILE --decode OUT.npy
                                       validate, decode the whole table to a float32 .npy
                                       (FORMAT.md section 7 and "Tiered files"):
                                       - one-tier files (edo-quantize) and tiered files (edo-pack:
                                         the row map's tier bytes, rank checkpoints and, when
                                         present, per-row local indices, all checked to agree;
                                         or its runs of rows);
                                       - default tiers (one shared vector);
                                       - scalar codecs fp32, fp16, bf16, fp8:e4m3|e5m2, bin,
                                         int8/int6/int5/int4/int3/int2[:group=G][,scale=fp16]: bit for bit;
                                       - pq, opq, rq (m=M,nbits=B), pca:K,CODEC and rot,CODEC: pq and rq
                                         bit for bit, opq, pca and rot up to float rounding (sums in
                                         float64 here);
                                       - dims:K,CODEC: bit for bit as its codec;
                                       - tc:bits=B (FORMAT.md 7.6): up to float rounding (the basis
                                         sum in float64, the normal quantile from Python's own);
                                       - a manifest's "requires" (FORMAT.md 8.1): every feature
                                         named must be one this reader implements;
                                       - sparse tiers, csr|bitmap:RULE[,values=fp32|fp16|bf16|int8|int4]
                                         (FORMAT.md "Sparse tiers"): bit for bit, every row checked
                                       - fallback tiers (FORMAT.md 9.4): zero, centroids:C (the
                                         sections' lengths checked, every index read below C), and
                                         nearest:cos|l2 (each row read as the row its target names,
                                         every target checked below rows and not a nearest tier's row)
                                       - hashed tiers (FORMAT.md 9.5), keyed by table id also in
                                         tiered files (edo-hash --keep-top): hash:buckets=B,k=K (K up
                                         to 8) with or without weights=1, and qr:buckets=B,op=sum|mul;
                                         the sections' exact lengths checked; bit for bit (the
                                         weighted sum's fused multiply-add in float64, FORMAT.md 9.5)
                                       - lossless tiers (FORMAT.md 9.10), lossless:values=bf16|fp16|fp32:
                                         bit for bit, every row's offsets and code checked
                                       - group-shared tiers (FORMAT.md 9.6), group:groups=C with
                                         residual=none or any codec above (bracketed when it holds
                                         "," or ":"): bit for bit as that codec, every index below C
    edo_reader.py FILE --decode OUT.npy --ids IDS
                                       the same for the rows IDS only, in that order (comma-separated
                                       row ids, or a .npy of integer ids): OUT.npy is (len(IDS), dim)
    edo_reader.py MODEL --tables       a model file (FORMAT.md section 10): validate its table
                                       directory and every table, print the tables' names, one a line
    edo_reader.py MODEL --table NAME [--manifest | --section S --out P | --decode OUT.npy [--ids IDS]]
                                       table NAME of a model file, validated as a file of its own
                                       (section 6) and read as above; on a one-table file, NAME must
                                       be its own name (its "table_name", else "table")

Exit status 0 when the file is valid, 1 (with "FILE: problem" on stderr) when not.
"""
import argparse
import json
import math
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
MAX_MODEL_TABLES = 65536
MAX_TABLE_NAME = 256
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
    required = manifest.get("requires", [])
    require(isinstance(required, list) and len(required) <= 64 and all(isinstance(f, str) for f in required),
            '"requires" must be an array of at most 64 feature names')
    for feature in required:
        require(feature in FEATURES, "the file requires format feature %r, which this reader does not implement "
                "(FORMAT.md 8.1)" % feature[:64])

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
    if "model" in manifest:
        validate_model(manifest, sections)
    else:
        validate_table_keys(manifest, sections)
    if verify_sections:
        for name, (off, length, digest) in sections.items():
            require(xxh64(data[off:off + length]) == digest, "section %r checksum mismatch" % name)
    return manifest, sections, (major, minor)


def validate_table_keys(manifest, sections):
    """Rule 14 for a one-table file: the keys of 5.1 and 5.3."""
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


def valid_table_name(name):
    """FORMAT.md 10.1: 1 to 256 bytes, each printable ASCII (0x21-0x7E) other than ", ' and \\."""
    return (isinstance(name, str) and 1 <= len(name) <= MAX_TABLE_NAME
            and all(0x21 <= ord(c) <= 0x7E and c not in "\"'\\" for c in name))


def validate_model(manifest, sections):
    """Rule 14 for a model file: the keys of 10.1, the directory checked (its count first)."""
    for key in ("rows", "dim", "tiers"):
        require(key not in manifest, 'a model file has no "%s" (its tables have their own)' % key)
    require(isinstance(manifest.get("provenance"), dict), '"provenance" must be an object')
    model = manifest["model"]
    require(isinstance(model, dict), '"model" must be an object')
    tables = model.get("tables")
    require(isinstance(tables, list), '"model.tables" must be an array')
    require(1 <= len(tables) <= MAX_MODEL_TABLES,
            "the model lists %d tables (1 to %d allowed)" % (len(tables), MAX_MODEL_TABLES))
    names, used = set(), set()
    for i, t in enumerate(tables):
        require(isinstance(t, dict), "model.tables[%d] is not an object" % i)
        name, section = t.get("name"), t.get("section")
        require(valid_table_name(name), "model.tables[%d]: bad table name %r" % (i, name))
        require(name not in names, "table %r appears twice in the model" % name)
        require(isinstance(section, str) and section in sections,
                "table %r: section %r does not exist" % (name, section))
        require(section not in used, "table %r: section %r holds another table too" % (name, section))
        names.add(name)
        used.add(section)


def table_names(manifest):
    """A model's table names in file order; a one-table file's own name (10.1, 1.2 history)."""
    if "model" in manifest:
        return [t["name"] for t in manifest["model"]["tables"]]
    name = manifest.get("table_name")
    return [name if isinstance(name, str) else "table"]


def open_table(data, manifest, sections, name, verify_sections=True):
    """Table `name` as (bytes, manifest, sections, version): for a model file, the section holding
    it validated as a file of its own (section 6, 10.2); for a one-table file, the file itself."""
    names = table_names(manifest)
    if name not in names:
        raise Invalid("no table %r (it holds %d: %s)" % (name, len(names), ", ".join(names[:20])))
    if "model" not in manifest:
        return data, manifest, sections, None
    section = next(t["section"] for t in manifest["model"]["tables"] if t["name"] == name)
    off, length, _ = sections[section]
    require(off % ALIGN == 0, "table %r does not start on a multiple of %d" % (name, ALIGN))
    payload = data[off:off + length]
    try:
        t_manifest, t_sections, version = validate(payload, verify_sections)
        require("model" not in t_manifest, "a model table is itself a model file")
    except Invalid as e:
        raise Invalid("%s: %s" % (name, e))
    return payload, t_manifest, t_sections, version


# ---- decoding (FORMAT.md section 7 and "Tiered files"; needs numpy) ---------------------

SCALAR_BITS = {"fp32": 32, "fp16": 16, "bf16": 16, "fp8": 8, "int8": 8, "int6": 6, "int5": 5, "int4": 4, "int3": 3,
               "int2": 2, "bin": 1}
TRANSFORMS = ("pca", "rot", "dims")
# The format features (FORMAT.md 8.1) this reader implements: all of them.
FEATURES = ("codec:int3", "codec:int5", "codec:int6", "codec:rot", "codec:tc", "scale=fp16", "codebooks=fp16",
            "codebooks=int8", "rowmap:runs", "tier:lossless")
PQ_PARAMS = {"pq": ("m", "nbits", "train", "codebooks"), "opq": ("m", "nbits", "train", "codebooks"),
             "rq": ("m", "nbits", "beam", "train_beam", "refine", "codebooks")}


def parse_spec(spec):
    """Stages [(name, [(key or "", value), ...]), ...] of a codec spec (FORMAT.md section 7):
    stages separated by ",", a stage is name[:param...], a "," followed by key=value
    continues the previous stage."""
    stages = []
    for piece in spec.split(","):
        parts = piece.split(":")
        if "=" in parts[0]:
            require(stages, "codec %r starts with a parameter, not a codec name" % spec)
        else:
            require(parts[0], "codec %r has an empty stage" % spec)
            stages.append((parts[0], []))
            parts = parts[1:]
        for p in parts:
            key, eq, value = p.partition("=")
            require(value if eq else key, "codec %r has an empty parameter" % spec)
            stages[-1][1].append((key, value) if eq else ("", key))
    return stages


def keyed_params(spec, name, params, allowed):
    out = {}
    for key, value in params:
        require(key in allowed, "codec %r: %s does not take parameter %r" % (spec, name, key or value))
        require(key not in out, "codec %r: parameter %r given twice" % (spec, key))
        out[key] = value
    return out


def positive_int(spec, what, value, low=1, high=1 << 24):
    require(value.isdigit() and low <= int(value) <= high,
            "codec %r: %s=%s is not an integer from %d to %d" % (spec, what, value, low, high))
    return int(value)


class Codec:
    """One codec at one dimension: code_size, the state roles it needs with their shapes,
    and decode(codes (n, code_size) uint8, state {role: float32 array}) -> (n, dim) float32."""

    def __init__(self, spec, dim):
        self.spec, self.dim = spec, dim
        stages = parse_spec(spec)
        name, params = stages[0]
        if name in TRANSFORMS:
            require(len(stages) <= 2, "codec %r: %s takes one codec after it" % (spec, name))
            if name == "rot":
                require(not params, "codec %r: rot takes no parameters" % spec)
                self.k = dim
            else:
                require(len(params) == 1 and params[0][0] == "",
                        "codec %r: %s needs its dimension, %s:K" % (spec, name, name))
                self.k = positive_int(spec, "K", params[0][1], 1, dim)
            inner = stages[1] if len(stages) == 2 else ("fp32", [])
            require(inner[0] not in TRANSFORMS, "codec %r: %s must be the first stage" % (spec, inner[0]))
            self.inner = Codec(format_stage(inner), self.k)
            self.kind = name
            self.code_size = self.inner.code_size
            own = {"pca": {"pca.mean": [dim], "pca.components": [self.k, dim]},
                   "rot": {"rot.mean": [dim], "rot.matrix": [dim, dim]},
                   "dims": {"dims.kept": [self.k], "dims.fill": [dim]}}[name]
            self.roles = dict(self.inner.roles, **own)
            require(len(self.roles) == len(self.inner.roles) + 2, "codec %r: state roles collide" % spec)
            return
        require(len(stages) == 1, "codec %r: %s must be the last stage (one codec per spec)" % (spec, name))
        if name in SCALAR_BITS:
            self.init_scalar(name, params)
        elif name in PQ_PARAMS:
            self.init_pq(name, params)
        elif name == "tc":
            self.init_tc(params)
        else:
            require(False, "codec %r: unknown codec %r (this reader decodes %s, pq, opq, rq, tc, pca, rot, dims)"
                    % (spec, name, ", ".join(SCALAR_BITS)))

    def init_scalar(self, name, params):
        spec, dim = self.spec, self.dim
        self.kind, self.bits, self.group, self.fp8, self.param = name, SCALAR_BITS[name], dim, None, "<f4"
        if name == "fp8":
            p = keyed_params(spec, name, params, ("", "format"))
            require(len(p) <= 1, "codec %r: fp8 format given twice" % spec)
            self.fp8 = p.get("", p.get("format", "e4m3"))
            require(self.fp8 in ("e4m3", "e5m2"), "codec %r: fp8 format is e4m3 or e5m2" % spec)
        elif name.startswith("int"):
            p = keyed_params(spec, name, params, ("group", "scale"))
            if "group" in p:
                self.group = min(positive_int(spec, "group", p["group"]), dim)
            require(p.get("scale", "fp32") in ("fp32", "fp16"), "codec %r: scale is fp32 or fp16" % spec)
            self.param = "<f2" if p.get("scale") == "fp16" else "<f4"  # an (f32 or f16) pair a group
        else:
            keyed_params(spec, name, params, ())
        self.groups = -(-dim // self.group)
        pair = 4 if self.param == "<f2" else 8
        self.header = pair * self.groups if name.startswith("int") else 4 if name in ("fp8", "bin") else 0
        self.code_size = self.header + (dim * self.bits + 7) // 8
        self.roles = {}

    def init_pq(self, name, params):
        spec, dim = self.spec, self.dim
        p = keyed_params(spec, name, params, PQ_PARAMS[name])
        require("m" in p, "codec %r: %s needs m=M" % (spec, name))
        self.kind, self.m = name, positive_int(spec, "m", p["m"], 1, dim if name != "rq" else 64)
        self.nbits = positive_int(spec, "nbits", p.get("nbits", "8"), 4, 8)
        require(p.get("train", "faiss") in ("faiss", "edo"), "codec %r: train is faiss or edo" % spec)
        require(p.get("codebooks", "fp32") in ("fp32", "fp16", "int8"),
                "codec %r: codebooks is fp32, fp16 or int8" % spec)
        self.ksub = 1 << self.nbits
        self.code_size = (self.m * self.nbits + 7) // 8
        if name == "rq":
            self.roles = {"rq.codebooks": [self.m, self.ksub, dim]}
            return
        # opq rotates into d2 = m * ceil(dim / m) columns, which split into equal sub-spaces.
        self.d2 = self.m * -(-dim // self.m) if name == "opq" else dim
        self.dsub = -(-self.d2 // self.m)
        self.roles = {"pq.codebooks": [self.m, self.ksub, self.dsub]}
        if name == "opq":
            self.roles["opq.rotation"] = [self.d2, dim]

    def init_tc(self, params):
        """tc:bits=B (FORMAT.md 7.6): a row's binary16 gain, then round(B * dim) bits of coordinates."""
        spec, dim = self.spec, self.dim
        p = keyed_params(spec, "tc", params, ("bits",))
        require("bits" in p, "codec %r: tc needs bits=B" % spec)
        try:
            b = float(p["bits"])
        except ValueError:
            b = float("nan")
        require(1 <= b <= 12, "codec %r: bits=%s is not a number from 1 to 12" % (spec, p["bits"]))
        require(dim <= 2048, "codec %r: tc takes tables of at most 2048 columns" % spec)
        self.kind, self.total = "tc", int(math.floor(b * dim + 0.5))  # round half away from zero (positive)
        self.code_size = 2 + (self.total + 7) // 8
        self.roles = {"tc.unit": [1], "tc.mean": [dim], "tc.basis": [dim, dim], "tc.bits": [dim],
                      "tc.center": [dim], "tc.spread": [dim]}

    def decode_tc(self, codes, state):
        import numpy as np
        from statistics import NormalDist

        spec, dim, n = self.spec, self.dim, codes.shape[0]
        unit, bits = float(state["tc.unit"][0]), state["tc.bits"]
        mantissa, _ = math.frexp(unit)
        require(unit >= 2.0 ** -126 and mantissa == 0.5, "codec %r: tc.unit %r is no power of two from 2^-126" % (spec, unit))
        require(bool(np.all(bits == np.floor(bits)) and np.all((bits >= 0) & (bits <= 12))),
                "codec %r: tc.bits holds a value that is no whole number from 0 to 12" % spec)
        require(int(bits.sum()) == self.total, "codec %r: tc.bits sums to %d, not %d" % (spec, int(bits.sum()), self.total))
        require(bool(np.all(state["tc.spread"] >= 0)), "codec %r: tc.spread holds a negative value" % spec)
        bits = bits.astype(np.int64)
        gain = codes[:, :2].copy().view("<f2").astype(np.float32)[:, 0] * np.float32(unit)
        stream = np.unpackbits(codes[:, 2:], axis=1, bitorder="little")
        quantiles = {}  # cells L -> the standard normal quantiles of their midpoints, in float64
        z = np.empty((n, dim), dtype=np.float32)
        at = 0
        for j in range(dim):
            w = int(bits[j])
            levels_of = 1 << w
            if levels_of not in quantiles:
                normal = NormalDist()
                quantiles[levels_of] = np.array([normal.inv_cdf((q + 0.5) / levels_of) for q in range(levels_of)]) \
                    if w else np.zeros(1)
            q = (stream[:, at:at + w].astype(np.int64) << np.arange(w)).sum(axis=1) if w else np.zeros(n, np.int64)
            levels = (float(state["tc.center"][j]) + float(state["tc.spread"][j]) * quantiles[levels_of]).astype(np.float32)
            z[:, j] = levels[q]
            at += w
        y = (z.astype(np.float64) @ state["tc.basis"].astype(np.float64)).astype(np.float32)
        return (gain[:, None] * (y + state["tc.mean"][None, :])).astype(np.float32)

    def decode(self, codes, state):
        import numpy as np

        n = codes.shape[0]
        if self.kind == "tc":
            return self.decode_tc(codes, state)
        if self.kind in ("pca", "rot"):
            mean, basis = ("pca.mean", "pca.components") if self.kind == "pca" else ("rot.mean", "rot.matrix")
            y = self.inner.decode(codes, state).astype(np.float64)
            x = state[mean].astype(np.float64) + y @ state[basis].astype(np.float64)
            return x.astype(np.float32)
        if self.kind == "dims":
            kept = state["dims.kept"]
            # Strictly rising whole numbers below dim, as edo's own reader requires.
            require(np.all(kept == np.floor(kept)) and np.all(kept >= 0) and np.all(kept < self.dim)
                    and np.all(np.diff(kept) > 0), "codec %r: state 'dims.kept' is not a rising list of columns"
                    % self.spec)
            x = np.repeat(state["dims.fill"][None, :], n, axis=0)
            x[:, kept.astype(np.int64)] = self.inner.decode(codes, state)
            return x
        if self.kind in PQ_PARAMS:
            # Sub-code j: bits [j*B, (j+1)*B) of the row, least significant bit of byte 0 first.
            bits = np.unpackbits(codes, axis=1, bitorder="little")[:, :self.m * self.nbits]
            ids = (bits.reshape(n, self.m, self.nbits).astype(np.int64) << np.arange(self.nbits)).sum(axis=2)
            if self.kind == "rq":
                books = state["rq.codebooks"]
                x = books[0][ids[:, 0]]
                for j in range(1, self.m):  # float32 sums in order of j
                    x = x + books[j][ids[:, j]]
                return x
            books = state["pq.codebooks"]
            y = np.empty((n, self.d2), dtype=np.float32)
            base, extra = divmod(self.d2, self.m)
            for j in range(self.m):
                begin, width = j * base + min(j, extra), base + (j < extra)
                y[:, begin:begin + width] = books[j][ids[:, j], :width]
            if self.kind == "pq":
                return y
            return (y.astype(np.float64) @ state["opq.rotation"].astype(np.float64)).astype(np.float32)
        return self.decode_scalar(codes)

    def decode_scalar(self, codes):
        import numpy as np

        n, dim, bits = codes.shape[0], self.dim, self.bits
        payload = codes[:, self.header:]
        if self.kind == "fp32":
            return payload.copy().view("<f4").reshape(n, dim)
        if self.kind == "fp16":
            return payload.copy().view("<f2").astype(np.float32).reshape(n, dim)
        if self.kind == "bf16":
            return (payload.copy().view("<u2").astype(np.uint32) << 16).view(np.float32).reshape(n, dim)
        scale = codes[:, :4].copy().view("<f4")  # fp8 and bin: one scale a row
        if self.kind == "fp8":
            return fp8_table(self.fp8)[payload[:, :dim]] * scale
        if self.kind == "bin":
            signs = np.unpackbits(payload, axis=1, bitorder="little")[:, :dim]
            return np.where(signs == 1, -scale, scale).astype(np.float32)
        # int8 to int2: value j is the bits [j*bits, (j+1)*bits) of the payload.
        planes = np.unpackbits(payload, axis=1, bitorder="little")[:, :dim * bits].reshape(n, dim, bits)
        q = (planes.astype(np.uint32) << np.arange(bits, dtype=np.uint32)).sum(axis=2)
        params = codes[:, :self.header].copy().view(self.param).reshape(n, self.groups, 2)
        g = np.arange(dim) // self.group
        # q * scale is exact in float64; one rounding to float32 equals the decoder's fma.
        return (q * params[:, g, 0].astype(np.float64) + params[:, g, 1].astype(np.float64)).astype(np.float32)


def format_stage(stage):
    name, params = stage
    return ":".join([name] + [k + "=" + v if k else v for k, v in params])


def fp8_table(fmt):
    """float32 value of each of the 256 fp8 codes (FORMAT.md 7.2)."""
    import numpy as np

    mant_bits, bias = (3, 7) if fmt == "e4m3" else (2, 15)
    c = np.arange(256)
    mag, negative = c & 0x7F, c >= 0x80
    exp, mant = mag >> mant_bits, mag & ((1 << mant_bits) - 1)
    value = np.where(exp == 0, mant * 2.0 ** (1 - bias - mant_bits),
                     (1 + mant / 2.0 ** mant_bits) * 2.0 ** (exp.astype(np.float64) - bias))
    bits = np.where(negative, -value, value).astype(np.float32).view(np.uint32)
    special = (mag == 0x7F) if fmt == "e4m3" else (exp == 0x1F)
    # e4m3: S.1111.111 is NaN; e5m2: exponent all ones is Inf (mantissa 0) or NaN.
    special_bits = 0x7F800000 | np.where((fmt == "e4m3") | (mant != 0), 0x400000, 0)
    bits = np.where(special, special_bits | (negative.astype(np.uint32) << 31), bits).astype(np.uint32)
    return bits.view(np.float32)


def section_array(data, sections, name, dtype, what):
    import numpy as np

    off, length, _ = sections[name]
    size = np.dtype(dtype).itemsize
    require(length % size == 0, "%s: section %r holds %d bytes, not a multiple of %d" % (what, name, length, size))
    return np.frombuffer(data, dtype=dtype, count=length // size, offset=off)


def int8_exp2_values(raw, count, row, what):
    """FORMAT.md 9.8, int8_exp2: per row of the last axis an int8 exponent e, then the row's int8 codes q;
    value q x 2^e (exact in float32: e <= 121, q in [-127, 127])."""
    import numpy as np

    if count == 0:
        require(raw.size == 0, "%s: %d bytes for no values" % (what, raw.size))
        return np.zeros(0, dtype=np.float32)
    require(row > 0 and count % row == 0 and raw.size == count // row * (row + 1),
            "%s: %d bytes are not %d rows of an exponent and %d codes" % (what, raw.size, count // max(row, 1), row))
    rows = raw.reshape(count // row, row + 1)
    exps, codes = rows[:, 0].astype(np.int32), rows[:, 1:].astype(np.int32)
    require(bool((exps <= 121).all()), "%s: an exponent is above 121" % what)
    require(bool((codes >= -127).all()), "%s: a code is -128" % what)
    return np.ldexp(codes.astype(np.float32), exps[:, None]).astype(np.float32).reshape(-1)


def tier_state(data, sections, tier, codec):
    """The state arrays of a codec tier as float32, checked against what its codec needs."""
    import numpy as np

    what = "tier %r" % tier["name"]
    roles = {r: s for r, s in tier["sections"].items() if r != "codes"}
    for role in roles:
        require(role in codec.roles, "%s: codec %r has no state %r" % (what, codec.spec, role))
    shapes = tier.get("state_shapes", {})
    require(isinstance(shapes, dict), "%s: state_shapes is not an object" % what)
    dtypes = tier.get("state_dtypes", {})  # FORMAT.md 9.8: float32 unless named float16 or int8_exp2
    require(isinstance(dtypes, dict), "%s: state_dtypes is not an object" % what)
    state = {}
    for role, shape in codec.roles.items():
        require(role in roles, "%s: codec %r needs state %r, the tier names no such section" % (what, codec.spec, role))
        require(shapes.get(role) == shape, "%s: state %r has shape %r, codec %r at dim %d needs %r"
                % (what, role, shapes.get(role), codec.spec, codec.dim, shape))
        dtype = dtypes.get(role, "float32")
        require(dtype in ("float32", "float16", "int8_exp2"), "%s: state %r has an unknown dtype %r"
                % (what, role, dtype))
        count = 1
        for d in shape:
            count *= d
        if dtype == "int8_exp2":
            values = int8_exp2_values(section_array(data, sections, roles[role], "<i1", what), count,
                                      shape[-1] if shape else count, "%s: state %r" % (what, role))
        else:
            values = section_array(data, sections, roles[role], "<f2" if dtype == "float16" else "<f4", what)
            values = values.astype(np.float32)
        require(values.size == count, "%s: section %r holds %d floats, shape %r needs %d"
                % (what, roles[role], values.size, shape, count))
        require(np.isfinite(values).all(), "%s: state %r holds a value that is not finite" % (what, role))
        state[role] = values.reshape(shape)
    return state


def decode_tier(data, manifest, sections, tier, local=None):
    """(tier rows, dim) float32: the tier's rows in ascending row id order; or, given `local`
    (indices within the tier, checked by the caller; for a hashed tier, which is keyed by id,
    table ids), (len(local), dim): those rows."""
    import numpy as np

    dim, rows, what = manifest["dim"], tier["rows"], "tier %r" % tier["name"]
    roles = tier["sections"]
    if tier["codec"] == "default":
        require(set(roles) == {"vector"}, "%s: a default tier has exactly one section, 'vector'" % what)
        require(tier.get("code_size", 0) == 0, "%s: a default tier has code_size 0" % what)
        vector = section_array(data, sections, roles["vector"], "<f4", what)
        require(vector.size == dim, "%s: vector holds %d floats, dim is %d" % (what, vector.size, dim))
        return np.broadcast_to(vector, (rows if local is None else len(local), dim))
    if tier["codec"] == "zero":
        require(not roles, "%s: a zero tier has no sections" % what)
        require(tier.get("code_size", 0) == 0, "%s: a zero tier has code_size 0" % what)
        return np.zeros((rows if local is None else len(local), dim), dtype=np.float32)
    if parse_spec(tier["codec"])[0][0] == "centroids":
        return decode_centroids(data, manifest, sections, tier, np.arange(rows) if local is None else local)
    if parse_spec(tier["codec"])[0][0] in SPARSE_FORMS:
        return decode_sparse(data, manifest, sections, tier, np.arange(rows) if local is None else local)
    if parse_spec(tier["codec"])[0][0] == "lossless":
        return decode_lossless(data, manifest, sections, tier, np.arange(rows) if local is None else local)
    if is_grouped(tier):
        return decode_grouped(data, manifest, sections, tier, np.arange(rows) if local is None else local)
    if is_hashed(tier):  # keyed by table id: `local` holds ids, and the whole tier is a one-tier file's table
        return decode_hashed(data, manifest, sections, tier, np.arange(rows) if local is None else local)
    codec = Codec(tier["codec"], dim)
    require(tier.get("code_size") == codec.code_size, "%s: code_size %r, codec %r at dim %d needs %d"
            % (what, tier.get("code_size"), tier["codec"], dim, codec.code_size))
    require("codes" in roles, "%s: no codes section" % what)
    off, length, _ = sections[roles["codes"]]
    require(length == rows * codec.code_size, "%s: codes section has %d bytes, %d rows of %d need %d"
            % (what, length, rows, codec.code_size, rows * codec.code_size))
    codes = np.frombuffer(data, dtype=np.uint8, count=length, offset=off).reshape(rows, codec.code_size)
    state = tier_state(data, sections, tier, codec)
    n = rows if local is None else len(local)
    out = np.empty((n, dim), dtype=np.float32)
    for r0 in range(0, n, 65536):  # bounded working memory on big tiers
        out[r0:r0 + 65536] = codec.decode(codes[r0:r0 + 65536] if local is None else codes[local[r0:r0 + 65536]],
                                          state)
    return out


# ---- fallback tiers for dropped rows (FORMAT.md 9.4) ---------------------------------------

MAX_CENTROIDS = 1 << 24


def centroid_count(spec, what):
    """C of a tier codec "centroids:C", 1 <= C <= 2^24."""
    stages = parse_spec(spec)
    c = 0
    if len(stages) == 1 and stages[0][0] == "centroids" and len(stages[0][1]) == 1 and stages[0][1][0][0] == "":
        value = stages[0][1][0][1]
        c = int(value) if re.match(r"[0-9]+\Z", value) else 0
    require(1 <= c <= MAX_CENTROIDS, "%s: '%s': expected centroids:C with C in 1..%d" % (what, spec, MAX_CENTROIDS))
    return c


def tier_payload(data, sections, tier, role, size):
    """The bytes of a tier's section `role`, which must hold exactly `size` bytes."""
    import numpy as np

    what, roles = "tier %r" % tier["name"], tier["sections"]
    require(role in roles, "%s: no '%s' section" % (what, role))
    off, length, _ = sections[roles[role]]
    require(length == size, "%s: section '%s' holds %d bytes, %d expected" % (what, roles[role], length, size))
    return np.frombuffer(data, dtype=np.uint8, count=length, offset=off)


def index_width(count):
    """(bytes, numpy dtype) of an index below `count`: 1 byte up to 256, 2 up to 65536, else 4."""
    width = 1 if count <= 256 else 2 if count <= 65536 else 4
    return width, {1: "u1", 2: "<u2", 4: "<u4"}[width]


def decode_centroids(data, manifest, sections, tier, local):
    """(len(local), dim) float32: rows `local` of a centroids:C tier, row i being centroid
    assign[i]; the sections' lengths checked first, then each index read below C."""
    import numpy as np

    dim, rows, what = manifest["dim"], tier["rows"], "tier %r" % tier["name"]
    count = centroid_count(tier["codec"], what)
    index_bytes, index_dtype = index_width(count)
    require(tier.get("code_size", index_bytes) == index_bytes, "%s: code_size %r, centroids:%d needs %d"
            % (what, tier.get("code_size"), count, index_bytes))
    roles = tier["sections"]
    require(len(roles) == 2, "%s: a centroids tier has exactly the sections 'centroids' and 'assign'" % what)

    centroids = tier_payload(data, sections, tier, "centroids", count * dim * 4).view("<f4").reshape(count, dim)
    assign = tier_payload(data, sections, tier, "assign", rows * index_bytes).view(index_dtype)
    local = np.asarray(local, dtype=np.int64)
    index = assign[local].astype(np.int64)
    for k in np.flatnonzero(index >= count)[:1]:
        raise Invalid("%s: row %d is assigned centroid %d of %d" % (what, local[k], index[k], count))
    return centroids[index].astype(np.float32)


def is_nearest(tier):
    """Whether a tier is of the nearest kind (codec nearest, nearest:cos or nearest:l2)."""
    return parse_spec(tier["codec"])[0][0] == "nearest"


def nearest_targets(data, manifest, sections, tier):
    """The target table row of each row of a nearest tier (FORMAT.md 9.4), as uint64, the
    tier's entry and section checked; the targets themselves are checked by the caller."""
    import numpy as np

    what = "tier %r" % tier["name"]
    stages = parse_spec(tier["codec"])
    require(len(stages) == 1 and stages[0][0] == "nearest" and stages[0][1] in ([], [("", "cos")], [("", "l2")]),
            "%s: '%s': expected nearest, nearest:cos or nearest:l2" % (what, tier["codec"]))
    width = tier.get("target_bytes")
    require(is_uint(width) and width in (4, 8), "%s: a nearest tier needs target_bytes 4 or 8" % what)
    require(tier.get("code_size", width) == width, "%s: code_size %r, target_bytes %d"
            % (what, tier.get("code_size"), width))
    roles = tier["sections"]
    require(set(roles) == {"target"}, "%s: a nearest tier has exactly one section, 'target'" % what)
    off, length, _ = sections[roles["target"]]
    require(length == tier["rows"] * width, "%s: section %r holds %d bytes, %d rows of %d bytes need %d"
            % (what, roles["target"], length, tier["rows"], width, tier["rows"] * width))
    return np.frombuffer(data, dtype="<u%d" % width, count=tier["rows"], offset=off).astype(np.uint64)


def follow_nearest(asked, tier, local, rows, table_tier, table_local, targets):
    """Ids `asked` resolved to (tier, local), those of a nearest tier (targets: {tier index:
    target array}) resolved again as their target row: (tier, local, row id) of the rows that
    answer (the row id is what a hashed tier, keyed by id, is handed). The first (in `asked`
    order) whose target is not below `rows`, or is itself a nearest tier's row, is an error.
    table_tier / table_local: the whole table's map (None: the identity map of a one-tier file)."""
    import numpy as np

    tier, local = tier.copy(), local.copy()
    target = np.zeros(len(asked), dtype=np.uint64)
    redirected = np.zeros(len(asked), dtype=bool)
    for t, tg in targets.items():
        mask = tier == t
        target[mask] = tg[local[mask]]
        redirected |= mask
    inside = target < np.uint64(rows)
    row = np.where(redirected & inside, target, 0).astype(np.int64)
    new_tier = table_tier[row].astype(tier.dtype) if table_tier is not None else np.zeros_like(tier)
    new_local = table_local[row] if table_local is not None else row
    bad = redirected & (~inside | np.isin(new_tier, list(targets)))
    for k in np.flatnonzero(bad)[:1]:
        raise Invalid("row %d is answered by row %d, which is not a stored row" % (asked[k], target[k]))
    tier[redirected], local[redirected] = new_tier[redirected], new_local[redirected]
    answer = np.where(redirected, row, asked).astype(np.int64)
    return tier, local, answer


# ---- hashed tiers (FORMAT.md 9.5) ------------------------------------------------------------

HASH_SCHEMES = ("hash", "qr")
MAX_HASH_K = 8
MAX_BUCKETS = 1 << 32
HASH_GRAMMAR = "hash:buckets=B[,k=K][,weights=0|1][,fit=ls|none][,seed=S] or qr:buckets=B[,op=sum|mul]"
UINT_RE = re.compile(r"[0-9]+\Z")


def is_hashed(tier):
    """Whether a tier is of the hashed kind (codec hash:... or qr:...)."""
    return parse_spec(tier["codec"])[0][0] in HASH_SCHEMES


def hash_spec(spec):
    """A hashed tier's codec as a dict (scheme, buckets, k, weights, fit, seed, op). The manifest
    holds the canonical form, with every key; a key left out takes the value edo's writer gives
    it (k=1, weights=0, fit=ls, seed=0, op=sum), so that both readers accept the same specs."""
    stages = parse_spec(spec)
    require(len(stages) == 1 and stages[0][0] in HASH_SCHEMES, "hash spec %r: expected %s" % (spec, HASH_GRAMMAR))
    scheme, params = stages[0]
    qr = scheme == "qr"
    s = {"scheme": scheme, "buckets": 0, "k": 2 if qr else 1, "weights": False, "fit": "ls", "seed": 0, "op": "sum"}

    def whole(key, value):
        require(UINT_RE.match(value) and int(value) <= MASK, "hash spec %r: %s=%s is not a whole number"
                % (spec, key, value))
        return int(value)

    seen = set()
    for key, value in params:
        require(key not in seen, "hash spec %r: %s given twice" % (spec, key))
        seen.add(key)
        if key == "buckets":
            s["buckets"] = whole(key, value)
        elif key == "k" and not qr:
            s["k"] = whole(key, value)
            require(1 <= s["k"] <= MAX_HASH_K, "hash spec %r: k=%d is outside 1..%d" % (spec, s["k"], MAX_HASH_K))
        elif key == "weights" and not qr and value in ("0", "1"):
            s["weights"] = value == "1"
        elif key == "fit" and not qr and value in ("ls", "none"):
            s["fit"] = value
        elif key == "seed" and not qr:
            s["seed"] = whole(key, value)
        elif key == "op" and qr and value in ("sum", "mul"):
            s["op"] = value
        else:
            require(False, "hash spec %r: unexpected '%s%s%s' (expected %s)"
                    % (spec, key, "=" if key else "", value, HASH_GRAMMAR))
    require(1 <= s["buckets"] <= MAX_BUCKETS, "hash spec %r: needs buckets=B with B in 1..%d" % (spec, MAX_BUCKETS))
    # FORMAT.md leaves this open; edo's reader refuses it, and a cross-check needs both to agree.
    require(s["fit"] == "ls" or (s["k"] == 1 and not s["weights"]),
            "hash spec %r: fit=none (the naive baseline) is for k=1 without weights" % spec)
    return s


SPLITMIX_GAMMA, SPLITMIX_M1, SPLITMIX_M2 = 0x9E3779B97F4A7C15, 0xBF58476D1CE4E5B9, 0x94D049BB133111EB


def splitmix64(x):
    """FORMAT.md 9.5's SplitMix64 output function of x: a Python int (masked to 64 bits), or a
    numpy uint64 array (whose arithmetic wraps modulo 2^64, silently for arrays)."""
    if isinstance(x, int):
        x = (x + SPLITMIX_GAMMA) & MASK
        x = ((x ^ (x >> 30)) * SPLITMIX_M1) & MASK
        x = ((x ^ (x >> 27)) * SPLITMIX_M2) & MASK
        return x ^ (x >> 31)
    import numpy as np

    u = np.uint64
    x = x.astype(u) + u(SPLITMIX_GAMMA)
    x = (x ^ (x >> u(30))) * u(SPLITMIX_M1)
    x = (x ^ (x >> u(27))) * u(SPLITMIX_M2)
    return x ^ (x >> u(31))


def hash_bucket(ids, k, seed, buckets):
    """bucket(i, k) = splitmix64(i ^ splitmix64(seed + k)) mod buckets, for a Python int or a
    uint64 array of ids."""
    key = splitmix64((seed + k) & MASK)
    if isinstance(ids, int):
        return splitmix64(ids ^ key) % buckets
    import numpy as np

    return splitmix64(ids.astype(np.uint64) ^ np.uint64(key)) % np.uint64(buckets)


def decode_hashed(data, manifest, sections, tier, ids):
    """(len(ids), dim) float32: the rows of table ids `ids` (any id >= 0, also beyond the table)
    from a hashed tier's shared tables, each float32 operation in FORMAT.md 9.5's order; the
    sections' exact lengths checked first (in edo's order, so both readers name the same one)."""
    import numpy as np

    dim, rows, what = manifest["dim"], manifest["rows"], "tier %r" % tier["name"]
    try:
        s = hash_spec(tier["codec"])
    except Invalid as e:
        raise Invalid("%s: %s" % (what, e))
    roles = tier["sections"]

    def table(role, nrows, dtype="<f4", width=dim):
        require(role in roles, "%s: no '%s' section" % (what, role))
        off, length, _ = sections[roles[role]]
        size = nrows * width * np.dtype(dtype).itemsize
        require(length == size, "%s: section '%s' holds %d bytes, %d expected" % (what, roles[role], length, size))
        return np.frombuffer(data, dtype=dtype, count=nrows * width, offset=off).reshape(nrows, width)

    B = s["buckets"]
    if s["scheme"] == "qr":
        Q = -(-rows // B)
        require(len(roles) == 2, "%s: a qr tier has exactly the sections 'quotient' and 'remainder'" % what)
        quotient, remainder = table("quotient", Q), table("remainder", B)
        weights = None
    else:
        require(len(roles) == (2 if s["weights"] else 1),
                "%s: a weighted hash tier has exactly the sections 'buckets' and 'weights'" % what if s["weights"]
                else "%s: a hash tier has exactly one section, 'buckets'" % what)
        buckets = table("buckets", B)
        weights = table("weights", rows, "<f2", s["k"]) if s["weights"] else None
    code_size = 2 * s["k"] if weights is not None else 0
    require(tier.get("code_size", code_size) == code_size, "%s: code_size %r, codec %r needs %d"
            % (what, tier.get("code_size"), tier["codec"], code_size))

    ids = np.asarray(ids).astype(np.uint64)
    out = np.empty((len(ids), dim), dtype=np.float32)
    for r0 in range(0, len(ids), 65536):  # bounded working memory on big tables
        i = ids[r0:r0 + 65536]
        if s["scheme"] == "qr":
            q = quotient[((i // np.uint64(B)) % np.uint64(Q)).astype(np.int64)]
            r = remainder[(i % np.uint64(B)).astype(np.int64)]
            out[r0:r0 + len(i)] = q + r if s["op"] == "sum" else q * r  # float32: one rounding each
            continue
        if weights is not None:
            inside = i < np.uint64(rows)
            w = np.ones((len(i), s["k"]), dtype=np.float32)  # ids beyond the table weigh 1.0
            w[inside] = weights[i[inside].astype(np.int64)].astype(np.float32)
        for k in range(s["k"]):
            b = buckets[hash_bucket(i, k, s["seed"], B).astype(np.int64)]
            if weights is None:
                x = b.copy() if k == 0 else x + b
            elif k == 0:
                x = w[:, :1] * b
            else:
                # fma(w, b, x): w * b is exact in float64 (11 by 24 significant bits), so the sum
                # is the only rounding there; the round to float32 can differ from one fused
                # rounding only when it lands on a float32 tie (FORMAT.md 9.5).
                x = (w[:, k:k + 1].astype(np.float64) * b + x).astype(np.float32)
        out[r0:r0 + len(i)] = x
    return out


# ---- group-shared tiers (FORMAT.md 9.6) ---------------------------------------------------

GROUP_GRAMMAR = "group:groups=C[,residual=CODEC|none]"


def split_top(text, seps):
    """text split at the characters of `seps` outside square brackets (FORMAT.md 7: a bracketed
    value runs to its matching "]", brackets nest); a bracket left open or closed twice is an error."""
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        depth += (ch == "[") - (ch == "]")
        require(depth >= 0, "spec %r closes a bracket it did not open" % text)
        if depth == 0 and ch in seps:
            parts.append(text[start:i])
            start = i + 1
    require(depth == 0, "spec %r leaves a bracket open" % text)
    return parts + [text[start:]]


def is_grouped(tier):
    """Whether a tier is of the group-shared kind (codec group:...)."""
    return re.split(r"[:,]", tier["codec"], 1)[0] == "group"


def group_spec(spec):
    """(C, residual codec spec or "none") of a stored group tier's codec."""
    pieces = split_top(spec, ",:")
    require(pieces[0] == "group", "group spec %r: expected %s" % (spec, GROUP_GRAMMAR))
    groups, residual = None, None
    for piece in pieces[1:]:
        key, eq, value = piece.partition("=")
        if key == "groups" and eq and groups is None:
            require(UINT_RE.match(value) and 1 <= int(value) <= MAX_CENTROIDS,
                    "group spec %r: groups=%s is outside 1..%d" % (spec, value, MAX_CENTROIDS))
            groups = int(value)
        elif key == "residual" and eq and residual is None and value:
            residual = value[1:-1] if value.startswith("[") and value.endswith("]") else value
        else:
            require(False, "group spec %r: unexpected '%s' (expected %s)" % (spec, piece, GROUP_GRAMMAR))
    require(groups is not None, "group spec %r: a stored group tier names its count, groups=C" % spec)
    return groups, residual or "none"


def decode_grouped(data, manifest, sections, tier, local):
    """(len(local), dim) float32: rows `local` of a group tier, row i being base[assign[i]], plus
    (one float32 addition) the residual codec's decode of code row i unless it is none; the
    sections' lengths checked first, then each group index below C."""
    import numpy as np

    dim, rows, what = manifest["dim"], tier["rows"], "tier %r" % tier["name"]
    try:
        count, residual = group_spec(tier["codec"])
    except Invalid as e:
        raise Invalid("%s: %s" % (what, e))
    codec = None if residual == "none" else Codec(residual, dim)
    index_bytes, index_dtype = index_width(count)
    code_size = codec.code_size if codec else 0
    require(tier.get("code_size") == index_bytes + code_size, "%s: code_size %r, codec %r needs %d"
            % (what, tier.get("code_size"), tier["codec"], index_bytes + code_size))
    roles = tier["sections"]

    base = tier_payload(data, sections, tier, "base", count * dim * 4).view("<f4").reshape(count, dim)
    assign = tier_payload(data, sections, tier, "assign", rows * index_bytes).view(index_dtype)
    local = np.asarray(local, dtype=np.int64)
    if codec is None:
        require(len(roles) == 2, "%s: a group tier without residuals has exactly 'base' and 'assign'" % what)
    else:
        codes = tier_payload(data, sections, tier, "codes", rows * code_size).reshape(rows, code_size)
        state = tier_state(data, sections, dict(tier, sections={r: n for r, n in roles.items()
                                                                 if r not in ("base", "assign")}), codec)
    index = assign[local].astype(np.int64)
    for k in np.flatnonzero(index >= count)[:1]:
        raise Invalid("%s: row %d is in group %d of %d" % (what, local[k], index[k], count))
    out = np.empty((len(local), dim), dtype=np.float32)
    for r0 in range(0, len(local), 65536):  # bounded working memory on big tiers
        b = base[index[r0:r0 + 65536]]
        out[r0:r0 + len(b)] = b if codec is None else b + codec.decode(codes[local[r0:r0 + 65536]], state)
    return out


# ---- sparse tiers (FORMAT.md "Sparse tiers") ----------------------------------------------

SPARSE_FORMS = ("csr", "bitmap")
SPARSE_VALUE_BYTES = {"fp32": 4, "fp16": 2, "bf16": 2, "int8": 1, "int4": None}  # int4: two values a byte
NUMBER_RE = re.compile(r"-?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?\Z")


def sparse_spec(spec, dim):
    """(form, values) of a sparse tier's codec FORM:RULE[,values=V]: FORM csr or bitmap, one RULE
    of density=D (0 < D <= 1), k=K (1 <= K <= dim) or threshold=T (finite, > 0), V fp32 (the
    default), fp16, bf16, int8 or int4; dim from 1 to 65536."""
    import numpy as np

    stages = parse_spec(spec)
    require(len(stages) == 1 and stages[0][0] in SPARSE_FORMS,
            "sparse spec %r: expected csr|bitmap:density=D|k=K|threshold=T[,values=V]" % spec)
    form, params = stages[0]
    values, rules = None, 0
    for key, value in params:
        if key in ("density", "threshold"):
            require(NUMBER_RE.match(value), "sparse spec %r: %s=%s is not a number" % (spec, key, value))
            if key == "density":
                require(0 < float(value) <= 1, "sparse spec %r: density %s is outside (0, 1]" % (spec, value))
            else:
                t = np.float32(float(value))
                require(np.isfinite(t) and t > 0, "sparse spec %r: threshold %s must be a finite number > 0"
                        % (spec, value))
            rules += 1
        elif key == "k":
            require(value.isdigit(), "sparse spec %r: k=%s is not a number" % (spec, value))
            require(1 <= int(value) <= dim, "sparse spec %r: k=%s is outside 1..%d (the dimension)"
                    % (spec, value, dim))
            rules += 1
        elif key == "values" and values is None:
            require(value in SPARSE_VALUE_BYTES, "sparse spec %r: values=%s (fp32, fp16, bf16, int8 or int4)"
                    % (spec, value))
            values = value
        else:
            require(False, "sparse spec %r: unexpected parameter %r" % (spec, key or value))
    require(rules == 1, "sparse spec %r: give exactly one of density=, k= or threshold=" % spec)
    require(1 <= dim <= 65536, "sparse spec %r: dimension %d is outside 1..65536" % (spec, dim))
    return form, values or "fp32"


def sparse_values(stored, kind, i, params):
    """float32 value of each stored value index i (params: each one's row (scale, offset), or None)."""
    import numpy as np

    if kind == "fp32":
        return stored.view("<f4")[i]
    if kind == "fp16":
        return stored.view("<f2")[i].astype(np.float32)
    if kind == "bf16":
        return (stored.view("<u2")[i].astype(np.uint32) << 16).view(np.float32)
    q = stored[i] if kind == "int8" else (stored[i // 2] >> (4 * (i % 2)).astype(np.uint8)) & 0xF
    # q * scale is exact in float64; one rounding to float32 equals the decoder's fma.
    return (q * params[:, 0].astype(np.float64) + params[:, 1].astype(np.float64)).astype(np.float32)


def decode_sparse(data, manifest, sections, tier, local):
    """(len(local), dim) float32: rows `local` of a sparse tier, each checked as the C++ reader
    checks it (offsets in order and in range, column indices below dim, mask bits matching the
    row's value count); a column a row does not store is 0."""
    import numpy as np

    dim, rows, what = manifest["dim"], tier["rows"], "tier %r" % tier["name"]
    form, kind = sparse_spec(tier["codec"], dim)
    nnz, offset_bytes = tier.get("nnz"), tier.get("offset_bytes")
    require(is_uint(nnz) and is_uint(offset_bytes), "%s: a sparse tier needs unsigned 'nnz' and 'offset_bytes'" % what)
    require(offset_bytes in (4, 8), "%s: offset_bytes %d (4 or 8)" % (what, offset_bytes))
    require(kind != "int4" or nnz % 2 == 0, "%s: an int4 tier stores an even number of values" % what)
    affine = kind in ("int8", "int4")
    roles = tier["sections"]
    require(len(roles) == 3 + affine, "%s: unexpected sections for its form and values" % what)

    def payload(role, size):
        require(role in roles, "%s: no %r section" % (what, role))
        off, length, _ = sections[roles[role]]
        require(length == size, "%s: section %r holds %d bytes, %d expected" % (what, roles[role], length, size))
        return np.frombuffer(data, dtype=np.uint8, count=length, offset=off)

    offsets = payload("offsets", (rows + 1) * offset_bytes).view("<u%d" % offset_bytes).astype(np.uint64)
    stored = payload("values", nnz // 2 if kind == "int4" else nnz * SPARSE_VALUE_BYTES[kind])
    mask_bytes = (dim + 7) // 8
    if form == "csr":
        where = payload("indices", nnz * (1 if dim <= 256 else 2)).view("u1" if dim <= 256 else "<u2")
    else:
        where = payload("masks", rows * mask_bytes).reshape(rows, mask_bytes)
    params = payload("params", rows * 8).view("<f4").reshape(rows, 2) if affine else None
    require(offsets[0] == 0 and offsets[rows] == nnz, "%s: offsets run from %d to %d, the tier holds %d values"
            % (what, offsets[0], offsets[rows], nnz))

    local = np.asarray(local, dtype=np.int64)
    out = np.zeros((len(local), dim), dtype=np.float32)
    for r0 in range(0, len(local), 65536):  # bounded working memory on big tiers
        r = local[r0:r0 + 65536]
        a, b = offsets[r], offsets[r + 1]
        bad = (a > b) | (b > np.uint64(nnz)) | (b - a > np.uint64(dim))
        if kind == "int4":
            bad |= a % np.uint64(2) != 0
        a, b = np.where(bad, 0, a).astype(np.int64), np.where(bad, 0, b).astype(np.int64)
        counts = b - a
        owner = np.repeat(np.arange(len(r)), counts)  # the row (in r) of each value read
        i = a[owner] + np.arange(owner.size) - (np.cumsum(counts) - counts)[owner]
        if form == "csr":
            cols = where[i].astype(np.int64)
            bad[owner[cols >= dim]] = True
        else:
            masks = where[r]
            bits = np.unpackbits(masks, axis=1, bitorder="little")
            bad |= (bits.sum(axis=1) != counts) | bits[:, dim:].any(axis=1)
        for k in np.flatnonzero(bad)[:1]:
            raise Invalid("%s: row %d is corrupt" % (what, r[k]))
        if form == "bitmap":
            owner, cols = np.nonzero(bits[:, :dim])  # row by row, columns ascending: the values' order
        value = sparse_values(stored, kind, i, params[r[owner]] if affine else None)
        out[r0 + owner, cols] = value
    return out


# ---- lossless tiers (FORMAT.md 9.10) -----------------------------------------------------------

LOSSLESS_WIDTH = {"bf16": 16, "fp16": 16, "fp32": 32}
LOSSLESS_MAX_BITS = 11


def lossless_decoder(packed, what, segment):
    """Segment `segment`'s decoding table from its 128 packed code lengths: entry (the next 11
    code bits, the first lowest) = symbol | length << 8, 0 where no code begins so; None for a
    segment stored a byte a symbol (every length 0)."""
    lengths = [(packed[k // 2] >> (4 * (k % 2))) & 15 for k in range(256)]
    if not any(lengths):
        return None
    require(max(lengths) <= LOSSLESS_MAX_BITS and
            sum(1 << (LOSSLESS_MAX_BITS - n) for n in lengths if n) <= 1 << LOSSLESS_MAX_BITS,
            "%s: segment %d: its code lengths overflow the code space or exceed %d bits"
            % (what, segment, LOSSLESS_MAX_BITS))
    count = [lengths.count(n) for n in range(LOSSLESS_MAX_BITS + 1)]
    first, code = [0] * (LOSSLESS_MAX_BITS + 1), 0
    for n in range(1, LOSSLESS_MAX_BITS + 1):  # canonical: shorter codes first, then by symbol
        code = (code + (count[n - 1] if n > 1 else 0)) << 1
        first[n] = code
    table = [0] * (1 << LOSSLESS_MAX_BITS)
    for sym in range(256):
        n = lengths[sym]
        if not n:
            continue
        c, first[n] = first[n], first[n] + 1
        rev = int(format(c, "0%db" % n)[::-1], 2)
        for at in range(rev, 1 << LOSSLESS_MAX_BITS, 1 << n):
            table[at] = sym | n << 8
    return table


def decode_lossless(data, manifest, sections, tier, local):
    """(len(local), dim) float32: rows `local` of a lossless tier, bit for bit, each row's offsets
    and code checked as the C++ reader checks them."""
    import numpy as np

    dim, rows, what = manifest["dim"], tier["rows"], "tier %r" % tier["name"]
    stages = parse_spec(tier["codec"])
    require(len(stages) == 1 and len(stages[0][1]) == 1 and stages[0][1][0][0] == "values"
            and stages[0][1][0][1] in LOSSLESS_WIDTH, "%s: expected lossless:values=bf16|fp16|fp32" % what)
    kind = stages[0][1][0][1]
    width = LOSSLESS_WIDTH[kind]
    rb = width // 8 - 1
    block_rows, segment_rows = tier.get("block_rows"), tier.get("segment_rows")
    require(is_uint(block_rows) and 1 <= block_rows <= 4096, "%s: block_rows %r (1 to 4096)" % (what, block_rows))
    require(is_uint(segment_rows) and segment_rows > 0 and segment_rows % block_rows == 0
            and segment_rows * dim <= 1 << 26, "%s: segment_rows %r: a multiple of block_rows of at most 2^26 values"
            % (what, segment_rows))
    roles = tier["sections"]
    require(set(roles) == {"raw", "codes", "blocks", "rows", "tables"}, "%s: unexpected sections" % what)
    blocks_count, segments = -(-rows // block_rows), -(-rows // segment_rows)

    def payload(role, size):
        off, length, _ = sections[roles[role]]
        if size is not None:
            require(length == size, "%s: section %r holds %d bytes, %d expected" % (what, roles[role], length, size))
        return np.frombuffer(data, dtype=np.uint8, count=length, offset=off)

    raw = payload("raw", rows * dim * rb)
    tables = payload("tables", segments * 128)
    blocks = payload("blocks", (blocks_count + 1) * 8).view("<u8")
    lengths = dim <= 185  # a byte a row, its code's length; else a u16, its offset in its block
    index = payload("rows", rows * (1 if lengths else 2)).view("u1" if lengths else "<u2").astype(np.int64)
    codes = payload("codes", None)
    require(codes.size >= 8 and blocks[0] == 0 and blocks[blocks_count] == codes.size - 8,
            "%s: the code offsets do not span the 'codes' section" % what)
    codes_end = codes.size - 8
    codes = codes.tobytes()
    decoders = {}
    local = np.asarray(local, dtype=np.int64)
    symbols = np.empty((len(local), dim), dtype=np.uint32)
    for k, r in enumerate(local.tolist()):
        b = r // block_rows
        base, nxt = int(blocks[b]), int(blocks[b + 1])
        last = r + 1 == rows or (r + 1) % block_rows == 0
        if lengths:
            start = base + int(index[b * block_rows:r].sum())
            end = start + int(index[r])
            ok = not last or end == nxt
        else:
            start = base + int(index[r])
            end = nxt if last else base + int(index[r + 1])
            ok = start <= end and (r % block_rows or index[r] == 0)
        require(ok and base <= nxt <= codes_end and end <= nxt,
                "%s: row %d: its code offsets are out of order or beyond the section" % (what, r))
        s = r // segment_rows
        if s not in decoders:
            decoders[s] = lossless_decoder(tables[128 * s:128 * (s + 1)].tolist(), what, s)
        table = decoders[s]
        if table is None:
            require(end - start == dim, "%s: row %d: %d code bytes, a raw row holds %d" % (what, r, end - start, dim))
            symbols[k] = np.frombuffer(codes, dtype=np.uint8, count=dim, offset=start)
            continue
        acc, held, pos, row = 0, 0, start, symbols[k]
        for j in range(dim):
            while held < LOSSLESS_MAX_BITS and pos < end:
                acc |= codes[pos] << held
                pos, held = pos + 1, held + 8
            e = table[acc & 0x7ff]
            n = e >> 8
            require(0 < n <= held, "%s: row %d: its code bits do not decode to %d values in %d bytes"
                    % (what, r, dim, end - start))
            acc, held, row[j] = acc >> n, held - n, e & 0xff
        require(pos == end and held < 8, "%s: row %d: its code bits do not decode to %d values in %d bytes"
                % (what, r, dim, end - start))
    parts = raw.reshape(rows, dim, rb)[local].astype(np.uint32)
    rest = parts[:, :, 0] if rb == 1 else parts[:, :, 0] | parts[:, :, 1] << 8 | parts[:, :, 2] << 16
    low = (1 << (width - 9)) - 1
    bits = (rest >> (width - 9)) << (width - 1) | symbols << (width - 9) | (rest & low)
    if kind == "fp32":
        return bits.astype(np.uint32).view(np.float32)
    if kind == "bf16":
        return (bits << 16).astype(np.uint32).view(np.float32)
    return bits.astype(np.uint16).view(np.float16).astype(np.float32)


def row_runs(data, manifest, sections, rm):
    """row_map() of a map stored as runs (FORMAT.md 9.2): K x (first row, tier, index of that row in its tier)."""
    import numpy as np

    rows, tiers = manifest["rows"], manifest["tiers"]
    ntiers = len(tiers)
    require(len(rm) == 1 and isinstance(rm["runs"], str) and rm["runs"] in sections,
            "rowmap 'runs' names no section, or the rowmap holds more keys")
    require(1 <= ntiers <= 64, "row map for %d tiers (1 to 64 allowed)" % ntiers)
    nbytes = sections[rm["runs"]][1]
    require(nbytes % 24 == 0, "row map runs section holds %d bytes, not a whole number of 24-byte runs" % nbytes)
    runs = section_array(data, sections, rm["runs"], "<u8", "row map").reshape(-1, 3)
    require(1 <= len(runs) <= rows, "row map holds %d runs for %d rows (1 to the rows allowed)" % (len(runs), rows))
    first, tier_of_run, index = (runs[:, i].astype(np.int64) for i in range(3))
    ends = np.append(first[1:], rows)
    require(first[0] == 0, "row map's first run starts at row %d, not 0" % first[0])
    for k in np.flatnonzero((ends <= first) | (ends > rows))[:1]:
        raise Invalid("row map run %d ends at row %d, not after its first row %d and within the %d rows"
                      % (k, ends[k], first[k], rows))
    for k in np.flatnonzero(tier_of_run >= ntiers)[:1]:
        raise Invalid("row map run %d names tier %d of %d" % (k, tier_of_run[k], ntiers))
    lengths = ends - first
    for t in range(ntiers):
        mine = tier_of_run == t
        before = np.cumsum(lengths[mine]) - lengths[mine]
        for j in np.flatnonzero(index[mine] != before)[:1]:
            k = np.flatnonzero(mine)[j]
            raise Invalid("row map run %d starts at index %d of tier %d, its earlier runs say %d"
                          % (k, index[k], t, before[j]))
        require(int(lengths[mine].sum()) == tiers[t]["rows"], "row map puts %d rows in tier %r, the manifest %d"
                % (lengths[mine].sum(), tiers[t]["name"], tiers[t]["rows"]))
    run_of_row = np.repeat(np.arange(len(runs)), lengths)
    tier = tier_of_run[run_of_row].astype(np.uint8)
    local = index[run_of_row] + (np.arange(rows) - first[run_of_row])
    return tier, local


def row_map(data, manifest, sections):
    """(tier of each row, index of each row within its tier), from the manifest's rowmap."""
    import numpy as np

    rows, tiers = manifest["rows"], manifest["tiers"]
    ntiers = len(tiers)
    rm = manifest["rowmap"]
    require(isinstance(rm, dict), '"rowmap" is not an object')
    if "runs" in rm:
        return row_runs(data, manifest, sections, rm)
    require(rm.get("block") == 256, "rowmap block %r, this reader knows 256" % rm.get("block"))
    require(1 <= ntiers <= 64, "row map for %d tiers (1 to 64 allowed)" % ntiers)
    for key in ("tier", "rank") + (("local",) if "local" in rm else ()):
        require(isinstance(rm.get(key), str) and rm[key] in sections, "rowmap %r names no section" % key)
    tier = section_array(data, sections, rm["tier"], np.uint8, "row map")
    require(tier.size == rows, "row map tier section holds %d bytes for %d rows" % (tier.size, rows))
    blocks = -(-rows // 256)
    rank_bytes = sections[rm["rank"]][1]
    require(rank_bytes == blocks * ntiers * 8, "row map rank section holds %d bytes, %d blocks of %d tiers need %d"
            % (rank_bytes, blocks, ntiers, blocks * ntiers * 8))
    rank = section_array(data, sections, rm["rank"], "<u8", "row map").reshape(blocks, ntiers)
    for i in np.flatnonzero(tier >= ntiers)[:1]:
        raise Invalid("row map gives row %d tier %d of %d" % (i, tier[i], ntiers))
    # From the tier bytes alone: row i is the k-th row of its tier when k rows of that tier come before it.
    counted = np.zeros(rows, dtype=np.int64)
    # From the rank checkpoints (FORMAT.md): rank[i / 256][t] plus the rows of tier t in [256 (i / 256), i).
    ranked = np.zeros(rows, dtype=np.int64)
    starts = np.arange(0, rows, 256)
    block_start = np.arange(rows) // 256 * 256
    for t in range(ntiers):
        mask = tier == t
        require(int(mask.sum()) == tiers[t]["rows"], "row map puts %d rows in tier %r, the manifest %d"
                % (mask.sum(), tiers[t]["name"], tiers[t]["rows"]))
        before = np.cumsum(mask) - mask  # rows of tier t in [0, i)
        for b in np.flatnonzero(rank[:, t] != before[starts])[:1]:
            raise Invalid("row map rank of tier %r at row %d is %d, the tier bytes say %d"
                          % (tiers[t]["name"], starts[b], rank[b, t], before[starts[b]]))
        counted[mask] = before[mask]
        ranked[mask] = (rank[:, t].astype(np.int64)[block_start // 256] + before - before[block_start])[mask]
    if "local" in rm:
        local = section_array(data, sections, rm["local"], "<u4", "row map")
        require(local.size == rows, "row map local section holds %d values for %d rows" % (local.size, rows))
        for i in np.flatnonzero(local != counted)[:1]:
            raise Invalid("row map local section gives row %d index %d in its tier, the tier bytes say %d"
                          % (i, local[i], counted[i]))
        return tier, local.astype(np.int64)
    return tier, ranked


def decode_table(data, manifest, sections, ids=None):
    """The whole table, (rows, dim) float32, decoded from every tier through the row map; or,
    given `ids` (row ids, any order, repeats allowed), (len(ids), dim): those rows."""
    import numpy as np

    rows, dim, tiers = manifest["rows"], manifest["dim"], manifest["tiers"]
    require(sum(t["rows"] for t in tiers) == rows, "the tiers hold %d rows, the table %d"
            % (sum(t["rows"] for t in tiers), rows))
    if ids is not None:
        ids = np.asarray(ids, dtype=np.int64)
        for i in np.flatnonzero((ids < 0) | (ids >= rows))[:1]:
            raise Invalid("row id %d is out of range (the table has %d rows)" % (ids[i], rows))
    # Nearest tiers (FORMAT.md 9.4) store no values: their rows are answered by the rows they name.
    # Hashed tiers (9.5) are keyed by id: handed the table id of the row that answers, not its local one.
    keyed = {t for t, info in enumerate(tiers) if is_hashed(info)}
    targets = {t: nearest_targets(data, manifest, sections, info) for t, info in enumerate(tiers)
               if is_nearest(info)}
    if "rowmap" not in manifest:
        require(len(tiers) == 1, "%d tiers and no rowmap" % len(tiers))
        require(tiers[0].get("first_row", 0) == 0, "first_row %r, expected 0" % tiers[0].get("first_row"))
        if targets:  # every target is a row of this very tier: refused
            asked = np.arange(min(rows, 1)) if ids is None else ids
            follow_nearest(asked, np.zeros(len(asked), dtype=np.int64), asked, rows, None, None, targets)
        return np.ascontiguousarray(decode_tier(data, manifest, sections, tiers[0], ids))
    table_tier, table_index = row_map(data, manifest, sections)
    if ids is None:
        asked, tier, index = np.arange(rows), table_tier, table_index
    else:
        # A lookup by id resolves every id, redirects included, before decoding any (as edo's reader).
        asked, tier, index = ids, table_tier[ids], table_index[ids]
    answer = asked
    if ids is not None and targets:
        tier, index, answer = follow_nearest(asked, tier, index, rows, table_tier, table_index, targets)
    out = np.empty((len(tier), dim), dtype=np.float32)
    for t, info in enumerate(tiers):
        mask = tier == t
        if t not in targets:
            out[mask] = decode_tier(data, manifest, sections, info, (answer if t in keyed else index)[mask])
            continue
        if not mask.any():
            continue
        # The whole table, tier by tier (as edo-unpack): this tier's rows, ascending, through their targets.
        where = np.flatnonzero(mask)
        to_tier, to_index, to_row = follow_nearest(asked[where], tier[where], index[where], rows, table_tier,
                                                   table_index, targets)
        for u, stored in enumerate(tiers):
            sub = to_tier == u
            if sub.any():
                key = to_row if u in keyed else to_index
                out[where[sub]] = decode_tier(data, manifest, sections, stored, key[sub])
    return out


def parse_ids(text):
    """Row ids from comma-separated integers or a .npy file of integers."""
    import numpy as np

    if text.endswith(".npy"):
        try:
            ids = np.load(text)
        except ValueError as e:
            raise Invalid("--ids %s: %s" % (text, e))
        require(ids.ndim == 1 and ids.dtype.kind in "iu", "--ids %s: not a 1-D array of integers" % text)
        return ids.astype(np.int64)
    parts = text.split(",")
    for p in parts:
        require(p.isdigit() and len(p) <= 19, "--ids: %r is not a row id" % p)
    return np.array([int(p) for p in parts], dtype=np.int64)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("file")
    ap.add_argument("--manifest", action="store_true", help="print the manifest as JSON")
    ap.add_argument("--section", help="section to extract (with --out)")
    ap.add_argument("--out", help="where to write the section payload")
    ap.add_argument("--decode", metavar="OUT.npy",
                    help="decode the whole table (any tiers, any codec above) to float32 .npy")
    ap.add_argument("--ids", help="with --decode: only these rows, in this order "
                    "(comma-separated row ids, or a .npy of integer ids)")
    ap.add_argument("--tables", action="store_true", help="a model file's table names, one a line (each validated)")
    ap.add_argument("--table", help="read this table of a model file (FORMAT.md section 10)")
    args = ap.parse_args()
    if bool(args.section) != bool(args.out):
        ap.error("--section and --out go together")
    if args.ids and not args.decode:
        ap.error("--ids goes with --decode")
    try:
        with open(args.file, "rb") as f:
            data = f.read()
        manifest, sections, version = validate(data)
        if args.tables:
            for name in table_names(manifest):
                if "model" in manifest:
                    open_table(data, manifest, sections, name)
                print(name)
            return 0
        if args.table is not None:
            data, manifest, sections, t_version = open_table(data, manifest, sections, args.table)
            version = t_version or version
            args.file += ":" + args.table if t_version else ""
        elif "model" in manifest and (args.decode or args.section):
            names = table_names(manifest)
            raise Invalid("a model file of %d tables (%s): name one with --table"
                          % (len(names), ", ".join(names[:20])))
        elif "model" in manifest:
            for name in table_names(manifest):
                open_table(data, manifest, sections, name)  # every table valid
        if args.section:
            require(args.section in sections, "no section named %r" % args.section)
            off, length, _ = sections[args.section]
            with open(args.out, "wb") as f:
                f.write(data[off:off + length])
        if args.decode:
            try:
                import numpy as np
            except ImportError:
                raise Invalid("--decode needs numpy (validation does not)")
            decoded = decode_table(data, manifest, sections, parse_ids(args.ids) if args.ids else None)
            np.save(args.decode, decoded)
            return 0
    except (Invalid, OSError) as e:
        print("%s: %s" % (args.file, e), file=sys.stderr)
        return 1
    if args.manifest:
        print(json.dumps(manifest, indent=2, sort_keys=True))
    elif not args.section and "model" in manifest:
        names = table_names(manifest)
        print("%s: edo %d.%d, a model of %d tables (%s), %d bytes: OK" % (
            args.file, version[0], version[1], len(names), ", ".join(names[:20]), len(data)))
    elif not args.section:
        print("%s: edo %d.%d, %d x %d, %d sections, %d tiers, %d bytes: OK" % (
            args.file, version[0], version[1], manifest["rows"], manifest["dim"], len(sections),
            len(manifest["tiers"]), len(data)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
