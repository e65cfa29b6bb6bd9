// SPDX-License-Identifier: Apache-2.0
// edo-profile's engine: what is in a table and where its bytes would go.
//
// One streaming pass over the table (bounded by the block size plus 12 bytes
// per row for row norms and row hashes) and one seeded sample of rows for the
// value percentiles and the PCA spectrum.
#pragma once

#include <edo/device.hpp>
#include <edo/io/container.hpp>
#include <edo/io/table.hpp>

#include <nlohmann/json.hpp>

#include <cstdint>
#include <functional>
#include <limits>
#include <string>
#include <vector>

namespace edo {

struct PlanResult;  // edo/pack.hpp

struct ProfileOptions {
  uint64_t seed = 0;
  // Rows drawn (seeded) for value percentiles and the PCA spectrum.
  uint64_t sample_rows = 10000;
  // Absolute near-zero threshold; <= 0 means 1% of the RMS value of the sample.
  double near_zero = 0;
  // PCA is skipped above this dimension (the covariance is dim x dim doubles).
  uint64_t max_pca_dim = 4096;
  // Where the PCA covariance is summed (covariance_eigen, edo/pca.hpp): on a
  // GPU the explained-variance fractions agree with the CPU's to about 1e-12.
  Device device = Device::cpu;
  size_t block_bytes = io::kDefaultBlockBytes;
  // Called after each block with (rows done, total rows); may be empty.
  std::function<void(uint64_t, uint64_t)> progress;
};

struct Percentile {
  double q;  // in percent, e.g. 99.9
  double value;
};

struct Footprint {
  std::string name;  // what the row stands for, e.g. "int8 row-wise"
  std::string spec;  // codec spec string, e.g. "int8"
  uint64_t bytes;    // whole table, including per-row scales and shared tables
  double ratio;      // fp32 bytes / bytes
  double bits_per_value;
  std::string note;  // how the bytes were counted
  // The codec run on the profile's sample (not sparse specs): its MSE a
  // value, the Gaussian bound D(R) at bits_per_value, and the gap between
  // them in bits a value (rate_distortion.hpp); NaN where not measured.
  double mse = std::numeric_limits<double>::quiet_NaN();
  double bound = std::numeric_limits<double>::quiet_NaN();
  double gap_bits = std::numeric_limits<double>::quiet_NaN();
};

struct AccessSkew {
  double total = 0;            // sum of counts
  uint64_t rows_accessed = 0;  // rows with a positive count
  // Rows (most frequent first) needed to cover each share of lookups.
  std::vector<std::pair<double, uint64_t>> rows_for_share;  // (share in %, rows)
  double zipf_exponent = 0;                                 // s in count ~ rank^-s, least squares on log-log
  double zipf_r2 = 0;                                       // fit quality
};

struct TableProfile {
  std::string path;
  std::string format;
  std::string dtype;
  uint64_t rows = 0, dim = 0;
  uint64_t payload_bytes = 0;  // on disk
  uint64_t values = 0;
  // Non-finite values (excluded from every statistic below).
  uint64_t nan_count = 0, inf_count = 0;
  int64_t first_nonfinite_row = -1;
  // Over finite values.
  uint64_t zero_count = 0, near_zero_count = 0;
  double near_zero_threshold = 0;
  double min = 0, max = 0, mean = 0, stddev = 0, rms = 0;
  std::vector<Percentile> value_percentiles;  // on the sample
  uint64_t sample_rows = 0;
  // Row L2 norms over all rows (rows with non-finite values excluded).
  double norm_min = 0, norm_max = 0, norm_mean = 0;
  std::vector<Percentile> norm_percentiles;
  uint64_t zero_rows = 0;
  // Rows equal (bit for bit) to an earlier row, and how many distinct rows repeat.
  uint64_t duplicate_rows = 0, duplicate_groups = 0;
  // PCA on the sample: explained variance per component, largest first.
  bool pca_done = false;
  std::string pca_skipped_reason;
  std::vector<double> pca_explained;                      // fractions summing to 1
  std::vector<double> pca_variances;                      // the covariance's eigenvalues, largest first
  std::vector<std::pair<double, double>> rate_bound;      // (bits a value, the Gaussian bound's MSE a value)
  std::vector<std::pair<double, uint64_t>> pca_dims_for;  // (90/95/99 %, dims)
  std::vector<Footprint> footprints;
  bool has_skew = false;
  AccessSkew skew;
  uint32_t merged_parts = 0;  // > 0: folded from that many shard parts (merge_profile_parts)
};

TableProfile profile_table(io::TableReader& table, const ProfileOptions& options);

// ---- shards (docs/SCALE.md) ----------------------------------------------------------
// A shard's part of the profile of `table` (edo-profile --shard I/N --json):
// rows [first, last) streamed, the whole table's seeded sample read (so every
// part finds the same near-zero threshold) and the sample rows in the range
// kept; the per-chunk totals, norms and row hashes of the range, binary in
// base64 (about 16 bytes a row). `shard` is the manifest-style shard entry.
nlohmann::json profile_part(io::TableReader& table, const ProfileOptions& options, uint64_t first, uint64_t last,
                            const nlohmann::json& shard);
bool is_profile_part(const nlohmann::json& j);
// The options a part was made with (seed, sample size, near-zero, PCA limit)
// over `base` (device, block size, progress).
ProfileOptions profile_part_options(const nlohmann::json& part, ProfileOptions base);
// Folds every part of one table (any order; `names` for messages) into the
// profile profile_table() gives for the whole table, exactly: chunk totals
// in chunk order, every norm and row hash, the same sample. Errors on a
// missing, repeated or foreign part.
TableProfile merge_profile_parts(std::vector<nlohmann::json> parts, const std::vector<std::string>& names,
                                 const ProfileOptions& options);

// Footprints of the table under each codec family edo offers or plans.
std::vector<Footprint> codec_footprints(uint64_t rows, uint64_t dim);

// Access skew of per-row lookup counts (see edo::io::read_frequencies).
AccessSkew access_skew(const std::vector<double>& counts);

nlohmann::json to_json(const TableProfile& p);
std::string to_text(const TableProfile& p);
// The same without the footprint block (a model's per-table sections).
std::string to_text(const TableProfile& p, bool with_footprints);
// The footprint block: a header and one line a codec.
std::string footprint_text(const std::vector<Footprint>& footprints);

// What a .edo file holds: version, size, tiers (codec, rows, bytes, residency),
// sections, provenance and any stored evaluation.
nlohmann::json container_summary(const io::Container& c);
std::string container_summary_text(const nlohmann::json& summary);

// edo-profile's whole report. `container` is container_summary() of a .edo
// input, or null; `plan`, when not null, is --plan's result, and
// `plan_config_path` the file its config was written to (may be empty).
nlohmann::json profile_report_json(const TableProfile& p, const nlohmann::json& container, const PlanResult* plan);
std::string profile_report_text(const TableProfile& p, const nlohmann::json& container, const PlanResult* plan,
                                const std::string& plan_config_path);

}  // namespace edo
