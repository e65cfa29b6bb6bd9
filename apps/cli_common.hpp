// SPDX-License-Identifier: Apache-2.0
// Shared by the command-line tools only: the error-to-exit-code mapping and
// the --version text. Library code never includes this.
#pragma once

#include <fmt/format.h>
#include <CLI/CLI.hpp>
#include <edo/build_info.hpp>
#include <edo/byte_count.hpp>
#include <edo/cpu_path.hpp>
#include <edo/error.hpp>
#include <edo/io/files.hpp>
#include <edo/io/table.hpp>
#include <edo/threads.hpp>

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <filesystem>
#include <limits>
#include <new>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace edo::cli {

namespace detail {
// What an out-of-memory error names: the tool's main input.
inline std::string& error_subject() {
  static std::string subject;
  return subject;
}
}  // namespace detail

// Every path a tool writes passes this one check before any work: an output
// may not be a file the tool reads, through a symbolic or a hard link
// either, and no two outputs may be one file (docs/CLI.md, "Conventions").
class PathGuard {
 public:
  // A table spec (x.h5:/dataset, x.npz:member) or a plain file; "-" and "" are skipped.
  PathGuard& input(const std::string& spec) {
    if (spec.empty() || spec == "-") return *this;
    const std::string file = io::split_table_spec(spec).file;
    if (detail::error_subject().empty()) detail::error_subject() = spec;
    inputs_.push_back(file);
    return *this;
  }
  // `file` is the file part of the output (no ":dataset"); "-" and "" are skipped.
  PathGuard& output(const std::string& flag, const std::string& file) {
    if (!file.empty() && file != "-") outputs_.push_back({flag, file});
    return *this;
  }
  void check() const {
    for (size_t i = 0; i < outputs_.size(); ++i) {
      const auto& [flag, file] = outputs_[i];
      // Written through, it would interleave with the results printed there.
      if (io::descriptor_alias(file) == STDOUT_FILENO)
        EDO_USAGE_FAIL("{} {}: stdout carries the tool's own results; name a file, a FIFO or a device ({})", flag, file,
                       "or -, where the tool takes it");
      for (const std::string& in : inputs_)
        if (io::same_file(in, file)) EDO_USAGE_FAIL("{} {}: would overwrite the input {}", flag, file, in);
      // Two outputs may both be /dev/null (or another device): each is written through.
      if (io::is_special_output(file) && io::descriptor_alias(file) < 0) continue;
      for (size_t j = 0; j < i; ++j)
        if (identity(outputs_[j].second) == identity(file))
          EDO_USAGE_FAIL("{} {}: the same file as {} {}", flag, file, outputs_[j].first, outputs_[j].second);
    }
  }

 private:
  // Existing files by device and inode (hard links meet), others by their
  // path with the existing part resolved (symbolic links meet).
  static std::string identity(const std::string& file) {
    struct stat st {};
    if (::stat(file.c_str(), &st) == 0) return fmt::format("inode {}:{}", st.st_dev, st.st_ino);
    std::error_code ec;
    const auto canonical = std::filesystem::weakly_canonical(file, ec);
    return "path " + (ec ? file : canonical.string());
  }
  std::vector<std::string> inputs_;
  std::vector<std::pair<std::string, std::string>> outputs_;
};

// Flushes stdout and turns a failed write (a full disk, an I/O error) into
// exit 1: results that never arrived are not a success. (A closed pipe ends
// the process by SIGPIPE first, as usual.)
inline int finish_stdout(const char* tool, int code) {
  const bool failed = std::fflush(stdout) != 0 || std::ferror(stdout);
  if (!failed) return code;
  const int err = errno;
  std::fprintf(stderr, "%s: error: <stdout>: write failed: %s\n", tool, err ? std::strerror(err) : "I/O error");
  return code == 0 ? static_cast<int>(ExitCode::runtime) : code;
}

// The CPU path the pooling kernels take (cpu_path.hpp), and the most this CPU runs.
inline std::string cpu_path_text() {
  const char* best = edo::cpu_path_name(edo::cpu_path_supported());
  try {
    return fmt::format("kernels {} (this CPU runs up to {})", edo::cpu_path_name(edo::cpu_path()), best);
  } catch (const edo::Error&) {
    return fmt::format("kernels: EDO_CPU_PATH names no path this CPU runs (up to {})", best);
  }
}

inline std::string version_text(const char* tool) {
  return fmt::format("{} {} (commit {}, {} build, CPU target '{}', {}, CUDA architectures {}, FAISS {})", tool,
                     EDO_VERSION_STRING, EDO_BUILD_COMMIT_STRING, EDO_BUILD_TYPE_STRING,
                     EDO_BUILD_MARCH_STRING[0] ? EDO_BUILD_MARCH_STRING : "default", cpu_path_text(),
                     EDO_BUILD_CUDA_ARCHS_STRING, EDO_BUILD_FAISS_STRING[0] ? EDO_BUILD_FAISS_STRING : "unknown");
}

// Sets OpenMP's wait policy by running the tool again when the environment
// names none (libgomp has already read it); apps/openmp_environment.cpp,
// which also keeps a bad OMP_NUM_THREADS from libgomp. Returns when nothing
// needed changing, when watched (valgrind, a tracer), or when the tool could
// not be run again.
void settle_openmp_environment(char** argv);
// Where an OMP_NUM_THREADS that is no thread count was moved, so that libgomp
// never read it (as long a name as OMP_NUM_THREADS: renamed in place).
inline constexpr char kBadThreadsVariable[] = "EDO_BAD_THREADS";
static_assert(sizeof kBadThreadsVariable == sizeof "OMP_NUM_THREADS");

// Edits (insertions, deletions, substitutions) between two option names.
inline size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

// " (--codex: did you mean --codec?)" for the first --flag on the command line that
// the tool lacks and that is within a third of its length (at least 2
// edits) of one it has; empty otherwise.
inline std::string suggest_option(const CLI::App& app, int argc, char** argv) {
  std::vector<std::string> names;
  for (const CLI::Option* o : app.get_options())
    for (const std::string& n : o->get_lnames()) names.push_back("--" + n);
  for (int i = 1; i < argc; ++i) {
    std::string_view arg = argv[i];
    if (arg == "--") break;
    if (arg.size() < 3 || arg.substr(0, 2) != "--") continue;
    arg = arg.substr(0, arg.find('='));
    if (std::find(names.begin(), names.end(), arg) != names.end()) continue;
    const std::string* best = nullptr;
    size_t best_edits = std::max<size_t>(2, arg.size() / 3) + 1;
    for (const std::string& n : names)
      if (const size_t d = edit_distance(arg, n); d < best_edits) best = &n, best_edits = d;
    return best ? fmt::format(" ({}: did you mean {}?)", arg, *best) : std::string();
  }
  return {};
}

// Runs `body` and turns every way it can fail into one line on stderr and the
// documented exit code: 1 runtime, 2 usage, 3 gate.
template <class Body>
int run_tool(const char* tool, CLI::App& app, int argc, char** argv, Body&& body) {
  settle_openmp_environment(argv);
  io::install_signal_cleanup();
  io::report_bus_errors_as(
      fmt::format("{}: error: a mapped input file shrank while being read (truncated by another process?)", tool));
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return finish_stdout(tool, app.exit(e));
  } catch (const CLI::CallForAllHelp& e) {
    return finish_stdout(tool, app.exit(e));
  } catch (const CLI::CallForVersion& e) {
    return finish_stdout(tool, app.exit(e));
  } catch (const CLI::ParseError& e) {
    std::fprintf(stderr, "%s: error: %s%s (see %s --help)\n", tool, e.what(), suggest_option(app, argc, argv).c_str(),
                 tool);
    return static_cast<int>(ExitCode::usage);
  }
  int code = 0;
  // A failed run takes back the outputs it had already published (a gate
  // that failed is not a failed run: its reports are the evidence).
  io::begin_output_transaction();
  try {
    (void)cpu_path();  // an EDO_CPU_PATH this CPU cannot run is a usage error before any work
    code = body();
  } catch (const Error& e) {
    std::fprintf(stderr, "%s: error: %s\n", tool, e.what());
    code = static_cast<int>(e.code());
  } catch (const std::bad_alloc&) {
    const std::string& subject = detail::error_subject();
    std::fprintf(stderr, "%s: error: %s%sout of memory\n", tool, subject.c_str(), subject.empty() ? "" : ": ");
    code = static_cast<int>(ExitCode::runtime);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: error: %s\n", tool, e.what());
    code = static_cast<int>(ExitCode::runtime);
  }
  io::end_output_transaction(code == 0 || code == static_cast<int>(ExitCode::gate));
  return finish_stdout(tool, code);
}

inline void add_version_flag(CLI::App& app, const char* tool) {
  app.set_version_flag("--version", version_text(tool), "Print version and build options, then exit");
}

}  // namespace edo::cli

#include <omp.h>
#include <unistd.h>

#include <charconv>
#include <chrono>
#include <functional>

namespace edo::cli {

// Progress lines of long steps (training passes, fit iterations) on stderr
// as "TOOL: line", when stderr is a terminal and not --quiet: a log file
// gets the results, not a hundred progress lines.
inline std::function<void(const std::string&)> stderr_note(const char* tool, bool quiet) {
  if (quiet || !::isatty(STDERR_FILENO)) return {};
  return [tool](const std::string& line) { std::fprintf(stderr, "%s: %s\n", tool, line.c_str()); };
}

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
                 static_cast<unsigned long long>(total),
                 total ? 100.0 * static_cast<double>(done) / static_cast<double>(total) : 100.0);
  }
  std::string label_;
  bool enabled_;
  bool shown_ = false;
  std::chrono::steady_clock::time_point last_{};
};

// Progress of a long job by stages (a model's joint plan): one line on
// stderr every few seconds, a terminal or not (a CI log shows it too),
// with the stage, the work done and an estimate of what is left; nothing
// under --quiet.
class StageProgress {
 public:
  StageProgress(std::string tool, bool quiet) : tool_(std::move(tool)), quiet_(quiet) {}
  std::function<void(const std::string&, uint64_t, uint64_t)> callback() {
    if (quiet_) return {};
    return [this](const std::string& stage, uint64_t done, uint64_t total) { update(stage, done, total); };
  }

 private:
  void update(const std::string& stage, uint64_t done, uint64_t total) {
    const auto now = std::chrono::steady_clock::now();
    if (!started_) {
      start_ = last_ = now;
      started_ = true;
      return;
    }
    if (now - last_ < std::chrono::seconds(5)) return;
    last_ = now;
    const double elapsed = std::chrono::duration<double>(now - start_).count();
    std::string left;
    if (done > 0 && total > done)
      left =
          fmt::format(", about {:.0f} s left", elapsed * static_cast<double>(total - done) / static_cast<double>(done));
    std::fprintf(stderr, "%s: %s: %llu of %llu (%.0f s%s)\n", tool_.c_str(), stage.c_str(),
                 static_cast<unsigned long long>(done), static_cast<unsigned long long>(total), elapsed, left.c_str());
  }
  std::string tool_;
  bool quiet_;
  bool started_ = false;
  std::chrono::steady_clock::time_point start_{}, last_{};
};

// A byte count as users type it (edo::parse_byte_count: 1073741824, 1G,
// 512M, 1.5G, 2GiB). Usage error naming `flag` otherwise.
inline uint64_t parse_byte_count(const std::string& flag, const std::string& text) {
  const std::optional<uint64_t> bytes = edo::parse_byte_count(text);
  if (bytes) return *bytes;
  const size_t unit = text.find_first_not_of("0123456789.eE+-");
  if (unit != std::string::npos && unit > 0)
    EDO_USAGE_FAIL(
        "{} {}: unknown unit '{}' (K, M, G or T, either case, alone or with iB for powers of 1024, with B for powers "
        "of 1000)",
        flag, text, text.substr(unit));
  EDO_USAGE_FAIL("{} {}: not a byte count (e.g. 1073741824, 1G, 512M; below 2^63)", flag, text);
}

using edo::kMaxThreads;

inline void add_threads_option(CLI::App& app, int& threads) {
  app.add_option("--threads", threads,
                 fmt::format("Worker threads, 1 to {} (default: OMP_NUM_THREADS, else all cores; never more than the\n"
                             "cores this process may use)",
                             kMaxThreads))
      ->check(CLI::Validator(
          [](const std::string& text) {
            int v = 0;
            const char* end = text.data() + text.size();
            const auto r = std::from_chars(text.data(), end, v);
            if (r.ec != std::errc() || r.ptr != end || v < 1 || v > kMaxThreads)
              return fmt::format("'{}' is not a thread count from 1 to {}", text, kMaxThreads);
            return std::string();
          },
          "INT in [1 - 1024]"));
}

// --device of the tools that compute: auto, cpu or cuda (edo::select_device
// resolves it; cuda without a GPU is an error, exit 1). `help` says what it moves.
inline void add_device_option(CLI::App& app, std::string& device, const std::string& help) {
  app.add_option("--device", device, help)->check(CLI::IsMember({"auto", "cpu", "cuda"}));
}

namespace detail {
inline io::Hdf5InputPolicy& hdf5_policy() {
  static io::Hdf5InputPolicy policy;
  return policy;
}
}  // namespace detail

// For tools that read tables: what HDF5 inputs may do beyond holding their
// values (formats/io/include/edo/io/table.hpp); applied by apply_threads(), which every tool calls first.
inline void add_hdf5_policy_flags(CLI::App& app) {
  app.add_flag("--allow-external", detail::hdf5_policy().allow_external,
               "HDF5 inputs: accept external storage, external links and virtual datasets whose files are in\n"
               "the input's own directory (refused by default: they read other local files); model inputs:\n"
               "follow symbolic links out of the model's directory (a Hugging Face cache's blobs/)");
  app.add_flag("--allow-fill", detail::hdf5_policy().allow_fill,
               "HDF5 inputs: accept a dataset that declares 1 GiB or more and stores less than 1/64 of it\n"
               "(the rest read as its fill value; refused by default)");
}

// The block every tool that reads tables ends its options with: --threads,
// the HDF5 input policy, -q.
inline void add_run_options(CLI::App& app, int& threads, bool& quiet,
                            const char* quiet_help = "No progress on stderr") {
  add_threads_option(app, threads);
  add_hdf5_policy_flags(app);
  app.add_flag("-q,--quiet", quiet, quiet_help);
}

// --force of the tools that write x.h5:/ds or x.safetensors:name
// (io::OtherContents, formats/io/include/edo/io/table.hpp).
inline void add_force_container_flag(CLI::App& app, bool& force) {
  app.add_flag("--force", force,
               "-o x.h5:/ds or x.safetensors:name over a file holding other datasets or tensors: replace the\n"
               "whole file (without it, that is refused: the others would be lost)");
}

// --threads when given, else OMP_NUM_THREADS (checked by the same rule),
// else every core; never more than the cores this process may use.
inline void apply_threads(int threads) {
  // Kept from libgomp (apps/openmp_environment.cpp): refused here, as --threads would be.
  if (const char* given = std::getenv(kBadThreadsVariable); given && threads <= 0)
    edo::parse_thread_count("OMP_NUM_THREADS", given);
  edo::limit_threads(threads);
  io::set_hdf5_input_policy(detail::hdf5_policy());
}

}  // namespace edo::cli
