// SPDX-License-Identifier: Apache-2.0
// When a loop is worth a parallel region. Each region wakes every OpenMP
// thread and ends at a barrier where idle threads spin (libgomp's default:
// users do not set OMP_WAIT_POLICY, and a program cannot set it for itself,
// since libgomp reads it before main). On a machine where another process
// holds a core, each barrier waits for a scheduler slice, so a job made of
// many small regions crawled: over 200 times slower on two threads with a
// core busy than on one (docs/BENCHMARKS.md, "OpenMP waiting"). Small work runs on the
// calling thread, and creates no thread at all.
#pragma once

#include <cstdint>

namespace edo {

// Element operations (values touched, dot products, ...) below which a loop
// runs on one thread: about 10-50 microseconds of work, the cost of waking a team.
inline constexpr uint64_t kParallelMinWork = uint64_t{1} << 15;

inline bool parallel_worth(uint64_t work) { return work >= kParallelMinWork; }

}  // namespace edo
