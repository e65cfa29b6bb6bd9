# SPDX-License-Identifier: Apache-2.0
"""The README's Python section runs as written: its ```python blocks, in a folder holding the model.edo
they name (the recommender model of scripts/make_models.py, 26 tables C1..C26, in int8)."""
import re
import runpy
import subprocess
import sys

import pytest

pytest.importorskip("torch", reason="PyTorch is not installed: the README's Python section uses edo.torch")
from conftest import SOURCE, tool  # noqa: E402


def test_readme_python_section(tmp_path, monkeypatch, capsys):
    readme = (SOURCE / "README.md").read_text()
    section = readme.split("\n## Python\n", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"```python\n(.*?)```", section, re.S)
    assert blocks, "README.md's Python section has no python block"
    subprocess.run([sys.executable, str(SOURCE / "scripts/make_models.py"), "criteo", str(tmp_path / "rec"),
                    "--cap", "2000"], check=True, capture_output=True)
    tool("edo-quantize", tmp_path / "rec", "-o", tmp_path / "model.edo", "--codec", "int8", "-q")
    monkeypatch.chdir(tmp_path)
    for i, block in enumerate(blocks):
        (tmp_path / f"block{i}.py").write_text(block)
        runpy.run_path(str(tmp_path / f"block{i}.py"), run_name="__main__")
    out = capsys.readouterr().out
    assert "'C3.weight': 'C3'" in out, out
