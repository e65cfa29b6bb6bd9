#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# edo-eval's word tasks: analogy accuracy (3CosAdd, 3CosMul) and Spearman rho
# on GloVe 10k against an independent numpy computation (to 1e-4), for the
# full-precision table and an int4 file; gates on them; bad input (one line,
# exit 1 or 2).
#   word_tasks.sh BUILD_DIR SOURCE_DIR
set -uo pipefail
source "$(dirname "$0")/checks.bash" "$@"  # build, src, work (removed at exit), expect, fail, err_has
d="$src/data-samples"
glove="$d/glove.6B.50d.10k.npy"
vocab="$d/glove.6B.50d.10k.vocab.txt"
py=/usr/bin/python3
E="$build/edo-eval"
tasks=(--vocab "$vocab" --analogies "$d/questions-words.txt" --similarity "$d/wordsim353.tsv"
       --similarity "$d/simlex999.txt" --queries 50 --k 10)

expect 0 "$build/edo-quantize" "$glove" -o "$work/i4.edo" --codec int4 -q
expect 0 "$build/edo-unpack" "$work/i4.edo" -o "$work/i4.npy" -q
expect 0 "$E" "$glove" "$work/i4.edo" "${tasks[@]}" --json
cp "$work/out" "$work/i4.json"
expect 0 "$E" "$glove" "$glove" "${tasks[@]}" --json
cp "$work/out" "$work/fp32.json"
"$py" - "$d" "$work" <<'PY' || fail "word tasks differ from numpy"
import json, sys
import numpy as np
d, w = sys.argv[1], sys.argv[2]
vocab = [l.rstrip('\n') for l in open(d + '/glove.6B.50d.10k.vocab.txt')]
index = {}
for i, word in enumerate(vocab):
    index.setdefault(word.lower(), i)

def normalised(x):
    x = x.astype(np.float64)
    n = np.linalg.norm(x, axis=1, keepdims=True)
    return np.where(n > 0, x / np.where(n > 0, n, 1), 0)

def analogies(E):
    qs = []
    for line in open(d + '/questions-words.txt'):
        f = line.split()
        if len(f) == 4 and all(x.lower() in index for x in f):
            qs.append([index[x.lower()] for x in f])
    q = np.array(qs)
    add = mul = 0
    for s in range(0, len(q), 500):
        b = q[s:s + 500]
        ca, cb, cc = E[b[:, 0]] @ E.T, E[b[:, 1]] @ E.T, E[b[:, 2]] @ E.T
        a_score = cb - ca + cc
        m_score = ((cb + 1) / 2) * ((cc + 1) / 2) / ((ca + 1) / 2 + 0.001)
        rows = np.arange(len(b))
        for k in range(3):
            a_score[rows, b[:, k]] = -np.inf
            m_score[rows, b[:, k]] = -np.inf
        add += int((a_score.argmax(1) == b[:, 3]).sum())
        mul += int((m_score.argmax(1) == b[:, 3]).sum())
    return len(q), add / len(q), mul / len(q)

def ranks(v):
    v = np.asarray(v); o = np.argsort(v, kind='stable'); r = np.empty(len(v)); i = 0
    while i < len(v):
        j = i
        while j + 1 < len(v) and v[o[j + 1]] == v[o[i]]:
            j += 1
        r[o[i:j + 1]] = (i + j) / 2 + 1
        i = j + 1
    return r

def rho(E, name):
    h, c = [], []
    for line in open(d + '/' + name):
        if line.startswith('#') or not line.strip():
            continue
        a, b, s = line.split('\t')[:3]
        if a.lower() in index and b.lower() in index:
            h.append(float(s)); c.append(E[index[a.lower()]] @ E[index[b.lower()]])
    return np.corrcoef(ranks(h), ranks(c))[0, 1]

orig = normalised(np.load(d + '/glove.6B.50d.10k.npy'))
i4 = normalised(np.load(w + '/i4.npy'))
for E, report in ((orig, 'fp32.json'), (i4, 'i4.json')):
    r = json.load(open(w + '/' + report))
    n, add, mul = analogies(E)
    assert r['analogy.answered'] == n == 6762, (r['analogy.answered'], n)
    assert abs(r['analogy.3cosadd'] - add) <= 1e-4, (report, r['analogy.3cosadd'], add)
    assert abs(r['analogy.3cosmul'] - mul) <= 1e-4, (report, r['analogy.3cosmul'], mul)
    for name, f in (('wordsim353', 'wordsim353.tsv'), ('simlex999', 'simlex999.txt')):
        assert abs(r['sim.%s.rho' % name] - rho(E, f)) <= 1e-4, (report, name)
    assert len(r['word_tasks']['analogies']['sections']) == 14
r = json.load(open(w + '/i4.json'))
assert abs(r['analogy.3cosadd.drop'] - (r['analogy.3cosadd.original'] - r['analogy.3cosadd'])) < 1e-12
assert abs(r['analogy.3cosadd.original'] - 0.5853) < 1e-4  # data-samples/README.md
print('fp32 3CosAdd %.4f, int4 %.4f' % (r['analogy.3cosadd.original'], r['analogy.3cosadd']))
PY

# Gates on the word metrics, and the per-section table.
expect 0 "$E" "$glove" "$work/i4.edo" "${tasks[@]}" --gate 'analogy.3cosadd.drop<=0.5' --gate 'sim.simlex999.rho>=0'
grep -q "gram6-nationality-adjective" "$work/out" || fail "no per-section line: $(cat "$work/out")"
expect 3 "$E" "$glove" "$work/i4.edo" "${tasks[@]}" --gate 'analogy.3cosmul.drop<=-0.5'

# Bad input: one line naming the file and line, exit 1 (bad file) or 2 (usage).
printf ': s\nathens greece baghdad iraq\nthree words only\n' >"$work/bad_q.txt"
expect 1 "$E" "$glove" "$glove" --vocab "$vocab" --analogies "$work/bad_q.txt" --queries 10
err_has "bad_q.txt: line 3: expected four words 'a b c d' or ': section', got 3 fields"
expect 0 "$E" "$glove" "$glove" --vocab "$vocab" --analogies "$work/bad_q.txt" --queries 10 --skip-bad-lines
grep -q "1 malformed lines skipped" "$work/out" || fail "--skip-bad-lines: $(cat "$work/out")"
printf 'king\tqueen\t8.5\nman\twoman\tlots\n' >"$work/bad_p.txt"
expect 1 "$E" "$glove" "$glove" --vocab "$vocab" --similarity "$work/bad_p.txt" --queries 10
err_has "bad_p.txt: line 2: score 'lots' is not a finite number"
printf 'zzzz1 zzzz2 zzzz3 zzzz4\n' >"$work/none_q.txt"
expect 1 "$E" "$glove" "$glove" --vocab "$vocab" --analogies "$work/none_q.txt" --queries 10
err_has "none_q.txt: none of its 1 questions has all four words in"
head -n 9999 "$vocab" >"$work/short_vocab.txt"
expect 1 "$E" "$glove" "$glove" --vocab "$work/short_vocab.txt" --analogies "$d/questions-words.txt" --queries 10
err_has "short_vocab.txt"
{ head -n 9999 "$vocab"; echo the; } >"$work/dup_vocab.txt"
expect 1 "$E" "$glove" "$glove" --vocab "$work/dup_vocab.txt" --analogies "$d/questions-words.txt" --queries 10
err_has "dup_vocab.txt: line 10000 repeats 'the' of line 1"
expect 2 "$E" "$glove" "$glove" --analogies "$d/questions-words.txt" --queries 10
err_has "give --vocab"
cp "$d/wordsim353.tsv" "$work/wordsim353.txt"
expect 2 "$E" "$glove" "$glove" --vocab "$vocab" --similarity "$d/wordsim353.tsv" --similarity "$work/wordsim353.txt" \
  --queries 10
err_has "its name 'wordsim353' is taken"

[ "$failures" = 0 ] || { echo "$failures failure(s)"; exit 1; }
echo "word_tasks: ok"
