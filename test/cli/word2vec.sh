#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# word2vec / fastText input: text with a header (.vec), GloVe's headerless
# text (.txt) and word2vec binary (.bin) read back to the same float32 rows;
# the words as the table's vocabulary (edo-eval's word tasks without
# --vocab); bad input (one line naming the file and line or row, exit 1).
#   word2vec.sh BUILD_DIR SOURCE_DIR
set -uo pipefail
source "$(dirname "$0")/checks.bash" "$@"  # build, src, work (removed at exit), expect, fail, err_has
py=/usr/bin/python3
d="$src/data-samples"
"$py" - "$work" "$d" <<'PY'
import struct, sys
import numpy as np
w, d = sys.argv[1], sys.argv[2]
g = np.load(d + '/glove.6B.50d.10k.npy')
words = [l.rstrip('\n') for l in open(d + '/glove.6B.50d.10k.vocab.txt')]
def line(word, row):  # the shortest text that reads back to the same float32
    return word + ' ' + ' '.join(np.format_float_positional(v, unique=True, trim='-') for v in row) + '\n'
with open(w + '/glove.vec', 'w') as f:
    f.write('%d %d\n' % g.shape)
    f.writelines(line(words[i], g[i]) for i in range(len(g)))
with open(w + '/glove.txt', 'w') as f:
    f.writelines(line(words[i], g[i]) for i in range(2000))
with open(w + '/glove.bin', 'wb') as f:
    f.write(b'2000 50\n')
    for i in range(2000):
        f.write(words[i].encode() + b' ' + g[i].astype('<f4').tobytes() + b'\n')
np.save(w + '/first2000.npy', g[:2000])
open(w + '/short.vec', 'w').write('3 2\na 1 2\nb 3 4\n')
open(w + '/narrow.vec', 'w').write('3 2\na 1 2\nb 3\nc 5 6\n')
open(w + '/nan_text.vec', 'w').write('2 2\na 1 2\nb 3 x4\n')
open(w + '/dup.vec', 'w').write('2 2\na 1 2\na 3 4\n')
with open(w + '/cut.bin', 'wb') as f:
    f.write(b'3 2\n' + b'a ' + struct.pack('<2f', 1, 2) + b'\nb ' + struct.pack('<2f', 3, 4) + b'\nc ' + b'\x00' * 5)
open(w + '/model.bin', 'wb').write(struct.pack('<ii', 793712314, 12) + b'\x00' * 64)
PY
Q="$build/edo-quantize"
U="$build/edo-unpack"
for f in glove.vec glove.txt glove.bin; do
  expect 0 "$Q" "$work/$f" -o "$work/$f.edo" --codec fp32 -q
  expect 0 "$U" "$work/$f.edo" -o "$work/$f.npy" -q
done
"$py" - "$work" "$d" <<'PY' || fail "word2vec rows differ from the table they were written from"
import sys
import numpy as np
w, d = sys.argv[1], sys.argv[2]
g = np.load(d + '/glove.6B.50d.10k.npy')
assert np.load(w + '/glove.vec.npy').tobytes() == g.tobytes()
for f in ('glove.txt', 'glove.bin'):
    assert np.load(w + '/' + f + '.npy').tobytes() == g[:2000].tobytes(), f
PY
# The words are the vocabulary: word tasks and probes by word without --vocab.
expect 0 "$build/edo-eval" "$work/glove.vec" "$work/glove.vec.edo" --analogies "$d/questions-words.txt" \
  --similarity "$d/wordsim353.tsv" --queries 20 --k 10 --json
expect 0 "$build/edo-eval" "$work/glove.vec" "$work/glove.vec.edo" --analogies "$d/questions-words.txt" \
  --queries 20 --k 10 --gate 'analogy.3cosadd>=0.585' --gate 'analogy.3cosadd<=0.5854'
expect 0 "$build/edo-eval" "$work/glove.vec" "$work/glove.vec.edo" --queries 20 --k 10 --show-neighbours 3 \
  --probe king
grep -q "queen\|prince" "$work/out" || fail "neighbours of king by word: $(tail -6 "$work/out")"
expect 0 "$build/edo-profile" "$work/glove.bin" -q
grep -q "2000" "$work/out" || fail "profile of a binary file: $(head -3 "$work/out")"

# Bad input: one line naming the file and the line or row.
expect 1 "$Q" "$work/short.vec" -o "$work/x.edo" --codec fp32
err_has "short.vec: 2 rows, where the header promises 3"
expect 1 "$Q" "$work/narrow.vec" -o "$work/x.edo" --codec fp32
err_has "narrow.vec: line 3: 1 values after the word, where the header has 2"
expect 1 "$Q" "$work/nan_text.vec" -o "$work/x.edo" --codec fp32
err_has "nan_text.vec: line 3: value 2 'x4' is not a number"
# Words name rows: a repeated one is refused where the file would store it (edo-eval's word tasks refuse it too).
expect 1 "$Q" "$work/dup.vec" -o "$work/dup.edo" --codec fp32 -q
err_has "dup.vec (its words): line 2 repeats 'a' of line 1"
printf 'a\tb\t1\na\ta\t2\n' >"$work/pairs.txt"
expect 0 "$Q" "$work/dup.vec" -o "$work/dup.edo" --codec fp32 --vocab <(printf 'a\nb\n') -q
expect 1 "$build/edo-eval" "$work/dup.vec" "$work/dup.edo" --similarity "$work/pairs.txt" --queries 2 --k 1
err_has "repeats 'a' of line 1"
expect 1 "$Q" "$work/cut.bin" -o "$work/x.edo" --codec fp32
err_has "cut.bin: row 2: 5 bytes left for its 2 float32 values"
expect 1 "$Q" "$work/model.bin" -o "$work/x.edo" --codec fp32
err_has "model.bin: a fastText model (.bin), not word vectors"
[ -e "$work/x.edo" ] && fail "an output was written from a bad input"

# Out: edo-unpack writes word2vec text and binary with --vocab; an independent
# parser here and edo's own reader read back the decoded rows, bit for bit.
glove="$src/data-samples/glove.6B.50d.10k.npy"
vocab="$src/data-samples/glove.6B.50d.10k.vocab.txt"
expect 0 "$Q" "$glove" -o "$work/g8.edo" --codec int4 -q
expect 0 "$build/edo-unpack" "$work/g8.edo" -o "$work/g8.npy" -q
expect 0 "$build/edo-unpack" "$work/g8.edo" -o "$work/g8.vec" --vocab "$vocab" -q
expect 0 "$build/edo-unpack" "$work/g8.edo" -o "$work/g8.w2v" --to word2vec-bin --vocab "$vocab" -q
"$py" - "$work" "$vocab" <<'PY' || fail "word2vec outputs do not read back to the decoded rows"
import sys
import numpy as np
w, vocab = sys.argv[1], open(sys.argv[2]).read().split('\n')[:10000]
want = np.load(w + '/g8.npy')
lines = open(w + '/g8.vec').read().split('\n')
assert lines[0] == '10000 50' and lines[-1] == '', (lines[0], lines[-1])
for i, line in enumerate(lines[1:-1]):
    fields = line.split(' ')
    assert fields[0] == vocab[i], (i, fields[0])
    assert np.array(fields[1:], dtype=np.float32).tobytes() == want[i].tobytes(), i
data = open(w + '/g8.w2v', 'rb').read()
head, pos = data.split(b'\n', 1)[0], data.index(b'\n') + 1
assert head == b'10000 50'
for i in range(10000):
    space = data.index(b' ', pos)
    assert data[pos:space].decode() == vocab[i]
    row = np.frombuffer(data, dtype='<f4', count=50, offset=space + 1)
    assert row.tobytes() == want[i].tobytes(), i
    pos = space + 1 + 200
    assert data[pos:pos + 1] == b'\n'
    pos += 1
assert pos == len(data)
PY
cp "$work/g8.w2v" "$work/g8.bin"
for f in g8.vec g8.bin; do
  expect 0 "$build/edo-eval" "$work/g8.npy" "$work/$f" --queries 50 --k 1 --json
  grep -q '"rel_fro": 0.0' "$work/out" || fail "edo's reader of $f differs from the decoded rows: $(grep rel_fro "$work/out")"
done
expect 2 "$build/edo-unpack" "$work/g8.edo" -o "$work/x.vec"
err_has "give --vocab FILE"
expect 2 "$build/edo-unpack" "$work/g8.edo" -o "$work/x.vec" --to npy --vocab "$vocab"
err_has "--to npy: -o $work/x.vec names word2vec"
"$py" -c "open('$work/v2.txt', 'w').write('\n'.join(['w%d' % i for i in range(9999)] + ['two words']) + '\n')"
expect 1 "$build/edo-unpack" "$work/g8.edo" -o "$work/x.vec" --vocab "$work/v2.txt"
err_has "word 10000 'two words' cannot be written"
[ -e "$work/x.vec" ] && fail "a word2vec file was left from a bad vocabulary"

# The words travel in the .edo (FORMAT.md 9.7): from a word2vec input or --vocab, to
# edo-unpack's word2vec output and edo-eval's word tasks, without --vocab again.
expect 0 "$Q" "$glove" -o "$work/gv.edo" --codec int4 --vocab "$vocab" -q
expect 0 "$build/edo-unpack" "$work/gv.edo" -o "$work/gv.vec" -q
cmp -s "$work/gv.vec" "$work/g8.vec" || fail "the stored words did not come back as --vocab gave them"
expect 0 "$Q" "$work/gv.vec" -o "$work/gw.edo" --codec int4 -q
expect 0 "$build/edo-unpack" "$work/gw.edo" -o "$work/gw.vec" -q
cmp -s <(cut -d' ' -f1 "$work/gw.vec") <(cut -d' ' -f1 "$work/g8.vec") || fail "a word2vec input's words were not stored"
expect 0 "$build/edo-eval" "$glove" "$work/gv.edo" --queries 50 --k 1 --analogies "$src/data-samples/questions-words.txt"
grep -q "analogy.3cosadd " "$work/out" || fail "edo-eval did not take the words stored in gv.edo"
expect 0 "$build/edo-eval" "$glove" "$work/gv.edo" "$work/g8.edo" --queries 50 --k 1 --json
"$py" -c "
import json, sys
r = json.load(open('$work/out'))
a, b = (f['bytes_after'] for f in r['files'])
assert abs(a - b) <= 64, (a, b)  # the words are not counted; the manifest's 'vocab' key may add one 64-byte unit
" || fail "the vocabulary section counted in bytes_after"

[ "$failures" = 0 ] || { echo "$failures failure(s)"; exit 1; }
echo "word2vec: ok"
