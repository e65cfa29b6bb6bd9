# SPDX-License-Identifier: Apache-2.0
# Shared by the command-line tests (sourced; not a test itself: only *.sh are).
# Sourced with a test's arguments (BUILD_DIR SOURCE_DIR) it sets $build and
# $src to them and $work to a scratch folder removed at exit; otherwise the
# test sets $work itself. Failures are counted, so one run reports all.
if [ $# -ge 2 ]; then
  build=$(cd "$1" && pwd)
  src=$(cd "$2" && pwd)
  work=$(mktemp -d)
  trap 'rm -rf "$work"' EXIT
fi
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
# expect CODE CMD...: runs CMD, checks its exit code; stdout goes to $work/out, stderr to $work/err.
expect() {
  local want="$1"; shift
  "$@" >"$work/out" 2>"$work/err"; local got=$?
  [ "$got" = "$want" ] || fail "exit $got (want $want): $* :: $(head -c 300 "$work/err")"
}
# err_has TEXT: the last command's stderr is one line containing TEXT.
err_has() {
  [ "$(wc -l <"$work/err")" -eq 1 ] || fail "stderr is not one line: $(cat "$work/err")"
  grep -qF -- "$1" "$work/err" || fail "stderr lacks '$1': $(cat "$work/err")"
}
# sh_blocks FILE DIR: each ```sh block of the Markdown FILE, in order, into DIR/1.sh, DIR/2.sh, ...
sh_blocks() {
  awk -v dir="$2" '/^```sh$/ { inside = 1; n++; next } /^```$/ { inside = 0 } inside { print > (dir "/" n ".sh") }' "$1"
}
