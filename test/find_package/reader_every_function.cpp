// SPDX-License-Identifier: Apache-2.0
// Calls every public function of the reader library (edo::reader: the
// reader, tier kinds, shard sets, sparse and hashed tiers, codec specs and
// decoders, and what they stand on), so that linking this program against
// edo::reader alone proves none of them is declared there but defined in a
// library a serving program does not link (docs/ARCHITECTURE.md, "The
// targets and their graph"). Run on a packed file, it prints one line per
// check; test/cli/pack_find_package.sh builds it from an install.
//
//   reader_every_function FILE.edo
#include <edo/codec.hpp>
#include <edo/cpu_path.hpp>
#include <edo/device.hpp>
#include <edo/error.hpp>
#include <edo/hash.hpp>
#include <edo/io/container.hpp>
#include <edo/io/rowmap.hpp>
#include <edo/matrix.hpp>
#include <edo/pca_transform.hpp>
#include <edo/pq_decode.hpp>
#include <edo/random.hpp>
#include <edo/reader.hpp>
#include <edo/residency.hpp>
#include <edo/shard_set.hpp>
#include <edo/sparse.hpp>
#include <edo/threads.hpp>
#include <edo/tier.hpp>
#include <edo/work_share.hpp>

#include <cstdio>
#include <numeric>
#include <vector>

namespace {

int failures = 0;
void check(bool ok, const char* what) {
  std::printf("%s %s\n", ok ? "ok" : "FAIL", what);
  failures += ok ? 0 : 1;
}

void specs_and_decoders() {
  check(edo::parse_spec("pca:8,int8").size() == 2, "parse_spec");
  check(edo::format_spec(edo::parse_spec("int4:group=32")) == "int4:group=32", "format_spec");
  check(edo::split_spec("a,b", ',').size() == 2, "split_spec");
  check(edo::find_codec("int8") != nullptr && !edo::codec_list().empty(), "codec_list, find_codec");
  check(edo::code_size("int8", 50) == 58 && edo::bits_per_value("fp16", 50) == 16.0, "code_size, bits_per_value");
  check(edo::canonical_spec("int4:group=25", 50) == "int4:group=25", "canonical_spec");
  const auto decoder = edo::make_decoder("int8", 4);
  check(decoder && edo::scalar_layout(*decoder).has_value(), "make_decoder, scalar_layout");
  check(edo::is_hash_spec("hash:buckets=8") && edo::format_hash_spec(edo::parse_hash_spec("hash:buckets=8")).size() > 4,
        "hash specs");
  check(edo::is_group_spec("group:clusters=4") &&
            !edo::format_group_spec(edo::parse_group_spec("group:clusters=4", 8)).empty(),
        "group specs");
  check(edo::is_sparse_spec("csr:k=2") && !edo::format_sparse_spec(edo::parse_sparse_spec("csr:k=2", 8)).empty() &&
            edo::sparse_values_name(edo::SparseValues::f16) != nullptr,
        "sparse specs");
  check(edo::tier_kind_of("nearest:l2") == edo::TierKind::nearest && edo::tier_kinds().size() == edo::kTierKindCount &&
            edo::tier_kind_word(edo::TierKind::zero) != nullptr && edo::is_row_section(edo::TierKind::codec, "codes") &&
            edo::centroid_count("centroids:300") == 300 && edo::centroid_index_bytes(300) == 2 &&
            edo::nearest_metric("nearest:l2") == edo::Metric::l2,
        "tier kinds");
  check(edo::parse_metric("cos") == edo::Metric::cos && std::string(edo::metric_name(edo::Metric::ip)) == "ip",
        "metrics");
  check(edo::parse_residency("disk") == edo::Residency::disk &&
            std::string(edo::residency_name(edo::Residency::gpu)) == "gpu",
        "residency");
  check(edo::parse_unknown_id_policy("default") == edo::UnknownIdPolicy::default_vector &&
            std::string(edo::unknown_id_policy_name(edo::UnknownIdPolicy::hash)) == "hash",
        "unknown-id policies");
  check(edo::parse_cache_io("pread") == edo::CacheIo::pread &&
            std::string(edo::cache_io_name(edo::CacheIo::automatic)) == "auto",
        "cache reads");
  check(edo::io::parse_verify("small") == edo::io::Verify::small &&
            std::string(edo::io::verify_name(edo::io::Verify::all)) == "all",
        "integrity modes");
  check(edo::parse_pool_mode("max") == edo::PoolMode::max &&
            std::string(edo::pool_mode_name(edo::PoolMode::sum)) == "sum",
        "pool modes");
  check(edo::sample_indices(100, 10, 1).size() == 10, "sample_indices");
  check(edo::usable_cores() >= 1 && edo::limit_threads(1) >= 1, "threads");
  check(edo::cuda_device_count() >= 0, "cuda_device_count");
}

void one_file(const char* path) {
  const edo::Reader r = edo::Reader::open(path, {});
  const std::vector<int64_t> ids = {0, 1, static_cast<int64_t>(r.rows() - 1)};
  std::vector<float> rows(ids.size() * r.dim()), all(r.rows() * r.dim()), some(2 * r.dim());
  r.lookup(ids.data(), ids.size(), rows.data());
  r.decode_all(all.data());
  r.decode_rows(0, 2, some.data());
  check(std::equal(some.begin(), some.end(), all.begin()) &&
            std::equal(rows.begin(), rows.begin() + r.dim(), all.begin()),
        "lookup, decode_rows, decode_all");
  const std::vector<int64_t> offsets = {0, 2};
  const edo::Bags bags{offsets.data(), offsets.size(), ids.data(), ids.size(), nullptr};
  std::vector<float> pooled(2 * r.dim()), reference(2 * r.dim());
  r.lookup_bags(bags, edo::PoolMode::sum, pooled.data());
  r.lookup_bags_reference(bags, edo::PoolMode::sum, reference.data());
  check(pooled == reference, "lookup_bags");
  edo::check_bags(bags, edo::PoolMode::mean, path);
  edo::ReaderOptions in_memory;
  in_memory.placement = edo::io::parse_placement(edo::io::placement_name(edo::io::Placement::memory));
  std::vector<float> copied(ids.size() * r.dim());
  edo::Reader::open(path, in_memory).lookup(ids.data(), ids.size(), copied.data());
  check(copied == rows, "placement memory");
  int chunks = 0;
  edo::share_work(3, [&](size_t) { __atomic_add_fetch(&chunks, 1, __ATOMIC_RELAXED); });
  check(chunks == 3 && edo::share_threads() >= 1, "share_work");
  // The kernels' CPU path: chosen at run time, settable down to portable, with the same rows.
  const edo::CpuPath best = edo::cpu_path_supported();
  check(edo::cpu_path() == best && edo::parse_cpu_path(edo::cpu_path_name(best)) == best &&
            edo::huge_page_bytes() < (uint64_t{1} << 50),
        "CPU path");
  edo::set_cpu_path(edo::CpuPath::portable);
  std::vector<float> portable(rows.size());
  r.lookup(ids.data(), ids.size(), portable.data());
  edo::set_cpu_path(best);
  check(portable == rows && r.options().placement == edo::io::Placement::mapped, "portable path, options");
  check(!r.path().empty() && !r.tiers().empty() && r.residency_bytes().total() > 0 && r.file_bytes() > 0 &&
            r.default_vector().size() == r.dim() && r.container().rows() == r.rows(),
        "file facts");
  (void)r.single_tier_codec();
  (void)r.single_tier_codes();
  check(r.tier_of(0) < r.tiers().size() && !r.cache_counts(0).cached && r.cache_counts(0).bytes_checked == 0 &&
            r.cache_capacity() == 0,
        "tiers and cache");
  (void)r.id_map_kind();
  r.validate_row_map();
  check(edo::shard_entry_of(r.container().manifest(), path) == std::nullopt && !edo::is_shard_set_file(path),
        "shard entries");
  check(edo::io::validate_manifest_schema(r.container().manifest(), path).size() == r.tiers().size(),
        "manifest schema");
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: reader_every_function FILE.edo\n");
    return 2;
  }
  try {
    specs_and_decoders();
    one_file(argv[1]);
    // Referenced, not run: ShardSet needs a set file, lookup_device a GPU.
    volatile bool never = false;
    if (never) {
      const edo::ShardSet set = edo::ShardSet::open(argv[1]);
      float out = 0;
      set.lookup(nullptr, 0, &out);
      set.decode_rows(0, 0, &out);
      (void)set.file_bytes();
      edo::Reader::open(argv[1]).lookup_device(nullptr, 0, nullptr);
      edo::Reader::open(argv[1]).lookup_bags_device({}, edo::PoolMode::sum, nullptr);
      edo::pq_decode({}, nullptr, nullptr, 0, nullptr);
      edo::pca_reconstruct({}, nullptr, 0, nullptr);
      edo::pca_project({}, nullptr, 0, nullptr);
      (void)edo::io::rowmap_rank(nullptr, 0, 0);
      (void)edo::io::rowmap_runs(nullptr, 0, 0);
      edo::require_device(edo::select_device("cpu"));
    }
  } catch (const edo::Error& e) {
    std::fprintf(stderr, "reader_every_function: %s\n", e.what());
    return 1;
  }
  std::printf("%s\n", failures ? "FAILED" : "every reader function linked and answered");
  return failures ? 1 : 0;
}
