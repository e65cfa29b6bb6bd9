// SPDX-License-Identifier: Apache-2.0
// edo-profile's reports: a table's profile, a .edo container's summary and,
// with --plan, the chosen plan, as text for people and JSON for machines.
#include <edo/edo_file.hpp>
#include <edo/human_bytes.hpp>
#include <edo/io/container.hpp>
#include <edo/pack.hpp>
#include <edo/profile.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace edo {

namespace {
nlohmann::json finite_or_null(double v) { return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(nullptr); }
}  // namespace

nlohmann::json to_json(const TableProfile& p) {
  using nlohmann::json;
  auto pct = [](const std::vector<Percentile>& v) {
    json j = json::object();
    for (const auto& x : v) j[fmt::format("p{:g}", x.q)] = x.value;
    return j;
  };
  json j;
  j["path"] = p.path;
  j["format"] = p.format;
  j["dtype"] = p.dtype;
  j["rows"] = p.rows;
  j["dim"] = p.dim;
  j["bytes"] = p.payload_bytes;
  if (p.merged_parts > 0) j["merged_parts"] = p.merged_parts;
  j["nonfinite"] = {{"nan", p.nan_count},
                    {"inf", p.inf_count},
                    {"first_row", p.first_nonfinite_row < 0 ? json(nullptr) : json(p.first_nonfinite_row)}};
  const double values = static_cast<double>(p.values);
  j["zeros"] = {{"count", p.zero_count}, {"fraction", static_cast<double>(p.zero_count) / values}};
  j["near_zero"] = {{"threshold", p.near_zero_threshold},
                    {"count", p.near_zero_count},
                    {"fraction", static_cast<double>(p.near_zero_count) / values}};
  j["values"] = {{"min", p.min},    {"max", p.max}, {"mean", p.mean},
                 {"std", p.stddev}, {"rms", p.rms}, {"percentiles", pct(p.value_percentiles)}};
  j["sample_rows"] = p.sample_rows;
  j["row_norms"] = {{"min", p.norm_min},
                    {"max", p.norm_max},
                    {"mean", p.norm_mean},
                    {"zero_rows", p.zero_rows},
                    {"percentiles", pct(p.norm_percentiles)}};
  j["duplicates"] = {{"rows", p.duplicate_rows}, {"groups", p.duplicate_groups}};
  if (p.pca_done) {
    json dims = json::object();
    for (const auto& [share, k] : p.pca_dims_for) dims[fmt::format("{:g}%", share)] = k;
    j["pca"] = {{"sample_rows", p.sample_rows}, {"dims_for_variance", dims}, {"explained", p.pca_explained}};
  } else {
    j["pca"] = {{"skipped", p.pca_skipped_reason}};
  }
  json fps = json::array();
  for (const auto& f : p.footprints)
    fps.push_back({{"name", f.name},
                   {"spec", f.spec},
                   {"bytes", f.bytes},
                   {"data_ratio", f.ratio},
                   {"bits_per_value", f.bits_per_value},
                   {"note", f.note},
                   {"sample_mse", finite_or_null(f.mse)},
                   {"gaussian_bound", finite_or_null(f.bound)},
                   {"gap_bits", finite_or_null(f.gap_bits)}});
  j["footprints"] = fps;
  if (!p.rate_bound.empty()) {
    json bound = json::object();
    for (const auto& [bits, mse] : p.rate_bound) bound[fmt::format("{:g}", bits)] = mse;
    j["rate_distortion"] = {{"gaussian_bound_mse", bound}, {"sample_rows", p.sample_rows}};
  }
  if (p.has_skew) {
    json cover = json::object();
    for (const auto& [share, rows] : p.skew.rows_for_share) cover[fmt::format("{:g}%", share)] = rows;
    j["access"] = {{"total_lookups", p.skew.total},
                   {"rows_accessed", p.skew.rows_accessed},
                   {"rows_covering", cover},
                   {"zipf_exponent", p.skew.zipf_exponent},
                   {"zipf_r2", p.skew.zipf_r2}};
  }
  return j;
}

namespace {

std::string percent(uint64_t part, uint64_t whole) {
  return fmt::format("{:.3g}%", whole ? 100.0 * static_cast<double>(part) / static_cast<double>(whole) : 0.0);
}

}  // namespace

std::string footprint_text(const std::vector<Footprint>& footprints) {
  // The sample's MSE and the gap to the Gaussian bound, where measured.
  const bool gaps = std::any_of(footprints.begin(), footprints.end(), [](const Footprint& f) { return f.mse >= 0; });
  std::string s = fmt::format("  {:<16}{:<30}{:>14}{:>9}{:>11}", "codec", "spec", "bytes", "data x", "bits/value");
  s += gaps ? fmt::format("{:>12}{:>11}\n", "sample MSE", "gap bits") : "\n";
  for (const auto& f : footprints) {
    s += fmt::format("  {:<16}{:<30}{:>14}{:>8.2f}x{:>11.3g}", f.name, f.spec, f.bytes, f.ratio, f.bits_per_value);
    if (gaps)
      s += f.mse >= 0 ? fmt::format("{:>12.3g}{:>11}", f.mse,
                                    std::isfinite(f.gap_bits) ? fmt::format("{:.2f}", f.gap_bits) : std::string("-"))
                      : fmt::format("{:>12}{:>11}", "-", "-");
    s += "\n";
  }
  return s;
}

std::string to_text(const TableProfile& p) { return to_text(p, true); }

std::string to_text(const TableProfile& p, bool with_footprints) {
  std::string s;
  auto line = [&](const char* key, const std::string& value) { s += fmt::format("  {:<14}{}\n", key, value); };
  s += fmt::format("{}\n", p.path);
  line("format", fmt::format("{}, {}, {} x {} ({} values, {})", p.format, p.dtype, p.rows, p.dim, p.values,
                             human_bytes(static_cast<double>(p.payload_bytes))));
  if (p.merged_parts > 0)
    line("merged", fmt::format("from {} shard parts: every figure is the one-process profile's, exactly (each part "
                               "streamed its rows; the sample is the whole table's)",
                               p.merged_parts));
  if (p.nan_count + p.inf_count == 0) {
    line("non-finite", "none");
  } else {
    line("non-finite", fmt::format("{} NaN, {} Inf (first in row {}); left out of every statistic below", p.nan_count,
                                   p.inf_count, p.first_nonfinite_row));
  }
  line("zeros", fmt::format("{} ({})", p.zero_count, percent(p.zero_count, p.values)));
  line("near-zero", fmt::format("{} ({}) with |x| < {:.4g}", p.near_zero_count, percent(p.near_zero_count, p.values),
                                p.near_zero_threshold));
  line("values", fmt::format("min {:.6g}  max {:.6g}  mean {:.6g}  std {:.6g}", p.min, p.max, p.mean, p.stddev));
  std::string pv;
  for (const auto& x : p.value_percentiles) pv += fmt::format("p{:g} {:.4g}  ", x.q, x.value);
  line("percentiles", pv + fmt::format("({} sampled rows)", p.sample_rows));
  std::string pn = fmt::format("min {:.4g}  ", p.norm_min);
  for (const auto& x : p.norm_percentiles) pn += fmt::format("p{:g} {:.4g}  ", x.q, x.value);
  pn += fmt::format("max {:.4g}  mean {:.4g}", p.norm_max, p.norm_mean);
  line("row norms", pn);
  line("zero rows", fmt::format("{}", p.zero_rows));
  line("duplicates",
       fmt::format("{} rows repeat an earlier row ({} distinct rows repeated)", p.duplicate_rows, p.duplicate_groups));
  if (p.pca_done) {
    std::string pc;
    for (const auto& [share, k] : p.pca_dims_for) pc += fmt::format("{:g}%: {} dims  ", share, k);
    line("PCA", pc + fmt::format("(of {}, {} sampled rows)", p.dim, p.sample_rows));
  } else {
    line("PCA", "skipped: " + p.pca_skipped_reason);
  }
  if (!p.rate_bound.empty()) {
    std::string rd;
    for (const auto& [bits, mse] : p.rate_bound) rd += fmt::format("D({:g}) {:.3g}  ", bits, mse);
    line("RD bound", rd + "(the MSE a value a Gaussian of the sample's covariance allows at that many bits a value)");
  }
  if (with_footprints) s += "\nfootprint\n" + footprint_text(p.footprints);
  if (p.has_skew) {
    s += "\naccess skew\n";
    line("lookups", fmt::format("{:.6g} over {} rows ({} never looked up)", p.skew.total, p.skew.rows_accessed,
                                p.rows - p.skew.rows_accessed));
    std::string cov;
    for (const auto& [share, rows] : p.skew.rows_for_share)
      cov += fmt::format("{:g}%: {} rows ({})  ", share, rows, percent(rows, p.rows));
    line("covered by", cov);
    line("Zipf fit", fmt::format("exponent {:.3f} (r^2 {:.3f})", p.skew.zipf_exponent, p.skew.zipf_r2));
  }
  return s;
}

nlohmann::json container_summary(const io::Container& c) {
  using nlohmann::json;
  const json& m = c.manifest();
  json tiers = json::array();
  for (size_t t = 0; t < c.tiers().size(); ++t) {
    const io::TierInfo& tier = c.tiers()[t];
    uint64_t bytes = 0;
    json roles = json::object();
    for (const auto& [role, name] : tier.sections) {
      const uint64_t len = c.section(name).size;
      bytes += len;
      roles[role] = len;
    }
    tiers.push_back({{"name", tier.name},
                     {"codec", tier.codec},
                     {"rows", tier.rows},
                     {"residency", tier.residency ? json(residency_name(*tier.residency)) : json(nullptr)},
                     {"bytes", bytes},
                     {"section_bytes", roles}});
  }
  uint64_t data_bytes = 0;
  for (const auto& s : c.sections()) data_bytes += s.length;
  const uint64_t fp32 = c.rows() * c.dim() * 4;
  json j = {
      {"path", c.path()},
      {"format_version", fmt::format("1.{}", c.minor_version())},
      {"rows", c.rows()},
      {"dim", c.dim()},
      {"file_bytes", c.file_size()},
      {"data_bytes", data_bytes},
      {"fp32_bytes", fp32},
      {"ratio", compression_ratio(fp32, written_file_bytes(c))},
      {"bits_per_value", static_cast<double>(written_file_bytes(c)) * 8.0 / static_cast<double>(c.rows() * c.dim())},
      {"sections", c.sections().size()},
      {"tiers", tiers},
      {"provenance", m.value("provenance", json::object())}};
  if (m.contains("eval")) j["eval"] = m["eval"];
  return j;
}

std::string container_summary_text(const nlohmann::json& j) {
  std::string s = fmt::format("{}\n", j["path"].get<std::string>());
  auto line = [&](const char* key, const std::string& value) { s += fmt::format("  {:<14}{}\n", key, value); };
  line("container", fmt::format(".edo {}, {} bytes, {} sections", j["format_version"].get<std::string>(),
                                j["file_bytes"].get<uint64_t>(), j["sections"].get<uint64_t>()));
  line("table", fmt::format("{} x {}", j["rows"].get<uint64_t>(), j["dim"].get<uint64_t>()));
  line("footprint",
       fmt::format("{} bytes ({} of data) vs {} as fp32: {:.2f}x, {:.3g} bits a value", j["file_bytes"].get<uint64_t>(),
                   j["data_bytes"].get<uint64_t>(), j["fp32_bytes"].get<uint64_t>(), j["ratio"].get<double>(),
                   j["bits_per_value"].get<double>()));
  for (const auto& t : j["tiers"]) {
    line("tier", fmt::format("{}: {} rows, codec {}, {} bytes{}", t["name"].get<std::string>(),
                             t["rows"].get<uint64_t>(), t["codec"].get<std::string>(), t["bytes"].get<uint64_t>(),
                             t["residency"].is_string() ? ", " + t["residency"].get<std::string>() : ""));
  }
  const auto& prov = j["provenance"];
  if (prov.contains("tool"))
    line("made by", fmt::format("{} {} from {} (seed {})", prov.value("tool", "?"), prov.value("version", "?"),
                                prov.value("source", "?"), prov.contains("seed") ? prov["seed"].dump() : "?"));
  if (j.contains("eval")) {
    std::string ev;
    for (const char* key : {"recall@10", "cos.mean", "cos.min", "ratio"})
      if (j["eval"].contains(key) && j["eval"][key].is_number())
        ev += fmt::format("{} {:.4g}  ", key, j["eval"][key].get<double>());
    line("stored eval", ev);
  }
  return s;
}

nlohmann::json profile_report_json(const TableProfile& p, const nlohmann::json& container, const PlanResult* plan) {
  nlohmann::json j = to_json(p);
  if (!container.is_null()) j["container"] = container;
  if (plan) j["plan"] = to_json(*plan);
  return j;
}

std::string profile_report_text(const TableProfile& p, const nlohmann::json& container, const PlanResult* plan,
                                const std::string& plan_config_path) {
  std::string s = container.is_null() ? "" : container_summary_text(container) + "\ndecoded rows: ";
  s += to_text(p);
  if (!plan) return s;
  s += "\n" + to_text(*plan);
  if (plan->chosen >= 0) {
    s += fmt::format("\n  config (edo-pack --config):\n{}\n", plan_config(*plan).dump(2));
    if (!plan_config_path.empty()) s += fmt::format("  written to {}\n", plan_config_path);
  }
  return s;
}

}  // namespace edo
