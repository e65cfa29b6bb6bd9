// SPDX-License-Identifier: Apache-2.0
// --shard I/N and the engines' environments (docs/SCALE.md): which shard a
// process takes, and the one line that says so.
#pragma once

#include "cli_common.hpp"

#include <edo/pack.hpp>
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

// `what`: what a shard's run makes of its rows, and for whom.
inline void add_shard_options(CLI::App& app, std::string& shard, uint32_t& shard_count,
                              const char* what = "into a shard file for edo-pack --merge or --shard-set") {
  app.add_option("--shard", shard,
                 fmt::format("I/N: only the I-th (from 0) of N contiguous row ranges, split at multiples of 2048\n"
                             "rows, {}; 'none': the whole table. Absent: taken from the launcher\n"
                             "(SLURM_ARRAY_TASK_ID/COUNT, SLURM_PROCID/NTASKS, JOB_COMPLETION_INDEX with\n"
                             "--shard-count, OMPI_COMM_WORLD_RANK/SIZE, PMI_RANK/SIZE, in that order), always said\n"
                             "on stderr (docs/SCALE.md)",
                             what));
  app.add_option("--shard-count", shard_count,
                 "N for a Kubernetes Indexed Job (JOB_COMPLETION_INDEX gives I; the job's completions)")
      ->check(CLI::PositiveNumber);
}

// The flags of the tools that train and write shards (edo-quantize, edo-pack).
struct ShardFlags {
  std::string shard, trained;
  std::string source_hash = "sampled";
  uint32_t shard_count = 0;
  bool train_only = false;
};

inline void add_shard_flags(CLI::App& app, ShardFlags& f, const char* train_only_help, const char* trained_help) {
  add_shard_options(app, f.shard, f.shard_count);
  app.add_flag("--train-only", f.train_only, train_only_help);
  app.add_option("--trained", f.trained, trained_help);
  app.add_option("--source-hash", f.source_hash,
                 "With --shard: how the shard names the table it was cut from, which merges compare: 'sampled'\n"
                 "(default: its shape and every row of a table of up to 65,536 rows, else 65,536 rows or one a\n"
                 "MiB, whichever is more) or 'full' (every row of any table: versions of a table that differ\n"
                 "anywhere never merge; reads the whole table once a shard)")
      ->check(CLI::IsMember({"sampled", "full"}));
}

namespace detail {

inline std::optional<uint64_t> env_number(const char* name) {
  const char* v = std::getenv(name);
  if (!v || !*v) return std::nullopt;
  uint64_t n = 0;
  const char* end = v + std::strlen(v);
  const auto r = std::from_chars(v, end, n);
  if (r.ec != std::errc{} || r.ptr != end)
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
    // A number too large for 64 bits is an error, not a 0 (from_chars leaves it unset).
    const auto whole = [](const char* from, const char* to, uint64_t& v) {
      const auto r = std::from_chars(from, to, v);
      return r.ec == std::errc{} && r.ptr == to;
    };
    if (slash == std::string::npos || slash == 0 || slash + 1 == flag.size() || !whole(b, b + slash, i) ||
        !whole(b + slash + 1, e, n))
      EDO_USAGE_FAIL("--shard '{}': expected I/N (I from 0 to N-1, N at most {}) or none", flag, UINT32_MAX);
    return detail::checked_choice(i, n, "--shard");
  }
  if (const auto id = env_number("SLURM_ARRAY_TASK_ID")) {
    const uint64_t lo = env_number("SLURM_ARRAY_TASK_MIN").value_or(0);
    std::optional<uint64_t> n = env_number("SLURM_ARRAY_TASK_COUNT");
    if (!n) {
      if (const auto hi = env_number("SLURM_ARRAY_TASK_MAX")) {
        if (*hi < lo) EDO_USAGE_FAIL("SLURM_ARRAY_TASK_MAX {} is below SLURM_ARRAY_TASK_MIN {}", *hi, lo);
        n = *hi - lo + 1;
      }
    }
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

// A shard file's entry names its table by a digest of its rows (merges
// compare it; edo/shard.hpp).
inline void sample_source(nlohmann::json& entry, io::TableReader& table, const std::string& source_hash) {
  const SourceHash how = parse_source_hash(source_hash);
  entry[kSourceSampleKey] = fmt::format("{:016x}", source_digest(table, how));
  if (how == SourceHash::full) entry[kSourceHashKey] = source_hash_name(how);
}

// --train-only, --trained and --shard of the tools that write through
// pack_to_edo (edo-pack, edo-sparsify, edo-hash). It holds what the options
// then point at, so it outlives the write.
class PackShards {
 public:
  // --train-only: the states of the tiers that train or fit (the whole
  // table's global phases), written to `output`. Returns whether it ran.
  bool train_only(const char* tool, const ShardFlags& f, io::TableReader& table, const std::string& output,
                  const PackOptions& opt, bool eval_wanted, bool quiet) {
    if (!f.train_only) return false;
    if (!f.trained.empty() || !f.shard.empty() || eval_wanted)
      EDO_USAGE_FAIL("--train-only decides on the whole table: no --trained, --shard or --eval");
    pack_trained_state(table, output, opt);
    if (!quiet) std::fprintf(stderr, "%s: %s -> %s: the trained state\n", tool, table.path().c_str(), output.c_str());
    return true;
  }

  // --trained (each tier's state, and the training run's parameters and
  // seed) and --shard (the shard's rows; the layout stays the whole
  // table's): a shard of the table written as part of the one-process file.
  void apply(const char* tool, const ShardFlags& f, io::TableReader& table, PackOptions& opt, bool eval_wanted) {
    if (!f.trained.empty()) {
      trained_ = read_trained_state(f.trained);
      // The same tiers: names, kinds and codecs, and (as the training run recorded them) shares.
      const nlohmann::json& specs = trained_->parameters.contains("tiers") ? trained_->parameters["tiers"] : nullptr;
      bool same = trained_->tiers.size() == opt.tiers.size() && trained_->dim == table.dim() && specs.is_array() &&
                  specs.size() == opt.tiers.size();
      for (size_t t = 0; same && t < opt.tiers.size(); ++t)
        same = trained_->tiers[t].name == opt.tiers[t].name &&
               make_tier_builder(opt.tiers[t].codec, table.dim(), {})->codec() == trained_->tiers[t].spec &&
               specs[t] == format_tier_spec(opt.tiers[t]);
      if (!same) EDO_USAGE_FAIL("--trained {}: trained for other tiers or another width than these", f.trained);
      opt.parameters = trained_->parameters;
      if (trained_->parameters.contains("train_rows") && trained_->parameters["train_rows"].is_number_unsigned())
        opt.train_rows = trained_->parameters["train_rows"].get<uint64_t>();
      opt.seed = trained_->seed;
      opt.trained = &trained_->tiers;
    }
    const ShardChoice choice = resolve_shard(f.shard, f.shard_count);
    if (!choice.active() && f.source_hash != "sampled")
      EDO_USAGE_FAIL("--source-hash {}: it names the table a shard was cut from; give --shard I/N", f.source_hash);
    if (!choice.active()) return;
    if (eval_wanted) EDO_USAGE_FAIL("--eval and --gate evaluate a whole table: run them on the merged file");
    check_shardable(opt, table.dim());  // before the shard line, so a refusal is one line
    const RowRange range = take_shard(tool, choice, table.rows(), opt.shard);
    sample_source(opt.shard, table, f.source_hash);
    opt.first_row = range.begin;
    opt.shard_rows = range.size();
    if (opt.vocabulary) {  // --vocab names every row of the table; the shard stores its own
      words_.assign(opt.vocabulary->begin() + static_cast<int64_t>(range.begin),
                    opt.vocabulary->begin() + static_cast<int64_t>(range.end));
      opt.vocabulary = &words_;
    }
  }

 private:
  std::optional<TrainedState> trained_;
  std::vector<std::string> words_;
};

}  // namespace edo::cli
