// SPDX-License-Identifier: Apache-2.0
// Which of the CPU kernels' instruction sets serve this process: chosen at
// run time from what the CPU reports, whatever -march the build used, so one
// binary runs the AVX-512 kernels where the CPU has them and the portable
// ones where it has no AVX2 (the reader's pooled lookups, pool_kernels.hpp).
#pragma once

#include <cstdint>
#include <string_view>

namespace edo {

// From least to most: a path needs every instruction set of the ones before it.
enum class CpuPath : uint8_t {
  portable,  // plain C++ (what the compiler makes of it for the build's -march)
  avx2,      // AVX2, FMA and F16C (x86-64-v3)
  avx512,    // the above and AVX-512 F, BW and VL
};

const char* cpu_path_name(CpuPath path);
// "portable", "avx2" or "avx512"; an edo::Error (usage) naming the choices otherwise.
CpuPath parse_cpu_path(std::string_view name);
// The most this CPU runs.
CpuPath cpu_path_supported();
// The path in use: cpu_path_supported(), or the environment's EDO_CPU_PATH
// when it names one the CPU runs (read once; a name the CPU cannot run, or
// no path at all, is an error at first use naming the variable).
CpuPath cpu_path();
// Serve with `path` from now on (tests, benchmarks); an error when the CPU
// cannot run it. Not for use while lookups run on other threads.
void set_cpu_path(CpuPath path);

// Bytes of this process's memory in huge pages (anonymous and file-backed
// transparent huge pages, /proc/self/smaps_rollup), or 0 where the system
// does not say: what a lookup's --stats reports of its pages.
uint64_t huge_page_bytes();

}  // namespace edo
