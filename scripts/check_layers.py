#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Checks that every include of edo's library stays inside its target's link closure.

Reads the edo_library(...) calls of CMakeLists.txt (name, DIR, KERNELS,
INTERNAL, PUBLIC and PRIVATE dependencies), assigns every header to the
target whose folder holds it (DIR/include/edo/... public, DIR/*.hpp private,
kernels/edo/cuda/NAME.cuh to the target that builds kernels/NAME.cu), and
checks each source and header of each target, each kernel, and each program
that links the reader alone (apps/example_lookup.cpp, python/_edo_module.cpp):
an include of a header owned by a target outside the includer's link closure
fails, naming the file, line and both targets. With BUILD_DIR, the built
archives are checked the same way at the symbol level: every edo symbol a
target's objects use must be defined in its link closure (a function
declared in a low layer but defined in a higher one would otherwise link in
the tools and fail in a program that links the low layer alone). Exit 0
clean, 1 violations.

    check_layers.py SOURCE_DIR [BUILD_DIR]
"""
import pathlib
import re
import subprocess
import sys

root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else ".").resolve()
cmake = (root / "CMakeLists.txt").read_text()
cmake_code = "\n".join(line.split("#", 1)[0] for line in cmake.splitlines())

KEYWORDS = {"DIR", "KERNELS", "INTERNAL", "PUBLIC", "PRIVATE"}
targets = {}
for m in re.finditer(r"^\s*edo_library\(([^)]*)\)", cmake_code, re.M):
    words = m.group(1).split()
    name, fields, key = words[0], {k: [] for k in KEYWORDS}, None
    for w in words[1:]:
        if w in KEYWORDS:
            key = w
        elif key:
            fields[key].append(w)
    if len(fields["DIR"]) != 1:
        sys.exit(f"CMakeLists.txt: edo_library({name}) has no single DIR")
    targets[name] = {
        "dir": root / fields["DIR"][0],
        "kernels": fields["KERNELS"],
        "internal": [root / d for d in fields["INTERNAL"]],
        "deps": [d for d in fields["PUBLIC"] + fields["PRIVATE"] if d.startswith("edo_")],
    }
if len(targets) < 5:
    sys.exit(f"CMakeLists.txt: found only {len(targets)} edo_library calls")
for name, t in targets.items():
    for d in t["deps"]:
        if d not in targets:
            sys.exit(f"CMakeLists.txt: {name} links {d}, which is no edo_library")


def closure(name, seen=None):
    seen = set() if seen is None else seen
    if name not in seen:
        seen.add(name)
        for d in targets[name]["deps"]:
            closure(d, seen)
    return seen


# Header ownership: public names ("edo/x.hpp") and private paths.
public_owner = {}
private_owner = {}
problems = []
for name, t in targets.items():
    inc = t["dir"] / "include"
    for h in sorted(inc.rglob("*")) if inc.is_dir() else []:
        if h.is_file():
            key = h.relative_to(inc).as_posix()
            if key in public_owner:
                problems.append(f"{key}: public in both {public_owner[key]} and {name}")
            public_owner[key] = name
    for h in t["dir"].iterdir():
        if h.suffix in (".hpp", ".inc", ".h"):
            private_owner[h.resolve()] = name
kernel_owner = {k: name for name, t in targets.items() for k in t["kernels"]}
for cuh in sorted((root / "kernels/edo/cuda").glob("*.cuh")):
    # A kernel's launch header belongs to the target that builds the kernel;
    # grid.cuh (grid-stride helpers, used by kernels only) to the lowest layer.
    public_owner["edo/cuda/" + cuh.name] = kernel_owner.get(cuh.stem, "edo_core")
public_owner["edo/build_info.hpp"] = "edo_core"  # generated from cmake/build_info.hpp.in

for stray in ("lib/edo", "formats/edo"):
    if (root / stray).exists() and any((root / stray).rglob("*.hpp")):
        problems.append(f"{stray}/: headers outside any target's folder")
owned_dirs = {t["dir"] for t in targets.values()}
for parent in ("lib", "formats"):
    for d in sorted((root / parent).iterdir()):
        if d.is_dir() and d not in owned_dirs:
            problems.append(f"{d.relative_to(root)}/: a folder no edo_library owns")

# Files to check, each with the target whose closure bounds it.
files = []
for name, t in targets.items():
    for f in sorted(t["dir"].rglob("*")):
        if f.is_file() and f.suffix in (".cpp", ".hpp", ".inc", ".h"):
            files.append((f, name))
for cu in sorted((root / "kernels").glob("*.cu")):
    if cu.stem not in kernel_owner:
        problems.append(f"kernels/{cu.name}: no edo_library builds it")
        continue
    files.append((cu, kernel_owner[cu.stem]))
for cuh in sorted((root / "kernels/edo/cuda").glob("*.cuh")):
    files.append((cuh, public_owner["edo/cuda/" + cuh.name]))
# Programs that link the reader alone, as a serving program does.
for m in re.finditer(r"add_executable\((\S+) (\S+\.cpp)\)\s*\ntarget_link_libraries\(\1 PRIVATE edo::reader\)", cmake_code):
    files.append((root / m.group(2), "edo_reader"))
m = re.search(r"pybind11_add_module\((\S+) .*?(\S+\.cpp)\)", cmake_code)
if m and re.search(r"target_link_libraries\(" + m.group(1) + r" PRIVATE edo_reader\)", cmake_code):
    m = (None, m.group(2), "edo_reader")
else:
    m = None
if m:
    files.append((root / m[1], m[2]))
else:
    problems.append("CMakeLists.txt: the Python module no longer links edo_reader alone; update check_layers.py")

include_re = re.compile(r'^\s*#\s*include\s*([<"])([^>"]+)[>"]')
checked = 0
for f, name in files:
    allowed = closure(name)
    rel = f.relative_to(root)
    for lineno, line in enumerate(f.read_text().splitlines(), 1):
        m = include_re.match(line)
        if not m:
            continue
        checked += 1
        path = m.group(2)
        if path in public_owner:
            owner = public_owner[path]
        elif m.group(1) == '"':
            local = (f.parent / path).resolve()
            if local not in private_owner and not local.exists():
                internal = [d / path for d in targets.get(name, {}).get("internal", [])]
                local = next((p.resolve() for p in internal if p.exists()), local)
            owner = private_owner.get(local)
            if owner is None:
                if local.exists() and local.suffix not in (".cuh",):
                    problems.append(f"{rel}:{lineno}: includes {path}, which no target owns")
                continue
            if owner != name and local.parent not in targets.get(name, {}).get("internal", []):
                problems.append(f"{rel}:{lineno}: includes {path}, private to {owner}")
                continue
        elif path.startswith("edo/"):
            problems.append(f"{rel}:{lineno}: includes <{path}>, which no target provides")
            continue
        else:
            continue  # a system or third-party header
        if owner not in allowed:
            problems.append(f"{rel}:{lineno}: {name} includes {path} of {owner}, outside its link closure")


def edo_symbols(archive):
    """(defined, undefined) edo:: symbols of a static library, by nm."""
    out = subprocess.run(["nm", "-g", "--format=posix", archive], capture_output=True, text=True, check=True).stdout
    defined, undefined = set(), set()
    for line in out.splitlines():
        parts = line.split()
        if len(parts) < 2 or not parts[0].startswith("_ZN3edo"):
            continue
        (undefined if parts[1] == "U" else defined).add(parts[0])
    return defined, undefined


if len(sys.argv) > 2:
    build = pathlib.Path(sys.argv[2]).resolve()
    symbols = {}
    for name in targets:
        archive = build / f"lib{name}.a"
        if not archive.exists():
            problems.append(f"{archive}: not built")
            continue
        symbols[name] = edo_symbols(archive)
    for name, (defined, undefined) in symbols.items():
        reachable = set()
        for dep in closure(name):
            reachable |= symbols.get(dep, (set(), set()))[0]
        missing = sorted(undefined - reachable)
        if missing:
            demangled = subprocess.run(["c++filt"], input="\n".join(missing[:5]), capture_output=True,
                                       text=True).stdout.split("\n")
            where = {other for other, (d, _) in symbols.items() for m in missing if m in d}
            problems.append(f"lib{name}.a: uses {len(missing)} edo symbols defined outside its link closure"
                            f" (in {', '.join(sorted(where)) or 'no edo library'}), e.g. {demangled[0]}")
    checked_archives = len(symbols)
    print(f"check_layers: {checked_archives} archives checked for symbols")

for p in problems:
    print(p)
print(f"check_layers: {len(targets)} targets, {len(files)} files, {checked} includes, {len(problems)} problems")
sys.exit(1 if problems else 0)
