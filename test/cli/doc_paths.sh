#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Every repository path README.md, CONTRIBUTING.md, SECURITY.md and docs/*.md
# name (apps/..., lib/..., scripts/..., test/..., a glob such as
# fuzz/fuzz_*.cpp) exists, and every command a code span starts with
# (`edo-pack ...`, `scripts/x.sh ...`) is a tool the build makes or a file
# here: a renamed file or tool fails this test, not a reader.
#   doc_paths.sh BUILD_DIR SOURCE_DIR
set -uo pipefail
source "$(dirname "$0")/checks.bash" "$@"  # build, src, work (removed at exit), expect, fail, err_has
/usr/bin/python3 - "$src" "$build" >"$work/missing" <<'PY'
import glob, os, re, sys

src, build = sys.argv[1], sys.argv[2]
docs = [os.path.join(src, f) for f in ("README.md", "CONTRIBUTING.md", "SECURITY.md")]
docs += sorted(glob.glob(os.path.join(src, "docs", "*.md")))
tops = ("apps/", "lib/", "formats/", "scripts/", "test/", "docs/", "fuzz/", "kernels/", "python/", "cmake/",
        "data-samples/", ".ci/")
# Paths of an installed tree that the docs name beside a prefix, not files here.
installed = ("lib/cmake/", "include/edo/", "share/")
tools = {os.path.basename(p)[:-4] for p in glob.glob(os.path.join(src, "apps", "edo-*.cpp"))}
path_re = re.compile(r"(?<![\w/.$-])((?:%s)[\w./*-]*)" % "|".join(re.escape(t) for t in tops))
for doc in docs:
    name = os.path.relpath(doc, src)
    for number, line in enumerate(open(doc, encoding="utf-8"), 1):
        for m in path_re.finditer(line):
            path = m.group(1).rstrip(".,:;)-").split(":")[0]
            if path.startswith(installed) or glob.glob(os.path.join(src, path)):
                continue
            print(f"{name}:{number}: no {path}")
        for span in re.findall(r"`([^`]+)`", line):
            word = span.split()[0] if span.split() else ""
            if re.fullmatch(r"edo-[a-z]+", word) and word not in tools:
                print(f"{name}:{number}: no tool {word}")
PY
while read -r line; do fail "$line"; done <"$work/missing"
echo "doc_paths: $failures failure(s)"
[ "$failures" -eq 0 ]
