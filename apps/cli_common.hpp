// Shared by the command-line tools only: the error-to-exit-code mapping and
// the --version text. Library code never includes this.
#pragma once

#include <CLI/CLI.hpp>
#include <edo/build_info.hpp>
#include <edo/error.hpp>
#include <fmt/format.h>

#include <cstdio>
#include <exception>
#include <new>
#include <string>

namespace edo::cli {

inline std::string version_text(const char* tool) {
  return fmt::format("{} {} (CUDA {}, CPU target '{}')", tool, EDO_VERSION_STRING,
                     EDO_BUILD_CUDA_STRING, EDO_BUILD_MARCH_STRING[0] ? EDO_BUILD_MARCH_STRING : "default");
}

// Runs `body` and turns every way it can fail into one line on stderr and the
// documented exit code: 1 runtime, 2 usage, 3 gate.
template <class Body>
int run_tool(const char* tool, CLI::App& app, int argc, char** argv, Body&& body) {
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::fprintf(stderr, "%s: error: %s (see %s --help)\n", tool, e.what(), tool);
    return static_cast<int>(ExitCode::usage);
  }
  try {
    return body();
  } catch (const Error& e) {
    std::fprintf(stderr, "%s: error: %s\n", tool, e.what());
    return static_cast<int>(e.code());
  } catch (const std::bad_alloc&) {
    std::fprintf(stderr, "%s: error: out of memory\n", tool);
    return static_cast<int>(ExitCode::runtime);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: error: %s\n", tool, e.what());
    return static_cast<int>(ExitCode::runtime);
  }
}

inline void add_version_flag(CLI::App& app, const char* tool) {
  app.set_version_flag("--version", version_text(tool), "Print version and build options, then exit");
}

}  // namespace edo::cli

#include <omp.h>
#include <unistd.h>

#include <chrono>
#include <functional>

namespace edo::cli {

// Rate-limited progress on stderr, only when stderr is a terminal and not --quiet.
class Progress {
 public:
  Progress(std::string label, bool quiet) : label_(std::move(label)), enabled_(!quiet && ::isatty(STDERR_FILENO)) {}
  ~Progress() {
    if (shown_) std::fprintf(stderr, "\r\033[K");
  }
  std::function<void(uint64_t, uint64_t)> callback() {
    if (!enabled_) return {};
    return [this](uint64_t done, uint64_t total) { update(done, total); };
  }

 private:
  void update(uint64_t done, uint64_t total) {
    const auto now = std::chrono::steady_clock::now();
    if (shown_ && now - last_ < std::chrono::milliseconds(200) && done < total) return;
    last_ = now;
    shown_ = true;
    std::fprintf(stderr, "\r%s: %llu / %llu rows (%.0f%%)", label_.c_str(), static_cast<unsigned long long>(done),
                 static_cast<unsigned long long>(total), total ? 100.0 * static_cast<double>(done) / static_cast<double>(total) : 100.0);
  }
  std::string label_;
  bool enabled_;
  bool shown_ = false;
  std::chrono::steady_clock::time_point last_{};
};

inline void add_threads_option(CLI::App& app, int& threads) {
  app.add_option("--threads", threads, "Worker threads (default: all cores)")->check(CLI::PositiveNumber);
}

inline void apply_threads(int threads) {
  if (threads > 0) omp_set_num_threads(threads);
}

}  // namespace edo::cli
