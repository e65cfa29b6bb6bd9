#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Builds every fuzz/fuzz_NAME.cpp as a libFuzzer target over all of formats/
# and the reader library (lib/reader with the decoders and lib/core it needs)
# and runs each for a bounded time on a scratch copy of fuzz/corpus/NAME/.
# A crash, leak, sanitizer report or hang fails the test; no clang with
# libFuzzer on the machine skips it.
#
#   fuzz_parsers.sh BUILD_DIR SOURCE_DIR
#
# Environment: EDO_FUZZ_SECONDS (per target, default 15), EDO_FUZZ_JOBS
# (targets compiled and run at once, default 2), EDO_FUZZ_CXX (the compiler),
# EDO_FUZZ_MARCH (CPU flags; default -march=x86-64-v3 where the host runs it,
# as the project's own build does; empty for none).
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

# The CPU flags of the project's own build (CMakeLists.txt, EDO_CPU_ARCH=auto):
# x86-64-v3 where the host runs it, so the decoders and the lookup grouping
# are fuzzed on the AVX2/F16C paths a release build takes.
if [[ -n "${EDO_FUZZ_MARCH+set}" ]]; then
  march=$EDO_FUZZ_MARCH
else
  march=
  printf '%s\n' 'int main() { __builtin_cpu_init(); return __builtin_cpu_supports("avx2") &&' \
    '__builtin_cpu_supports("fma") && __builtin_cpu_supports("f16c") ? 0 : 1; }' >"$work/march.cpp"
  if "$cxx" -march=x86-64-v3 "$work/march.cpp" -o "$work/march" >/dev/null 2>&1 && "$work/march"; then
    march=-march=x86-64-v3
  fi
fi

# std::source_location for clang < 15 (fuzz_compat.bash).
source "$src_dir/test/cli/fuzz_compat.bash"
compat_dir="$work/compat"
fuzz_source_location_compat "$cxx" "$work"

# Every target's public headers (lib/*/include, formats/*/include); private
# headers are found beside their sources.
include_flags=()
for d in "$src_dir"/lib/*/include "$src_dir"/formats/*/include; do include_flags+=(-I"$d"); done

# -fno-sanitize-recover makes any undefined behaviour a crash, not a log line.
# -gline-tables-only: file and line in every stack trace, for about a quarter
# less compile time than -g. No CUDA (EDO_HAVE_CUDA stays undefined) and no
# -fopenmp: the reader's omp pragmas are ignored, so every target runs on one thread.
cxxflags=(-std=c++20 -O1 -gline-tables-only -fno-omit-frame-pointer -fno-sanitize-recover=all
  $march "${compat_flags[@]}"
  "${include_flags[@]}" -I"$src_dir/kernels" -I"$build_dir/generated"
  $(pkg-config --cflags hdf5 libzip))
libs=(-lfmt -lxxhash -lzip -lz -luring $(pkg-config --libs hdf5))

# Sources are rebuilt when their text, any header or the flags change: every
# object carries a stamp (a hash of all three) beside it.
hash_of() { sha256sum | cut -c1-32; }
header_dirs=()
for d in "$src_dir/lib" "$src_dir/formats" "$src_dir/kernels" "$build_dir/generated" "$compat_dir"; do
  [[ -d "$d" ]] && header_dirs+=("$d")
done
headers_hash=$( { "$cxx" --version; echo "${cxxflags[*]}";
  find "${header_dirs[@]}" \( -name '*.hpp' -o -name '*.h' -o -name '*.cuh' \) -type f | sort | xargs cat; } | hash_of)

# Runs "$@" in the background, at most $jobs at once; a failure leaves a mark.
# The reader library's build (reader_pid, below) runs beside them, uncounted.
failed_mark="$work/failed"
rm -f "$failed_mark"
reader_pid=
run_limited() {
  while (( $(jobs -rp | grep -cvxF "${reader_pid:-none}") >= jobs )); do wait -n || true; done
  { "$@" || touch "$failed_mark"; } &
}
# Waits for every background job; false when any of them failed.
wait_all() {
  wait
  [[ ! -e "$failed_mark" ]]
}

# The pooling kernels' per-CPU-path files take the instruction sets and the
# no-contraction rule CMakeLists.txt gives them.
source_flags() {  # source
  case "$1" in
    *_avx512.cpp) echo -ffp-contract=off -mavx2 -mfma -mf16c -mavx512f -mavx512bw -mavx512vl ;;
    *_avx2.cpp) echo -ffp-contract=off -mavx2 -mfma -mf16c ;;
    */pool_kernels.cpp) echo -ffp-contract=off ;;
  esac
}
compile_object() {  # source object stamp
  # shellcheck disable=SC2046 # the flags are words
  if "$cxx" "${cxxflags[@]}" $(source_flags "$1") -fsanitize=fuzzer-no-link,address,undefined -c "$1" -o "$2.tmp" \
    2>"$2.log"; then
    mv "$2.tmp" "$2" && echo "$3" >"$2.stamp"
  else
    echo "fuzz: cannot compile $1:"; cat "$2.log"; return 1
  fi
}

# Two archives: formats/ with what it stands on (lib/core: CMakeLists.txt's
# edo_core, edo_container and edo_io: every parser), and the reader library
# with what it needs beyond them -- edo_decoders (lib/decoders) and
# edo_reader (lib/reader) -- plus the reader of stored safetensors codes
# (lib/store/safetensors_codes.cpp), which fuzz_safetensors drives and which
# needs nothing else of lib/store.
formats_sources=("$src_dir"/lib/core/*.cpp "$src_dir"/formats/*/*.cpp)
reader_sources=("$src_dir"/lib/decoders/*.cpp "$src_dir"/lib/reader/*.cpp "$src_dir"/lib/store/safetensors_codes.cpp)

# An object per source, named by its path (lib/reader/tiers.cpp: lib_reader_tiers.o);
# sets $objects to those of "$@".
objects=()
compile_sources() {
  objects=()
  local src rel obj stamp
  for src in "$@"; do
    rel=${src#"$src_dir"/}
    obj="$work/obj/${rel//\//_}"
    obj="${obj%.cpp}.o"
    objects+=("$obj")
    stamp=$( { echo "$headers_hash"; cat "$src"; } | hash_of)
    if [[ ! -f "$obj" || "$(cat "$obj.stamp" 2>/dev/null)" != "$stamp" ]]; then
      echo "fuzz: compiling $rel"
      run_limited compile_object "$src" "$obj" "$stamp"
    fi
  done
}
make_archive() {  # archive objects...
  local archive=$1 stamp
  shift
  stamp=$(cat "${@/%/.stamp}" | hash_of)
  if [[ ! -f "$archive" || "$(cat "$archive.stamp" 2>/dev/null)" != "$stamp" ]]; then
    rm -f "$archive"
    # Objects of sources that were deleted are left out: only this list goes in.
    ar rcs "$archive" "$@"
    echo "$stamp" >"$archive.stamp"
  fi
}

compile_sources "${formats_sources[@]}"
wait_all || exit 1
archive="$work/libedo_formats_fuzz.a"
make_archive "$archive" "${objects[@]}"

# The reader library compiles in the background while the targets that do
# not link it are built and run: their fixed run time hides its compile time.
reader_archive="$work/libedo_reader_fuzz.a"
(
  failed_mark="$work/reader_failed"
  rm -f "$failed_mark"
  compile_sources "${reader_sources[@]}"
  wait_all && make_archive "$reader_archive" "${objects[@]}"
) &
reader_pid=$!

# A target that includes a reader-library header links the reader archive too.
uses_reader() { grep -qE '^#include <edo/(reader|tier|codec|sparse|safetensors_codes|shard_set)\.hpp>' "$1"; }

build_target() {  # name
  local name=$1 src="$src_dir/fuzz/fuzz_$1.cpp" bin="$work/bin/fuzz_$1" stamp
  local link=("$archive")
  if uses_reader "$src"; then link=("$reader_archive" "$archive"); fi
  stamp=$( { cat "${link[@]/%/.stamp}" "$src" "$src_dir"/fuzz/*.hpp 2>/dev/null; } | hash_of)
  [[ -x "$bin" && "$(cat "$bin.stamp" 2>/dev/null)" == "$stamp" ]] && return 0
  echo "fuzz: building fuzz_$name"
  if "$cxx" "${cxxflags[@]}" -fsanitize=fuzzer,address,undefined -I"$src_dir/fuzz" "$src" \
      "${link[@]}" "${libs[@]}" -o "$bin.tmp" 2>"$bin.log"; then
    mv "$bin.tmp" "$bin" && echo "$stamp" >"$bin.stamp"
  else
    echo "fuzz: cannot build $src:"; cat "$bin.log"; return 1
  fi
}

# Each target works on a scratch copy so the checked-in seeds never change.
run_target() {  # name
  local name=$1 dir="$work/run/$1"
  build_target "$name" || return 1
  [[ -z "${EDO_FUZZ_BUILD_ONLY:-}" ]] || return 0  # the build's fuzz target: built, not run
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

parser_targets=()
reader_targets=()
for src in "$src_dir"/fuzz/fuzz_*.cpp; do
  [[ -e "$src" ]] || continue
  name=$(basename "$src" .cpp)
  name=${name#fuzz_}
  if uses_reader "$src"; then reader_targets+=("$name"); else parser_targets+=("$name"); fi
done
if (( ${#parser_targets[@]} + ${#reader_targets[@]} == 0 )); then
  echo "fuzz: no targets in $src_dir/fuzz"; wait; exit 1
fi

for name in "${parser_targets[@]}"; do run_limited run_target "$name"; done
if wait "$reader_pid" && [[ -f "$reader_archive" ]]; then
  reader_pid=
  for name in "${reader_targets[@]}"; do run_limited run_target "$name"; done
else
  echo "fuzz: the reader library did not build"; touch "$failed_mark"
fi
wait_all
