# SPDX-License-Identifier: Apache-2.0
"""Does the model still work? The accuracy of a model's outputs once its embedding tables are served from
a .edo file (docs/EVAL.md, "Model outputs").

    python -m edo.check MODEL model.edo --texts texts.txt [--pairs pairs.tsv] [--gate 'output.cos.p1>=0.99']

    import edo.check
    report = edo.check.check_model(model, "model.edo", texts, embed)       # embed(model, texts) -> (n, d)
    report = edo.check.compare_outputs(before, after, pairs=(a, b, scores))  # two (n, d) arrays, any model

MODEL is a transformers model directory (or a name its cache holds), a sentence-transformers model
directory (one with modules.json), or FILE.py:FUNCTION, a function of no arguments returning (model,
embed) for any other PyTorch model. check_model embeds every input, swaps the model's embeddings for the file's tables
(edo.torch.swap_embeddings), embeds them again and compares the two outputs with edo-eval, the tool
whose metrics, gates and reports these are: each input's output cosine (cos.mean, cos.p1, cos.min),
the agreement of each input's k nearest neighbours among the inputs (recall@k) and, with labelled
pairs, Spearman's rho of the pairs' output cosines against their scores, before and after. Every metric
is named `output.<edo-eval's name>`, and gates take those names in edo-eval's grammar. The edo-eval
program is found by edo_eval=, then $EDO_EVAL, then beside this package in a build tree, then on PATH.
"""
import argparse
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple, TypedDict, Union

import numpy as np
import numpy.typing as npt

from ._edo import Error, UsageError

PathLike = Union[str, "os.PathLike[str]"]
Embed = Callable[[Any, List[str]], Any]
"""embed(model, texts) -> the model's outputs for `texts`: an array-like or torch tensor of (len(texts), d)."""
PREFIX = "output."
# edo-eval's keys that say nothing about two output tables: the file ratio (both are .npy), the
# rate-distortion pair (a bound for stored values, not outputs) and the old name of r1@k.
_LEFT_OUT = ("ratio", "rd.", "1-recall@")


class Pairs(TypedDict):
    """Labelled pairs: texts a[i] and b[i] with a human (or gold) score[i]; name: the metrics' (the
    file's stem for read_pairs: output.sim.<name>.rho)."""

    name: str
    a: List[str]
    b: List[str]
    score: List[float]


class GateResult(TypedDict):
    expression: str
    metric: str
    value: Optional[float]
    passed: bool
    margin: Optional[float]
    message: str


class OutputReport(TypedDict):
    """compare_outputs' result: the metrics by name and the gates' outcomes."""

    inputs: int
    dim: int
    metrics: Dict[str, Optional[float]]  # None: not a number (NaN outputs, a constant rho), as edo-eval's null
    gates: List[GateResult]
    gates_passed: bool


class CheckReport(OutputReport):
    """check_model's result: compare_outputs' and the swap's bytes and the times."""

    file: str
    replaced: Dict[str, str]
    param_bytes_before: int
    param_bytes_after: int
    file_bytes: int
    seconds: Dict[str, float]


def read_texts(path: PathLike) -> List[str]:
    """One text a line (UTF-8; blank lines left out). An empty file or a line that is not UTF-8 is a
    UsageError naming the file and the line."""
    texts = []
    for number, line in enumerate(_lines(path), 1):
        if line.strip():
            texts.append(line.rstrip("\r\n"))
    if not texts:
        raise UsageError(f"{os.fspath(path)}: no texts (one a line wanted)")
    return texts


def read_pairs(path: PathLike) -> Pairs:
    """Labelled pairs, one a line: TEXT_A<TAB>TEXT_B<TAB>SCORE (further columns ignored; lines starting
    with '#' and blank lines left out): the layout of WordSim-353 and SimLex-999 as edo's data-samples
    hold them, and of STS-B once cut to three columns. At least two pairs."""
    name = "".join(c if (c.isascii() and c.isalnum()) or c in "_-" else "_" for c in Path(path).stem) or "pairs"
    pairs = Pairs(name=name, a=[], b=[], score=[])
    for number, line in enumerate(_lines(path), 1):
        if not line.strip() or line.startswith("#"):
            continue
        cells = line.rstrip("\r\n").split("\t")
        try:
            score = float(cells[2]) if len(cells) >= 3 and cells[0] and cells[1] else float("nan")
        except ValueError:
            score = float("nan")
        if not np.isfinite(score):
            raise UsageError(f"{os.fspath(path)}: line {number}: expected TEXT_A<TAB>TEXT_B<TAB>SCORE")
        pairs["a"].append(cells[0])
        pairs["b"].append(cells[1])
        pairs["score"].append(score)
    if len(pairs["score"]) < 2:
        raise UsageError(f"{os.fspath(path)}: fewer than two pairs")
    return pairs


def _lines(path: PathLike) -> List[str]:
    with open(path, "rb") as f:
        raw = f.read().split(b"\n")
    lines = []
    for number, line in enumerate(raw, 1):
        try:
            lines.append(line.decode("utf-8"))
        except UnicodeDecodeError as e:
            raise UsageError(f"{os.fspath(path)}: line {number} is not UTF-8 (byte {e.start + 1})") from None
    return lines


def find_edo_eval(edo_eval: Optional[PathLike] = None) -> str:
    """The edo-eval program compare_outputs runs (the module docstring says where it looks)."""
    if edo_eval is not None:
        found = shutil.which(os.fspath(edo_eval))
        if found is None:
            raise UsageError(f"{os.fspath(edo_eval)}: no such edo-eval program")
        return found
    given = os.environ.get("EDO_EVAL")
    if given:
        if not (os.path.isfile(given) and os.access(given, os.X_OK)):
            raise UsageError(f"$EDO_EVAL={given}: no such executable edo-eval program")
        return given
    beside = str(Path(__file__).resolve().parents[2] / "edo-eval")  # the package in a build tree
    if os.path.isfile(beside) and os.access(beside, os.X_OK):
        return beside
    found = shutil.which("edo-eval")
    if found is None:
        raise Error(
            "edo.check needs the edo-eval program (edo's tools: the Debian package or a build), and none is "
            "on PATH: install the tools, set EDO_EVAL or pass edo_eval="
        )
    return found


def compare_outputs(
    original: Any,
    compressed: Any,
    pairs: Optional[Tuple[Sequence[int], Sequence[int], Sequence[float]]] = None,
    k: int = 10,
    gates: Sequence[str] = (),
    report_json: Optional[PathLike] = None,
    report_html: Optional[PathLike] = None,
    edo_eval: Optional[PathLike] = None,
    pairs_name: str = "pairs",
) -> OutputReport:
    """Compares a model's outputs before (`original`) and after (`compressed`) compression, two arrays
    of (inputs, d), input i of each the same input: any model's, however computed. pairs: (rows a, rows
    b, scores) of labelled pairs among the inputs, for output.sim.<pairs_name>.rho (and .original, .drop).
    gates: edo-eval's grammar on the output.* names ('output.cos.p1>=0.99'); a malformed gate or an
    unknown name is a UsageError listing the names. report_json, report_html: edo-eval's reports of the
    outputs (metric names without the prefix)."""
    before, after = _matrix(original, "original"), _matrix(compressed, "compressed")
    if before.shape != after.shape:
        raise UsageError(f"the outputs differ in shape: original {before.shape}, compressed {after.shape}")
    n, dim = before.shape
    if not 0 < k < n:
        raise UsageError(f"k={k}: must be at least 1 and below the {n} inputs")
    tool = find_edo_eval(edo_eval)
    for gate in gates:
        if not gate.strip().startswith(PREFIX):
            raise UsageError(f"gate '{gate}': edo.check's metrics are named {PREFIX}<name>, e.g. {PREFIX}cos.p1>=0.99")
    with tempfile.TemporaryDirectory(prefix="edo-check-") as work:
        w = Path(work)
        np.save(w / "outputs.original.npy", before)
        np.save(w / "outputs.compressed.npy", after)
        args: List[PathLike] = [tool, w / "outputs.original.npy", w / "outputs.compressed.npy", "--metric", "cos",
                                "--k", str(k), "--queries", str(n), "--bags", "0", "--dot-pairs", "0",
                                "--report-json", w / "report.json", "-q"]
        if pairs is not None:
            if not pairs_name or not all((c.isascii() and c.isalnum()) or c in "_-" for c in pairs_name):
                raise UsageError(f"pairs_name '{pairs_name}': letters, digits, '_' and '-' only")
            args += ["--vocab", w / "inputs.txt", "--similarity", w / f"{pairs_name}.tsv"]
            _write_pairs(w / f"{pairs_name}.tsv", n, pairs)
        for gate in gates:
            args += ["--gate", gate.strip()[len(PREFIX):]]
        if report_html is not None:
            args.append("--report-html=" + os.fspath(report_html))  # a path starting with '-' stays a path
        done = subprocess.run([os.fspath(a) for a in args], capture_output=True, text=True)
        if done.returncode not in (0, 3):
            message = done.stderr.strip().splitlines()[-1] if done.stderr.strip() else f"exit {done.returncode}"
            message = message.replace("edo-eval: ", "", 1)
            raise (UsageError if done.returncode == 2 else Error)(f"edo-eval: {message}")
        result = json.loads((w / "report.json").read_text())
    if report_json is not None:
        _write_atomically(Path(report_json), json.dumps(result, indent=1) + "\n")
    return _report(result, n, dim, gates)


def _matrix(outputs: Any, what: str) -> "npt.NDArray[np.float32]":
    if hasattr(outputs, "detach"):  # a torch tensor (bf16 and fp16 too), without importing torch
        outputs = outputs.detach().float().cpu().numpy()
    m = np.ascontiguousarray(np.asarray(outputs, dtype=np.float32))
    if m.ndim != 2:
        raise UsageError(f"the {what} outputs are {m.ndim}-D: one row of values an input wanted (inputs, d)")
    return m


def _write_pairs(path: Path, n: int, pairs: Tuple[Sequence[int], Sequence[int], Sequence[float]]) -> None:
    a, b, scores = np.asarray(pairs[0]), np.asarray(pairs[1]), np.asarray(pairs[2], dtype=np.float64)
    if not (a.shape == b.shape == scores.shape) or a.ndim != 1 or a.size < 2:
        raise UsageError("pairs: rows a, rows b and scores must be three sequences of one length, at least 2")
    if a.dtype.kind not in "iu" or b.dtype.kind not in "iu":
        raise UsageError("pairs: rows a and rows b must be integers (rows of the outputs)")
    if not np.isfinite(scores).all():
        raise UsageError("pairs: every score must be a finite number")
    if a.size and (min(a.min(), b.min()) < 0 or max(a.max(), b.max()) >= n):
        raise UsageError(f"pairs: a row is outside the {n} inputs")
    # edo-eval's similarity task reads words: each input is named i<row>.
    (path.parent / "inputs.txt").write_text("".join(f"i{i}\n" for i in range(n)))
    path.write_text("".join(f"i{x}\ti{y}\t{s!r}\n" for x, y, s in zip(a.tolist(), b.tolist(), scores.tolist())))


def _report(result: Dict[str, Any], n: int, dim: int, gates: Sequence[str]) -> OutputReport:
    metrics: Dict[str, Optional[float]] = {
        PREFIX + name: None if value is None else float(value)
        for name, value in result.items()
        if name not in ("rows", "dim", "queries") and not name.startswith(_LEFT_OUT)
        and (value is None or isinstance(value, (int, float))) and not isinstance(value, bool)
    }
    outcomes = []
    for written, outcome in zip(gates, result.get("gates", [])):
        message = str(outcome.get("message") or "")
        value, margin = outcome.get("value"), outcome.get("margin")
        passed = bool(outcome["pass"])
        shown = "nan" if value is None else f"{value:.6g}"
        if not message:
            message = f"{written.strip()}: {shown}" + ("" if passed or margin is None else f", misses by {-margin:.6g}")
        outcomes.append(GateResult(expression=written.strip(), metric=PREFIX + outcome["metric"],
                                   value=value, passed=passed, margin=margin, message=message))
    return OutputReport(inputs=n, dim=dim, metrics=metrics, gates=outcomes,
                        gates_passed=all(g["passed"] for g in outcomes))


def _write_atomically(path: Path, text: str) -> None:
    partial = path.with_name(path.name + ".partial")
    partial.write_text(text)
    os.replace(partial, path)


def check_model(
    model: Any,
    source: PathLike,
    texts: Sequence[str],
    embed: Embed,
    pairs: Optional[Pairs] = None,
    k: int = 10,
    gates: Sequence[str] = (),
    batch_size: int = 64,
    report_json: Optional[PathLike] = None,
    report_html: Optional[PathLike] = None,
    edo_eval: Optional[PathLike] = None,
) -> CheckReport:
    """Embeds `texts` (and the pairs' texts) with `model`, swaps its embeddings for the tables of the
    .edo file `source` (edo.torch.swap_embeddings: the model keeps them afterwards), embeds them again
    and compares the outputs (compare_outputs). embed(model, batch) returns a batch's outputs."""
    from .torch import matching_tables, swap_embeddings  # torch is needed from here on, not to import edo.check

    inputs = list(dict.fromkeys(list(texts) + (pairs["a"] + pairs["b"] if pairs else [])))
    if not 0 < k < len(inputs):
        raise UsageError(f"k={k}: must be at least 1 and below the {len(inputs)} distinct inputs")
    find_edo_eval(edo_eval)  # before the forward passes: a missing program is said at once
    matching_tables(model, source)  # and a file that matches no embedding of the model
    rows = {text: i for i, text in enumerate(inputs)}
    started = time.perf_counter()
    before = _embed_all(model, embed, inputs, batch_size)
    forward_original = time.perf_counter() - started
    started = time.perf_counter()
    swap = swap_embeddings(model, source)
    swapping = time.perf_counter() - started
    started = time.perf_counter()
    after = _embed_all(model, embed, inputs, batch_size)
    forward_compressed = time.perf_counter() - started
    started = time.perf_counter()
    labelled = None
    if pairs:
        labelled = ([rows[t] for t in pairs["a"]], [rows[t] for t in pairs["b"]], pairs["score"])
    report = compare_outputs(before, after, labelled, k, gates, report_json, report_html, edo_eval,
                             pairs["name"] if pairs else "pairs")
    comparing = time.perf_counter() - started
    return CheckReport(
        inputs=report["inputs"],
        dim=report["dim"],
        metrics=report["metrics"],
        gates=report["gates"],
        gates_passed=report["gates_passed"],
        file=os.fspath(source),
        replaced=swap["replaced"],
        param_bytes_before=swap["param_bytes_before"],
        param_bytes_after=swap["param_bytes_after"],
        file_bytes=swap["file_bytes"],
        seconds={"forward_original": forward_original, "forward_compressed": forward_compressed,
                 "swap": swapping, "compare": comparing},
    )


def count_lookups(
    model: Any, texts: Sequence[str], embed: Embed, batch_size: int = 64
) -> Dict[str, "npt.NDArray[np.int64]"]:
    """How often each row of each nn.Embedding / nn.EmbeddingBag of `model` is read while it embeds
    `texts`, by the module's parameter name ("embeddings.word_embeddings.weight"): the lookup counts a
    joint budget weighs tables and rows by (edo-pack --freq-dir, after write_lookup_counts). A table
    that every input reads, such as a position table, then counts as much as it is used."""
    import torch

    counts: Dict[str, "npt.NDArray[np.int64]"] = {}
    hooks = []
    for name, module in model.named_modules():
        if isinstance(module, (torch.nn.Embedding, torch.nn.EmbeddingBag)):
            param = f"{name}.weight"
            counts[param] = np.zeros(module.num_embeddings, np.int64)

            def count(module: Any, inputs: Tuple[Any, ...], param: str = param) -> None:
                ids = inputs[0].detach().cpu().numpy().reshape(-1)
                counts[param] += np.bincount(ids, minlength=counts[param].size)[: counts[param].size]

            hooks.append(module.register_forward_pre_hook(count))
    if not counts:
        raise UsageError("the model has no nn.Embedding or nn.EmbeddingBag to count lookups of")
    try:
        _embed_all(model, embed, list(texts), batch_size)
    finally:
        for hook in hooks:
            hook.remove()
    return counts


def write_lookup_counts(
    counts: Dict[str, "npt.NDArray[np.int64]"], directory: PathLike, tables: Optional[Sequence[str]] = None
) -> List[str]:
    """Writes each table's counts as DIRECTORY/NAME.npy ('/' in a name written '__'), the layout of
    edo-pack's and edo-eval's --freq-dir; returns the paths written. tables: the names the counts must
    carry (a model file's or safetensors' tables, which --freq-dir matches exactly): each parameter is
    written under the table swap_embeddings would give it ("0.auto_model.embeddings.word_embeddings.weight"
    as "embeddings.word_embeddings.weight"), and parameters of no table are left out."""
    from .torch import _match

    os.makedirs(directory, exist_ok=True)
    written = []
    for param, c in counts.items():
        name = param if tables is None else _match(param, list(tables))
        if name is None:
            continue
        path = Path(directory) / (name.replace("/", "__") + ".npy")
        partial = path.with_name(path.name + ".partial")  # not *.npy: --freq-dir never takes a torn write
        with open(partial, "wb") as f:
            np.save(f, c)
        os.replace(partial, path)
        written.append(os.fspath(path))
    return written


def _embed_all(model: Any, embed: Embed, inputs: List[str], batch_size: int) -> "npt.NDArray[np.float32]":
    try:
        import torch

        grad: Any = torch.no_grad()
    except ImportError:  # pragma: no cover - check_model imports edo.torch first
        import contextlib

        grad = contextlib.nullcontext()
    parts = []
    with grad:
        for start in range(0, len(inputs), batch_size):
            batch = inputs[start:start + batch_size]
            out = _matrix(embed(model, batch), "model's")
            if out.shape[0] != len(batch):
                raise UsageError(f"embed gave {out.shape[0]} rows for a batch of {len(batch)} texts")
            parts.append(out)
    return np.concatenate(parts)


# ---- models by name: transformers, sentence-transformers, FILE.py:FUNCTION ------------------------------


def load_model(spec: str, pooling: str = "auto", max_length: int = 128) -> Tuple[Any, Embed]:
    """(model, embed) for a MODEL argument: FILE.py:FUNCTION (the function's (model, embed)), a
    sentence-transformers directory (its own pooling; pooling= must be 'auto') or a transformers one
    (pooling 'mean' over the attention mask, the default, or 'cls')."""
    if ".py:" in spec:
        file, _, function = spec.rpartition(":")
        if not os.path.isfile(file):
            raise UsageError(f"{file}: no such file (MODEL as FILE.py:FUNCTION)")
        module_spec = importlib.util.spec_from_file_location(Path(file).stem, file)
        assert module_spec is not None and module_spec.loader is not None
        module = importlib.util.module_from_spec(module_spec)
        module_spec.loader.exec_module(module)
        if not callable(getattr(module, function, None)):
            raise UsageError(f"{file}: no function {function}")
        loaded = getattr(module, function)()
        if not (isinstance(loaded, tuple) and len(loaded) == 2 and callable(loaded[1])):
            raise UsageError(f"{spec}: the function must return (model, embed)")
        return loaded[0], loaded[1]
    if os.path.isfile(os.path.join(spec, "modules.json")):
        if pooling != "auto":
            raise UsageError(f"{spec}: a sentence-transformers model pools as it was trained; leave --pooling out")
        try:
            from sentence_transformers import SentenceTransformer  # type: ignore[import]
        except ImportError:
            raise Error(f"{spec} is a sentence-transformers model: pip install sentence-transformers") from None
        st = SentenceTransformer(spec, device="cpu")
        return st, lambda m, batch: m.encode(batch, convert_to_numpy=True, batch_size=len(batch))
    try:
        import transformers  # type: ignore[import]
    except ImportError:
        raise Error(f"{spec}: loading a model by directory or name needs transformers: pip install transformers") \
            from None
    if pooling not in ("auto", "mean", "cls"):
        raise UsageError(f"--pooling {pooling}: expected auto, mean or cls")
    tokenizer = transformers.AutoTokenizer.from_pretrained(spec)
    model = transformers.AutoModel.from_pretrained(spec).eval()
    use_cls = pooling == "cls"

    def embed(m: Any, batch: List[str]) -> Any:
        tokens = tokenizer(batch, padding=True, truncation=True, max_length=max_length, return_tensors="pt")
        hidden = m(**tokens).last_hidden_state
        if use_cls:
            return hidden[:, 0]
        mask = tokens["attention_mask"].unsqueeze(-1).to(hidden.dtype)
        return (hidden * mask).sum(1) / mask.sum(1).clamp(min=1)

    return model, embed


def to_text(report: CheckReport, model: str) -> str:
    """The report as the CLI prints it."""
    m = {name: (float("nan") if v is None else v) for name, v in report["metrics"].items()}
    recall = next((name for name in m if name.startswith(PREFIX + "recall@")), "")
    lines = [
        f"{model} with {report['file']}: {report['inputs']} inputs, outputs of {report['dim']} values",
        f"  output cosine         mean {m[PREFIX + 'cos.mean']:.6f}  p1 {m[PREFIX + 'cos.p1']:.6f}  "
        f"min {m[PREFIX + 'cos.min']:.6f}",
        f"  neighbours kept       {m[recall]:.4f} ({recall}: each input's {recall.rpartition('@')[2]} nearest "
        "among the inputs)",
    ]
    for name in m:
        if name.startswith(PREFIX + "sim.") and name.endswith(".rho"):
            stem = name[:-len(".rho")]
            lines.append(f"  pairs Spearman rho    {m[stem + '.rho.original']:.4f} -> {m[name]:.4f} "
                         f"(drop {m[stem + '.rho.drop']:.4f})")
    mib = 1 << 20
    lines.append(f"  parameters            {report['param_bytes_before'] / mib:.2f} MiB -> "
                 f"{report['param_bytes_after'] / mib:.2f} MiB, the file {report['file_bytes'] / mib:.2f} MiB "
                 f"({len(report['replaced'])} tables swapped)")
    s = report["seconds"]
    lines.append(f"  seconds               forward {s['forward_original']:.2f} + {s['forward_compressed']:.2f}, "
                 f"swap {s['swap']:.2f}, compare {s['compare']:.2f}")
    for gate in report["gates"]:
        lines.append(("gate passed: " if gate["passed"] else "gate failed: ") + gate["message"])
    return "\n".join(lines)


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m edo.check",
        description="Compare a model's outputs before and after its embedding tables are served from a .edo file "
        "(docs/EVAL.md, 'Model outputs'). Exit 0 ok, 1 runtime error, 2 usage, 3 a gate failed.",
    )
    parser.add_argument("model", metavar="MODEL",
                        help="a transformers model directory (or cached name), a sentence-transformers model "
                        "directory (with modules.json), or FILE.py:FUNCTION returning (model, embed)")
    parser.add_argument("file", metavar="FILE.edo", nargs="?",
                        help="the compressed tables (edo-pack, edo-quantize); may be left out with --write-freq")
    parser.add_argument("--texts", help="inputs, one text a line (UTF-8)")
    parser.add_argument("--pairs", help="labelled pairs, TEXT_A<TAB>TEXT_B<TAB>SCORE a line: Spearman's rho before "
                        "and after (output.sim.<stem>.rho)")
    parser.add_argument("--k", type=int, default=10, help="neighbours compared for each input (default 10)")
    parser.add_argument("--gate", action="append", default=[],
                        help="e.g. 'output.cos.p1>=0.99', 'output.recall@10>=0.9' (edo-eval's grammar); repeatable")
    parser.add_argument("--pooling", default="auto", choices=("auto", "mean", "cls"),
                        help="a transformers model's pooling: mean over the tokens (auto) or the first token")
    parser.add_argument("--max-length", type=int, default=128, help="tokens kept of each text (default 128)")
    parser.add_argument("--batch-size", type=int, default=64, help="texts a forward pass (default 64)")
    parser.add_argument("--report-json", help="write edo-eval's JSON report of the outputs here")
    parser.add_argument("--report-html", help="write edo-eval's HTML report of the outputs here")
    parser.add_argument("--json", action="store_true", help="print the whole report as JSON")
    parser.add_argument("--write-freq", metavar="DIR",
                        help="write each embedding's lookup counts on the texts as DIR/NAME.npy, for edo-pack "
                        "--freq-dir (from the original model, before any swap; NAME the parameter's, or with "
                        "FILE.edo the table it matches)")
    parser.add_argument("--edo-eval", help="the edo-eval program (default: $EDO_EVAL, the build tree, PATH)")
    args = parser.parse_args(argv)
    try:
        if args.texts is None and args.pairs is None:
            raise UsageError("give --texts, --pairs or both")
        if args.batch_size < 1 or args.max_length < 1:
            raise UsageError("--batch-size and --max-length must be positive")
        texts = read_texts(args.texts) if args.texts else []
        pairs = read_pairs(args.pairs) if args.pairs else None
        if args.file is None and args.write_freq is None:
            raise UsageError("give FILE.edo, --write-freq DIR or both")
        if args.file is not None and not os.path.isfile(args.file):
            raise UsageError(f"{args.file}: no such file")
        model, embed = load_model(args.model, args.pooling, args.max_length)
        if args.write_freq is not None:
            inputs = texts + (pairs["a"] + pairs["b"] if pairs else [])
            tables = None
            if args.file is not None:
                from ._edo import open as open_edo

                with open_edo(args.file) as f:
                    tables = f.tables
            counts = count_lookups(model, inputs, embed, args.batch_size)
            written = write_lookup_counts(counts, args.write_freq, tables)
            print(f"edo.check: lookup counts of {len(written)} tables in {args.write_freq}", file=sys.stderr)
            if args.file is None:
                return 0
        report = check_model(model, args.file, texts, embed, pairs, args.k, args.gate, args.batch_size,
                             args.report_json, args.report_html, args.edo_eval)
    except (UsageError, ValueError, OSError) as e:
        print(f"edo.check: {_one_line(e)}", file=sys.stderr)
        return 2 if isinstance(e, (UsageError, ValueError)) and not isinstance(e, OSError) else 1
    except Exception as e:  # edo.Error, torch's and transformers' errors, a loader's: one line, exit 1
        print(f"edo.check: {_one_line(e) or type(e).__name__}", file=sys.stderr)
        return 1
    print(json.dumps(report, indent=1, allow_nan=False) if args.json else to_text(report, args.model))
    for gate in report["gates"]:
        if not gate["passed"]:
            print(f"edo.check: gate failed: {gate['message']}", file=sys.stderr)
    return 0 if report["gates_passed"] else 3


def _one_line(e: BaseException) -> str:
    text = str(e)
    if isinstance(e, OSError) and e.filename is not None:
        text = f"{e.filename}: {e.strerror or text}"
    return " ".join(text.split())


if __name__ == "__main__":
    sys.exit(main())
