// --shard I/N and the engines' environments (docs/SCALE.md): which shard a
// process takes, and the one line that says so.
#pragma once

#include "cli_common.hpp"

#include <edo/shard.hpp>

#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace edo::cli {

struct ShardChoice {
  uint32_t index = 0, count = 1;  // count 1: the whole table
  std::string from;               // "--shard" or the variables it came from
  bool active() const { return count > 1; }
};

inline void add_shard_options(CLI::App& app, std::string& shard, uint32_t& shard_count) {
  app.add_option("--shard", shard,
                 "I/N: encode only the I-th (from 0) of N contiguous row ranges, split at multiples of 2048 rows,\n"
                 "into a shard file for edo-pack --merge; 'none': the whole table. Absent: taken from the launcher\n"
                 "(SLURM_ARRAY_TASK_ID/COUNT, SLURM_PROCID/NTASKS, JOB_COMPLETION_INDEX with --shard-count,\n"
                 "OMPI_COMM_WORLD_RANK/SIZE, PMI_RANK/SIZE, in that order), always said on stderr (docs/SCALE.md)");
  app.add_option("--shard-count", shard_count,
                 "N for a Kubernetes Indexed Job (JOB_COMPLETION_INDEX gives I; the job's completions)")
      ->check(CLI::PositiveNumber);
}

// The flags of the tools that train and write shards (edo-quantize, edo-pack).
struct ShardFlags {
  std::string shard, trained;
  uint32_t shard_count = 0;
  bool train_only = false;
};

inline void add_shard_flags(CLI::App& app, ShardFlags& f, const char* train_only_help, const char* trained_help) {
  add_shard_options(app, f.shard, f.shard_count);
  app.add_flag("--train-only", f.train_only, train_only_help);
  app.add_option("--trained", f.trained, trained_help);
}

namespace detail {

inline std::optional<uint64_t> env_number(const char* name) {
  const char* v = std::getenv(name);
  if (!v || !*v) return std::nullopt;
  uint64_t n = 0;
  const char* end = v + std::strlen(v);
  if (std::from_chars(v, end, n).ec != std::errc{} || std::from_chars(v, end, n).ptr != end)
    EDO_USAGE_FAIL("{}='{}' is not a number (--shard none ignores the launcher)", name, v);
  return n;
}

inline ShardChoice checked_choice(uint64_t index, uint64_t count, std::string from) {
  if (count == 0 || count > UINT32_MAX || index >= count)
    EDO_USAGE_FAIL("shard {} of {} (from {}): the index runs from 0 to N-1", index, count, from);
  return {static_cast<uint32_t>(index), static_cast<uint32_t>(count), std::move(from)};
}

}  // namespace detail

// The shard a process takes: --shard I/N or none, else the environment.
inline ShardChoice resolve_shard(const std::string& flag, uint32_t shard_count) {
  using detail::env_number;
  if (flag == "none") return {};
  if (!flag.empty()) {
    const size_t slash = flag.find('/');
    uint64_t i = 0, n = 0;
    const char* b = flag.data();
    const char* e = b + flag.size();
    if (slash == std::string::npos || std::from_chars(b, b + slash, i).ptr != b + slash ||
        std::from_chars(b + slash + 1, e, n).ptr != e || slash == 0 || slash + 1 == flag.size())
      EDO_USAGE_FAIL("--shard '{}': expected I/N (I from 0 to N-1) or none", flag);
    return detail::checked_choice(i, n, "--shard");
  }
  if (const auto id = env_number("SLURM_ARRAY_TASK_ID")) {
    const uint64_t lo = env_number("SLURM_ARRAY_TASK_MIN").value_or(0);
    std::optional<uint64_t> n = env_number("SLURM_ARRAY_TASK_COUNT");
    if (!n)
      if (const auto hi = env_number("SLURM_ARRAY_TASK_MAX")) n = *hi - lo + 1;
    if (!n) EDO_USAGE_FAIL("SLURM_ARRAY_TASK_ID is set without SLURM_ARRAY_TASK_COUNT or _MAX: give --shard I/N");
    if (*id < lo) EDO_USAGE_FAIL("SLURM_ARRAY_TASK_ID {} is below SLURM_ARRAY_TASK_MIN {}", *id, lo);
    return detail::checked_choice(
        *id - lo, *n, fmt::format("SLURM_ARRAY_TASK_ID={} of SLURM_ARRAY_TASK_MIN={} COUNT={}", *id, lo, *n));
  }
  if (const auto rank = env_number("SLURM_PROCID")) {
    const auto n = env_number("SLURM_NTASKS");
    if (!n) EDO_USAGE_FAIL("SLURM_PROCID is set without SLURM_NTASKS: give --shard I/N");
    return detail::checked_choice(*rank, *n, fmt::format("SLURM_PROCID={} of SLURM_NTASKS={}", *rank, *n));
  }
  if (const auto index = env_number("JOB_COMPLETION_INDEX")) {
    if (shard_count == 0)
      EDO_USAGE_FAIL("JOB_COMPLETION_INDEX={} (a Kubernetes Indexed Job): give --shard-count N, the job's completions",
                     *index);
    return detail::checked_choice(*index, shard_count,
                                  fmt::format("JOB_COMPLETION_INDEX={} with --shard-count {}", *index, shard_count));
  }
  for (const auto& [rank_var, size_var] :
       {std::pair{"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"}, std::pair{"PMI_RANK", "PMI_SIZE"}}) {
    if (const auto rank = env_number(rank_var)) {
      const auto n = env_number(size_var);
      if (!n) EDO_USAGE_FAIL("{} is set without {}: give --shard I/N", rank_var, size_var);
      return detail::checked_choice(*rank, *n, fmt::format("{}={} of {}={}", rank_var, *rank, size_var, *n));
    }
  }
  if (shard_count > 0) EDO_USAGE_FAIL("--shard-count goes with JOB_COMPLETION_INDEX; give --shard I/N");
  return {};
}

// Said on stderr whatever --quiet says: an array job that loops over several
// tables must see that each run took one shard.
inline void say_shard(const char* tool, const ShardChoice& s, RowRange r, uint64_t rows) {
  std::fprintf(stderr, "%s: shard %u/%u (rows %llu to %llu of %llu) from %s; --shard none for the whole table\n", tool,
               s.index, s.count, static_cast<unsigned long long>(r.begin), static_cast<unsigned long long>(r.end),
               static_cast<unsigned long long>(rows), s.from.c_str());
}

// The rows a shard run takes, said on stderr; the manifest's entry for them in `entry`.
inline RowRange take_shard(const char* tool, const ShardChoice& s, uint64_t rows, nlohmann::json& entry) {
  const RowRange r = shard_rows(rows, s.index, s.count);
  say_shard(tool, s, r, rows);
  entry = shard_entry(s.index, s.count, r, rows);
  return r;
}

}  // namespace edo::cli
