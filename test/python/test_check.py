# SPDX-License-Identifier: Apache-2.0
"""edo.check: the accuracy of a model's outputs with its tables served from a .edo file, on a small real
transformer trained here (tiny_encoder.py), through the Python API and `python -m edo.check`; a
transformers model where transformers is installed. Skipped, saying so, where PyTorch is not."""
import json
import os
import subprocess
import sys

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="PyTorch is not installed: edo.check's tests need it (python3-torch)")
import edo  # noqa: E402
import edo.check  # noqa: E402
import tiny_encoder  # noqa: E402
from conftest import BUILD, SOURCE, tool  # noqa: E402

sys.path.insert(0, str(SOURCE / "scripts"))
from make_models import write_safetensors  # noqa: E402

EDO_EVAL = BUILD / "edo-eval"
SIMLEX = SOURCE / "data-samples" / "simlex999.txt"


@pytest.fixture(scope="module")
def encoder(tmp_path_factory):
    """The trained encoder's state, its tables as a safetensors model, and .edo files of them."""
    w = tmp_path_factory.mktemp("encoder")
    model = tiny_encoder.train()
    tiny_encoder.save(model, w / "state.pt")
    write_safetensors(w / "model.safetensors", list(tiny_encoder.tables(model).items()))
    for codec in ("fp32", "int8", "int4"):
        tool("edo-quantize", w / "model.safetensors", "-o", w / f"{codec}.edo", "--codec", codec, "-q")
    (w / "texts.txt").write_text("\n".join(tiny_encoder.questions()[::19][:1000]) + "\n")
    return w


def fresh(w):
    model = tiny_encoder.TinyEncoder(np.zeros((10000, 50), np.float32))
    model.load_state_dict(torch.load(w / "state.pt"))
    return model.eval()


def check(w, codec, **kw):
    texts = edo.check.read_texts(w / "texts.txt")
    return edo.check.check_model(fresh(w), w / f"{codec}.edo", texts, tiny_encoder.embedder(), edo_eval=EDO_EVAL,
                                 **kw)


def test_fp32_tables_give_the_same_outputs(encoder):
    report = check(encoder, "fp32")
    m = report["metrics"]
    assert report["inputs"] == len(set(edo.check.read_texts(encoder / "texts.txt"))) > 900 and report["dim"] == 50
    assert m["output.max_abs"] == 0 and m["output.rel_fro"] == 0 and m["output.recall@10"] == 1.0  # bit for bit
    assert m["output.cos.min"] == pytest.approx(1, abs=1e-15)
    assert set(report["replaced"]) == {"embeddings.word_embeddings.weight", "embeddings.position_embeddings.weight"}
    # Parameters shrink by the tables' fp32 bytes exactly.
    assert report["param_bytes_before"] - report["param_bytes_after"] == (10000 + 8) * 50 * 4
    assert report["gates_passed"] and report["gates"] == []


def test_int4_outputs_against_numpy_and_pairs(encoder, tmp_path):
    pairs = edo.check.read_pairs(SIMLEX)
    assert pairs["name"] == "simlex999" and len(pairs["score"]) == 999
    texts = edo.check.read_texts(encoder / "texts.txt")
    model, embed = fresh(encoder), tiny_encoder.embedder()
    inputs = list(dict.fromkeys(texts + pairs["a"] + pairs["b"]))
    with torch.no_grad():
        before = embed(model, inputs).numpy()
    report = edo.check.check_model(model, encoder / "int4.edo", texts, embed, pairs=pairs, edo_eval=EDO_EVAL,
                                   gates=["output.cos.p1>=0.9", "output.recall@10>=0.999"],
                                   report_json=tmp_path / "r.json", report_html=tmp_path / "r.html")
    with torch.no_grad():
        after = embed(model, inputs).numpy()  # the model now serves the file's tables
    m = report["metrics"]
    assert report["inputs"] == len(inputs)
    cos = np.sum(before * after, 1) / np.linalg.norm(before, axis=1) / np.linalg.norm(after, axis=1)
    assert m["output.cos.mean"] == pytest.approx(cos.mean(), abs=1e-6)
    assert m["output.cos.min"] == pytest.approx(cos.min(), abs=1e-6)
    assert 0.9 < m["output.cos.min"] < m["output.cos.p1"] < m["output.cos.mean"] < 1
    assert 0.5 < m["output.recall@10"] < 0.999
    # Spearman's rho of the pairs' output cosines against SimLex's scores, here by ranks.
    rows = {t: i for i, t in enumerate(inputs)}
    a, b = [rows[t] for t in pairs["a"]], [rows[t] for t in pairs["b"]]

    def rho(out):
        c = np.sum(out[a] * out[b], 1) / np.linalg.norm(out[a], axis=1) / np.linalg.norm(out[b], axis=1)
        ranks = [np.argsort(np.argsort(x)) for x in (c, np.array(pairs["score"]))]
        return np.corrcoef(*ranks)[0, 1]

    assert m["output.sim.simlex999.rho.original"] == pytest.approx(rho(before), abs=2e-3)  # SimLex has tied scores
    assert m["output.sim.simlex999.rho"] == pytest.approx(rho(after), abs=2e-3)
    assert [g["passed"] for g in report["gates"]] == [True, False] and not report["gates_passed"]
    assert report["gates"][1]["metric"] == "output.recall@10" and report["gates"][1]["margin"] < 0
    assert json.loads((tmp_path / "r.json").read_text())["cos.mean"] == pytest.approx(m["output.cos.mean"])
    assert 'id="cos-hist"' in (tmp_path / "r.html").read_text()


def test_lookup_counts(encoder, tmp_path):
    texts = ["athens greece", "king queen man woman", "zzzz", "athens"]
    counts = edo.check.count_lookups(fresh(encoder), texts, tiny_encoder.embedder(), batch_size=3)
    rows = {w: i for i, w in enumerate(tiny_encoder.vocab())}
    words = counts["embeddings.word_embeddings.weight"]
    # What the model reads: batches pad to their longest text with row 0, and "zzzz" reads row 0 too.
    assert words.sum() == 3 * 4 + 1 and words[rows["athens"]] == 2 and words[0] == 2 + 1 + 3
    assert counts["embeddings.position_embeddings.weight"].tolist() == [4, 3, 3, 3, 0, 0, 0, 0]
    written = edo.check.write_lookup_counts(counts, tmp_path / "freq")
    assert sorted(os.path.basename(p) for p in written) == ["embeddings.position_embeddings.weight.npy",
                                                            "embeddings.word_embeddings.weight.npy"]
    assert np.load(written[0]).dtype == np.int64
    # Named as a file's tables: a parameter under a prefix (a sentence-transformers model's) takes the
    # table's name, one of no table is left out, and no partial file stays behind.
    renamed = edo.check.write_lookup_counts(
        {"0.auto_model.embeddings.word_embeddings.weight": words, "0.head.weight": words[:3]}, tmp_path / "named",
        tables=["embeddings.word_embeddings.weight"])
    assert [os.path.basename(p) for p in renamed] == ["embeddings.word_embeddings.weight.npy"]
    assert sorted(os.listdir(tmp_path / "named")) == ["embeddings.word_embeddings.weight.npy"]
    # edo-pack weighs the tables by them.
    tool("edo-pack", encoder / "model.safetensors", "-o", tmp_path / "m.edo", "--budget", "ratio>=8",
         "--freq-dir", tmp_path / "freq", "-q")


def test_compare_outputs_bad_input(tmp_path, monkeypatch):
    x = np.random.default_rng(1).normal(size=(50, 8)).astype(np.float32)
    with pytest.raises(edo.UsageError, match="differ in shape"):
        edo.check.compare_outputs(x, x[:, :4], edo_eval=EDO_EVAL)
    with pytest.raises(edo.UsageError, match="k=50: must be at least 1 and below the 50 inputs"):
        edo.check.compare_outputs(x, x, k=50, edo_eval=EDO_EVAL)
    with pytest.raises(edo.UsageError, match="named output.<name>"):
        edo.check.compare_outputs(x, x, gates=["cos.min>=0.9"], edo_eval=EDO_EVAL)
    with pytest.raises(edo.UsageError, match="edo-eval: .*cos.mode"):
        edo.check.compare_outputs(x, x, gates=["output.cos.mode>=0.9"], edo_eval=EDO_EVAL)
    with pytest.raises(edo.UsageError, match="a row is outside the 50 inputs"):
        edo.check.compare_outputs(x, x, pairs=([0, 1], [2, 50], [1.0, 2.0]), edo_eval=EDO_EVAL)
    with pytest.raises(edo.UsageError, match="no such edo-eval program"):
        edo.check.compare_outputs(x, x, edo_eval=tmp_path / "none")
    with pytest.raises(edo.UsageError, match="must be integers"):
        edo.check.compare_outputs(x, x, pairs=([0.0, 1.0], [2, 3], [1.0, 2.0]), edo_eval=EDO_EVAL)
    # A NaN output: its metrics are None (edo-eval's null), and the report stays valid JSON.
    y = x.copy()
    y[3] = np.nan
    nan_report = edo.check.compare_outputs(x, y, edo_eval=EDO_EVAL)
    assert nan_report["metrics"]["output.cos.min"] is None
    json.dumps(nan_report, allow_nan=False)
    os.chmod(tmp_path, 0o755)
    (tmp_path / "not-a-program").write_text("")
    monkeypatch.setenv("EDO_EVAL", str(tmp_path / "not-a-program"))
    with pytest.raises(edo.UsageError, match="no such executable edo-eval program"):
        edo.check.compare_outputs(x, x)
    (tmp_path / "empty.txt").write_text("\n \n")
    with pytest.raises(edo.UsageError, match="empty.txt: no texts"):
        edo.check.read_texts(tmp_path / "empty.txt")
    (tmp_path / "latin1.txt").write_bytes("one\ncaf\xe9\n".encode("latin-1"))
    with pytest.raises(edo.UsageError, match="latin1.txt: line 2 is not UTF-8"):
        edo.check.read_texts(tmp_path / "latin1.txt")
    (tmp_path / "pairs.tsv").write_text("# a comment\na\tb\t1.5\nc d 2\n")
    with pytest.raises(edo.UsageError, match="pairs.tsv: line 3: expected TEXT_A<TAB>TEXT_B<TAB>SCORE"):
        edo.check.read_pairs(tmp_path / "pairs.tsv")


def run_cli(*args, env=None):
    return subprocess.run([sys.executable, "-m", "edo.check", *map(str, args)], capture_output=True, text=True,
                          env=dict(os.environ, EDO_EVAL=str(EDO_EVAL), **(env or {})))


def test_cli(encoder, tmp_path):
    loader = f"{SOURCE / 'test/python/tiny_encoder.py'}:load"
    state = {"TINY_ENCODER": str(encoder / "state.pt")}
    done = run_cli(loader, encoder / "int8.edo", "--texts", encoder / "texts.txt", "--pairs", SIMLEX,
                   "--gate", "output.cos.p1>=0.99", "--gate", "output.sim.simlex999.rho.drop<=0.02",
                   "--report-html", tmp_path / "r.html", env=state)
    assert done.returncode == 0, done.stderr
    assert "output cosine" in done.stdout and "pairs Spearman rho" in done.stdout and "2 tables swapped" in done.stdout
    assert done.stdout.count("gate passed: ") == 2 and (tmp_path / "r.html").exists()
    done = run_cli(loader, encoder / "int4.edo", "--texts", encoder / "texts.txt", "--json",
                   "--gate", "output.cos.min>=0.9999", env=state)
    assert done.returncode == 3 and "edo.check: gate failed: output.cos.min>=0.9999" in done.stderr
    report = json.loads(done.stdout)
    assert report["gates_passed"] is False and report["metrics"]["output.cos.min"] < 0.9999
    # Lookup counts alone, without a file.
    done = run_cli(loader, "--texts", encoder / "texts.txt", "--write-freq", tmp_path / "freq", env=state)
    assert done.returncode == 0 and "lookup counts of 2 tables" in done.stderr, done.stderr
    assert np.load(tmp_path / "freq/embeddings.word_embeddings.weight.npy").sum() > 3000
    # Bad input: one line on stderr, exit 2 (usage) or 1.
    (tmp_path / "empty.txt").write_text("")
    for args, code, message in [
        ((loader, encoder / "int8.edo", "--texts", tmp_path / "empty.txt"), 2, "empty.txt: no texts"),
        ((loader, encoder / "int8.edo"), 2, "give --texts, --pairs or both"),
        ((loader, "--texts", encoder / "texts.txt"), 2, "give FILE.edo, --write-freq DIR or both"),
        ((loader, tmp_path / "none.edo", "--texts", encoder / "texts.txt"), 2, "none.edo: no such file"),
        ((tmp_path / "none.py:load", encoder / "int8.edo", "--texts", encoder / "texts.txt"), 2, "no such file"),
        ((loader, encoder / "int8.edo", "--texts", encoder / "texts.txt", "--gate", "output.cos.min>>1"), 2,
         "edo-eval: "),
        ((loader, SOURCE / "fuzz/corpus/reader/lossless_bf16.edo", "--texts", encoder / "texts.txt"), 2,
         "no table matches an embedding of the model"),
    ]:
        done = run_cli(*args, env=state)
        assert done.returncode == code and message in done.stderr, (args, done.returncode, done.stderr)
        assert done.stderr.count("\n") == 1, done.stderr


def test_transformers_model(tmp_path):
    """A BERT model saved by transformers, its embeddings quantized from its own model.safetensors."""
    transformers = pytest.importorskip("transformers", reason="transformers is not installed (pip install "
                                       "transformers): the MODEL-directory path of edo.check is not tested")
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + tiny_encoder.vocab()[:2000]
    (tmp_path / "vocab.txt").write_text("\n".join(vocab) + "\n")
    transformers.BertTokenizerFast(vocab_file=str(tmp_path / "vocab.txt")).save_pretrained(tmp_path / "bert")
    config = transformers.BertConfig(vocab_size=len(vocab), hidden_size=64, num_hidden_layers=2,
                                     num_attention_heads=4, intermediate_size=128, max_position_embeddings=64)
    torch.manual_seed(0)
    transformers.BertModel(config).save_pretrained(tmp_path / "bert")
    tool("edo-quantize", tmp_path / "bert/model.safetensors", "-o", tmp_path / "bert.edo", "--codec", "int8", "-q")
    (tmp_path / "texts.txt").write_text("\n".join(tiny_encoder.questions()[:500]) + "\n")
    done = run_cli(tmp_path / "bert", tmp_path / "bert.edo", "--texts", tmp_path / "texts.txt", "--json",
                   "--gate", "output.cos.mean>=0.99")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert "embeddings.word_embeddings.weight" in report["replaced"] and report["inputs"] == 500
