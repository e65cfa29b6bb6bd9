# SPDX-License-Identifier: Apache-2.0
"""The package's types: stubtest holds the stubs (python/edo/_edo.pyi) against the built module, and mypy
--strict accepts a program that uses the package as its documentation shows (and rejects a wrong one)."""
import os
import subprocess
import sys
import textwrap

import edo

PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(edo.__file__)))


def run(*args, cwd=None):
    env = dict(os.environ, MYPYPATH=PACKAGE_DIR, PYTHONPATH=PACKAGE_DIR)
    return subprocess.run([sys.executable, "-m", *args], capture_output=True, text=True, env=env, cwd=cwd)


def test_stubtest():
    allowlist = os.path.join(os.path.dirname(os.path.abspath(__file__)), "stubtest-allowlist.txt")
    done = run("mypy.stubtest", "edo._edo", "--allowlist", allowlist)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]


def test_mypy_accepts_documented_use(tmp_path):
    (tmp_path / "use.py").write_text(textwrap.dedent('''
        from typing import List
        import numpy as np
        import numpy.typing as npt
        import edo

        def serve(path: str) -> npt.NDArray[np.float32]:
            with edo.open(path, unknown="default", verify="all", placement="memory") as f:
                tiers: List[edo.TierInfo] = f.tiers
                kinds = [t["kind"] for t in tiers]
                print(kinds, f.shape, edo.build_info()["cpu_path"])
                return f.lookup_bags(np.array([0, 2]), np.array([5, 9, 2]), mode="mean")

        try:
            serve("x.edo")
        except edo.FileIOError as e:
            print(e.filename, e)
        except edo.Error as e:
            print(e)
        '''))
    done = run("mypy", "--strict", "--no-incremental", "use.py", cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr


def test_mypy_rejects_a_mode_edo_lacks(tmp_path):
    (tmp_path / "wrong.py").write_text("import edo\nedo.open('x.edo').lookup_bags([0], [1], mode='avg')\n")
    done = run("mypy", "--strict", "--no-incremental", "wrong.py", cwd=tmp_path)
    assert done.returncode != 0 and "mode" in done.stdout, done.stdout


def test_stubtest_refuses_a_stub_that_disagrees(tmp_path):
    import shutil

    shutil.copytree(os.path.join(PACKAGE_DIR, "edo"), tmp_path / "edo")
    with open(tmp_path / "edo" / "_edo.pyi", "a") as f:
        f.write("def lookup_everything(ids: int) -> int: ...\n")
    env = dict(os.environ, MYPYPATH=str(tmp_path), PYTHONPATH=str(tmp_path))
    done = subprocess.run([sys.executable, "-m", "mypy.stubtest", "edo._edo"], capture_output=True, text=True,
                          env=env, cwd=tmp_path)
    assert done.returncode != 0 and "lookup_everything" in done.stdout, done.stdout


def test_package_passes_mypy_strict():
    """The package's own Python (edo.torch, edo.check) under mypy --strict, torch's annotations included."""
    import pytest

    pytest.importorskip("torch", reason="PyTorch is not installed: edo.torch and edo.check import it")
    done = run("mypy", "--strict", "--no-incremental", "-p", "edo", cwd=PACKAGE_DIR)
    assert done.returncode == 0, done.stdout + done.stderr
