#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Lists the functions of the library (lib/, formats/) and of the tools
# (apps/) longer than a limit, in lines from the line that names the
# function to its closing brace, as Universal Ctags reports them (--fields=+ne: start and end lines); exits 1
# when there is one. ctest runs it as cli.function_length.
# usage: scripts/function_length.sh [LIMIT]   (default 120)
set -euo pipefail
cd "$(dirname "$0")/.."
limit="${1:-120}"
mapfile -t files < <(git ls-files 'lib/*.cpp' 'lib/*.hpp' 'formats/*.cpp' 'formats/*.hpp' 'apps/*.cpp' 'apps/*.hpp')
ctags --sort=no --languages=C++ --kinds-C++=f --fields=+ne --output-format=json -f - "${files[@]}" |
  /usr/bin/python3 -c "$(cat <<'PY'
import json, sys
limit = int(sys.argv[1])
rows = []
for line in sys.stdin:
    tag = json.loads(line)
    if "end" in tag:
        name = (tag["scope"] + "::" if tag.get("scope") else "") + tag["name"]
        rows.append((tag["end"] - tag["line"] + 1, tag["path"], tag["line"], name))
rows.sort(reverse=True)
long = [r for r in rows if r[0] > limit]
for n, path, line, name in long:
    print("%s:%d: %s is %d lines (limit %d)" % (path, line, name, n, limit))
if long:
    sys.exit(1)
print("function length: %d functions, the longest %d lines (%s: %s), limit %d" % (len(rows), rows[0][0], rows[0][1], rows[0][3], limit))
PY
)" "$limit"
