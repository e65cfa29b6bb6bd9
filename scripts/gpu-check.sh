#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# One command for a GPU machine: every GPU test and every GPU benchmark of edo,
# from binaries built here and carried there as one bundle (.gpu-bundle/).
#
# Here (nvcc, no GPU needed):
#   scripts/gpu-check.sh --bundle            build the binaries (build-gpu/) and write .gpu-bundle/edo-gpu.tar.xz
#   scripts/gpu-check.sh --dry-run           the same, then check the bundle: size (with the working tree, under
#                                            64 MiB), unpack it in a temporary folder, every binary finds its
#                                            libraries in it, every binary starts, the GPU tests are reachable
# There (a bare GPU machine; the repository plus the carried .gpu-bundle/):
#   scripts/gpu-check.sh [--quick]           unpack, print GPU/driver/runtime/architecture, run the GPU tests, the
#                                            command-line tools on the GPU and edo_bench_gpu (and beside it torch's
#                                            EmbeddingBag, where a Python with a CUDA torch is found); write gpu-check.json
#                                            and gpu-check.txt (and logs) to --out (default: $OUT, else gpu-check-out/)
#   full run: under 5 minutes on an H200; --quick (tests, one figure per kernel): under 2 minutes; --train adds the
#   trainable codecs' default training on 65,536 x 384 and x 768 tables, GPU against the host's CPU (train.json,
#   train.md; at most 5 minutes more).
#
# Options:
#   --quick            tests plus the benchmark's quick mode
#   --train            also time the default training of pca, pq, opq and rq (issue 15, item 2; not with --quick)
#   --all-tests        run the whole doctest suite on the GPU machine, not only the GPU tests (minutes more)
#   --out DIR          where the results go (on the GPU machine)
#   --bundle-file F    the bundle to write or read (default .gpu-bundle/edo-gpu.tar.xz)
#   --build-dir DIR    build folder for --bundle/--dry-run (default build-gpu; configured and built when needed)
#   --no-build         use the binaries already in --build-dir (ctest does: they are part of the normal build)
#   --fast-compress    xz -1 instead of -9 (the dry run under ctest; the size check is then an upper bound)
# Exit codes: 0 ok; 1 a test, check or benchmark failed; 2 usage; 3 no GPU (or a GPU the bundle cannot run on).
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
mode=run quick=0 train=0 all_tests=0 out="" bundle="" build_dir="" no_build=0 xz_level=-9
while [ $# -gt 0 ]; do
  case "$1" in
    --quick) quick=1 ;;
    --train) train=1 ;;
    --all-tests) all_tests=1 ;;
    --bundle) mode=bundle ;;
    --dry-run) mode=dry-run ;;
    --out) out="$2"; shift ;;
    --bundle-file) bundle="$2"; shift ;;
    --build-dir) build_dir="$2"; shift ;;
    --no-build) no_build=1 ;;
    --fast-compress) xz_level=-1 ;;
    -h|--help) sed -n '3,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "gpu-check.sh: unknown option '$1' (see --help)" >&2; exit 2 ;;
  esac
  shift
done
bundle="${bundle:-$repo/.gpu-bundle/edo-gpu.tar.xz}"
build_dir="${build_dir:-$repo/build-gpu}"

# The size limit of what travels to the GPU machine: working tree plus carried paths.
readonly limit_bytes=$((64 * 1024 * 1024))
# What the bundle carries: the test binary, the benchmark, three tools.
readonly binaries="test/edo_tests scripts/bench/gpu/edo_bench_gpu edo-quantize edo-pack edo-hash"
# The doctest filter that selects the GPU tests (names are matched case-insensitively).
# A test that skips without a GPU must match it: the dry run checks every such test in test/*.cpp.
readonly gpu_test_filter='*cuda*,*gpu*,*cublas*,device:*'
# glibc's own libraries: the bundle carries them apart (glibc/), used only when the
# GPU machine's glibc is older than the binaries need.
readonly glibc_re='^(libc|libm|libdl|libpthread|librt|libresolv|libutil|libanl|ld-linux-x86-64)\.so'

# Temporary folders, removed on exit.
cleanup=()
trap 'for d in "${cleanup[@]}"; do rm -rf "$d"; done' EXIT
new_tempdir() { tmpdir=$(mktemp -d "${TMPDIR:-/tmp}/edo-gpu-check.XXXXXX"); cleanup+=("$tmpdir"); }

say() { printf '%s\n' "$*"; }
die() { printf 'gpu-check.sh: %s\n' "$*" >&2; exit "${2:-1}"; }
mib() { awk -v b="$1" 'BEGIN { printf "%.1f MiB", b / 1048576 }'; }

# Bytes of what travels besides carried paths: tracked and untracked-not-ignored files.
tree_bytes() {
  if git -C "$repo" rev-parse --is-inside-work-tree >/dev/null 2>&1; then
    (cd "$repo" && git ls-files -z --cached --others --exclude-standard |
      xargs -0 -r stat -c %s -- 2>/dev/null | awk '{ s += $1 } END { print s + 0 }')
  else
    (cd "$repo" && find . \( -path './build*' -o -path ./.git -o -path ./.gpu-bundle -o -path ./gpu-check-out \) -prune \
      -o -type f -printf '%s\n' | awk '{ s += $1 } END { print s + 0 }')
  fi
}

# ---- here: build and bundle ------------------------------------------------------------------------

build_binaries() {
  if [ "$no_build" = 1 ]; then return; fi
  command -v nvcc >/dev/null || [ -x /usr/local/cuda/bin/nvcc ] || die "nvcc not found: the bundle needs a CUDA build"
  local log; new_tempdir; log=$tmpdir/configure.log
  local opts=(); [ -f "$build_dir/CMakeCache.txt" ] || opts=(-DCMAKE_BUILD_TYPE=Release -DEDO_BUILD_FUZZERS=OFF)
  cmake -S "$repo" -B "$build_dir" "${opts[@]}" >"$log" 2>&1 || { cat "$log"; die "configure failed"; }
  cmake --build "$build_dir" -j "${EDO_JOBS:-2}" --target edo_tests edo_bench_gpu edo-quantize edo-pack edo-hash
}

make_bundle() {
  local cache="$build_dir/CMakeCache.txt"
  [ -f "$cache" ] || die "$build_dir is not a CMake build folder"
  grep -q 'EDO_BUILD_CUDA_STRING "ON"' "$build_dir/generated/edo/build_info.hpp" ||
    die "$build_dir was built without CUDA: nothing to carry to a GPU" 3
  local b
  for b in $binaries; do [ -x "$build_dir/$b" ] || die "$build_dir/$b is missing (build it, or drop --no-build)"; done

  local stage; new_tempdir; stage=$tmpdir
  local root="$stage/edo-gpu"
  mkdir -p "$root/bin" "$root/lib" "$root/glibc"
  for b in $binaries; do
    cp "$build_dir/$b" "$root/bin/"
    strip --strip-unneeded "$root/bin/$(basename "$b")" 2>/dev/null || true
  done
  # Every shared library the binaries load, except the driver's (libcuda comes with the
  # GPU machine); glibc's apart. ldd's answer here is what the loader will need there.
  local lib name
  for b in "$root"/bin/*; do ldd "$b"; done | awk '/=> \//{ print $3 } /^\t\/.*ld-linux/{ print $1 }' | sort -u |
    while read -r lib; do
      name=$(basename "$lib")
      case "$name" in libcuda.so*|linux-vdso*) continue ;; esac
      if [[ "$name" =~ $glibc_re ]]; then cp -L "$lib" "$root/glibc/$name"; else cp -L "$lib" "$root/lib/$name"; fi
    done
  # What the run needs to know about the build.
  local src archs cuda_ver cublas glibc_need
  src=$(sed -n 's/^CMAKE_HOME_DIRECTORY:INTERNAL=//p' "$cache")
  # The architectures the kernels were compiled for, as the benchmark (same CMake project) reports them.
  archs=$( ("$build_dir/scripts/bench/gpu/edo_bench_gpu" --info 2>/dev/null || true) | sed -n 's/.*built for CUDA architectures //p')
  cuda_ver=$(sed -n 's/^CMAKE_CUDA_COMPILER_VERSION:[A-Z]*=//p' "$build_dir"/CMakeFiles/*/CMakeCUDACompiler.cmake 2>/dev/null |
    head -1)
  [ -n "$cuda_ver" ] || cuda_ver=$(grep -ho 'CMAKE_CUDA_COMPILER_VERSION "[^"]*"' "$build_dir"/CMakeFiles/*/CMakeCUDACompiler.cmake |
    head -1 | cut -d'"' -f2)
  local inc; inc=$(sed -n 's/^CUDAToolkit_INCLUDE_DIR:[A-Z]*=//p' "$cache"); inc="${inc:-/usr/local/cuda/include}"
  cublas="libcublas.so.$(sed -n 's/^#define CUBLAS_VER_MAJOR \([0-9]*\).*/\1/p' "$inc/cublas_api.h" 2>/dev/null)"
  glibc_need=$(for f in "$root"/bin/* "$root"/lib/*; do objdump -T "$f" 2>/dev/null; done |
    grep -o 'GLIBC_[0-9][0-9.]*' | sed 's/GLIBC_//' | sort -uV | tail -1)
  cat >"$root/MANIFEST" <<EOF
source_dir=$src
commit=$(git -C "$repo" rev-parse --short HEAD 2>/dev/null || echo unknown)$(git -C "$repo" diff --quiet HEAD 2>/dev/null || echo "+changes")
built=$(date -u +%Y-%m-%dT%H:%M:%SZ) on $(uname -m)
cuda_compiler=$cuda_ver
cuda_architectures=$archs
cublas_soname=$cublas
glibc_needed=$glibc_need
cpu_flags=$(sed -n 's/^#define EDO_BUILD_MARCH_STRING "\(.*\)"/\1/p' "$build_dir/generated/edo/build_info.hpp")
binaries=$(cd "$root/bin" && echo *)
EOF
  command -v xz >/dev/null || die "xz not found (Debian: apt-get install xz-utils)"
  mkdir -p "$(dirname "$bundle")"
  tar -C "$stage" -cf - edo-gpu | xz -T2 "$xz_level" >"$bundle.tmp"
  mv "$bundle.tmp" "$bundle"
  say "bundle: $bundle, $(mib "$(stat -c %s "$bundle")") compressed, $(mib "$(du -sb "$root" | cut -f1)") unpacked"
  say "  $(ls "$root/bin" | wc -l) binaries, $(ls "$root/lib" | wc -l) libraries, glibc $glibc_need needed (carried apart)"
  sed 's/^/  /' "$root/MANIFEST"
}

check_size() {
  local bb tb total
  bb=$(stat -c %s "$bundle"); tb=$(tree_bytes); total=$((bb + tb))
  say "size: bundle $(mib "$bb") + working tree $(mib "$tb") = $(mib "$total") of the $(mib "$limit_bytes") that may travel"
  [ "$total" -lt "$limit_bytes" ] || die "bundle plus working tree exceed 64 MiB"
}

# Every test in test/*.cpp that skips without a GPU must be selected by the GPU filter.
check_gpu_tests_reachable() {
  local tests=$1 listed missing=0 name
  listed=$("$tests" --list-test-cases --no-version -tc="$gpu_test_filter" 2>&1)
  while IFS= read -r name; do
    [ -n "$name" ] || continue
    if ! grep -qxF "$name" <<<"$listed"; then
      say "  NOT REACHED: GPU test \"$name\" does not match the filter $gpu_test_filter"
      missing=$((missing + 1))
    fi
  done < <(awk '
      FNR == 1 { if (name != "" && gpu) print name; name = ""; gpu = 0 }
      /TEST_CASE\("/ { if (name != "" && gpu) print name; s = $0; sub(/.*TEST_CASE\("/, "", s); sub(/"\).*/, "", s); name = s; gpu = 0 }
      /cuda_available\(|skip_without_gpu\(|knn_device_count\(/ { if (name != "") gpu = 1 }
      END { if (name != "" && gpu) print name }' "$repo"/test/*.cpp)
  [ "$missing" = 0 ] || die "$missing GPU test(s) unreachable: name them with 'cuda' or 'GPU', or widen gpu_test_filter in $0"
  say "gpu tests: $(grep -c '' <<<"$(grep -v '^\[doctest\]\|^=\+$\|^$' <<<"$listed")") selected by $gpu_test_filter, every GPU test in test/*.cpp among them"
}

dry_run() {
  check_size
  local tmp; new_tempdir; tmp=$tmpdir
  xz -dc "$bundle" | tar -C "$tmp" -xf -
  local root="$tmp/edo-gpu" b bad=0 line
  # Libraries: each must resolve into the bundle, or to glibc (carried apart, see run_prefix).
  for b in "$root"/bin/*; do
    while IFS= read -r line; do
      case "$line" in
        *"not found"*) say "  $(basename "$b"): $line"; bad=1 ;;
        *"=> $root/lib/"*|*linux-vdso*|"") ;;
        *)
          lib=$(awk '{ print $1 }' <<<"$line"); lib=$(basename "$lib")
          [[ "$lib" =~ $glibc_re ]] && [ -f "$root/glibc/$lib" ] || { say "  $(basename "$b"): outside the bundle: $line"; bad=1; } ;;
      esac
    done < <(LD_LIBRARY_PATH="$root/lib" ldd "$b" | sed 's/^\t//; s/ (0x[0-9a-f]*)$//')
  done
  [ "$bad" = 0 ] || die "a binary of the bundle needs a library the bundle does not carry"
  say "libraries: every binary resolves every library from the bundle (glibc aside)"
  # Each binary starts, with the host's glibc and with the carried one.
  local loader="$root/glibc/ld-linux-x86-64.so.2"
  for b in "$root"/bin/*; do
    LD_LIBRARY_PATH="$root/lib" "$b" --help >"$tmp/help.txt" 2>&1 || { cat "$tmp/help.txt"; die "$(basename "$b") --help failed"; }
    "$loader" --library-path "$root/lib:$root/glibc" "$b" --help >"$tmp/help.txt" 2>&1 ||
      { cat "$tmp/help.txt"; die "$(basename "$b") --help failed under the carried glibc"; }
  done
  say "start: every binary runs --help (host glibc and carried glibc)"
  check_gpu_tests_reachable "$root/bin/edo_tests"
  # The run itself, minus the GPU: finds no GPU, says so, runs the GPU tests (they skip).
  say "run without a GPU (what the GPU machine runs):"
  local rc=0
  EDO_GPU_CHECK_ROOT="$root" bash "$0" --quick --bundle-file "$bundle" --out "$tmp/out" || rc=$?
  [ "$rc" = 3 ] || die "the run on a machine without a GPU should exit 3 (no GPU), it exited $rc"
  [ -s "$tmp/out/gpu-check.json" ] && [ -s "$tmp/out/gpu-check.txt" ] || die "the run wrote no gpu-check.json/.txt"
  grep -q '"status": "no-gpu"' "$tmp/out/gpu-check.json" || die "gpu-check.json does not say no-gpu"
  if command -v python3 >/dev/null && python3 -c 'import json' 2>/dev/null; then
    python3 -c 'import json, sys; json.load(open(sys.argv[1]))' "$tmp/out/gpu-check.json" || die "gpu-check.json is not JSON"
  fi
  say "dry run: ok"
}

# ---- there: run -------------------------------------------------------------------------------------

json_str() { printf '"%s"' "$(printf '%s' "$1" | sed 's/\\/\\\\/g; s/"/\\"/g; s/\t/ /g' | tr -d '\r' | tr '\n' ' ')"; }

run_checks() {
  out="${out:-${OUT:-$repo/gpu-check-out}}"
  mkdir -p "$out"
  local root="${EDO_GPU_CHECK_ROOT:-}" tmp
  new_tempdir; tmp=$tmpdir
  if [ -z "$root" ]; then
    [ -f "$bundle" ] || die "no bundle at $bundle: build it with scripts/gpu-check.sh --bundle (and carry .gpu-bundle)"
    xz -dc "$bundle" 2>/dev/null | tar -C "$tmp" -xf - ||
      python3 -c 'import lzma, sys, tarfile; tarfile.open(fileobj=lzma.open(sys.argv[1])).extractall(sys.argv[2])' \
        "$bundle" "$tmp" || die "cannot unpack $bundle"
    root="$tmp/edo-gpu"
  fi
  manifest() { sed -n "s/^$1=//p" "$root/MANIFEST"; }
  local started=$SECONDS summary="$out/gpu-check.txt" status=ok
  : >"$summary"
  report() { printf '%s\n' "$*" | tee -a "$summary"; }

  report "edo gpu-check ($([ "$quick" = 1 ] && echo quick || echo full)), $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  report "bundle: commit $(manifest commit), built $(manifest built), CUDA $(manifest cuda_compiler), architectures sm_$(manifest cuda_architectures), glibc >= $(manifest glibc_needed)"

  # Libraries: the bundle's, then cuBLAS (dlopen'd by k-NN) from the machine's CUDA or pip packages.
  local cublas_name cublas_dir="" d
  cublas_name=$(manifest cublas_soname)
  for d in /usr/local/cuda/lib64 /usr/local/cuda/lib /usr/local/cuda/targets/x86_64-linux/lib /usr/local/cuda-*/lib64 \
           /usr/lib/x86_64-linux-gnu; do
    if [ -e "$d/$cublas_name" ]; then cublas_dir=$d; break; fi
  done
  if [ -z "$cublas_dir" ]; then
    local py site
    for py in python3 /opt/torch/.venv/bin/python3; do
      command -v "$py" >/dev/null || continue
      for site in $("$py" -c 'import site; print(" ".join(site.getsitepackages()))' 2>/dev/null); do
        d=$(find "$site/nvidia" -maxdepth 3 -name "$cublas_name" -printf '%h\n' 2>/dev/null | head -1)
        if [ -n "$d" ]; then cublas_dir=$d; break 2; fi
      done
    done
  fi
  local libpath="$root/lib${cublas_dir:+:$cublas_dir}" driver_dirs=""
  # The driver's libcuda, where a container mounts it (normally already on the loader's path).
  for d in /usr/local/nvidia/lib64 /usr/local/nvidia/lib; do [ -d "$d" ] && driver_dirs="$driver_dirs:$d"; done
  # The machine's glibc against what the binaries need: else run them through the carried loader.
  local have need prefix=()
  have=$(getconf GNU_LIBC_VERSION 2>/dev/null | awk '{ print $2 }'); need=$(manifest glibc_needed)
  if [ -n "$have" ] && [ "$(printf '%s\n%s\n' "$need" "$have" | sort -V | head -1)" != "$need" ]; then
    report "glibc: the machine has $have, the binaries need $need: running them with the carried glibc"
    libpath="$root/lib:$root/glibc${cublas_dir:+:$cublas_dir}"
    prefix=("$root/glibc/ld-linux-x86-64.so.2")
  fi
  export LD_LIBRARY_PATH="$libpath${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}$driver_dirs"
  # The CPU: the binaries use the instructions of the build machine's level (-march).
  if grep -q 'x86-64-v3' <<<"$(manifest cpu_flags)"; then
    local f
    for f in avx2 fma f16c; do
      grep -qw "$f" /proc/cpuinfo || { report "ERROR: this CPU lacks $f, which the bundle's binaries use (-march=x86-64-v3)"; status=failed; }
    done
  fi
  bin() { local b=$1; shift; timeout 60 "${prefix[@]}" "$root/bin/$b" "$@"; }

  # The tests read data from the source folder they were built in: make it this checkout.
  local src; src=$(manifest source_dir)
  if [ "$src" != "$repo" ] && [ ! -f "$src/data-samples/glove.6B.50d.10k.npy" ]; then
    if [ ! -e "$src" ] && mkdir -p "$(dirname "$src")" 2>/dev/null && ln -s "$repo" "$src" 2>/dev/null; then
      report "data: linked $src -> $repo (the tests' built-in data folder)"
    else
      report "data: WARNING: the tests look for data in $src, which is missing and cannot be linked to $repo"
    fi
  fi

  # The GPU, the driver, the runtime, the build's architecture.
  local smi="" cap="" gpu_rc=0
  local nvsmi; nvsmi=$(command -v nvidia-smi || ls /usr/local/nvidia/bin/nvidia-smi 2>/dev/null || true)
  if [ -n "$nvsmi" ]; then
    smi=$("$nvsmi" --query-gpu=name,driver_version,compute_cap,memory.total --format=csv,noheader 2>/dev/null | head -1 || true)
    cap=$(awk -F', ' '{ gsub(/\./, "", $3); print $3 }' <<<"$smi")
  fi
  report "nvidia-smi: ${smi:-not available}"
  [ -n "$cublas_dir" ] && report "cuBLAS: $cublas_dir/$cublas_name" || report "cuBLAS: $cublas_name not found (k-NN on the GPU will fail)"
  bin edo_bench_gpu --info --json "$out/info.json" >"$tmp/info.txt" 2>&1 || gpu_rc=$?
  sed 's/^/  /' "$tmp/info.txt" | tee -a "$summary"
  if [ -n "$cap" ] && ! tr ';, ' '\n\n\n' <<<"$(manifest cuda_architectures)" | sed 's/-.*//; s/a$//' | grep -qx "$cap"; then
    report "ERROR: the bundle is built for sm_$(manifest cuda_architectures), this GPU is sm_$cap: rebuild here with" \
      "-DCMAKE_CUDA_ARCHITECTURES=$cap (scripts/gpu-check.sh --bundle --build-dir build-gpu-sm$cap after configuring it)"
    gpu_rc=4
  fi
  case "$gpu_rc" in
    0) ;;
    3) status=no-gpu; report "no GPU: the driver reports none (the tests still run; they skip their GPU parts)" ;;
    4) status=arch-mismatch ;;
    *) status=failed; report "edo_bench_gpu --info failed (exit $gpu_rc)" ;;
  esac

  # The GPU tests (or all of them): on a GPU none may skip.
  local filter=() tests_rc=0 skipped=0
  [ "$all_tests" = 1 ] || filter=(-tc="$gpu_test_filter")
  report ""
  report "tests: edo_tests ${filter[*]:-(all)}"
  local test_limit=110; [ "$quick" = 1 ] && test_limit=70; [ "$all_tests" = 1 ] && test_limit=400
  (cd "$tmp" && timeout "$test_limit" \
    "${prefix[@]}" "$root/bin/edo_tests" "${filter[@]}" --no-version --duration=true) >"$out/tests.log" 2>&1 ||
    tests_rc=$?
  skipped=$(grep -c 'MESSAGE:.*skip' "$out/tests.log" || true)
  grep -E '^\[doctest\] (test cases|assertions|Status)' "$out/tests.log" | tee -a "$summary" || true
  grep -E '^[0-9.]+ s: ' "$out/tests.log" | sort -rn | head -10 | sed 's/^/  /' | tee -a "$summary" || true
  grep -E 'ERROR|error:|MESSAGE:.*skip' "$out/tests.log" | sed "s|^$src/||" | sort | uniq -c | head -20 | tee -a "$summary" || true
  if [ "$tests_rc" = 124 ]; then
    report "tests TIMED OUT after $test_limit s (log tests.log: the cases finished before have their durations)"; status=failed
  elif [ "$tests_rc" != 0 ]; then
    report "tests FAILED (exit $tests_rc, log tests.log)"; status=failed
  fi
  if [ "$status" = ok ] && [ "$skipped" -gt 0 ]; then report "tests skipped their GPU parts on a GPU machine"; status=failed; fi

  # The tools on the GPU: files identical to the CPU's, and the GPU evaluation gate.
  local tools_rc=0
  if [ "$gpu_rc" = 0 ]; then
    report ""
    report "tools: edo-quantize / edo-pack / edo-hash --device cuda against --device cpu"
    local g="$repo/data-samples/glove.6B.50d.10k.npy"
    {
      set -x
      codecs="int8 pq:m=10"
      [ "$quick" = 1 ] || codecs="int8 int4:group=32 int5:group=16,scale=fp16 int6 int3 fp8:e4m3 bf16 pca:20,int8 rot,int5 pq:m=10 opq:m=10,nbits=6 rq:m=5,nbits=6 pq:m=10,codebooks=fp16 rq:m=5,nbits=6,codebooks=fp16 rq:m=5,nbits=6,codebooks=int8 tc:bits=5"
      for codec in $codecs; do
        bin edo-quantize "$g" -o "$tmp/c.edo" --codec "$codec" --train-rows 3000 --device cpu -q
        bin edo-quantize "$g" -o "$tmp/g.edo" --codec "$codec" --train-rows 3000 --device cuda -q
        cmp "$tmp/c.edo" "$tmp/g.edo"
      done
      bin edo-quantize "$g" -o "$tmp/g.edo" --codec int8 --device cuda --eval --k 10 --gate 'recall@10>=0.95'
      bin edo-pack "$g" -o "$tmp/p.edo" --device cuda --tier hot:rows=5%:fp16:gpu --tier warm:rows=30%:int8:gpu \
        --tier cold:rest:int4:host --eval --k 10
      # Hash fits: the solver's products on the GPU, the same file; the fit's seconds of each.
      schemes="hash:buckets=2000,k=2"
      [ "$quick" = 1 ] || schemes="hash:buckets=2000,k=2 hash:buckets=1000,k=2,weights=1 qr:buckets=100"
      for scheme in $schemes; do
        for dev in cpu cuda; do
          t0=$(date +%s.%N)
          bin edo-hash "$g" -o "$tmp/h-$dev.edo" --scheme "$scheme" --device "$dev" -q
          echo "hash fit $scheme --device $dev: $(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.2f", b - a }') s"
        done
        cmp "$tmp/h-cpu.edo" "$tmp/h-cuda.edo"
      done
      set +x
    } >"$out/tools.log" 2>&1 || tools_rc=$?
    grep '^hash fit ' "$out/tools.log" | sed 's/^/  /' | tee -a "$summary" || true
    if [ "$tools_rc" = 0 ]; then report "tools: ok (log tools.log)"; else report "tools FAILED (log tools.log)"; status=failed; fi
  fi

  # The benchmark.
  local bench_rc=0
  if [ "$gpu_rc" = 0 ]; then
    report ""
    report "bench: edo_bench_gpu $([ "$quick" = 1 ] && echo --quick)"
    timeout $([ "$quick" = 1 ] && echo 40 || echo 140) "${prefix[@]}" "$root/bin/edo_bench_gpu" \
      $([ "$quick" = 1 ] && echo --quick) --data "$repo/data-samples" --tmp "$tmp" \
      --json "$out/bench.json" --markdown "$out/gpu-check.md" >"$out/bench.log" 2>&1 || bench_rc=$?
    sed -n '/^figure /,$p' "$out/bench.log" | tee -a "$summary"
    [ "$bench_rc" = 0 ] || { report "bench FAILED (exit $bench_rc; 5: a GPU result differed from the CPU; log bench.log)"; tail -5 "$out/bench.log" | tee -a "$summary"; status=failed; }
    # The pooled lookup's peer: torch's EmbeddingBag on the same GPU, where a Python with a CUDA torch is found.
    local py torch_py=""
    for py in python3 /opt/torch/.venv/bin/python3; do
      command -v "$py" >/dev/null && "$py" -c 'import torch, numpy; assert torch.cuda.is_available()' 2>/dev/null && { torch_py=$py; break; }
    done
    if [ -n "$torch_py" ] && [ "$quick" = 0 ]; then
      report "peer: torch EmbeddingBag on the GPU (scripts/bench/gpu/torch_bags.py, $torch_py)"
      timeout 120 "$torch_py" "$repo/scripts/bench/gpu/torch_bags.py" --edo-json "$out/bench.json" \
        --json "$out/torch_bags.json" 2>&1 | tee -a "$summary" || report "peer: torch_bags.py failed (not a check)"
    elif [ -z "$torch_py" ]; then
      report "peer: no Python with a CUDA torch here: torch's EmbeddingBag not timed"
    fi
  fi

  # Issue 15, item 2's training figures (--train, full runs only): minutes, so a run of their own.
  local train_rc=null
  if [ "$gpu_rc" = 0 ] && [ "$quick" = 0 ] && [ "$train" = 1 ]; then
    train_rc=0
    report ""
    report "train: edo_bench_gpu --sections train"
    timeout 300 "${prefix[@]}" "$root/bin/edo_bench_gpu" --sections train --data "$repo/data-samples" --tmp "$tmp" \
      --json "$out/train.json" --markdown "$out/train.md" >"$out/train.log" 2>&1 || train_rc=$?
    sed -n '/^figure /,$p' "$out/train.log" | tee -a "$summary"
    [ "$train_rc" = 0 ] || { report "train FAILED (exit $train_rc; 124: past 300 s, train.json keeps what it measured; log train.log)"; status=failed; }
  fi

  local secs=$((SECONDS - started))
  report ""
  report "status: $status, $secs s; results in $out (gpu-check.json, gpu-check.txt, gpu-check.md, tests.log, tools.log, bench.log; with --train: train.json, train.md, train.log)"
  local passed failed
  passed=$(sed -n 's/^\[doctest\] test cases: *[0-9]* | *\([0-9]*\) passed.*/\1/p' "$out/tests.log" | head -1)
  failed=$(sed -n 's/^\[doctest\] test cases:.*| *\([0-9]*\) failed.*/\1/p' "$out/tests.log" | head -1)
  {
    printf '{\n  "schema": "edo-gpu-check/1",\n  "mode": %s,\n  "status": %s,\n  "seconds": %s,\n' \
      "$(json_str "$([ "$quick" = 1 ] && echo quick || echo full)")" "$(json_str "$status")" "$secs"
    printf '  "nvidia_smi": %s,\n  "bundle": {' "$(json_str "$smi")"
    local first=1 k v
    while IFS='=' read -r k v; do
      [ "$first" = 1 ] || printf ','; first=0
      printf '\n    %s: %s' "$(json_str "$k")" "$(json_str "$v")"
    done <"$root/MANIFEST"
    printf '\n  },\n  "cublas": %s,\n' "$(json_str "${cublas_dir:+$cublas_dir/$cublas_name}")"
    printf '  "tests": {"filter": %s, "exit": %s, "passed": %s, "failed": %s, "skip_messages": %s},\n' \
      "$(json_str "${filter[*]:-all}")" "$tests_rc" "${passed:-null}" "${failed:-null}" "$skipped"
    printf '  "tools_exit": %s,\n  "bench_exit": %s,\n  "train_exit": %s,\n' \
      "$([ "$gpu_rc" = 0 ] && echo "$tools_rc" || echo null)" "$([ "$gpu_rc" = 0 ] && echo "$bench_rc" || echo null)" \
      "$train_rc"
    printf '  "info": '
    if [ -s "$out/info.json" ]; then cat "$out/info.json"; else printf 'null\n'; fi
    printf '  ,\n  "bench": '
    if [ -s "$out/bench.json" ]; then cat "$out/bench.json"; else printf 'null\n'; fi
    printf '}\n'
  } >"$out/gpu-check.json"
  rm -f "$out/info.json" "$out/bench.json" "$out/info.json.tmp" "$out/bench.json.tmp"
  case "$status" in
    ok) return 0 ;;
    no-gpu|arch-mismatch) return 3 ;;
    *) return 1 ;;
  esac
}

case "$mode" in
  bundle) build_binaries; make_bundle; check_size ;;
  dry-run)
    build_binaries; make_bundle; dry_run ;;
  run) run_checks ;;
esac
