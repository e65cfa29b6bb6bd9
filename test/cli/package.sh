#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The packages (cpack -G DEB and TGZ) hold what a user installs and work from
# where they are unpacked, without installing anything: the .deb is
# extracted (dpkg-deb -x) under a path with spaces, every tool's --version
# and one real job run from there, a man page opens with man -l, and
# test/find_package builds against the extracted tree.
#   package.sh BUILD_DIR SOURCE_DIR
set -uo pipefail
source "$(dirname "$0")/checks.bash" "$@"  # build, src, work (removed at exit), expect, fail, err_has
for tool in cpack dpkg-deb; do
  command -v "$tool" >/dev/null || { echo "skipped: no $tool"; exit 77; }
done
[ -d "$build/man" ] || fail "no man pages in $build/man (help2man missing when configured?)"

tools="edo-profile edo-quantize edo-sparsify edo-hash edo-pack edo-eval edo-unpack edo-lookup"
version=$(sed -n 's/^project(edo VERSION \([0-9.]*\).*/\1/p' "$src/CMakeLists.txt")
if ! (cd "$build" && cpack -G "DEB;TGZ" -B "$work/packages") >"$work/cpack.log" 2>&1; then
  fail "cpack failed: $(tail -n 20 "$work/cpack.log")"
  exit 1
fi
deb=$(ls "$work"/packages/*.deb 2>/dev/null | head -n 1)
tgz=$(ls "$work"/packages/*.tar.gz 2>/dev/null | head -n 1)
[ -f "$deb" ] && [ -f "$tgz" ] || { fail "cpack made no .deb or .tar.gz: $(ls "$work/packages")"; exit 1; }

# What the .deb holds, and what it says it needs.
dpkg-deb -c "$deb" | awk '{print $6}' >"$work/contents"
for want in $tools; do grep -qx "./usr/bin/$want" "$work/contents" || fail "the .deb lacks usr/bin/$want"; done
for want in usr/include/edo/reader.hpp usr/lib/libedo_reader.a usr/lib/libedo_profile.a \
  usr/lib/cmake/edo/edoConfig.cmake usr/share/man/man1/edo-pack.1.gz usr/share/doc/edo/LICENSE; do
  grep -q "^\./$want$" "$work/contents" || grep -q "^\./${want/usr\/lib\//usr\/lib\/[^/]*\/}$" "$work/contents" ||
    fail "the .deb lacks $want"
done
dpkg-deb -f "$deb" Version | grep -qx "$version" || fail "the .deb's version is not $version"
dpkg-deb -f "$deb" Depends | grep -q "libc6" || fail "the .deb names no shared libraries it needs"
tar -tzf "$tgz" >"$work/tgz-contents"
grep -q "/bin/edo-lookup$" "$work/tgz-contents" || fail "the .tar.gz lacks bin/edo-lookup"

# Unpacked under a path with spaces: every tool answers --version, one job runs.
root="$work/a root with spaces"
dpkg-deb -x "$deb" "$root" || { fail "dpkg-deb -x failed"; exit 1; }
for t in $tools; do
  expect 0 "$root/usr/bin/$t" --version
  grep -q "$version" "$work/out" || fail "$t --version does not say $version: $(head -n 1 "$work/out")"
done
expect 0 "$root/usr/bin/edo-quantize" "$src/data-samples/glove.6B.50d.10k.npy" -o "$work/g q.edo" --codec int8 -q
expect 0 "$root/usr/bin/edo-eval" "$src/data-samples/glove.6B.50d.10k.npy" "$work/g q.edo" --gate "recall@10>=0.9" -q
expect 0 "$root/usr/bin/edo-lookup" "$work/g q.edo" --ids - --format text <<<"42"
[ "$(wc -l <"$work/out")" -eq 1 ] || fail "edo-lookup from the package gave $(wc -l <"$work/out") lines for one id"

# A man page opens as man opens it.
if command -v man >/dev/null; then
  MANWIDTH=80 man -l "$root/usr/share/man/man1/edo-quantize.1.gz" >"$work/man.txt" 2>"$work/man.err" ||
    fail "man -l failed: $(cat "$work/man.err")"
  grep -q "compress an embedding table" "$work/man.txt" || fail "the man page lacks its NAME line"
  grep -q -- "--codec" "$work/man.txt" || fail "the man page lacks --codec"
fi

# test/find_package builds against the extracted tree and reads a file.
if ! cmake -S "$src/test/find_package" -B "$work/consumer" -DCMAKE_PREFIX_PATH="$root/usr" \
  -DCMAKE_BUILD_TYPE=Release >"$work/configure.log" 2>&1; then
  fail "the consumer did not configure: $(tail -n 20 "$work/configure.log")"
elif ! cmake --build "$work/consumer" -j2 >"$work/consumer.log" 2>&1; then
  fail "the consumer did not build: $(tail -n 20 "$work/consumer.log")"
else
  expect 0 "$work/consumer/example_lookup" "$work/g q.edo" 0 42
  grep -q '^42:' "$work/out" || fail "the consumer's lookup: $(head -c 300 "$work/out")"
fi

echo "package: $(du -k "$deb" | cut -f1) KB .deb, $(wc -l <"$work/contents") entries; $failures failure(s)"
[ "$failures" -eq 0 ]
