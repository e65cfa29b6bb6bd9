#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Installs edo's build and test dependencies from Debian packages.
# Idempotent; needs no prompt. Run as root or with sudo available.
set -euo pipefail

packages=(
  build-essential cmake pkg-config
  libfaiss-dev libopenblas-dev liblapack-dev
  libcli11-dev libhdf5-dev nlohmann-json3-dev libfmt-dev doctest-dev
  libxxhash-dev libzip-dev zlib1g-dev
  liburing-dev                   # batched reads of the reader's bounded cache (io_uring)
  clang libclang-rt-dev          # libFuzzer targets
  clang-format                   # the house style, checked by ctest (cli.format)
  universal-ctags                # function lengths, checked by ctest (cli.function_length)
  python3-numpy                  # independent cross-checks in tests and benchmarks
  pybind11-dev python3-dev       # the edo Python module (python/)
  python3-venv                   # `pip install .` tested in a virtual environment (cli.pip_install)
  python3-pytest python3-mypy    # the Python tests (test/python) and the stubs checked against the module (stubtest, mypy)
  python3-torch                  # edo.torch's tests (test/python/test_torch.py): PyTorch, optional for users
  slurmctld slurmd slurm-client munge  # a private one-node Slurm runs the sharded pipeline (cli.slurm_local)
  chromium fonts-dejavu-core     # renders the HTML report headless in a test (cli.html_render)
  help2man man-db                # man pages from each tool's --help, opened by a test (cli.package)
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "bootstrap: all ${#packages[@]} packages present"
  exit 0
fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
echo "bootstrap: installing ${missing[*]}"
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
