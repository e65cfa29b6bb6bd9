#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Builds the round-trip and JSON libFuzzer targets (fuzz/roundtrip_*.cpp,
# fuzz/json_*.cpp: see fuzz/README.md) against the static libraries BUILD_DIR
# already holds, and runs each for a bounded time on a scratch copy of its
# seeds in fuzz/corpus/NAME/. The libraries are the project's own build
# (gcc, uninstrumented); only each target's own file is compiled with
# -fsanitize=fuzzer,address,undefined. A failed check (the targets abort()
# with a message), crash, leak, sanitizer report or hang fails the test; no
# clang with libFuzzer on the machine skips it.
#
#   fuzz_roundtrip.sh BUILD_DIR SOURCE_DIR
#
# Include directories and defines come from the build itself (CMake's
# CMakeFiles/edo_*.dir/flags.make), and the libraries and their external
# dependencies (FAISS, BLAS/LAPACK, HDF5, fmt, xxHash, libzip, zlib,
# liburing, libgomp, the CUDA static runtime in a CUDA build) from the link
# line of the tool that links every library (CMakeFiles/edo-profile.dir/link.txt),
# so the targets follow the build when targets or header folders move.
#
# Environment: EDO_FUZZ_SECONDS (per target, default 15), EDO_FUZZ_JOBS
# (targets built and run at once, default 2), EDO_FUZZ_CXX (the compiler).
set -euo pipefail

build_dir=$(cd "$1" && pwd)
src_dir=$(cd "$2" && pwd)
seconds=${EDO_FUZZ_SECONDS:-15}
jobs=${EDO_FUZZ_JOBS:-2}
work="$build_dir/fuzz_roundtrip"
mkdir -p "$work/bin" "$work/run"

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

targets=()
sources=()
for src in "$src_dir"/fuzz/roundtrip_*.cpp "$src_dir"/fuzz/json_*.cpp; do
  [[ -e "$src" ]] || continue
  targets+=("$(basename "$src" .cpp)")
  sources+=("$src")
done
if (( ${#targets[@]} == 0 )); then echo "fuzz_roundtrip: no targets in $src_dir/fuzz"; exit 1; fi

# ---- compile flags, from the build ------------------------------------------------------
# Every library target's include directories and defines, in order, once each;
# the CPU flags (-march) of their compile lines.
flag_files=("$build_dir"/CMakeFiles/edo_*.dir/flags.make)
includes=()
defines=()
march=
add_unique() {  # array-name word...
  local -n arr=$1
  shift
  local w have
  for w in "$@"; do
    have=0
    for x in "${arr[@]}"; do [[ "$x" == "$w" ]] && { have=1; break; }; done
    (( have )) || arr+=("$w")
  done
}
if [[ -e "${flag_files[0]}" ]]; then
  for f in "${flag_files[@]}"; do
    read -r -a words <<<"$(sed -n 's/^CXX_INCLUDES = //p' "$f")"
    for (( i = 0; i < ${#words[@]}; ++i )); do
      case "${words[i]}" in
        -isystem) add_unique includes "-isystem${words[i + 1]}"; i=$((i + 1)) ;;
        -I*) add_unique includes "${words[i]}" ;;
      esac
    done
    # Quoted values (a private define's path) are left out: no target uses them.
    read -r -a words <<<"$(sed -n 's/^CXX_DEFINES = //p' "$f")"
    for w in "${words[@]}"; do [[ "$w" == *'"'* ]] || add_unique defines "$w"; done
    if [[ -z "$march" ]]; then march=$(sed -n 's/^CXX_FLAGS = .*\(-march=[^ ]*\).*/\1/p' "$f"); fi
  done
else
  echo "fuzz_roundtrip: no $build_dir/CMakeFiles/edo_*.dir/flags.make (not a Makefile build): the source tree's include folders"
  if grep -q 'CMAKE_CUDA_COMPILER:FILEPATH=/' "$build_dir/CMakeCache.txt" 2>/dev/null; then defines+=(-DEDO_HAVE_CUDA=1); fi
fi
# A build configured before headers moved lacks the new folders: any edo
# header the targets include that none of them holds brings in the source
# tree's public and private header folders.
missing=
while read -r header; do
  found=0
  for inc in "${includes[@]}"; do
    [[ -f "${inc#-I}/$header" || -f "${inc#-isystem}/$header" ]] && { found=1; break; }
  done
  (( found )) || missing="$missing $header"
done < <(cat "${sources[@]}" "$src_dir"/fuzz/*.hpp | sed -n 's/^#include <\(edo\/[^>]*\)>.*/\1/p' | sort -u)
if [[ -n "$missing" ]]; then
  echo "fuzz_roundtrip: the build's include folders lack$missing; adding the source tree's"
  for d in "$src_dir"/lib/*/include "$src_dir"/formats/*/include "$src_dir"/lib "$src_dir"/formats \
      "$src_dir"/kernels "$build_dir/generated"; do
    if [[ -d "$d" ]]; then add_unique includes "-I$d"; fi
  done
fi

# std::source_location for clang < 15 (fuzz_compat.bash).
source "$src_dir/test/cli/fuzz_compat.bash"
fuzz_source_location_compat "$cxx" "$work"

# -fno-sanitize-recover makes any undefined behaviour a crash, not a log line.
cxxflags=(-std=c++20 -O1 -gline-tables-only -fno-omit-frame-pointer -fno-sanitize-recover=all
  -fsanitize=fuzzer,address,undefined $march "${compat_flags[@]}" "${defines[@]}" "${includes[@]}"
  -I"$src_dir/fuzz")

# ---- libraries, from the build ----------------------------------------------------------
# The link line of edo-profile, which links every library (edo::edo): its
# archives, shared libraries, -l, -L and -Wl words, archives named relative
# to the build folder made absolute.
link_txt="$build_dir/CMakeFiles/edo-profile.dir/link.txt"
libs=()
if [[ -f "$link_txt" ]]; then
  read -r -a words <<<"$(sed 's/.* -o edo-profile //' "$link_txt")"
  for w in "${words[@]}"; do
    case "$w" in
      -L* | -l* | -Wl,*) libs+=("$w") ;;
      *.a | *.so | *.so.*) [[ "$w" == /* ]] && libs+=("$w") || libs+=("$build_dir/$w") ;;
    esac
  done
else
  echo "fuzz_roundtrip: no $link_txt: linking the edo archives and their usual dependencies"
  for l in profile store eval codecs io reader decoders container core; do libs+=("$build_dir/libedo_$l.a"); done
  libs+=(-lfaiss -llapack -lblas -lopenblas $(pkg-config --libs hdf5 libzip 2>/dev/null || echo -lhdf5 -lzip) -lfmt -lxxhash
    -lz -luring -lgomp)
  # A CUDA build's archives call the CUDA runtime (Ninja builds have no flags.make to say so).
  if printf '%s\n' "${defines[@]}" | grep -q EDO_HAVE_CUDA || nm -u "$build_dir/libedo_core.a" 2>/dev/null | grep -c cudaFree >/dev/null; then
    cuda_lib=$(sed -n 's/^CUDAToolkit_LIBRARY_DIR:PATH=//p' "$build_dir/CMakeCache.txt" 2>/dev/null)
    libs+=(-L"${cuda_lib:-/usr/local/cuda/lib64}" -lcudart_static -ldl -lrt -lpthread)
  fi
fi
for a in "${libs[@]}"; do
  if [[ "$a" == "$build_dir"/libedo_*.a && ! -f "$a" ]]; then
    echo "fuzz_roundtrip: $a is missing: build the project first"; exit 1
  fi
done

# A target's object is recompiled when its source, a header of the source
# tree or the build, the flags or the compiler change, and relinked when the
# object or an edo archive changes (stamps beside them): a rebuilt library
# costs a link, not a compile.
hash_of() { sha256sum | cut -c1-32; }
header_dirs=()
for inc in "${includes[@]}"; do
  d=${inc#-I}
  d=${d#-isystem}
  if [[ -d "$d" && ( "$d" == "$src_dir"/* || "$d" == "$build_dir"/* ) ]]; then header_dirs+=("$d"); fi
done
compile_hash=$( { "$cxx" --version; echo "${cxxflags[*]}";
  if (( ${#header_dirs[@]} )); then find "${header_dirs[@]}" -maxdepth 3 \( -name '*.hpp' -o -name '*.h' \) -type f | sort -u | xargs cat; fi
  cat "$src_dir"/fuzz/*.hpp; } | hash_of)
link_hash=$( { echo "${libs[*]}";
  for a in "${libs[@]}"; do if [[ "$a" == *.a && "$a" == "$build_dir"/* ]]; then cat "$a"; fi; done; } | hash_of)
mkdir -p "$work/obj"

build_target() {  # name
  local name=$1 src="$src_dir/fuzz/$1.cpp" obj="$work/obj/$1.o" bin="$work/bin/$1" stamp
  stamp=$( { echo "$compile_hash"; cat "$src"; } | hash_of)
  if [[ ! -f "$obj" || "$(cat "$obj.stamp" 2>/dev/null)" != "$stamp" ]]; then
    echo "fuzz_roundtrip: compiling $name"
    if "$cxx" "${cxxflags[@]}" -c "$src" -o "$obj.tmp" 2>"$obj.log"; then
      mv "$obj.tmp" "$obj" && echo "$stamp" >"$obj.stamp"
    else
      echo "fuzz_roundtrip: cannot compile $src:"; cat "$obj.log"; return 1
    fi
  fi
  stamp=$( { cat "$obj.stamp"; echo "$link_hash"; } | hash_of)
  [[ -x "$bin" && "$(cat "$bin.stamp" 2>/dev/null)" == "$stamp" ]] && return 0
  if "$cxx" -fsanitize=fuzzer,address,undefined "$obj" "${libs[@]}" -o "$bin.tmp" 2>"$bin.log"; then
    mv "$bin.tmp" "$bin" && echo "$stamp" >"$bin.stamp"
  else
    echo "fuzz_roundtrip: cannot link $name:"; cat "$bin.log"; return 1
  fi
}

# Each target works on a scratch copy so the checked-in seeds never change;
# its temporary files (roundtrip_shards) go under its run folder. One
# OpenMP thread: the libraries' parallel loops stay out of the way of the
# other target running beside it.
run_target() {  # name
  local name=$1 dir="$work/run/$1"
  build_target "$name" || return 1
  [[ -z "${EDO_FUZZ_BUILD_ONLY:-}" ]] || return 0  # the build's fuzz target: built, not run
  rm -rf "$dir"
  mkdir -p "$dir/corpus" "$dir/tmp"
  if [[ -d "$src_dir/fuzz/corpus/$name" ]]; then cp -R "$src_dir/fuzz/corpus/$name/." "$dir/corpus/"; fi
  if OMP_NUM_THREADS=1 TMPDIR="$dir/tmp" "$work/bin/$name" -max_total_time="$seconds" -rss_limit_mb=2048 \
      -timeout=30 -artifact_prefix="$dir/" -print_final_stats=1 "$dir/corpus" >"$dir/log" 2>&1; then
    echo "$name: ok, $(grep -o 'Done [0-9]* runs' "$dir/log" | tail -1 | cut -d' ' -f2) runs in ${seconds}s"
  else
    echo "$name: FAILED (log $dir/log)"
    grep -E "^(roundtrip_|json_)[a-z]*: " "$dir/log" | head -n 5 || true
    tail -n 60 "$dir/log"
    ls "$dir"/crash-* "$dir"/leak-* "$dir"/timeout-* "$dir"/oom-* 2>/dev/null || true
    return 1
  fi
}

failed_mark="$work/failed"
rm -f "$failed_mark"
for name in "${targets[@]}"; do
  while (( $(jobs -rp | wc -l) >= jobs )); do wait -n || true; done
  { run_target "$name" || touch "$failed_mark"; } &
done
wait
[[ ! -e "$failed_mark" ]]
