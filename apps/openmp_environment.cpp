// SPDX-License-Identifier: Apache-2.0
// What libgomp reads of the environment, settled before it matters.
//
// libgomp reads OMP_WAIT_POLICY, GOMP_SPINCOUNT and OMP_NUM_THREADS once, in
// its own constructor, before main(); nothing a program does later changes
// them. Two of its defaults hurt the tools:
//   - idle threads spin (GOMP_SPINCOUNT 300000) after each parallel region.
//     Where another process holds a core, a spinning thread takes the slice
//     the working thread needs: FAISS's k-means (pq, opq, rq training) and
//     sweeps, made of thousands of short regions, ran 5-14x slower with one
//     core busy (docs/BENCHMARKS.md, "OpenMP waiting");
//   - an OMP_NUM_THREADS of 100000 made the first parallel region crash, and
//     one that is not a number made libgomp print a warning of its own.
// So an OMP_NUM_THREADS that is not a count from 1 to 1024 is renamed, in
// place, to EDO_BAD_THREADS (as long a name) from the executable's preinit
// array, which runs before any library's constructor, and apply_threads()
// refuses it in one line; and a tool whose environment does not say how to
// wait runs itself again, once, with OMP_WAIT_POLICY=PASSIVE (about 15 ms).
// A wait policy or spin count the user set is kept. Under valgrind or a
// debugger (a tracer attached) the tool is not run again, so that the process
// they watch is the one doing the work (set OMP_WAIT_POLICY to choose there);
// nor where it cannot be (no /proc): it goes on as it is.
#include "cli_common.hpp"

#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>

namespace edo::cli {

namespace {

constexpr const char* kSettled = "EDO_OPENMP_ENVIRONMENT";

// parse_thread_count()'s rule without the library: libc is not set up yet
// when the preinit array runs (no getenv, no exceptions).
bool plain_thread_count(const char* text) {
  while (*text == ' ' || *text == '\t') ++text;
  long value = 0;
  int digits = 0;
  for (; *text >= '0' && *text <= '9'; ++text)
    if (++digits <= 9) value = value * 10 + (*text - '0');
  while (*text == ' ' || *text == '\t') ++text;
  return digits > 0 && digits <= 9 && (*text == '\0' || *text == ',') && value >= 1 && value <= kMaxThreads;
}

void hide_bad_thread_count(int, char**, char** envp) {
  constexpr char kName[] = "OMP_NUM_THREADS=";
  for (char** e = envp; e && *e; ++e)
    if (std::strncmp(*e, kName, sizeof kName - 1) == 0 && (*e)[sizeof kName - 1] != '\0' &&
        !plain_thread_count(*e + sizeof kName - 1))
      std::memcpy(*e, kBadThreadsVariable, sizeof kName - 2);  // the name only: the value stays
}

[[gnu::used, gnu::section(".preinit_array")]] void (*kHideBadThreadCount)(int, char**, char**) = hide_bad_thread_count;

// valgrind preloads its own libraries; a debugger or strace is the tracer.
bool watched() {
  const char* preload = std::getenv("LD_PRELOAD");
  if (preload && std::strstr(preload, "vgpreload")) return true;
  std::ifstream status("/proc/self/status");
  std::string key;
  long tracer = 0;
  while (status >> key) {
    if (key == "TracerPid:") return (status >> tracer) && tracer != 0;
    status.ignore(1 << 16, '\n');
  }
  return false;
}

}  // namespace

void settle_openmp_environment(char** argv) {
  if (std::getenv(kSettled)) {
    ::unsetenv(kSettled);  // not passed on to what the tool may run
    return;
  }
  if (std::getenv("OMP_WAIT_POLICY") || std::getenv("GOMP_SPINCOUNT") || watched()) return;
  ::setenv("OMP_WAIT_POLICY", "PASSIVE", 1);
  ::setenv(kSettled, "1", 1);
  ::execv("/proc/self/exe", argv);
  // Not run again: what this process starts still waits passively.
  ::unsetenv(kSettled);
}

}  // namespace edo::cli
