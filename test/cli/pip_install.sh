#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# `pip install .` (pyproject.toml: scikit-build-core driving CMake, only the
# Python module) into a fresh virtual environment, then the installed module
# read from outside the source tree: its rows equal edo-unpack's. Skips (77)
# when PyPI cannot be reached for scikit-build-core; a failed build fails.
#   pip_install.sh BUILD_DIR SOURCE_DIR
set -uo pipefail
source "$(dirname "$0")/checks.bash" "$@"  # build, src, work (removed at exit), expect, fail, err_has
# The system's numpy serves the environment (--system-site-packages): only the build backend is fetched.
/usr/bin/python3 -m venv --system-site-packages "$work/venv" || { echo "FAIL: python3 -m venv (bootstrap installs python3-venv)"; exit 1; }
pip=("$work/venv/bin/python" -m pip --disable-pip-version-check --no-input)
if ! "${pip[@]}" download --no-deps -d "$work/probe" 'scikit-build-core>=0.10' >"$work/probe.log" 2>&1; then
  echo "skipped: PyPI unreachable for scikit-build-core: $(tail -1 "$work/probe.log")"
  exit 77
fi
"${pip[@]}" install "$src" >"$work/pip.log" 2>&1 || { tail -30 "$work/pip.log"; echo "FAIL: pip install $src"; exit 1; }
glove="$src/data-samples/glove.6B.50d.10k.npy"
expect 0 "$build/edo-quantize" "$glove" -o "$work/g.edo" --codec int4:group=16 -q
expect 0 "$build/edo-unpack" "$work/g.edo" -o "$work/g.npy" -q
(cd "$work" && "$work/venv/bin/python" - "$work" "$src" <<'PY') || fail "the pip-installed module"
import sys
import numpy as np
import edo
w, src = sys.argv[1:]
assert not edo.__file__.startswith(src), edo.__file__
assert '/venv/' in edo.__file__, edo.__file__
import os
here = os.path.dirname(edo.__file__)
assert all(os.path.exists(os.path.join(here, f)) for f in ('py.typed', '_edo.pyi', '_types.py')), os.listdir(here)
r = edo.open(f'{w}/g.edo')
want = np.load(f'{w}/g.npy')
ids = np.random.default_rng(1).integers(0, r.rows, 1000)
assert np.array_equal(r.lookup(ids), want[ids])
assert np.array_equal(r.decode_all(), want)
from importlib.metadata import version
assert version('edo') == r.manifest['provenance']['version'], version('edo')  # one version: CMakeLists.txt's
PY
[ "$failures" = 0 ] || { echo "$failures failure(s)"; exit 1; }
echo "pip_install: ok"
