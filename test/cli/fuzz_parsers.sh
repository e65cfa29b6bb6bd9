#!/usr/bin/env bash
# Builds every fuzz/fuzz_NAME.cpp as a libFuzzer target over all of formats/
# and runs each for a bounded time on a scratch copy of fuzz/corpus/NAME/.
# A crash, leak, sanitizer report or hang fails the test; no clang with
# libFuzzer on the machine skips it.
#
#   fuzz_parsers.sh BUILD_DIR SOURCE_DIR
#
# Environment: EDO_FUZZ_SECONDS (per target, default 15), EDO_FUZZ_JOBS
# (targets compiled and run at once, default 2), EDO_FUZZ_CXX (the compiler).
set -euo pipefail

build_dir=$(cd "$1" && pwd)
src_dir=$(cd "$2" && pwd)
seconds=${EDO_FUZZ_SECONDS:-15}
jobs=${EDO_FUZZ_JOBS:-2}
work="$build_dir/fuzz"
mkdir -p "$work/obj" "$work/bin" "$work/run"

cxx=${EDO_FUZZ_CXX:-}
if [[ -z "$cxx" ]]; then
  for candidate in clang++ clang++-{20..14}; do
    if command -v "$candidate" >/dev/null 2>&1; then cxx=$candidate; break; fi
  done
fi
probe_src="$work/probe.cpp"
printf '#include <cstddef>\n#include <cstdint>\nextern "C" int LLVMFuzzerTestOneInput(const uint8_t*, size_t) { return 0; }\n' \
  >"$probe_src"
if [[ -z "$cxx" ]] || ! "$cxx" -fsanitize=fuzzer "$probe_src" -o "$work/probe" >/dev/null 2>&1; then
  echo "skipped: clang++ with libFuzzer not found"
  exit 0
fi

# -fno-sanitize-recover makes any undefined behaviour a crash, not a log line.
cxxflags=(-std=c++20 -O1 -g -fno-omit-frame-pointer -fno-sanitize-recover=all
  -I"$src_dir/lib" -I"$src_dir/formats" -I"$src_dir/kernels" -I"$build_dir/generated"
  $(pkg-config --cflags hdf5 libzip))
libs=(-lfmt -lxxhash -lzip -lz $(pkg-config --libs hdf5))

# Sources are rebuilt when their text, any header or the flags change: every
# object carries a stamp (a hash of all three) beside it.
hash_of() { sha256sum | cut -c1-32; }
header_dirs=()
for d in "$src_dir/lib" "$src_dir/formats" "$src_dir/kernels" "$build_dir/generated"; do
  [[ -d "$d" ]] && header_dirs+=("$d")
done
headers_hash=$( { "$cxx" --version; echo "${cxxflags[*]}";
  find "${header_dirs[@]}" \( -name '*.hpp' -o -name '*.h' -o -name '*.cuh' \) -type f | sort | xargs cat; } | hash_of)

# Runs "$@" in the background, at most $jobs at once; a failure leaves a mark.
failed_mark="$work/failed"
rm -f "$failed_mark"
run_limited() {
  while (( $(jobs -rp | wc -l) >= jobs )); do wait -n || true; done
  { "$@" || touch "$failed_mark"; } &
}
# Waits for every background job; false when any of them failed.
wait_all() {
  wait
  [[ ! -e "$failed_mark" ]]
}

compile_object() {  # source object stamp
  if "$cxx" "${cxxflags[@]}" -fsanitize=fuzzer-no-link,address,undefined -c "$1" -o "$2.tmp" 2>"$2.log"; then
    mv "$2.tmp" "$2" && echo "$3" >"$2.stamp"
  else
    echo "fuzz: cannot compile $1:"; cat "$2.log"; return 1
  fi
}

objects=()
for src in "$src_dir"/formats/*.cpp; do
  obj="$work/obj/$(basename "$src" .cpp).o"
  objects+=("$obj")
  stamp=$( { echo "$headers_hash"; cat "$src"; } | hash_of)
  if [[ ! -f "$obj" || "$(cat "$obj.stamp" 2>/dev/null)" != "$stamp" ]]; then
    echo "fuzz: compiling $(basename "$src")"
    run_limited compile_object "$src" "$obj" "$stamp"
  fi
done
wait_all || exit 1

archive="$work/libedo_formats_fuzz.a"
archive_stamp=$(cat "${objects[@]/%/.stamp}" | hash_of)
if [[ ! -f "$archive" || "$(cat "$archive.stamp" 2>/dev/null)" != "$archive_stamp" ]]; then
  rm -f "$archive"
  # Objects of sources that were deleted are left out: only this list goes in.
  ar rcs "$archive" "${objects[@]}"
  echo "$archive_stamp" >"$archive.stamp"
fi

link_target() {  # source binary stamp
  if "$cxx" "${cxxflags[@]}" -fsanitize=fuzzer,address,undefined -I"$src_dir/fuzz" "$1" "$archive" "${libs[@]}" \
      -o "$2.tmp" 2>"$2.log"; then
    mv "$2.tmp" "$2" && echo "$3" >"$2.stamp"
  else
    echo "fuzz: cannot build $1:"; cat "$2.log"; return 1
  fi
}

targets=()
for src in "$src_dir"/fuzz/fuzz_*.cpp; do
  [[ -e "$src" ]] || continue
  name=$(basename "$src" .cpp)
  name=${name#fuzz_}
  targets+=("$name")
  bin="$work/bin/fuzz_$name"
  stamp=$( { echo "$archive_stamp"; cat "$src" "$src_dir"/fuzz/*.hpp 2>/dev/null; } | hash_of)
  if [[ ! -x "$bin" || "$(cat "$bin.stamp" 2>/dev/null)" != "$stamp" ]]; then
    echo "fuzz: building fuzz_$name"
    run_limited link_target "$src" "$bin" "$stamp"
  fi
done
wait_all || exit 1
if (( ${#targets[@]} == 0 )); then echo "fuzz: no targets in $src_dir/fuzz"; exit 1; fi

# Each target works on a scratch copy so the checked-in seeds never change.
run_target() {  # name
  local name=$1 dir="$work/run/$1"
  rm -rf "$dir"
  mkdir -p "$dir/corpus"
  if [[ -d "$src_dir/fuzz/corpus/$name" ]]; then cp -R "$src_dir/fuzz/corpus/$name/." "$dir/corpus/"; fi
  if "$work/bin/fuzz_$name" -max_total_time="$seconds" -rss_limit_mb=2048 -timeout=30 \
      -artifact_prefix="$dir/" -print_final_stats=1 "$dir/corpus" >"$dir/log" 2>&1; then
    echo "fuzz_$name: ok, $(grep -o 'Done [0-9]* runs' "$dir/log" | tail -1 | cut -d' ' -f2) runs in ${seconds}s"
  else
    echo "fuzz_$name: FAILED (log $dir/log)"
    tail -n 60 "$dir/log"
    ls "$dir"/crash-* "$dir"/leak-* "$dir"/timeout-* "$dir"/oom-* 2>/dev/null || true
    return 1
  fi
}

for name in "${targets[@]}"; do run_limited run_target "$name"; done
wait_all
