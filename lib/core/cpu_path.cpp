// SPDX-License-Identifier: Apache-2.0
#include <edo/cpu_path.hpp>
#include <edo/error.hpp>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

#include <atomic>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

namespace edo {

const char* cpu_path_name(CpuPath path) {
  switch (path) {
    case CpuPath::portable:
      return "portable";
    case CpuPath::avx2:
      return "avx2";
    case CpuPath::avx512:
      return "avx512";
  }
  return "portable";
}

CpuPath parse_cpu_path(std::string_view name) {
  for (const CpuPath p : {CpuPath::portable, CpuPath::avx2, CpuPath::avx512})
    if (name == cpu_path_name(p)) return p;
  EDO_USAGE_FAIL("CPU path '{}': expected portable, avx2 or avx512", name);
}

CpuPath cpu_path_supported() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_cpu_init();
  // FMA and F16C from CPUID leaf 1 (clang's __builtin_cpu_supports knows no "f16c").
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  const bool fma_f16c = __get_cpuid(1, &eax, &ebx, &ecx, &edx) && (ecx & bit_FMA) && (ecx & bit_F16C);
  if (!__builtin_cpu_supports("avx2") || !fma_f16c) return CpuPath::portable;
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl"))
    return CpuPath::avx512;
  return CpuPath::avx2;
#else
  return CpuPath::portable;
#endif
}

namespace {

void require_supported(CpuPath path, const char* source) {
  const CpuPath best = cpu_path_supported();
  if (static_cast<uint8_t>(path) > static_cast<uint8_t>(best))
    EDO_USAGE_FAIL("{}CPU path {}: this CPU runs {} at most", source, cpu_path_name(path), cpu_path_name(best));
}

CpuPath from_environment() {
  const char* name = std::getenv("EDO_CPU_PATH");
  if (!name || !*name) return cpu_path_supported();
  CpuPath path;
  try {
    path = parse_cpu_path(name);
  } catch (const Error&) {
    EDO_USAGE_FAIL("EDO_CPU_PATH={}: expected portable, avx2 or avx512", name);
  }
  require_supported(path, "EDO_CPU_PATH: ");
  return path;
}

constexpr uint8_t kUnset = 0xff;
std::atomic<uint8_t> g_path{kUnset};

}  // namespace

CpuPath cpu_path() {
  uint8_t p = g_path.load(std::memory_order_relaxed);
  if (p == kUnset) {
    p = static_cast<uint8_t>(from_environment());
    g_path.store(p, std::memory_order_relaxed);
  }
  return static_cast<CpuPath>(p);
}

void set_cpu_path(CpuPath path) {
  require_supported(path, "");
  g_path.store(static_cast<uint8_t>(path), std::memory_order_relaxed);
}

uint64_t huge_page_bytes() {
  std::ifstream in("/proc/self/smaps_rollup");
  uint64_t kib = 0;
  for (std::string line; std::getline(in, line);) {
    std::istringstream fields(line);
    std::string key;
    uint64_t value = 0;
    if (!(fields >> key >> value)) continue;
    if (key == "AnonHugePages:" || key == "FilePmdMapped:" || key == "ShmemPmdMapped:") kib += value;
  }
  return kib * 1024;
}

}  // namespace edo
