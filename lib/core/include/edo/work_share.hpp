// SPDX-License-Identifier: Apache-2.0
// Sharing a serving call's work with idle cores without ever waiting for one.
//
// An OpenMP team starts every thread of the team and ends at a barrier: when
// another process holds a core, the call waits a scheduler slice for the
// thread that core was to run, and a lookup of 4096 rows that takes half a
// millisecond alone took 36 times longer (docs/BENCHMARKS.md, "Pooled
// lookups"). share_work() runs the work on the calling thread from its first
// chunk, while helper threads that happen to be awake claim the next chunks
// one at a time from a shared counter. A helper that has not started claims
// nothing, so the caller simply does every chunk itself; the caller only
// waits for chunks a helper has claimed and is running, so a helper
// descheduled mid-chunk costs at most that one chunk.
//
// Which thread runs a chunk changes from call to call; callers make each
// chunk's result independent of that (each chunk writes its own outputs), so
// results are the same at any thread count.
#pragma once

#include <cstddef>
#include <functional>

namespace edo {

// Threads that may work on one call: the calling thread plus helpers, from
// OpenMP's thread count (OMP_NUM_THREADS, --threads through limit_threads()),
// at most the usable cores. 1 inside an OpenMP parallel region.
int share_threads();

// Calls run(chunk) once for every chunk in [0, chunks), the calling thread
// taking chunks in order from 0 and idle helpers the next unclaimed ones.
// Returns when every chunk has run. When chunks throw, the exception of the
// lowest such chunk is rethrown (the others are dropped), after every chunk
// has run or been claimed. Calls from several threads at once are safe: a
// call that finds the helpers serving another runs alone.
void share_work(size_t chunks, const std::function<void(size_t)>& run);

namespace detail {
// Tests: while held, helpers that wake for a call stop before claiming a
// chunk, as a helper the scheduler has not run would.
void hold_helpers(bool held);
// Chunks helpers have run since the process started (tests).
size_t helper_chunks_run();
}  // namespace detail

}  // namespace edo
