// Include once in an executable's main file (every edo tool, the tests and
// the lookup example do): idle OpenMP threads then sleep instead of spinning.
//
// libgomp reads OMP_WAIT_POLICY once, in its own constructor, before main
// runs, so a setenv in main is too late. The executable's .preinit_array
// runs before any shared library's constructor, so this default reaches it.
// With another process on one of two cores, spinning threads turned a
// 0.15 s edo-profile into 79 s (docs/BENCHMARKS.md, "OpenMP waiting"). A
// user's own OMP_WAIT_POLICY (or GOMP_SPINCOUNT) wins. Executables only: a
// shared library's .preinit_array is not run.
#pragma once

#include <cstdlib>

namespace edo::detail {
inline void default_passive_wait(int, char**, char**) { ::setenv("OMP_WAIT_POLICY", "PASSIVE", 0); }
}  // namespace edo::detail

[[gnu::section(".preinit_array"), gnu::used]] static void (*edo_preinit_passive_wait)(int, char**, char**) =
    &edo::detail::default_passive_wait;
