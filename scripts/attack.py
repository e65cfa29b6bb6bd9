#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Reruns the third adversarial run's families (issue 55) against a build and
prints one table: runs, clean errors, crashes, hangs, memory, silent bad
outputs, data loss and escapes per family.

    scripts/attack.py [--build build] [--runs 20] [--seed 0] [--only FAMILY,...]

Each run draws its own variation (a seed, a truncation length, a link's
form, a limit, a k...) and classifies what the tool did:
  ok        exit 0 and the output is what it should be
  clean     a refusal: exit 1 or 2, one line on stderr naming the problem
  crash     ended by a signal, or an exit code edo never uses
  hang      still running at the timeout
  memory    peak RSS above the family's bound
  silent    exit 0 with a wrong output (a table dropped, a trivial recall, a merge of two tables)
  loss      an earlier output replaced or temporaries left behind by a failed run
  escape    a file outside the input's directory read, or its bytes quoted in a message
Exits 1 when any run lands in crash, hang, memory, silent, loss or escape.
"""
import argparse
import json
import os
import pathlib
import resource
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import time

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parent.parent
GLOVE = ROOT / "data-samples" / "glove.6B.50d.10k.npy"
BAD = ("crash", "hang", "memory", "silent", "loss", "escape")
COLUMNS = ("runs", "ok", "clean") + BAD


class Run:
    """One tool run: exit code, stderr, peak RSS (KiB), wall seconds; None code on a timeout."""

    def __init__(self, argv, cwd, timeout=120, env=None, preexec=None):
        start = time.time()
        self.code = None
        with open(os.path.join(cwd, ".out"), "wb") as out, open(os.path.join(cwd, ".err"), "wb") as err:
            p = subprocess.Popen(argv, cwd=cwd, stdout=out, stderr=err, env=env, preexec_fn=preexec,
                                 start_new_session=True)
            while True:
                pid, status, usage = os.wait4(p.pid, os.WNOHANG)
                if pid:
                    self.code = os.waitstatus_to_exitcode(status)
                    break
                if time.time() > start + timeout:
                    os.killpg(p.pid, signal.SIGKILL)
                    _, status, usage = os.wait4(p.pid, 0)
                    break
                time.sleep(0.02)
            p.returncode = 0  # reaped here
        self.seconds = time.time() - start
        self.rss_kib = usage.ru_maxrss
        self.stderr = pathlib.Path(cwd, ".err").read_text(errors="replace")

    def verdict(self, ok_codes=(0,), clean_codes=(1, 2)):
        """crash, hang, clean or ok by the exit code and stderr alone."""
        if self.code is None:
            return "hang"
        if self.code < 0 or self.code not in (0, 1, 2, 3):
            return "crash"
        if self.code in clean_codes:
            lines = [l for l in self.stderr.splitlines() if l.strip()]
            return "clean" if len(lines) == 1 else "crash"
        return "ok" if self.code in ok_codes else "crash"


def write_safetensors(path, tensors):
    header, off, blobs = {}, 0, []
    for name, a in tensors:
        data = np.ascontiguousarray(a, dtype=np.float32).tobytes()
        header[name] = {"dtype": "F32", "shape": list(a.shape), "data_offsets": [off, off + len(data)]}
        off += len(data)
        blobs.append(data)
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + b"".join(blobs))


def leftovers(d):
    return [p.name for p in pathlib.Path(d).iterdir() if ".tmp-" in p.name or ".old-" in p.name]


class Attack:
    def __init__(self, build, work, rng):
        self.b = pathlib.Path(build).resolve()
        self.w = pathlib.Path(work)
        self.rng = rng
        self.g = np.load(GLOVE)[:2000]
        np.save(self.w / "g.npy", self.g)
        Run([str(self.b / "edo-quantize"), "g.npy", "-o", "g8.edo", "--codec", "int8", "-q"], self.w)

    def tool(self, name):
        return str(self.b / name)

    def fresh(self, name):
        d = self.w / name
        shutil.rmtree(d, ignore_errors=True)
        d.mkdir()
        return d

    # 1. close() while another thread reads
    def python_close(self, i):
        return self.python(i, "close")

    # 2. offsets, ids and weights changed during pooling
    def python_bags(self, i):
        return self.python(i, "bags")

    def python(self, i, what):
        code = f"""
import sys, threading
from concurrent.futures import ThreadPoolExecutor
import numpy as np, edo
rng = np.random.default_rng({i})
ids = rng.integers(0, 2000, int(rng.integers(100_000, 2_000_000)))
if '{what}' == 'close':
    pool = ThreadPoolExecutor(2)
    with edo.open('g8.edo') as f:
        jobs = [pool.submit(f.lookup, ids), pool.submit(f.lookup_bags, np.arange(0, len(ids), 7), ids)]
    for j in jobs:
        try: j.result()
        except ValueError: pass
else:
    off = np.arange(0, len(ids), 9, dtype=np.int64); w = np.ones(len(ids), dtype=np.float32)
    stop = threading.Event()
    def vandal():
        while not stop.is_set():
            off[1] = 10**15; off[1] = 9; ids[3] = -9; ids[3] = 1; off[2] = -1; off[2] = 18
    t = threading.Thread(target=vandal); t.start()
    f = edo.open('g8.edo')
    for k in range(10):
        try: f.lookup_bags(off, ids, 'sum', w)
        except (ValueError, edo.Error): pass
    stop.set(); t.join()
"""
        env = dict(os.environ, PYTHONPATH=str(self.b / "python"))
        r = Run([sys.executable, "-c", code], self.w, timeout=300, env=env)
        return r.verdict()

    # 3. a damaged table in a model: an error, never a skip
    def damaged_model(self, i):
        folder = ["exp-Dec", "run-2D", "unsupported", "not supported", "x-D-y", "plain"][i % 6]
        d = self.fresh(folder)
        n = int(self.rng.integers(2, 5))
        for t in range(n):
            np.save(d / f"emb_{t}.npy", self.g[: 100 + t])
        victim = d / f"emb_{int(self.rng.integers(0, n))}.npy"
        data = victim.read_bytes()
        victim.write_bytes(data[: int(self.rng.integers(1, len(data)))])
        out = self.w / "dm.edo"
        out.unlink(missing_ok=True)
        r = Run([self.tool("edo-quantize"), str(d), "-o", str(out), "--codec", "int8", "-q"], self.w)
        v = r.verdict()
        if v == "ok":
            return "silent"  # a damaged table was dropped with exit 0
        return v if out.exists() is False else "silent"

    # 4. symlinks beside an index or in a folder of .npy
    def symlink_escape(self, i):
        secret = self.w / "secret.bin"
        secret.write_bytes(b"hunter2-" + bytes(self.rng.integers(0, 256, 64, dtype=np.uint8)))
        secret_number = str(struct.unpack("<Q", secret.read_bytes()[:8])[0])
        d = self.fresh("linked")
        form = i % 4
        target = os.path.relpath(secret, d) if form % 2 == 0 else str(secret)
        if form < 2:
            write_safetensors(d / "s1.safetensors", [("emb_a.weight", self.g[:50])])
            (d / "m.safetensors.index.json").write_text(json.dumps(
                {"weight_map": {"emb_a.weight": "s1.safetensors", "emb_x.weight": "leak.safetensors"}}))
            os.symlink(target, d / "leak.safetensors")
            spec = str(d / "m.safetensors.index.json")
        else:
            np.save(d / "emb_a.npy", self.g[:50])
            os.symlink(target, d / "emb_leak.npy")
            spec = str(d)
        r = Run([self.tool("edo-quantize"), spec, "-o", str(self.w / "esc.edo"), "--codec", "int8", "-q"], self.w)
        if "hunter2" in r.stderr or secret_number in r.stderr:
            return "escape"
        v = r.verdict()
        return "escape" if v == "ok" else v

    # 5. a file-size limit: a clean error, outputs of the run one transaction
    def file_size_limit(self, i):
        d = self.fresh("fsize")
        shutil.copy(self.w / "g.npy", d / "g.npy")
        shutil.copy(self.w / "g8.edo", d / "g8.edo")
        (d / "r.json").write_text('{"before": true}\n')
        limit = int(self.rng.integers(1, 400)) * 1024

        def cap():
            resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

        argv = [[self.tool("edo-quantize"), "g.npy", "-o", "q.edo", "--codec", "fp16", "-q"],
                [self.tool("edo-eval"), "g.npy", "g8.edo", "--queries", "30", "--report-json", "r.json",
                 "--report-html", "r.html", "-q"],
                [self.tool("edo-unpack"), "g8.edo", "-o", "u.npy", "-q"]][i % 3]
        r = Run(argv, d, preexec=cap)
        v = r.verdict(ok_codes=(0, 3))
        if leftovers(d):
            return "loss"
        if v == "clean" and (d / "r.json").read_text() != '{"before": true}\n':
            return "loss"
        return v

    # 6. a model of many tables
    def many_tables(self, i):
        d = self.w / "many"
        if not (self.w / "many.edo").exists():
            d.mkdir(exist_ok=True)
            for t in range(16384):
                np.save(d / f"emb_{t}.npy", np.full((2, 4), t, dtype=np.float32))
            Run([self.tool("edo-quantize"), str(d), "-o", "many.edo", "--codec", "fp32", "-q"], self.w, timeout=600)
        t = int(self.rng.integers(0, 16384))
        (self.w / "one.txt").write_text("1\n")
        r = Run([self.tool("edo-lookup"), "many.edo", "--table", f"emb_{t}", "--ids", "one.txt", "-o", "row.txt"],
                self.w, timeout=30)
        v = r.verdict()
        if v == "ok" and r.rss_kib > 256 * 1024:
            return "memory"
        if v == "ok" and str(t) not in (self.w / "row.txt").read_text():
            return "silent"
        return v

    # 7. bags' memory
    def bags_memory(self, i):
        n = int(self.rng.integers(500_000, 3_000_000))
        np.save(self.w / "off.npy", np.arange(0, n, int(self.rng.integers(1, 4)), dtype=np.int64))
        np.save(self.w / "ids.npy", self.rng.integers(0, 2000, n))
        r = Run([self.tool("edo-lookup"), "g8.edo", "--ids", "ids.npy", "--offsets", "off.npy", "-o", "p.npy", "-q"],
                self.w)
        v = r.verdict()
        # ids and offsets are held (16 bytes an id at most); the pooled rows must not be.
        return "memory" if v == "ok" and r.rss_kib > (16 * n) // 1024 + 160 * 1024 else v

    # 8. k at or beyond the rows
    def k_beyond_rows(self, i):
        rows = int(self.rng.integers(20, 600))
        np.save(self.w / "small.npy", self.g[:rows])
        Run([self.tool("edo-quantize"), "small.npy", "-o", "small.edo", "--codec", "int8", "-q"], self.w)
        k = rows + int(self.rng.integers(0, 100000))
        argv = [[self.tool("edo-eval"), "small.npy", "small.edo", "--k", str(k), "-q"],
                [self.tool("edo-quantize"), "small.npy", "-o", "x.edo", "--codec", f"auto:recall=0.9,k={k}", "-q"],
                [self.tool("edo-pack"), "small.npy", "-o", "x.edo", "--budget", f"recall@{k}>=0.9", "-q"]][i % 3]
        v = Run(argv, self.w).verdict()
        return "silent" if v == "ok" else v

    # 9. shards of two versions of a table
    def merge_versions(self, i):
        g = np.load(GLOVE)  # 10,000 rows: two shards of 2,048-row chunks
        np.save(self.w / "g10.npy", g)
        g2 = g.copy()
        g2[int(self.rng.integers(0, len(g2)))] += 1
        np.save(self.w / "g2.npy", g2)
        P = self.tool("edo-pack")
        Run([P, "g10.npy", "-o", "p0.edo", "--tier", "all:rest:int8", "--shard", "0/2", "-q"], self.w)
        Run([P, "g2.npy", "-o", "p1.edo", "--tier", "all:rest:int8", "--shard", "1/2", "-q"], self.w)
        r = Run([P, "--merge", "p0.edo", "p1.edo", "-o", "merged.edo", "-q"], self.w)
        v = r.verdict()
        if v == "clean" and "cut from another table" not in r.stderr:
            return "crash"  # refused for another reason: the family did not run
        return "silent" if v == "ok" else v

    # 10. FIFOs where a regular file belongs
    def fifo(self, i):
        d = self.fresh("fifo")
        os.mkfifo(d / "pipe")
        np.save(d / "emb_a.npy", self.g[:100])
        form = i % 3
        if form == 0:
            os.rename(d / "pipe", d / "s.safetensors")
            (d / "i.safetensors.index.json").write_text(json.dumps({"weight_map": {"a": "s.safetensors"}}))
            argv = [self.tool("edo-quantize"), str(d / "i.safetensors.index.json"), "-o", "x.edo", "--codec", "int8"]
        elif form == 1:
            (d / "freq").mkdir()
            os.rename(d / "pipe", d / "freq" / "emb_a.npy")
            argv = [self.tool("edo-pack"), str(d), "-o", "x.edo", "--tier", "all:rest:int8", "--freq-dir",
                    str(d / "freq")]
        else:
            argv = [self.tool("edo-lookup"), "g8.edo", "--ids", str(d / "pipe")]
        return Run(argv + ["-q"], self.w, timeout=30).verdict()

    # 11. loose budgets
    def loose_budget(self, i):
        x = self.rng.standard_normal((5000, 32)).astype(np.float32)
        np.save(self.w / "t5k.npy", x)
        ratio = [0.5, 1, 1.5, 2, 3, 4][i % 6]
        r = Run([self.tool("edo-pack"), "t5k.npy", "-o", "loose.edo", "--budget", f"ratio>={ratio}", "-q"], self.w,
                timeout=120)
        return r.verdict()


FAMILIES = ["python_close", "python_bags", "damaged_model", "symlink_escape", "file_size_limit", "many_tables",
            "bags_memory", "k_beyond_rows", "merge_versions", "fifo", "loose_budget"]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default=str(ROOT / "build"))
    ap.add_argument("--runs", type=int, default=20, help="runs a family (default 20)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--only", default="", help="families, comma separated: " + ",".join(FAMILIES))
    a = ap.parse_args()
    families = [f for f in a.only.split(",") if f] or FAMILIES
    for f in families:
        if f not in FAMILIES:
            ap.error(f"no family {f}")
    table = {}
    with tempfile.TemporaryDirectory(prefix="edo-attack-") as work:
        attack = Attack(a.build, work, np.random.default_rng(a.seed))
        for f in families:
            counts = dict.fromkeys(COLUMNS, 0)
            start = time.time()
            for i in range(a.runs):
                counts[getattr(attack, f)(i)] += 1
                counts["runs"] += 1
            table[f] = counts
            print(f"attack: {f}: {counts} in {time.time() - start:.0f} s", file=sys.stderr)
    print("| family | " + " | ".join(COLUMNS) + " |")
    print("|---" * (len(COLUMNS) + 1) + "|")
    for f, c in table.items():
        print(f"| {f} | " + " | ".join(str(c[k]) for k in COLUMNS) + " |")
    total = {k: sum(c[k] for c in table.values()) for k in COLUMNS}
    print("| all | " + " | ".join(str(total[k]) for k in COLUMNS) + " |")
    return 1 if any(total[k] for k in BAD) else 0


if __name__ == "__main__":
    sys.exit(main())
