// SPDX-License-Identifier: Apache-2.0
#include <edo/error.hpp>
#include <edo/threads.hpp>

#include <omp.h>
#include <sched.h>

#include <algorithm>
#include <cstdlib>
#include <thread>

namespace edo {

int usable_cores() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (::sched_getaffinity(0, sizeof set, &set) == 0) return std::max(1, CPU_COUNT(&set));
  return std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
}

int parse_thread_count(const std::string& source, const std::string& text) {
  const std::string first = text.substr(0, text.find(','));
  size_t begin = first.find_first_not_of(" \t");
  size_t end = first.find_last_not_of(" \t");
  const std::string digits = begin == std::string::npos ? std::string() : first.substr(begin, end - begin + 1);
  long value = 0;
  bool ok = !digits.empty() && digits.size() <= 9 && digits.find_first_not_of("0123456789") == std::string::npos;
  if (ok) value = std::strtol(digits.c_str(), nullptr, 10);
  if (!ok || value < 1 || value > kMaxThreads)
    EDO_USAGE_FAIL("{}={}: not a thread count from 1 to {}", source, text, kMaxThreads);
  return static_cast<int>(value);
}

int limit_threads(int requested) {
  int count = requested;
  if (count <= 0) {
    const char* env = std::getenv("OMP_NUM_THREADS");
    count = env && *env ? parse_thread_count("OMP_NUM_THREADS", env) : usable_cores();
  }
  count = std::clamp(count, 1, std::min(kMaxThreads, usable_cores()));
  omp_set_num_threads(count);
  return count;
}

}  // namespace edo
