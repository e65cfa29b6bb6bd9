#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Integrity modes while serving (docs/PACK.md, "Integrity modes"): edo-lookup
# --verify and the Python module's verify= on hand-made corrupt files, one
# byte flipped in a hashed tier's table, the row map, a trained state
# (pca) and a codec tier's codes. small (the default) refuses each small
# section at open and the codes at the first lookup that reads them, all
# refuses every flip at open, structure opens them all and serves the
# flipped bytes (documented; only the row map's own bounds checks still
# refuse a tier byte that names no tier); each refusal is one line naming
# the file and the section, exit 1 (Python: edo.Error).
#   verify.sh BUILD_DIR SOURCE_DIR
set -uo pipefail
source "$(dirname "$0")/checks.bash" "$@"  # build, src, work (removed at exit), expect, fail, err_has
glove="$src/data-samples/glove.6B.50d.10k.npy"
py=/usr/bin/python3
L="$build/edo-lookup"
"$py" - "$work" <<'PY'
import numpy as np, sys
w = sys.argv[1]
# The hottest rows on the even ids: tiers interleave, so the packed row map is written.
order = np.concatenate([np.arange(0, 10000, 2), np.arange(1, 10000, 2)])
np.save(w + '/freq.npy', 1.0 / (np.argsort(order) + 1))
np.save(w + '/ids.npy', np.arange(10000, dtype=np.int64))
PY
expect 0 "$build/edo-pack" "$glove" -o "$work/t.edo" --freq "$work/freq.npy" -q --train-rows 2000 \
  --tier hot:rows=20%:int8 --tier mid:rows=30%:pca:16,int8 --tier hashed:rest:hash:buckets=500,k=2
# Flips one byte in the middle of a section into OUT and prints its name:
# tier TIER's section of role ROLE ('*': its first role but codes), or, with
# TIER '-', the first section whose name starts with ROLE.
flip() {
  "$py" - "$work/t.edo" "$1" "$2" "$3" <<'PY'
import json, struct, sys
src, tier, role, out = sys.argv[1:]
data = bytearray(open(src, 'rb').read())
offset, length = struct.unpack_from('<QQ', data, 24)
manifest = json.loads(bytes(data[offset:offset + length]))
if tier == '-':
    name = next(s['name'] for s in manifest['sections'] if s['name'].startswith(role))
else:
    roles = next(t for t in manifest['tiers'] if t['name'] == tier)['sections']
    name = roles[role] if role != '*' else roles[sorted(r for r in roles if r != 'codes')[0]]
s = next(s for s in manifest['sections'] if s['name'] == name)
data[s['offset'] + s['length'] // 2] ^= 0x10
open(out, 'wb').write(data)
print(name)
PY
}
expect 0 "$L" "$work/t.edo" --ids "$work/ids.npy" -o "$work/rows.npy"
for mode in structure small all; do
  expect 0 "$L" "$work/t.edo" --ids "$work/ids.npy" -o "$work/rows.$mode.npy" --verify "$mode"
  cmp -s "$work/rows.npy" "$work/rows.$mode.npy" || fail "--verify $mode changed the rows"
done
hashed=$(flip hashed '*' "$work/hashed.edo")
rowmap=$(flip - rowmap/ "$work/rowmap.edo")
state=$(flip mid '*' "$work/state.edo")
codes=$(flip hot codes "$work/codes.edo")
for f in hashed rowmap state codes; do
  [ -s "$work/$f.edo" ] || fail "no corrupt file for $f"
done
for case in "hashed:$hashed" "rowmap:$rowmap" "state:$state"; do
  f=${case%%:*} section=${case#*:}
  expect 1 "$L" "$work/$f.edo" --ids "$work/ids.npy" -o "$work/out.npy"
  err_has "$f.edo: section '$section' checksum mismatch"
  [ -e "$work/out.npy" ] && fail "$f: rows written for a refused file"
  expect 1 "$L" "$work/$f.edo" --ids "$work/ids.npy" -o "$work/out.npy" --verify all
  err_has "$f.edo: section '$section' checksum mismatch"
  # structure opens; the row map's own checks still refuse a tier byte that names no tier.
  if [ "$f" = rowmap ]; then
    expect 1 "$L" "$work/$f.edo" --ids "$work/ids.npy" -o "$work/out.npy" --verify structure
    err_has "row map is corrupt"
  else
    expect 0 "$L" "$work/$f.edo" --ids "$work/ids.npy" -o "$work/out.npy" --verify structure
  fi
  rm -f "$work/out.npy"
done
# Codes: small opens, and the first lookup that reads the tier refuses; all refuses at open.
expect 1 "$L" "$work/codes.edo" --ids "$work/ids.npy" -o "$work/out.npy"
err_has "codes.edo: section '$codes' checksum mismatch"
expect 1 "$L" "$work/codes.edo" --ids "$work/ids.npy" -o "$work/out.npy" --verify all
err_has "codes.edo: section '$codes' checksum mismatch"
expect 0 "$L" "$work/codes.edo" --ids "$work/ids.npy" -o "$work/out.npy" --verify structure
expect 2 "$L" "$work/t.edo" --ids "$work/ids.npy" -o "$work/out.npy" --verify full
grep -q "structure" "$work/err" || fail "--verify full: the choices are not named: $(cat "$work/err")"
expect 2 "$L" "$work/t.edo" --ids "$work/ids.npy" -o "$work/out.npy" --verify all --max-resident 64M
# A disk tier behind the bounded cache: small reads its codes once past the cache to check them (--json's
# bytes_checked: the whole codes section), structure never.
expect 0 "$build/edo-pack" "$glove" -o "$work/d.edo" -q --tier hot:rows=10%:fp16 --tier cold:rest:int8:disk
for mode in small structure; do
  expect 0 "$L" "$work/d.edo" --ids "$work/ids.npy" -o "$work/out.npy" --max-resident 64M --json --verify "$mode"
  checked=$("$py" -c "import json, sys; print(json.load(open(sys.argv[1]))['tiers'][1]['cache']['bytes_checked'])" \
    "$work/out")
  want=0
  [ "$mode" = small ] && want=$("$py" -c "import json, struct, sys
d = open(sys.argv[1], 'rb').read(); o, l = struct.unpack_from('<QQ', d, 24); m = json.loads(d[o:o + l])
print(next(s['length'] for s in m['sections'] if s['name'] == m['tiers'][1]['sections']['codes']))" "$work/d.edo")
  [ "$checked" = "$want" ] || fail "--verify $mode with a disk tier: $checked bytes checked, want $want"
done

PYTHONPATH="$build/python" "$py" - "$work" "$hashed" "$rowmap" "$state" "$codes" <<'PY' || fail "the Python module's verify= is wrong"
import sys
import numpy as np
import edo
w, hashed, rowmap, state, codes = sys.argv[1:]
ids = np.arange(10000)
good = edo.open(w + '/t.edo').lookup(ids)
for verify in ('structure', 'small', 'all', True, False):
    with edo.open(w + '/t.edo', verify=verify) as f:
        assert np.array_equal(f.lookup(ids), good), verify
def refused(fn, text):
    try:
        fn()
    except edo.Error as e:
        assert text in str(e) and '\n' not in str(e), str(e)
        return
    raise AssertionError('no error: ' + text)
for name, section in (('hashed', hashed), ('rowmap', rowmap), ('state', state)):
    path = w + '/' + name + '.edo'
    want = name + ".edo: section '" + section + "' checksum mismatch"
    refused(lambda: edo.open(path), want)
    refused(lambda: edo.open(path, verify='all'), want)
    refused(lambda: edo.open(path, verify=True), want)
    for verify in ('structure', False):
        f = edo.open(path, verify=verify)
        if name != 'rowmap':  # its own checks refuse a tier byte that names no tier
            f.lookup(ids)
want = "codes.edo: section '" + codes + "' checksum mismatch"
f = edo.open(w + '/codes.edo')  # small: opens; the codes are checked on their first read
refused(lambda: f.lookup(ids), want)
refused(lambda: f.lookup(ids), want)  # and stay refused
refused(lambda: edo.open(w + '/codes.edo', verify='all'), want)
edo.open(w + '/codes.edo', verify='structure').lookup(ids)
refused(lambda: edo.open(w + '/t.edo', verify='full'), "verify='full': expected 'structure', 'small' or 'all'")
try:
    edo.open(w + '/t.edo', verify=1)
    raise AssertionError('verify=1 accepted')
except TypeError:
    pass
PY
exit $((failures > 0))
