// SPDX-License-Identifier: Apache-2.0
// edo-lookup: the reader library as a tool. Row ids in (text or npy, a file
// or stdin), their rows out (npy, HDF5 or text, a file or stdout), decoded
// by the same Reader::lookup a server links.
#include "cli_common.hpp"

#include <edo/device.hpp>
#include <edo/io/files.hpp>
#include <edo/io/freq.hpp>
#include <edo/io/ids.hpp>
#include <edo/io/table.hpp>
#include <edo/reader.hpp>
#include <edo/shard_set.hpp>

#include <fmt/ranges.h>

#include <sys/resource.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <optional>
#include <utility>

namespace {

// Bytes this process has had read from storage so far (/proc/self/io's
// read_bytes: page-cache misses, of the mapping too), or -1 where unknown.
int64_t storage_read_bytes() {
  std::ifstream f("/proc/self/io");
  std::string key;
  int64_t value = 0;
  while (f >> key >> value)
    if (key == "read_bytes:") return value;
  return -1;
}

// Where the rows go: a table writer (npy, HDF5; a file or npy on stdout) or text lines.
class RowSink {
 public:
  RowSink(const std::string& output, bool text, bool with_ids, uint64_t rows, uint64_t dim,
          edo::io::OtherContents others)
      : text_(text), with_ids_(with_ids), dim_(dim) {
    if (!text) {
      table_ = edo::io::create_table(output.empty() ? "-" : output, rows, dim, edo::io::DType::f32, others);
    } else if (!output.empty() && output != "-") {
      file_ = std::make_unique<edo::io::AtomicFile>(output);
    }
  }

  void write(const int64_t* ids, const float* rows, size_t n) {
    if (table_) return table_->write_f32(rows, n);
    fmt::memory_buffer buf;
    for (size_t i = 0; i < n; ++i) {
      if (with_ids_) fmt::format_to(std::back_inserter(buf), "{}\t", ids[i]);
      // The shortest text that reads back to the same float32.
      for (uint64_t j = 0; j < dim_; ++j) {
        if (j > 0) buf.push_back(' ');
        fmt::format_to(std::back_inserter(buf), "{}", rows[i * dim_ + j]);
      }
      buf.push_back('\n');
    }
    if (file_) return file_->write(buf.data(), buf.size());
    if (std::fwrite(buf.data(), 1, buf.size(), stdout) != buf.size()) EDO_FAIL("<stdout>: write failed");
  }

  void commit() {
    if (table_) table_->commit();
    if (file_) file_->commit();
  }

 private:
  bool text_, with_ids_;
  uint64_t dim_;
  std::unique_ptr<edo::io::TableWriter> table_;
  std::unique_ptr<edo::io::AtomicFile> file_;
};

// What the ids are looked up in: one file's Reader (a model file's table
// `table`), or a shard set's (edo-pack --shard-set), whose shards share one
// layout of tiers.
struct LookupTable {
  std::optional<edo::Reader> whole_file;
  std::string table;  // the table's name in whole_file
  std::optional<edo::ShardSet> set;

  // The file's table (the file itself for a one-table file); null for a shard set.
  const edo::Reader* file() const { return whole_file ? &whole_file->table(table) : nullptr; }
  uint64_t rows() const { return file() ? file()->rows() : set->rows(); }
  uint64_t dim() const { return file() ? file()->dim() : set->dim(); }
  const std::string& path() const { return file() ? file()->path() : set->path(); }
  edo::Device device = edo::Device::cpu;  // cuda: one file opened with ReaderOptions::device = cuda

  // Under --device cuda, Reader::lookup_device: tiers resident on the GPU
  // gathered and decoded there, the others decoded on the host; the rows
  // come back to host memory for the output.
  void lookup(const int64_t* ids, size_t n, float* out) const {
    const edo::Reader* one = file();
    if (one && device == edo::Device::cuda) {
      edo::DeviceBuffer rows(n * dim() * sizeof(float));
      one->lookup_device(ids, n, rows.as<float>());
      return rows.download(out, rows.bytes());
    }
    return one ? one->lookup(ids, n, out) : set->lookup(ids, n, out);
  }
  // Pooled bags of the one file: under --device cuda pooled on the GPU
  // (Reader::lookup_bags_device) and brought back.
  void pool(const edo::Bags& bags, edo::PoolMode mode, float* out) const {
    if (device == edo::Device::cuda) {
      edo::DeviceBuffer pooled(std::max<size_t>(bags.count * dim(), 1) * sizeof(float));
      file()->lookup_bags_device(bags, mode, pooled.as<float>());
      return pooled.download(out, bags.count * dim() * sizeof(float));
    }
    file()->lookup_bags(bags, mode, out);
  }
  // The reader that serves table row `row` (< rows()), and the row there.
  std::pair<const edo::Reader*, uint64_t> reader_of(uint64_t row) const {
    if (file()) return {file(), row};
    size_t s = set->shard_count() - 1;
    while (set->first_row(s) > row) --s;
    return {&set->shard(s), row - set->first_row(s)};
  }
  const edo::Reader& first() const { return file() ? *file() : set->shard(0); }
};

// Ids at or beyond the table are refused up front when they would be an error, naming their line.
void check_known(const edo::io::IdList& list, const std::string& ids_path, const LookupTable& reader) {
  for (size_t i = 0; i < list.ids.size(); ++i)
    if (static_cast<uint64_t>(list.ids[i]) >= reader.rows())
      EDO_FAIL("{}: {}: id {} is outside {} ({} rows); --unknown default or hash answers such ids",
               ids_path == "-" ? "<stdin>" : ids_path, list.where(i), list.ids[i], reader.path(), reader.rows());
}

// Where edo-lookup serves a tier from: a tier the file marks gpu is in GPU
// memory only under --device cuda (on_device); otherwise it is read from host memory.
const char* served_from(const edo::TierStats& s) {
  if (s.on_device) return "gpu";
  return s.residency == edo::Residency::gpu ? "gpu (served from host)" : edo::residency_name(s.residency);
}

// Lookups by tier of the file (shards fold into the first's tiers); ids beyond the table in `unknown`.
std::vector<uint64_t> lookups_by_tier(const LookupTable& table, const std::vector<int64_t>& ids, uint64_t& unknown) {
  std::vector<uint64_t> per_tier(table.first().tiers().size(), 0);
  unknown = 0;
  for (int64_t id : ids) {
    if (static_cast<uint64_t>(id) >= table.rows()) {
      ++unknown;
      continue;
    }
    const auto [serving, row] = table.reader_of(static_cast<uint64_t>(id));
    ++per_tier[serving->tier_of(row)];
  }
  return per_tier;
}

// --json: what print_stats() says, on stdout.
nlohmann::json stats_json(const LookupTable& table, const std::vector<int64_t>& ids, double seconds,
                          int64_t read_bytes) {
  const edo::Reader& reader = table.first();
  uint64_t unknown = 0;
  const std::vector<uint64_t> per_tier = lookups_by_tier(table, ids, unknown);
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  nlohmann::json tiers = nlohmann::json::array();
  for (size_t t = 0; t < per_tier.size(); ++t) {
    const edo::TierStats& s = reader.tiers()[t];
    nlohmann::json entry = {{"name", s.name},
                            {"codec", s.codec},
                            {"residency", edo::residency_name(s.residency)},
                            {"served_from", s.on_device                          ? "gpu"
                                            : s.residency == edo::Residency::gpu ? "host"
                                                                                 : edo::residency_name(s.residency)},
                            {"lookups", per_tier[t]}};
    if (const edo::CacheCounts c = reader.cache_counts(t); c.cached)
      entry["cache"] = {
          {"hits", c.hits}, {"misses", c.misses}, {"bytes_read", c.bytes_read}, {"bytes_checked", c.bytes_checked}};
    tiers.push_back(entry);
  }
  const double n = static_cast<double>(ids.size());
  nlohmann::json j = {{"lookups", ids.size()},
                      {"dim", reader.dim()},
                      {"seconds", seconds},
                      {"rows_per_second", seconds > 0 ? n / seconds : 0.0},
                      {"beyond_the_table", unknown},
                      {"tiers", tiers},
                      {"cache_capacity_bytes", reader.cache_capacity()},
                      {"peak_rss_bytes", static_cast<uint64_t>(ru.ru_maxrss) * 1024},
                      {"cpu_path", edo::cpu_path_name(edo::cpu_path())},
                      {"placement", edo::io::placement_name(table.first().options().placement)},
                      {"huge_page_bytes", edo::huge_page_bytes()}};
  if (read_bytes >= 0) j["storage_read_bytes"] = read_bytes;
  return j;
}

void print_stats(const LookupTable& table, const std::vector<int64_t>& ids, double seconds, int64_t read_bytes) {
  const edo::Reader& reader = table.first();  // tiers and cache (a shard set has no --max-resident)
  uint64_t unknown = 0;
  const std::vector<uint64_t> per_tier = lookups_by_tier(table, ids, unknown);
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  const double n = static_cast<double>(ids.size());
  std::fprintf(stderr, "edo-lookup: %zu lookups in %.3f s: %.0f rows/s, %.1f MB/s of fp32 rows\n", ids.size(), seconds,
               seconds > 0 ? n / seconds : 0.0,
               seconds > 0 ? n * static_cast<double>(reader.dim()) * 4 / seconds / 1e6 : 0.0);
  for (size_t t = 0; t < per_tier.size(); ++t) {
    const edo::TierStats& s = reader.tiers()[t];
    std::fprintf(stderr, "  tier %-10s %-28s %-5s %10llu lookups (%5.1f%%)\n", s.name.c_str(), s.codec.c_str(),
                 served_from(s), static_cast<unsigned long long>(per_tier[t]),
                 n > 0 ? 100.0 * static_cast<double>(per_tier[t]) / n : 0.0);
  }
  if (unknown > 0)
    std::fprintf(stderr, "  beyond the table          %10llu lookups (%5.1f%%)\n",
                 static_cast<unsigned long long>(unknown), 100.0 * static_cast<double>(unknown) / n);
  if (const uint64_t capacity = reader.cache_capacity(); capacity > 0) {
    std::fprintf(stderr, "  disk cache: %.1f MB of pages (--max-resident)\n", static_cast<double>(capacity) / 1e6);
    for (size_t t = 0; t < per_tier.size(); ++t) {
      const edo::CacheCounts c = reader.cache_counts(t);
      if (!c.cached) continue;
      const uint64_t reads = c.hits + c.misses;
      std::fprintf(stderr,
                   "  tier %-10s cache hit rate %5.1f%% (%llu of %llu page reads), %.1f MB read from the file"
                   " (and %.1f MB to check its codes, --verify small)\n",
                   reader.tiers()[t].name.c_str(),
                   reads ? 100.0 * static_cast<double>(c.hits) / static_cast<double>(reads) : 0.0,
                   static_cast<unsigned long long>(c.hits), static_cast<unsigned long long>(reads),
                   static_cast<double>(c.bytes_read) / 1e6, static_cast<double>(c.bytes_checked) / 1e6);
    }
  }
  if (read_bytes >= 0)
    std::fprintf(stderr, "  read from storage: %.1f MB (page-cache misses); major page faults: %ld\n",
                 static_cast<double>(read_bytes) / 1e6, ru.ru_majflt);
  std::fprintf(stderr, "  pooling kernels: %s; in huge pages: %.1f MB (--placement %s)\n",
               edo::cpu_path_name(edo::cpu_path()), static_cast<double>(edo::huge_page_bytes()) / 1e6,
               edo::io::placement_name(table.first().options().placement));
  std::fprintf(stderr, "  peak resident memory: %.1f MB\n", static_cast<double>(ru.ru_maxrss) / 1024.0);
}

// edo-lookup's flags.
struct LookupFlags {
  std::string input, ids_path, output, format = "auto", unknown = "error";
  std::string offsets_path, mode = "sum", weights_path, max_resident, cache_io = "auto", device = "cpu", table;
  std::string verify = "small", placement = "mapped";
  bool with_ids = false, stats = false, quiet = false, force = false, json = false;
  bool mode_given = false;
  uint64_t batch = 65536;
  int threads = 0;

  void add_to(CLI::App& app) {
    app.add_option("FILE", input, "A .edo file, or a shard set (edo-pack --shard-set) read as its whole table")
        ->required();
    app.add_option("--table", table,
                   "The table to look up in, by name: needed for a model file of several tables (its names are\n"
                   "listed otherwise); on a one-table file, its name (the manifest's table_name, else 'table')");
    app.add_option("--ids", ids_path, "Ids to look up: a text file, an integer .npy, or - for stdin")->required();
    app.add_option("--offsets", offsets_path,
                   "Pool bags of ids instead of returning rows: the B bag starts into --ids (a text file or an\n"
                   "integer .npy; the first 0, never decreasing, the last bag to the end of the ids), as\n"
                   "torch.nn.EmbeddingBag takes them; one pooled row a bag (an empty bag: zeros). One .edo\n"
                   "file, not a shard set");
    app.add_option("--weights", weights_path,
                   "With --offsets and --mode sum: a .npy of one weight a id (EmbeddingBag's per_sample_weights)");
    app.add_option("--mode", mode, "With --offsets: sum (default), mean or max of each bag's rows")
        ->check(CLI::IsMember({"sum", "mean", "max"}));
    app.add_option("-o,--output", output,
                   "rows.npy, rows.h5:/dataset, rows.txt (with --format text) or - (stdout, "
                   "the default)");
    app.add_option("--format", format,
                   "auto (default: text when stdout is a terminal, else npy), npy or text; a -o name ending in\n"
                   ".txt means text")
        ->check(CLI::IsMember({"auto", "npy", "text"}));
    app.add_flag("--with-ids", with_ids, "Text rows start with their id and a tab");
    app.add_option("--unknown", unknown,
                   "Ids at or beyond the table: error (default; the line is named), default (the file's default\n"
                   "vector: its default tier's, else zeros) or hash (from the file's hashed tier)")
        ->check(CLI::IsMember({"error", "default", "hash"}));
    app.add_option("--batch", batch, "Ids looked up a call (default 65536); with --offsets, bags pooled a call")
        ->check(CLI::Range(1, 1 << 24));
    app.add_flag("--stats", stats,
                 "On stderr: lookups, rows/s, lookups a tier, bytes read from storage, major page faults, the\n"
                 "lookup kernels' CPU path (EDO_CPU_PATH), the process's bytes in huge pages, peak RSS");
    app.add_option("--verify", verify,
                   "Checksums checked (docs/PACK.md, \"Integrity modes\"): small (default: every section but the\n"
                   "tiers' per-row codes at open, a tier's codes at the first lookup that reads it), all (every\n"
                   "section at open: reads the whole file) or structure (none: the payload is trusted)")
        ->check(CLI::IsMember({"structure", "small", "all"}));
    app.add_option("--placement", placement,
                   "mapped (default: the file mapped, 4 KB pages, open costs the header) or memory (the file read\n"
                   "into private memory with transparent huge pages at open: faster random rows of a big table,\n"
                   "the whole file read and held; docs/PACK.md, \"Serving\")")
        ->check(CLI::IsMember({"mapped", "memory"}));
    app.add_option(
        "--max-resident", max_resident,
        "Bound the file's resident bytes (e.g. 1G or 1GiB, 500MB: docs/CLI.md, \"Sizes\"): tiers marked disk\n"
        "are read by io_uring or pread through a page cache of what the other tiers and the id map leave\n"
        "(docs/PACK.md)");
    app.add_option("--cache-io", cache_io,
                   "With --max-resident: read a batch's missing pages in one io_uring submission (auto, the\n"
                   "default, falls back to pread where the kernel refuses io_uring), or always pread or io_uring")
        ->check(CLI::IsMember({"auto", "pread", "io_uring"}));
    edo::cli::add_device_option(
        app, device,
        "cpu (default), cuda (an error without a GPU) or auto (the GPU when present): with cuda, the\n"
        "tiers a file marks gpu are copied to GPU memory at open and gathered and decoded there\n"
        "(Reader::lookup_device), the others decoded on the host, and --offsets bags pooled there\n"
        "(Reader::lookup_bags_device); the rows come back for the output. One .edo file (auto serves a\n"
        "shard set on the CPU)");
    app.add_flag("--json", json,
                 "Print the run's figures as JSON on stdout (lookups, rows/s, lookups a tier, cache reads, bytes\n"
                 "read from storage, peak memory): needs -o (stdout would carry the rows)");
    edo::cli::add_force_container_flag(app, force);
    edo::cli::add_threads_option(app, threads);
    app.add_flag("-q,--quiet", quiet, "No notes on stderr (errors and --stats still print)");
  }
};

// Whether the rows go out as text (else npy or HDF5); usage errors for flags that do not fit.
bool rows_as_text(const LookupFlags& f) {
  const bool to_stdout = f.output.empty() || f.output == "-";
  const bool text =
      f.format == "text" ||
      (f.format == "auto" && ((to_stdout && ::isatty(STDOUT_FILENO)) || (!to_stdout && f.output.ends_with(".txt"))));
  if (!text && to_stdout && ::isatty(STDOUT_FILENO))
    EDO_USAGE_FAIL("refusing to write binary .npy to a terminal (--format text prints rows)");
  if (text && !to_stdout && f.output.find(':') != std::string::npos && !f.output.ends_with(".txt"))
    EDO_USAGE_FAIL("-o {}: text rows go to a plain file, not a dataset", f.output);
  if (f.with_ids && !text) EDO_USAGE_FAIL("--with-ids is for text rows (--format text)");
  if (f.json && to_stdout) EDO_USAGE_FAIL("--json needs -o FILE: stdout carries the rows");
  if ((!f.weights_path.empty() || f.mode_given) && f.offsets_path.empty())
    EDO_USAGE_FAIL("--mode and --weights pool bags: give --offsets");
  edo::cli::PathGuard()
      .input(f.input)
      .input(f.ids_path)
      .input(f.offsets_path)
      .input(f.weights_path)
      .output("-o", to_stdout ? "" : (text ? f.output : f.output.substr(0, f.output.find(':'))))
      .check();
  return text;
}

// The file or shard set, opened as the flags say.
LookupTable open_table(const LookupFlags& f, edo::ReaderOptions& ro) {
  ro.verify = edo::io::parse_verify(f.verify);
  ro.unknown_ids = edo::parse_unknown_id_policy(f.unknown);
  if (!f.max_resident.empty()) ro.max_resident = edo::cli::parse_byte_count("--max-resident", f.max_resident);
  if (!f.max_resident.empty() && ro.max_resident == 0) EDO_USAGE_FAIL("--max-resident 0: give a budget in bytes");
  ro.cache_io = edo::parse_cache_io(f.cache_io);
  ro.placement = edo::io::parse_placement(f.placement);
  if (ro.verify == edo::io::Verify::all && ro.max_resident > 0)
    EDO_USAGE_FAIL("--verify all reads every page of the file through the mapping; it defeats --max-resident");
  const bool shard_set = edo::is_shard_set_file(f.input);
  // cuda is refused (exit 1) without a GPU before anything else is said about it.
  edo::Device device = edo::select_device(f.device);
  if (device == edo::Device::cuda && shard_set) {
    if (f.device == "cuda") EDO_USAGE_FAIL("--device cuda serves one .edo file; {} is a shard set", f.input);
    device = edo::Device::cpu;
  }
  ro.device = device;
  LookupTable reader;
  reader.device = device;
  if (shard_set) {
    if (ro.max_resident > 0)
      EDO_USAGE_FAIL("--max-resident bounds one file; {} is a shard set (give it a shard, or merge)", f.input);
    if (!f.table.empty()) EDO_USAGE_FAIL("--table {}: {} is a shard set, one table", f.table, f.input);
    reader.set.emplace(edo::ShardSet::open(f.input, ro));
    return reader;
  }
  reader.whole_file.emplace(edo::Reader::open(f.input, ro));
  const std::vector<std::string> names = reader.whole_file->tables();
  if (f.table.empty() && names.size() > 1)
    EDO_USAGE_FAIL("{}: a model file of {} tables ({}{}): name one with --table", f.input, names.size(),
                   fmt::join(names.begin(), names.begin() + std::min<size_t>(names.size(), 20), ", "),
                   names.size() > 20 ? ", ..." : "");
  reader.table = f.table.empty() ? names.front() : f.table;
  reader.file();  // a usage error naming the tables when the file has no such table
  return reader;
}

// The looked-up (or, with --offsets, pooled) rows, written where the flags say.
void write_rows(const LookupFlags& f, const LookupTable& reader, const edo::io::IdList& list, bool text) {
  const edo::io::OtherContents others = f.force ? edo::io::OtherContents::replace : edo::io::OtherContents::refuse;
  if (!f.offsets_path.empty()) {
    if (!reader.file()) EDO_USAGE_FAIL("{}: --offsets pools rows of one .edo file; merge the shards first", f.input);
    const edo::io::IdList offsets = edo::io::read_ids(f.offsets_path);
    const std::vector<float> weights =
        f.weights_path.empty() ? std::vector<float>{} : edo::io::read_weights(f.weights_path, list.ids.size());
    const edo::Bags bags{offsets.ids.data(), offsets.ids.size(), list.ids.data(), list.ids.size(),
                         f.weights_path.empty() ? nullptr : weights.data()};
    const edo::PoolMode mode = edo::parse_pool_mode(f.mode);
    edo::check_bags(bags, mode, reader.file()->path());
    // Pooled --batch bags at a time, as rows are looked up: memory bounded
    // by the batch, not by the number of bags.
    RowSink sink(f.output, text, f.with_ids, bags.count, reader.dim(), others);
    const size_t block = std::min<size_t>(f.batch, bags.count);
    std::vector<float> pooled(block * reader.dim());
    std::vector<int64_t> bag_ids(block), block_offsets(block);  // bag_ids: a pooled row's bag number (--with-ids)
    for (size_t first = 0; first < bags.count; first += block) {
      const size_t n = std::min(block, bags.count - first);
      const auto start = static_cast<size_t>(bags.offsets[first]);
      const size_t end = first + n < bags.count ? static_cast<size_t>(bags.offsets[first + n]) : bags.ids_count;
      for (size_t b = 0; b < n; ++b) {
        block_offsets[b] = bags.offsets[first + b] - bags.offsets[first];
        bag_ids[b] = static_cast<int64_t>(first + b);
      }
      const edo::Bags part{block_offsets.data(), n, bags.ids + start, end - start,
                           bags.weights ? bags.weights + start : nullptr};
      reader.pool(part, mode, pooled.data());
      sink.write(bag_ids.data(), pooled.data(), n);
    }
    sink.commit();
    return;
  }
  RowSink sink(f.output, text, f.with_ids, list.ids.size(), reader.dim(), others);
  std::vector<float> rows(std::min<uint64_t>(f.batch, list.ids.size()) * reader.dim());
  for (size_t begin = 0; begin < list.ids.size(); begin += f.batch) {
    const size_t n = std::min<size_t>(f.batch, list.ids.size() - begin);
    reader.lookup(list.ids.data() + begin, n, rows.data());
    sink.write(list.ids.data() + begin, rows.data(), n);
  }
  sink.commit();
}

int run(const LookupFlags& f) {
  edo::cli::apply_threads(f.threads);
  const bool text = rows_as_text(f);
  edo::ReaderOptions ro;
  const LookupTable reader = open_table(f, ro);
  edo::io::report_bus_errors_as(fmt::format(
      "edo-lookup: error: {}: the file shrank while being served (truncated by another process?)", f.input));
  const edo::io::IdList list = edo::io::read_ids(f.ids_path);
  if (list.ids.empty()) EDO_FAIL("{}: no ids", f.ids_path == "-" ? "<stdin>" : f.ids_path);
  if (ro.unknown_ids == edo::UnknownIdPolicy::error) check_known(list, f.ids_path, reader);
  const int64_t read_before = storage_read_bytes();
  const auto t0 = std::chrono::steady_clock::now();
  write_rows(f, reader, list, text);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const int64_t read_bytes = read_before >= 0 ? storage_read_bytes() - read_before : -1;
  if (f.stats) print_stats(reader, list.ids, seconds, read_bytes);
  if (f.json) {
    nlohmann::json j = stats_json(reader, list.ids, seconds, read_bytes);
    j["input"] = f.input;
    j["output"] = f.output;
    std::puts(j.dump(2).c_str());
  }
  const bool to_stdout = f.output.empty() || f.output == "-";
  if (!f.quiet && !f.stats && !to_stdout && !f.json)
    std::fprintf(stderr, "edo-lookup: %zu %s of %llu values -> %s\n", list.ids.size(),
                 f.offsets_path.empty() ? "rows" : "ids pooled into rows",
                 static_cast<unsigned long long>(reader.dim()), f.output.c_str());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "Look up rows of a .edo file (or a shard set) by id: the reader library as a tool. Ids come as text\n"
      "(one integer >= 0 a line, '#' comments) or as an integer .npy, from a file or stdin (-); their rows go\n"
      "out in the ids' order, as npy (a file, or stdout), HDF5 (x.h5:/dataset) or text (one row a line, each\n"
      "float32 printed so it reads back exactly). Every tier kind decodes as edo-unpack decodes it.\n\n"
      "Examples:\n"
      "  edo-lookup table.edo --ids ids.txt -o rows.npy\n"
      "  seq 0 9 | edo-lookup table.edo --ids - --format text --with-ids\n"
      "  edo-lookup table.edo --ids new_ids.npy --unknown hash -o rows.npy --stats\n"
      "  edo-lookup model.edo --table emb.words.weight --ids ids.txt -o rows.npy   (a model file: one table)",
      "edo-lookup"};
  LookupFlags flags;
  flags.add_to(app);
  edo::cli::add_version_flag(app, "edo-lookup");
  return edo::cli::run_tool("edo-lookup", app, argc, argv, [&] {
    flags.mode_given = app.count("--mode") > 0;
    return run(flags);
  });
}
