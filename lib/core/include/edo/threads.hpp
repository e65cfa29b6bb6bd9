// SPDX-License-Identifier: Apache-2.0
// How many worker threads a run uses, from every source a count can come
// from: a tool's --threads, the OMP_NUM_THREADS a user or a scheduler set,
// and the cores this process may run on. One rule for all of them
// (docs/CLI.md, "Conventions"): a count is 1 to kMaxThreads, anything else is
// a usage error naming where it came from; the team is never larger than the
// cores the process may use (more threads than cores only wait on each other).
#pragma once

#include <string>

namespace edo {

inline constexpr int kMaxThreads = 1024;

// Cores this process may run on (its CPU affinity mask), at least 1.
int usable_cores();

// Parses a thread count as OMP_NUM_THREADS holds it ("8", or a nesting list
// "8,2" whose first entry is the outer team): the count, or a usage error
// naming `source` when it is not a whole number from 1 to kMaxThreads.
int parse_thread_count(const std::string& source, const std::string& text);

// The team size for `requested` threads (0: none asked, so OMP_NUM_THREADS
// when set, else every usable core), capped at usable_cores(); also set as
// OpenMP's default, before any parallel region can start a team of the
// environment's size.
int limit_threads(int requested);

}  // namespace edo
