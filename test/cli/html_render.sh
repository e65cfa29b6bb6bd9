#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Renders an HTML report with headless Chromium to a PNG (exit 77: skipped,
# when Chromium is not installed). The page must draw: a PNG of the window
# size, mostly white, with ink in it.
#   html_render.sh BUILD_DIR SOURCE_DIR
set -uo pipefail
source "$(dirname "$0")/checks.bash" "$@"  # build, src, work (removed at exit), expect, fail, err_has
chromium=$(command -v chromium || command -v chromium-browser || command -v google-chrome || true)
if [ -z "$chromium" ]; then
  echo "SKIP: no chromium on PATH (scripts/bootstrap.sh installs Debian's chromium)"
  exit 77
fi
glove="$src/data-samples/glove.6B.50d.10k.npy"
awk 'BEGIN { for (i = 0; i < 10000; i++) printf "%d %.9g\n", i, 1e6 / (i + 1) }' >"$work/counts.txt"
expect 0 "$build/edo-pack" "$glove" -o "$work/p.edo" --freq "$work/counts.txt" --tier hot:rows=10%:fp16 \
  --tier cold:rest:int4 --quiet --eval --queries 100 --k 10 --report-html "$work/p.html"
# As root Chromium needs --no-sandbox; a private profile keeps runs apart.
timeout 120 "$chromium" --headless --no-sandbox --disable-gpu --hide-scrollbars --user-data-dir="$work/profile" \
  --window-size=1000,1600 --screenshot="$work/p.png" "file://$work/p.html" >"$work/chromium.log" 2>&1 ||
  fail "chromium failed: $(tail -3 "$work/chromium.log")"
/usr/bin/python3 - "$work/p.png" <<'PY' || fail "the PNG is not a drawn page"
import struct, sys, zlib
data = open(sys.argv[1], 'rb').read()
assert data[:8] == b'\x89PNG\r\n\x1a\n', 'not a PNG'
w, h, depth, colour = struct.unpack('>IIBB', data[16:26])
assert (w, h) == (1000, 1600), (w, h)
# Decode the pixels (8-bit RGB or RGBA, no interlace) to count ink.
idat, pos = b'', 8
while pos < len(data):
    n, kind = struct.unpack('>I4s', data[pos:pos + 8])
    if kind == b'IDAT': idat += data[pos + 8:pos + 8 + n]
    pos += 12 + n
raw = zlib.decompress(idat)
bpp = {2: 3, 6: 4}[colour]
stride = w * bpp
prev = bytearray(stride)
dark = 0
for y in range(h):
    f = raw[y * (stride + 1)]
    line = bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
    for x in range(stride):
        a = line[x - bpp] if x >= bpp else 0
        b = prev[x]
        c = prev[x - bpp] if x >= bpp else 0
        if f == 1: line[x] = (line[x] + a) & 255
        elif f == 2: line[x] = (line[x] + b) & 255
        elif f == 3: line[x] = (line[x] + (a + b) // 2) & 255
        elif f == 4:
            p = a + b - c; pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
            line[x] = (line[x] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
    dark += sum(1 for x in range(0, stride, bpp) if line[x] < 128)
    prev = line
share = dark / (w * h)
assert 0.005 < share < 0.5, f'dark share {share:.4f}: blank or unstyled'
print(f'rendered {w}x{h}, {share:.1%} dark pixels')
PY
[ "$failures" = 0 ] || exit 1
