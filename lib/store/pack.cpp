// SPDX-License-Identifier: Apache-2.0
// Tier specs, the hot order, tier slices and writing a tiered .edo file.
#include "pack_impl.hpp"

#include <edo/checked.hpp>
#include <edo/codec.hpp>
#include <edo/error.hpp>
#include <edo/io/container.hpp>
#include <edo/io/rowmap.hpp>
#include <edo/pack.hpp>
#include <edo/parallel.hpp>
#include <edo/random.hpp>
#include <edo/shard.hpp>

#include <xxhash.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <fstream>
#include <numeric>
#include <set>

namespace edo {

namespace {

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
  // Counts from 2^53 on are not exact in the double they are held in (and
  // from 2^64 on, no row count at all): no table has that many rows.
  if (!percent && tier.value >= 0x1p53) EDO_USAGE_FAIL("tier '{}': row count '{}' is beyond any table", spec, value);
  tier.share = mass ? ShareKind::mass_percent : percent ? ShareKind::rows_percent : ShareKind::rows_count;
  return tier;
}

std::string number_text(double v) { return fmt::format("{}", v); }

}  // namespace

TierSpec parse_tier_spec(std::string_view text) {
  // ':' inside a bracketed codec value ("values=[int4:group=32]") is the codec's.
  const std::vector<std::string_view> fields = split_spec(text, ':', "tier");
  if (fields.size() < 3) EDO_USAGE_FAIL("tier '{}': expected NAME:SHARE:CODEC[:gpu|host|disk]", text);
  TierSpec tier;
  tier.name = std::string(fields[0]);
  if (!valid_tier_name(tier.name))
    EDO_USAGE_FAIL("tier '{}': name '{}' must be 1-32 of [A-Za-z0-9_-] and not 'rowmap'", text, tier.name);
  tier = parse_share(text, fields[1], tier);
  size_t codec_end = fields.size();
  if (fields.size() >= 4 && parse_residency(fields.back())) {
    tier.residency = *parse_residency(fields.back());
    --codec_end;
  }
  for (size_t i = 2; i < codec_end; ++i) {
    if (i > 2) tier.codec += ':';
    tier.codec += fields[i];
  }
  if (tier.codec.empty()) EDO_USAGE_FAIL("tier '{}': no codec", text);
  if (parse_residency(tier.codec))
    EDO_USAGE_FAIL("tier '{}': '{}' is a residency, the codec is missing", text, tier.codec);
  const char* shared = tier_kind_word(TierKind::shared_vector);
  if (tier.codec.starts_with(shared) && tier.codec != shared)
    EDO_USAGE_FAIL("tier '{}': codec '{}' takes no parameters", text, shared);
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
  return tier.name + ":" + share_text(tier) + ":" + tier.codec + ":" + residency_name(tier.residency);
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
    if (t.name == "head" || t.name == "torso" || t.name == "tail")
      EDO_USAGE_FAIL("tier name '{}' is reserved: evaluation reports its frequency buckets by that name", t.name);
    rests += t.share == ShareKind::rest;
    if (t.share == ShareKind::rows_count && t.value > static_cast<double>(rows))
      EDO_USAGE_FAIL("tier '{}': {} rows asked, the table has {}", t.name, t.value, rows);
    try {
      make_tier_builder(t.codec, dim, {});
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
                   {"residency", residency_name(t.residency)},
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
    const std::string residency = jt.contains("residency") && jt["residency"].is_string()
                                      ? jt["residency"].get<std::string>()
                                      : residency_name(Residency::host);
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

std::vector<uint8_t> tier_of_rows(const std::vector<uint64_t>& order, const std::vector<uint64_t>& cuts) {
  std::vector<uint8_t> tier(order.size());
  for (size_t t = 0; t + 1 < cuts.size(); ++t)
    for (uint64_t k = cuts[t]; k < cuts[t + 1]; ++k) tier[order[k]] = static_cast<uint8_t>(t);
  return tier;
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

uint64_t detail::rows_digest(const float* x, uint64_t n, uint64_t dim, uint64_t first_row) {
  uint64_t sum = 0;
#pragma omp parallel for reduction(+ : sum) schedule(static) if (parallel_worth(n * dim))
  for (int64_t i = 0; i < static_cast<int64_t>(n); ++i)
    sum += XXH3_64bits_withSeed(x + static_cast<uint64_t>(i) * dim, dim * sizeof(float),
                                first_row + static_cast<uint64_t>(i));
  return sum;
}

detail::TablePass detail::digest_and_norms(io::TableReader& input, bool want_norms, size_t block_bytes,
                                           uint64_t first_row) {
  TablePass p;
  const uint64_t rows = input.rows(), dim = input.dim(), block = input.block_rows(block_bytes);
  if (want_norms) p.norms.resize(rows);
  for (uint64_t begin = 0; begin < rows; begin += block) {
    const uint64_t n = std::min(block, rows - begin);
    const float* x = input.rows_f32(begin, n);
    p.digest += rows_digest(x, n, dim, first_row + begin);
    if (!want_norms) continue;
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < static_cast<int64_t>(n); ++i) {
      double s = 0;
      for (uint64_t j = 0; j < dim; ++j) s += static_cast<double>(x[i * dim + j]) * x[i * dim + j];
      p.norms[begin + static_cast<uint64_t>(i)] = std::sqrt(s);
    }
  }
  return p;
}

namespace {

// The whole table's layout: the hot order (by frequency, else by row norm:
// one pass, which also gives the source digest) and each tier's rows.
TableLayout whole_layout(io::TableReader& input, const PackOptions& opt, bool need_digest) {
  TableLayout layout;
  layout.freq = opt.freq;
  layout.row_order = opt.freq.empty() ? "norm" : "frequency";
  detail::TablePass p0;
  if (need_digest || opt.freq.empty()) {
    p0 = detail::digest_and_norms(input, opt.freq.empty(), opt.block_bytes);
    if (need_digest) layout.source_digest = p0.digest;
  }
  const std::vector<uint64_t> order = hot_order(opt.freq.empty() ? p0.norms : opt.freq);
  const std::vector<uint64_t> cuts = tier_cuts(opt.tiers, order, opt.freq);
  const uint8_t ntiers = static_cast<uint8_t>(opt.tiers.size());
  layout.tier_of_row = tier_of_rows(order, cuts);
  for (uint8_t t = 0; t < ntiers; ++t) {
    const TierSpec& spec = opt.tiers[t];
    layout.tiers.push_back({spec.name, spec.codec, spec.residency, share_text(spec)});
  }
  // One tier holds every row in table order: no map needed.
  if (ntiers == 1) layout.tier_of_row.clear();
  return layout;
}

// What a pack run records: the same for a whole run, its shards and its trained state.
WriteOptions pack_write_options(const PackOptions& opt) {
  WriteOptions wo = opt;
  nlohmann::json specs = nlohmann::json::array();
  for (const TierSpec& t : opt.tiers) specs.push_back(format_tier_spec(t));
  wo.parameters["tiers"] = specs;
  wo.parameters["train_rows"] = opt.train_rows;
  return wo;
}

// A shard's part of `layout`: its rows' tiers and counts; the tiers' masses
// stay the whole table's.
TableLayout shard_layout(const TableLayout& whole, uint64_t begin, uint64_t end) {
  TableLayout part;
  part.tiers = whole.tiers;
  part.row_order = whole.row_order;
  part.tier_mass = tier_masses(whole.freq, whole.tier_of_row, whole.tiers.size());
  if (!whole.tier_of_row.empty())
    part.tier_of_row.assign(whole.tier_of_row.begin() + static_cast<int64_t>(begin),
                            whole.tier_of_row.begin() + static_cast<int64_t>(end));
  if (!whole.freq.empty())
    part.freq.assign(whole.freq.begin() + static_cast<int64_t>(begin), whole.freq.begin() + static_cast<int64_t>(end));
  return part;
}

}  // namespace

void check_shardable(const PackOptions& opt, uint64_t dim) {
  for (size_t t = 0; t < opt.tiers.size(); ++t) {
    const TierSpec& tier = opt.tiers[t];
    const auto builder = make_tier_builder(tier.codec, dim, {});
    const ShardNeed need = builder->shard_need();
    if (need == ShardNeed::unshardable)
      EDO_USAGE_FAIL(
          "tier '{}' ({}): its rows depend on the whole tier (a group tier's groups, a lossless tier's "
          "segment codes), so it does not shard (docs/SCALE.md)",
          tier.name, tier.codec);
    const bool loaded = opt.trained && t < opt.trained->size() && (*opt.trained)[t].holds_state();
    if ((need == ShardNeed::sample || need == ShardNeed::tier) && !loaded)
      EDO_USAGE_FAIL(
          "tier '{}' ({}) {}, and every shard must share it: run {} INPUT --train-only -o MODEL.edo with the same "
          "options once, then each shard with --trained MODEL.edo",
          tier.name, tier.codec, need == ShardNeed::sample ? "trains on a sample" : "fits on every row of its tier",
          opt.tool.empty() ? "the tool" : opt.tool);
    if (loaded) builder->load_trained((*opt.trained)[t]);  // a malformed state refused before any row is read
  }
}

PackReport pack_to_edo(io::TableReader& input, const std::string& out_path, const PackOptions& opt) {
  const uint64_t rows = input.rows();
  check_tier_specs(opt.tiers, rows, input.dim());
  if (!opt.freq.empty() && opt.freq.size() != rows)
    EDO_USAGE_FAIL("{} frequencies for {} rows of {}", opt.freq.size(), rows, input.path());
  const bool sharded = !opt.shard.is_null();
  if (sharded) check_shardable(opt, input.dim());
  const TableLayout layout = whole_layout(input, opt, !sharded);
  WriteOptions wo = pack_write_options(opt);
  PackReport rep;
  if (sharded) {
    const uint64_t begin = opt.first_row, end = begin + opt.shard_rows;
    if (end > rows || opt.shard_rows == 0)
      EDO_FAIL("{}: shard rows {} to {} are outside the table", out_path, begin, end);
    auto view = row_range_view(input, {begin, end});
    wo.whole_table = &input;  // for the kinds that read rows outside the shard (nearest)
    wo.whole_layout = &layout;
    static_cast<TableWriteReport&>(rep) = write_table(*view, out_path, shard_layout(layout, begin, end), wo);
  } else {
    static_cast<TableWriteReport&>(rep) = write_table(input, out_path, layout, wo);
  }
  rep.order = layout.row_order;
  rep.specs = opt.tiers;
  return rep;
}

void pack_trained_state(io::TableReader& input, const std::string& out_path, const PackOptions& opt) {
  check_tier_specs(opt.tiers, input.rows(), input.dim());
  if (!opt.freq.empty() && opt.freq.size() != input.rows())
    EDO_USAGE_FAIL("{} frequencies for {} rows of {}", opt.freq.size(), input.rows(), input.path());
  write_trained_layout(input, out_path, whole_layout(input, opt, false), pack_write_options(opt));
}

}  // namespace edo
