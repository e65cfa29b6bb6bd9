// Tier specs, the hot order, tier slices and writing a tiered .edo file.
#include "pack_impl.hpp"

#include <edo/build_info.hpp>
#include <edo/checked.hpp>
#include <edo/codec.hpp>
#include <edo/error.hpp>
#include <edo/io/container.hpp>
#include <edo/io/rowmap.hpp>
#include <edo/pack.hpp>
#include <edo/random.hpp>

#include <sys/stat.h>
#include <xxhash.h>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cmath>
#include <fstream>
#include <numeric>
#include <set>

namespace edo {

namespace {

bool is_residency(std::string_view s) { return s == "gpu" || s == "host" || s == "disk"; }

bool valid_tier_name(std::string_view name) {
  if (name.empty() || name.size() > 32 || name == "rowmap") return false;
  for (char c : name)
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-'))
      return false;
  return true;
}

double parse_number(std::string_view spec, std::string_view text) {
  double v = 0;
  const auto r = std::from_chars(text.data(), text.data() + text.size(), v);
  if (r.ec != std::errc() || r.ptr != text.data() + text.size() || !std::isfinite(v) || v < 0)
    EDO_USAGE_FAIL("tier '{}': '{}' is not a non-negative number", spec, text);
  return v;
}

TierSpec parse_share(std::string_view spec, std::string_view share, TierSpec tier) {
  if (share == "rest") {
    tier.share = ShareKind::rest;
    tier.value = 0;
    return tier;
  }
  const bool rows = share.starts_with("rows="), mass = share.starts_with("mass=");
  if (!rows && !mass) EDO_USAGE_FAIL("tier '{}': share '{}' is not rows=P%, rows=N, mass=P% or rest", spec, share);
  std::string_view value = share.substr(5);
  const bool percent = value.ends_with('%');
  if (percent) value.remove_suffix(1);
  if (mass && !percent) EDO_USAGE_FAIL("tier '{}': a mass share is a percentage (mass=80%)", spec);
  tier.value = parse_number(spec, value);
  if (percent && tier.value > 100) EDO_USAGE_FAIL("tier '{}': share {}% is above 100%", spec, tier.value);
  if (!percent && tier.value != std::floor(tier.value))
    EDO_USAGE_FAIL("tier '{}': row count '{}' is not an integer", spec, value);
  tier.share = mass ? ShareKind::mass_percent : percent ? ShareKind::rows_percent : ShareKind::rows_count;
  return tier;
}

std::string number_text(double v) { return fmt::format("{}", v); }

std::string basename_of(const std::string& path) {
  const auto slash = path.find_last_of('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

uint64_t file_size_of(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 ? static_cast<uint64_t>(st.st_size) : 0;
}

using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

}  // namespace

TierSpec parse_tier_spec(std::string_view text) {
  std::vector<std::string_view> fields;
  for (size_t pos = 0;;) {
    const size_t next = text.find(':', pos);
    fields.push_back(text.substr(pos, next == std::string_view::npos ? std::string_view::npos : next - pos));
    if (next == std::string_view::npos) break;
    pos = next + 1;
  }
  if (fields.size() < 3) EDO_USAGE_FAIL("tier '{}': expected NAME:SHARE:CODEC[:gpu|host|disk]", text);
  TierSpec tier;
  tier.name = std::string(fields[0]);
  if (!valid_tier_name(tier.name))
    EDO_USAGE_FAIL("tier '{}': name '{}' must be 1-32 of [A-Za-z0-9_-] and not 'rowmap'", text, tier.name);
  tier = parse_share(text, fields[1], tier);
  size_t codec_end = fields.size();
  if (fields.size() >= 4 && is_residency(fields.back())) {
    tier.residency = std::string(fields.back());
    --codec_end;
  }
  for (size_t i = 2; i < codec_end; ++i) {
    if (i > 2) tier.codec += ':';
    tier.codec += fields[i];
  }
  if (tier.codec.empty()) EDO_USAGE_FAIL("tier '{}': no codec", text);
  if (is_residency(tier.codec))
    EDO_USAGE_FAIL("tier '{}': '{}' is a residency, the codec is missing", text, tier.codec);
  if (tier.codec.starts_with("default") && tier.codec != kDefaultTierCodec)
    EDO_USAGE_FAIL("tier '{}': codec 'default' takes no parameters", text);
  return tier;
}

std::string share_text(const TierSpec& tier) {
  switch (tier.share) {
    case ShareKind::rows_percent:
      return "rows=" + number_text(tier.value) + "%";
    case ShareKind::rows_count:
      return fmt::format("rows={}", static_cast<uint64_t>(tier.value));
    case ShareKind::mass_percent:
      return "mass=" + number_text(tier.value) + "%";
    case ShareKind::rest:
      break;
  }
  return "rest";
}

std::string format_tier_spec(const TierSpec& tier) {
  return tier.name + ":" + share_text(tier) + ":" + tier.codec + ":" + tier.residency;
}

void check_tier_specs(const std::vector<TierSpec>& tiers, uint64_t rows, uint64_t dim) {
  if (tiers.empty()) EDO_USAGE_FAIL("no tiers given (--tier NAME:SHARE:CODEC[:RESIDENCY] or --config FILE)");
  if (tiers.size() > io::kMaxTiers) EDO_USAGE_FAIL("{} tiers given, at most {}", tiers.size(), io::kMaxTiers);
  std::set<std::string> names;
  int rests = 0;
  for (const TierSpec& t : tiers) {
    if (!valid_tier_name(t.name))
      EDO_USAGE_FAIL("tier name '{}' must be 1-32 of [A-Za-z0-9_-] and not 'rowmap'", t.name);
    if (!names.insert(t.name).second) EDO_USAGE_FAIL("tier '{}' is given twice", t.name);
    if (!is_residency(t.residency))
      EDO_USAGE_FAIL("tier '{}': residency '{}' is not gpu, host or disk", t.name, t.residency);
    rests += t.share == ShareKind::rest;
    if (t.share == ShareKind::rows_count && t.value > static_cast<double>(rows))
      EDO_USAGE_FAIL("tier '{}': {} rows asked, the table has {}", t.name, t.value, rows);
    if (t.codec == kDefaultTierCodec) continue;
    try {
      make_codec(t.codec, dim);
    } catch (const Error& e) {
      EDO_USAGE_FAIL("tier '{}': {}", t.name, e.what());
    }
  }
  if (rests > 1) EDO_USAGE_FAIL("{} tiers take the rest; at most one may", rests);
}

nlohmann::json plan_to_json(const std::vector<TierSpec>& tiers) {
  nlohmann::json arr = nlohmann::json::array();
  for (const TierSpec& t : tiers)
    arr.push_back({{"name", t.name},
                   {"share", share_text(t)},
                   {"codec", t.codec},
                   {"residency", t.residency},
                   {"spec", format_tier_spec(t)}});
  return {{"tiers", arr}};
}

std::vector<TierSpec> plan_from_json(const nlohmann::json& plan, const std::string& path) {
  if (!plan.is_object() || !plan.contains("tiers") || !plan["tiers"].is_array() || plan["tiers"].empty())
    EDO_FAIL("{}: a plan is an object with a non-empty 'tiers' array", path);
  std::vector<TierSpec> tiers;
  for (const auto& jt : plan["tiers"]) {
    for (const char* key : {"name", "share", "codec"})
      if (!jt.is_object() || !jt.contains(key) || !jt[key].is_string())
        EDO_FAIL("{}: tier {} has no string '{}'", path, tiers.size(), key);
    const std::string residency =
        jt.contains("residency") && jt["residency"].is_string() ? jt["residency"].get<std::string>() : "host";
    try {
      tiers.push_back(parse_tier_spec(jt["name"].get<std::string>() + ":" + jt["share"].get<std::string>() + ":" +
                                      jt["codec"].get<std::string>() + ":" + residency));
    } catch (const Error& e) {
      EDO_FAIL("{}: {}", path, e.what());
    }
  }
  return tiers;
}

std::vector<TierSpec> read_plan_file(const std::string& path) {
  std::ifstream f(path);
  if (!f) EDO_FAIL("{}: cannot open", path);
  nlohmann::json j = nlohmann::json::parse(f, nullptr, false);
  if (j.is_discarded()) EDO_FAIL("{}: not valid JSON", path);
  return plan_from_json(j, path);
}

std::vector<uint64_t> hot_order(const std::vector<double>& key) {
  std::vector<uint64_t> order(key.size());
  std::iota(order.begin(), order.end(), uint64_t{0});
  auto k = [&](uint64_t i) { return std::isnan(key[i]) ? -HUGE_VAL : key[i]; };
  std::stable_sort(order.begin(), order.end(), [&](uint64_t a, uint64_t b) { return k(a) > k(b); });
  return order;
}

std::vector<uint64_t> tier_cuts(const std::vector<TierSpec>& tiers, const std::vector<uint64_t>& order,
                                const std::vector<double>& weights) {
  const uint64_t rows = order.size();
  const double total = std::accumulate(weights.begin(), weights.end(), 0.0);
  // Rows a tier takes from `pos`, walking the order by `step` (+1 from the
  // hot end, -1 from the cold end); `avail` rows remain on that side.
  auto take = [&](const TierSpec& t, uint64_t pos, int step, uint64_t avail) -> uint64_t {
    uint64_t n = 0;
    switch (t.share) {
      case ShareKind::rows_percent:
        n = static_cast<uint64_t>(std::llround(t.value / 100.0 * static_cast<double>(rows)));
        break;
      case ShareKind::rows_count:
        n = static_cast<uint64_t>(t.value);
        break;
      case ShareKind::mass_percent: {
        if (weights.empty()) EDO_USAGE_FAIL("tier '{}': a mass share needs access frequencies (--freq)", t.name);
        if (t.value >= 100) return avail;
        const double target = t.value / 100.0 * total * (1 - 1e-12);
        double mass = 0;
        while (n < avail && mass < target) {
          mass += weights[order[step > 0 ? pos + n : pos - 1 - n]];
          ++n;
        }
        return n;
      }
      case ShareKind::rest:
        break;
    }
    if (n > avail)
      EDO_USAGE_FAIL("tier '{}' ({}) needs {} rows, only {} of {} are left: the shares add up to more than the table",
                     t.name, share_text(t), n, avail, rows);
    return n;
  };
  const auto rest =
      std::find_if(tiers.begin(), tiers.end(), [](const TierSpec& t) { return t.share == ShareKind::rest; });
  const size_t nrest = static_cast<size_t>(rest - tiers.begin());
  std::vector<uint64_t> cuts(tiers.size() + 1, 0);
  uint64_t hot = 0;
  for (size_t t = 0; t < nrest; ++t) {
    hot += take(tiers[t], hot, +1, rows - hot);
    cuts[t + 1] = hot;
  }
  if (rest == tiers.end()) {
    // Percentages round one row either way; a gap beyond that is a plan that does not cover the table.
    if (rows - hot > tiers.size())
      EDO_USAGE_FAIL(
          "the tiers cover {} of {} rows: their shares must add up to the whole table (or add a 'rest' tier)", hot,
          rows);
    cuts.back() = rows;
    return cuts;
  }
  uint64_t cold = rows;
  cuts.back() = rows;
  for (size_t t = tiers.size() - 1; t > nrest; --t) {
    cold -= take(tiers[t], cold, -1, cold - hot);
    cuts[t] = cold;
  }
  cuts[nrest] = hot;
  return cuts;
}

// ---- packing ------------------------------------------------------------------------

namespace {

// Calls fn(begin, n, x, rows) for each block holding rows of tier t, with
// `rows` the block-relative positions of those rows.
template <class Fn>
void for_tier_blocks(io::TableReader& input, const std::vector<uint8_t>& tier_of_row, uint8_t t, uint64_t block,
                     Fn&& fn) {
  const uint64_t rows = input.rows();
  std::vector<uint64_t> mine;
  for (uint64_t begin = 0; begin < rows; begin += block) {
    const uint64_t n = std::min(block, rows - begin);
    mine.clear();
    for (uint64_t i = 0; i < n; ++i)
      if (tier_of_row[begin + i] == t) mine.push_back(i);
    if (!mine.empty()) fn(begin, n, input.rows_f32(begin, n), mine);
  }
}

// Names the first non-finite value among the gathered rows, by table row.
[[noreturn]] void rethrow_with_row(const Error& e, const io::TableReader& input, const float* x,
                                   const std::vector<uint64_t>& row_ids, uint64_t dim, const std::string& tier) {
  for (size_t r = 0; r < row_ids.size(); ++r)
    for (uint64_t j = 0; j < dim; ++j)
      if (!std::isfinite(x[r * dim + j]))
        EDO_FAIL("{}: row {}, column {}: value is {} (tier '{}')", input.path(), row_ids[r], j, x[r * dim + j], tier);
  EDO_FAIL("{}: tier '{}': {}", input.path(), tier, e.what());
}

}  // namespace

detail::TablePass detail::digest_and_norms(io::TableReader& input, bool want_norms, size_t block_bytes) {
  TablePass p;
  const uint64_t rows = input.rows(), dim = input.dim(), block = input.block_rows(block_bytes);
  if (want_norms) p.norms.resize(rows);
  XXH64_state_t* hash = XXH64_createState();
  XXH64_reset(hash, 0);
  for (uint64_t begin = 0; begin < rows; begin += block) {
    const uint64_t n = std::min(block, rows - begin);
    const float* x = input.rows_f32(begin, n);
    XXH64_update(hash, x, n * dim * sizeof(float));
    if (!want_norms) continue;
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < static_cast<int64_t>(n); ++i) {
      double s = 0;
      for (uint64_t j = 0; j < dim; ++j) s += static_cast<double>(x[i * dim + j]) * x[i * dim + j];
      p.norms[begin + static_cast<uint64_t>(i)] = std::sqrt(s);
    }
  }
  p.digest = XXH64_digest(hash);
  XXH64_freeState(hash);
  return p;
}

PackReport pack_to_edo(io::TableReader& input, const std::string& out_path, const PackOptions& opt) {
  const uint64_t rows = input.rows(), dim = input.dim();
  check_tier_specs(opt.tiers, rows, dim);
  const uint8_t ntiers = static_cast<uint8_t>(opt.tiers.size());
  if (!opt.freq.empty() && opt.freq.size() != rows)
    EDO_USAGE_FAIL("{} frequencies for {} rows of {}", opt.freq.size(), rows, input.path());
  PackReport rep;
  rep.rows = rows;
  rep.dim = dim;
  rep.fp32_bytes = rows * dim * 4;
  rep.order = opt.freq.empty() ? "norm" : "frequency";

  const detail::TablePass p0 = detail::digest_and_norms(input, opt.freq.empty(), opt.block_bytes);
  const std::vector<uint64_t> order = hot_order(opt.freq.empty() ? p0.norms : opt.freq);
  const std::vector<uint64_t> cuts = tier_cuts(opt.tiers, order, opt.freq);
  std::vector<uint8_t> tier_of_row(rows);
  for (uint8_t t = 0; t < ntiers; ++t)
    for (uint64_t k = cuts[t]; k < cuts[t + 1]; ++k) tier_of_row[order[k]] = t;
  const double total_mass = std::accumulate(opt.freq.begin(), opt.freq.end(), 0.0);

  EncodeOptions enc;
  enc.device = opt.device;
  enc.allow_nonfinite = opt.allow_nonfinite;
  enc.allow_underflow = opt.allow_underflow;
  enc.input = input.path();
  const uint64_t block = input.block_rows(opt.block_bytes);
  io::ContainerWriter writer(out_path);
  nlohmann::json tiers_json = nlohmann::json::array();
  uint64_t encoded = 0;
  std::vector<float> gathered, decoded;
  std::vector<uint8_t> codes;
  std::vector<uint64_t> row_ids;

  for (uint8_t t = 0; t < ntiers; ++t) {
    const TierSpec& spec = opt.tiers[t];
    PackTierReport tr;
    tr.spec = spec;
    tr.rows = cuts[t + 1] - cuts[t];
    if (total_mass > 0)
      for (uint64_t k = cuts[t]; k < cuts[t + 1]; ++k) tr.mass += opt.freq[order[k]] / total_mass;
    nlohmann::json jt = {
        {"name", spec.name}, {"rows", tr.rows}, {"residency", spec.residency}, {"share", share_text(spec)}};
    if (total_mass > 0) jt["mass"] = tr.mass;

    if (spec.codec == kDefaultTierCodec) {
      // The frequency-weighted mean of the tier's rows (plain mean without frequencies).
      std::vector<double> sum(dim, 0.0);
      double wsum = 0;
      const bool weighted = total_mass > 0 && tr.mass > 0;
      for_tier_blocks(input, tier_of_row, t, block,
                      [&](uint64_t begin, uint64_t, const float* x, const std::vector<uint64_t>& mine) {
                        for (uint64_t i : mine) {
                          const double w = weighted ? opt.freq[begin + i] : 1.0;
                          for (uint64_t j = 0; j < dim; ++j) sum[j] += w * x[i * dim + j];
                          wsum += w;
                        }
                        encoded += mine.size();
                        if (opt.progress) opt.progress(encoded, rows);
                      });
      std::vector<float> vec(dim, 0.0f);
      for (uint64_t j = 0; j < dim; ++j) vec[j] = wsum > 0 ? static_cast<float>(sum[j] / wsum) : 0.0f;
      if (!std::all_of(vec.begin(), vec.end(), [](float v) { return std::isfinite(v); }))
        EDO_FAIL("{}: tier '{}': the mean of its rows is not finite (the rows hold NaN/Inf)", input.path(), spec.name);
      writer.add_section(spec.name + "/vector", vec.data(), dim * sizeof(float));
      tr.codec = kDefaultTierCodec;
      tr.bytes = dim * sizeof(float);
      jt.update({{"codec", kDefaultTierCodec}, {"code_size", 0}, {"sections", {{"vector", spec.name + "/vector"}}}});
      rep.tiers.push_back(tr);
      tiers_json.push_back(jt);
      continue;
    }

    std::unique_ptr<Codec> codec = make_codec(spec.codec, dim);
    tr.codec = codec->spec();
    tr.code_size = codec->code_size();
    if (codec->needs_training()) {
      if (tr.rows == 0)
        EDO_USAGE_FAIL("tier '{}': codec '{}' needs training but the tier has no rows", spec.name, tr.codec);
      const auto t0 = Clock::now();
      // Ranks within the tier, mapped to row ids by one walk of the tier ids.
      const std::vector<uint64_t> ranks = sample_indices(tr.rows, opt.train_rows, opt.seed);
      std::vector<float> sample(ranks.size() * dim);
      std::vector<uint64_t> sample_rows(ranks.size());
      uint64_t rank = 0;
      size_t next = 0;
      for (uint64_t r = 0; r < rows && next < ranks.size(); ++r) {
        if (tier_of_row[r] != t) continue;
        if (rank++ == ranks[next]) {
          sample_rows[next] = r;
          input.read_f32(r, 1, sample.data() + dim * next++);
        }
      }
      check_trainable_norms(sample.data(), ranks.size(), dim, tr.codec, enc, sample_rows.data());
      try {
        codec->train(sample.data(), ranks.size(), opt.seed);
      } catch (const Error& e) {
        EDO_FAIL("tier '{}': codec '{}' cannot train on the tier's {} rows: {}", spec.name, tr.codec, ranks.size(),
                 e.what());
      }
      tr.train_seconds = seconds_since(t0);
    }
    const auto t0 = Clock::now();
    writer.begin_section(spec.name + "/codes");
    for_tier_blocks(input, tier_of_row, t, block,
                    [&](uint64_t begin, uint64_t n, const float* x, const std::vector<uint64_t>& mine) {
                      const float* src = x;
                      if (mine.size() != n) {
                        gathered.resize(mine.size() * dim);
                        for (size_t k = 0; k < mine.size(); ++k)
                          std::copy_n(x + mine[k] * dim, dim, gathered.data() + k * dim);
                        src = gathered.data();
                      }
                      codes.resize(mine.size() * tr.code_size);
                      decoded.resize(mine.size() * dim);
                      row_ids.clear();
                      for (uint64_t i : mine) row_ids.push_back(begin + i);
                      try {
                        codec->encode(src, mine.size(), codes.data(), enc);
                      } catch (const Error& e) {
                        rethrow_with_row(e, input, src, row_ids, dim, spec.name);
                      }
                      codec->decode(codes.data(), mine.size(), decoded.data());
                      check_magnitudes(*codec, src, decoded.data(), mine.size(), enc, row_ids.data());
                      writer.append(codes.data(), codes.size());
                      encoded += mine.size();
                      if (opt.progress) opt.progress(encoded, rows);
                    });
    writer.end_section();
    rep.encode_seconds += seconds_since(t0);
    tr.bytes = tr.rows * tr.code_size;
    nlohmann::json sections = {{"codes", spec.name + "/codes"}};
    nlohmann::json shapes = nlohmann::json::object();
    for (const NamedBlob& blob : codec->state()) {
      const std::string name = spec.name + "/" + blob.name;
      writer.add_section(name, blob.values.data(), blob.values.size() * sizeof(float));
      sections[blob.name] = name;
      shapes[blob.name] = blob.shape;
      tr.bytes += blob.values.size() * sizeof(float);
    }
    jt.update({{"codec", tr.codec}, {"code_size", tr.code_size}, {"sections", sections}, {"state_shapes", shapes}});
    rep.tiers.push_back(tr);
    tiers_json.push_back(jt);
  }

  nlohmann::json manifest = {{"rows", rows}, {"dim", dim}, {"tiers", tiers_json}, {"row_order", rep.order}};
  if (ntiers > 1) {
    const std::vector<uint64_t> rank = io::rowmap_rank(tier_of_row.data(), rows, ntiers);
    writer.add_section("rowmap/tier", tier_of_row.data(), rows);
    writer.add_section("rowmap/rank", rank.data(), rank.size() * sizeof(uint64_t));
    manifest["rowmap"] = {{"tier", "rowmap/tier"}, {"rank", "rowmap/rank"}, {"block", io::kRowMapBlock}};
    rep.rowmap_bytes = rows + rank.size() * sizeof(uint64_t);
  }
  nlohmann::json specs = nlohmann::json::array();
  for (const TierSpec& t : opt.tiers) specs.push_back(format_tier_spec(t));
  nlohmann::json parameters = opt.parameters;
  parameters["tiers"] = specs;
  parameters["train_rows"] = opt.train_rows;
  manifest["provenance"] = {{"tool", opt.tool},
                            {"version", EDO_VERSION_STRING},
                            {"source", basename_of(input.path())},
                            {"source_dtype", io::dtype_name(input.dtype())},
                            {"source_fp32_xxh64", fmt::format("{:016x}", p0.digest)},
                            {"parameters", parameters},
                            {"seed", opt.seed}};
  for (const auto& [key, value] : opt.extra_manifest.items()) manifest[key] = value;
  writer.finish(manifest);

  rep.host_bytes = rep.rowmap_bytes;
  for (const PackTierReport& t : rep.tiers)
    (t.spec.residency == "gpu"    ? rep.gpu_bytes
     : t.spec.residency == "disk" ? rep.disk_bytes
                                  : rep.host_bytes) += t.bytes;
  rep.data_bytes = rep.gpu_bytes + rep.host_bytes + rep.disk_bytes;
  rep.file_bytes = file_size_of(out_path);
  rep.ratio = rep.data_bytes ? static_cast<double>(rep.fp32_bytes) / static_cast<double>(rep.data_bytes) : 0;
  return rep;
}

}  // namespace edo
