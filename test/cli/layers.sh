#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The layers: every include of the library, its kernels and the programs that
# link the reader alone stays inside its target's link closure, and every edo
# symbol a library archive uses is defined inside that closure
# (scripts/check_layers.py reads the targets from CMakeLists.txt).
#
#   layers.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
build_dir=$(cd "$1" && pwd)
src_dir=$(cd "$2" && pwd)
python3 "$src_dir/scripts/check_layers.py" "$src_dir" "$build_dir"

# The checker itself: an include that reaches up a layer must fail it.
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
cp -R "$src_dir/CMakeLists.txt" "$src_dir/lib" "$src_dir/formats" "$src_dir/kernels" "$scratch/"
mkdir -p "$scratch/apps" "$scratch/python" "$scratch/test"
cp -R "$src_dir/test/find_package" "$scratch/test/"
cp "$src_dir/apps/example_lookup.cpp" "$scratch/apps/"
cp "$src_dir/python/_edo_module.cpp" "$scratch/python/"
printf '#include <edo/knn.hpp>\n' >>"$scratch/lib/reader/tiers.cpp"
if out=$(python3 "$src_dir/scripts/check_layers.py" "$scratch" 2>&1); then
  echo "FAIL: an include of eval's knn.hpp from the reader passed the layer check"; exit 1
fi
grep -q 'lib/reader/tiers.cpp:.*edo_reader includes edo/knn.hpp of edo_eval, outside its link closure' <<<"$out" ||
  { echo "FAIL: the layer check did not name the include:"; echo "$out"; exit 1; }
echo "layers: ok"
