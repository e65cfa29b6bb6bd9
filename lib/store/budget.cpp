// SPDX-License-Identifier: Apache-2.0
// Budgets in bytes and ratios, and edo-pack TABLE --budget: the planner's
// choice under a size cap, packed and filled toward the cap (docs/PACK.md,
// "Budgets in bytes and ratios").
#include "pack_impl.hpp"

#include <edo/budget.hpp>
#include <edo/byte_count.hpp>
#include <edo/codec_chooser.hpp>
#include <edo/error.hpp>
#include <edo/io/files.hpp>
#include <edo/tier.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <optional>

#include <unistd.h>

namespace edo {

namespace {

// A finite decimal with no sign, or nullopt.
std::optional<double> unsigned_number(std::string_view text) {
  if (text.empty() || text.front() == '-' || text.front() == '+') return std::nullopt;
  double v = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size() || !std::isfinite(v)) return std::nullopt;
  return v;
}

[[noreturn]] void bad_size_budget(std::string_view text, std::string_view why) {
  EDO_USAGE_FAIL(
      "budget '{}': {} (size budgets are caps: 'bytes<=SIZE' with SIZE such as 2G, 512M, 1000, or "
      "'ratio>=R' with R above 0)",
      text, why);
}

// Bytes a plan's manifest entry takes, about (measured: 576 bytes for a file of
// one tier, 1,344 for three), kept free below the cap while planning so that
// the plan's tiers and id map fit beside the probe's header.
constexpr uint64_t kManifestBytesPerTier = 512;
constexpr uint32_t kMaxPacks = 6;

}  // namespace

uint64_t parse_size(std::string_view text) {
  const std::string_view s = split_gate(text).expression;  // no operator in a size: the text trimmed
  const std::optional<uint64_t> bytes = parse_byte_count(s);
  if (!bytes)
    EDO_USAGE_FAIL(
        "size '{}': not a size (a number of bytes, or with K, M, G or T: 2G and 2GiB powers of 1024, 2GB of 1000; "
        "below 2^63)",
        text);
  if (*bytes < 1) EDO_USAGE_FAIL("size '{}': {} bytes is out of range (1 byte to 2^63)", text, *bytes);
  return *bytes;
}

void add_budget(Budget& budget, std::string_view text) {
  const GateParts parts = split_gate(text);
  const std::string_view expr = parts.expression, name = parts.name, op = parts.op;
  if (name == "w.bytes" || name == "w.ratio")
    bad_size_budget(expr, "a size is the file's, never access-weighted; drop the 'w.'");
  if (name != "bytes" && name != "ratio") {
    budget.gates.push_back(parse_gate(text));
    return;
  }
  SizeBudget b;
  b.expression = std::string(expr);
  b.strict = op == "<" || op == ">";
  if (name == "bytes") {
    if (op != "<=" && op != "<") bad_size_budget(expr, "a bytes budget is an upper bound, '<=' or '<'");
    b.kind = SizeBudgetKind::bytes;
    b.max_bytes = parse_size(parts.value);
    if (b.strict) {
      if (b.max_bytes < 2) bad_size_budget(expr, "no file is smaller than one byte");
      --b.max_bytes;
    }
  } else {
    if (op != ">=" && op != ">") bad_size_budget(expr, "a ratio budget is a lower bound, '>=' or '>'");
    const std::optional<double> r = unsigned_number(parts.value);
    if (!r || !(*r > 0)) bad_size_budget(expr, fmt::format("'{}' is not a ratio above 0", parts.value));
    b.kind = SizeBudgetKind::ratio;
    b.min_ratio = *r;
  }
  budget.sizes.push_back(std::move(b));
}

Budget parse_budget(const std::vector<std::string>& texts) {
  Budget b;
  for (const std::string& t : texts) add_budget(b, t);
  return b;
}

uint64_t budget_file_cap(const Budget& budget, uint64_t fp32_bytes, uint64_t vocab_bytes) {
  uint64_t cap = UINT64_MAX;
  for (const SizeBudget& s : budget.sizes) {
    if (s.kind == SizeBudgetKind::bytes) {
      cap = std::min(cap, s.max_bytes);
      continue;
    }
    // fp32 / file >= R  <=>  file <= fp32 / R (and < it when strict).
    const double limit = static_cast<double>(fp32_bytes) / s.min_ratio;
    double file = std::floor(limit);
    if (s.strict && file == limit) file -= 1;
    cap = std::min(cap, file < 0 ? 0 : static_cast<uint64_t>(file) + vocab_bytes);
  }
  return cap;
}

namespace {

uint64_t whole_file(const PackReport& r) { return r.file_bytes + r.vocab_bytes; }

std::string cap_text(uint64_t bytes, uint64_t fp32_bytes) {
  return fmt::format("bytes<={} (ratio {:.3g})", bytes,
                     bytes ? static_cast<double>(fp32_bytes) / static_cast<double>(bytes) : 0.0);
}

// The table packed with no data (one tier answering zeros): what the header,
// manifest and vocabulary take before any plan's bytes.
PackReport header_probe(io::TableReader& table, const PackOptions& pack_opt) {
  const char* tmp = std::getenv("TMPDIR");
  const std::string path = fmt::format("{}/.edo-budget-probe-{}.edo", tmp && *tmp ? tmp : "/tmp", ::getpid());
  const io::CleanupOnSignal cleanup(path);
  struct Remove {
    const std::string& path;
    ~Remove() { ::unlink(path.c_str()); }
  } remove{path};
  PackOptions po = pack_opt;
  po.tiers = {parse_tier_spec("all:rest:zero")};
  po.progress = {};
  po.note = {};
  return pack_to_edo(table, path, po);
}

// The plan's tiers with each share written as the row count it packed to,
// so that a fill can move rows between them.
std::vector<TierSpec> counted(const std::vector<TierSpec>& tiers, const PackReport& rep) {
  std::vector<TierSpec> out = tiers;
  for (size_t t = 0; t < out.size() && t < rep.tiers.size(); ++t) {
    out[t].share = ShareKind::rows_count;
    out[t].value = static_cast<double>(rep.tiers[t].rows);
  }
  return out;
}

bool is_codec_tier(const TierSpec& t) { return tier_kind_of(t.codec) == TierKind::codec; }

// The id map write_table() stores for counted tiers over the hot order.
uint64_t map_bytes(const std::vector<TierSpec>& tiers, const std::vector<uint64_t>& order) {
  if (tiers.size() < 2) return 0;
  std::vector<uint64_t> cuts = {0};
  for (const TierSpec& t : tiers) cuts.push_back(cuts.back() + static_cast<uint64_t>(t.value));
  return id_map_bytes(tier_of_rows(order, cuts).data(), order.size(), tiers.size());
}

// One step toward the cap: `rows` of the hottest rows of tier `from` go to
// the tier before it (or to a new tier of codec `codec` inserted before it),
// each costing `row_bytes` more, plus `fixed_bytes` for a new tier's state
// and manifest entry, plus what the id map gains.
struct FillMove {
  std::vector<TierSpec> base;  // counted tiers of the last pack that fit
  size_t from = 0;
  std::string codec;  // empty: into the tier before `from`
  uint64_t row_bytes = 0, fixed_bytes = 0, rows = 0;
  std::string why;  // set when no move is possible

  std::vector<TierSpec> apply(uint64_t n) const {
    std::vector<TierSpec> out = base;
    out[from].value -= static_cast<double>(n);
    size_t source = from;
    if (codec.empty()) {
      out[from - 1].value += static_cast<double>(n);
    } else {
      TierSpec t = out[from];
      t.codec = codec;
      t.value = static_cast<double>(n);
      t.name = "fill";
      for (int k = 2; std::any_of(out.begin(), out.end(), [&](const TierSpec& o) { return o.name == t.name; }); ++k)
        t.name = fmt::format("fill{}", k);
      out.insert(out.begin() + static_cast<std::ptrdiff_t>(from), t);
      ++source;
    }
    if (out[source].value == 0) out.erase(out.begin() + static_cast<std::ptrdiff_t>(source));
    return out;
  }

  // The most rows (at most `most`) whose move costs at most `slack` bytes, the id map counted.
  uint64_t fitting_rows(uint64_t most, uint64_t slack, const std::vector<uint64_t>& order) const {
    const uint64_t map_now = map_bytes(base, order);
    const auto fits = [&](uint64_t n) {
      const uint64_t map = map_bytes(apply(n), order);
      return n * row_bytes + fixed_bytes + (map > map_now ? map - map_now : 0) <= slack;
    };
    // The id map grows with the rows moved (more runs, then a map of every
    // row past kMaxWrittenRuns), so the rows that fit are a prefix: search it.
    uint64_t lo = 0, hi = slack > fixed_bytes ? std::min(most, (slack - fixed_bytes) / row_bytes) : 0;
    while (lo < hi) {
      const uint64_t mid = lo + (hi - lo + 1) / 2;
      if (fits(mid))
        lo = mid;
      else
        hi = mid - 1;
    }
    const uint64_t n = lo;
    return n;
  }
};

// The ladder's next more precise codec above `spec`: less error on the
// sample at the fewest bytes a row above its own.
const PlanLadderEntry* upgrade_of(const std::vector<PlanLadderEntry>& ladder, const std::string& spec,
                                  uint64_t code_size) {
  const auto self =
      std::find_if(ladder.begin(), ladder.end(), [&](const PlanLadderEntry& l) { return l.spec == spec; });
  const PlanLadderEntry* best = nullptr;
  for (const PlanLadderEntry& l : ladder) {
    if (!l.codec || l.code_size <= code_size) continue;
    if (self != ladder.end() && !(l.sample_error < self->sample_error)) continue;
    if (!best || l.code_size < best->code_size) best = &l;
  }
  return best;
}

// The coldest boundary between two codec tiers whose hotter one stores a
// row in more bytes (SIZE_MAX when none): where rows move up to fill, or
// down to shrink.
size_t codec_boundary(const std::vector<TierSpec>& tiers, const PackReport& rep) {
  for (size_t j = tiers.size(); j-- > 1;)
    if (is_codec_tier(tiers[j - 1]) && is_codec_tier(tiers[j]) && rep.tiers[j - 1].code_size > rep.tiers[j].code_size)
      return j;
  return SIZE_MAX;
}

// The next fill step from a pack that fits with `slack` bytes to spare: the
// coldest codec tier whose hotter neighbour stores a row in more bytes gives
// it rows; without one, the coldest codec tier's hottest rows go to a new
// tier of the ladder's next more precise codec.
FillMove next_fill(const std::vector<TierSpec>& tiers, const PackReport& rep,
                   const std::vector<PlanLadderEntry>& ladder, uint64_t slack, const std::vector<uint64_t>& order) {
  FillMove m;
  m.base = counted(tiers, rep);
  if (const size_t j = codec_boundary(m.base, rep); j != SIZE_MAX && rep.tiers[j].rows > 0) {
    m.from = j;
    m.row_bytes = rep.tiers[j - 1].code_size - rep.tiers[j].code_size;
    m.rows = m.fitting_rows(rep.tiers[j].rows, slack, order);
    if (m.rows == 0) {
      const uint64_t map = map_bytes(m.apply(1), order), map_now = map_bytes(m.base, order);
      m.why = fmt::format("not filled: moving a row into tier {} costs {} bytes{}, more than the {} left",
                          m.base[j - 1].name, m.row_bytes + (map > map_now ? map - map_now : 0),
                          map > map_now + m.row_bytes ? " (the id map turns from runs into a map of every row)" : "",
                          slack);
    }
    return m;
  }
  for (size_t j = m.base.size(); j-- > 0;) {
    if (!is_codec_tier(m.base[j]) || rep.tiers[j].rows < 2) continue;
    const PlanLadderEntry* up = upgrade_of(ladder, rep.tiers[j].codec, rep.tiers[j].code_size);
    if (!up) {
      m.why = fmt::format("not filled: no codec of the ladder is more precise than {}", rep.tiers[j].codec);
      return m;
    }
    m.from = j;
    m.codec = up->spec;
    m.row_bytes = up->code_size - rep.tiers[j].code_size;
    m.fixed_bytes = up->state_bytes + kManifestBytesPerTier;
    m.rows = m.fitting_rows(rep.tiers[j].rows - 1, slack, order);
    if (m.rows == 0)
      m.why = fmt::format(
          "not filled: a tier of {} would cost more than the {} bytes left ({} of state and manifest, "
          "{} a row, and the id map)",
          up->spec, slack, m.fixed_bytes, m.row_bytes);
    return m;
  }
  m.why = "not filled: the plan has no codec tier to move rows from";
  return m;
}

// Exit 1 naming the smallest reachable size: the cap is below the headers
// alone, or below the cheapest plan the ladder makes.
[[noreturn]] void unreachable(io::TableReader& table, const Budget& budget, uint64_t cap, const PackReport& probe,
                              const PlanResult& plan) {
  std::string asked;
  for (const SizeBudget& s : budget.sizes) asked += (asked.empty() ? "" : ", ") + s.expression;
  const uint64_t header = whole_file(probe);
  const uint64_t smallest = header + plan.smallest_bytes + kManifestBytesPerTier;
  if (cap <= header)
    EDO_FAIL(
        "{}: budget {} allows {} bytes, below the {} bytes the header and manifest{} take with no rows stored; "
        "the smallest reachable file is about {}",
        table.path(), asked, cap, header, probe.vocab_bytes ? " and vocabulary" : "",
        cap_text(smallest, probe.fp32_bytes));
  EDO_FAIL(
      "{}: budget {} allows {} bytes; the smallest plan of the ladder takes {} bytes of data beside {} of "
      "header: the smallest reachable file is about {}",
      table.path(), asked, cap, plan.smallest_bytes, header, cap_text(smallest, probe.fp32_bytes));
}

// Exit 1 when candidates fit but none met the accuracy gates: the best any reached.
[[noreturn]] void unmet(io::TableReader& table, const PlanResult& plan) {
  std::string gates, best;
  for (const Gate& g : plan.budget) gates += (gates.empty() ? "" : ", ") + g.expression;
  for (size_t j = 0; j < plan.budget.size(); ++j) {
    std::optional<double> top;
    const bool higher = plan.budget[j].op == GateOp::ge || plan.budget[j].op == GateOp::gt;
    for (const PlanCandidate& c : plan.tried)
      if (c.evaluated && j < c.metrics.size() && std::isfinite(c.metrics[j].second))
        top = !top     ? c.metrics[j].second
              : higher ? std::max(*top, c.metrics[j].second)
                       : std::min(*top, c.metrics[j].second);
    if (top) best += fmt::format("{}{} {:.6g}", best.empty() ? "" : ", ", plan.budget[j].metric, *top);
  }
  EDO_FAIL("{}: no plan meets {}{}{}", table.path(), gates, plan.unmet_on_table ? " on the whole table" : "",
           best.empty() ? "" : fmt::format(" (the best candidate on the sample reached {})", best));
}

}  // namespace

namespace {

// The tiers with rows of the coldest codec boundary's hotter tier moved
// down into the colder one, to take `over` bytes off the file (the plan's
// estimate fell short of it: a sparse tier's density, the manifest).
// nullopt when no boundary can give that many rows.
std::optional<std::vector<TierSpec>> shrunk(const std::vector<TierSpec>& tiers, const PackReport& rep, uint64_t over) {
  std::vector<TierSpec> out = counted(tiers, rep);
  const size_t j = codec_boundary(out, rep);
  if (j == SIZE_MAX) return std::nullopt;
  const uint64_t d = rep.tiers[j - 1].code_size - rep.tiers[j].code_size;
  const uint64_t rows = (over + d - 1) / d + 1;
  if (rows >= rep.tiers[j - 1].rows) return std::nullopt;
  out[j - 1].value -= static_cast<double>(rows);
  out[j].value += static_cast<double>(rows);
  return out;
}

// pack_to_budget's packs: each pack that fits is filled toward the cap, each
// that does not is shrunk (a fill taken back, a boundary moved down, or the
// search run again under a cap lowered by the excess).
class BudgetPacker {
 public:
  BudgetPacker(io::TableReader& table, const std::string& out, const Budget& budget, const BudgetCap& cap,
               PlanOptions plan_opt, const PackOptions& pack_opt, BudgetPackReport& rep)
      : table_(table),
        out_(out),
        budget_(budget),
        cap_(cap),
        plan_opt_(std::move(plan_opt)),
        po_(pack_opt),
        rep_(rep) {}

  void run() {
    plan();
    for (;;) {
      po_.tiers = rep_.tiers;
      rep_.pack = pack_to_edo(table_, out_, po_);
      ++rep_.packs;
      rep_.file_bytes = whole_file(rep_.pack);
      if (budget_.sizes.empty()) return;
      if (rep_.file_bytes <= rep_.cap ? !fits() : !over()) return;
    }
  }

  void plan() {
    rep_.plan = plan_tiers(table_, plan_opt_);
    check_budget_reached(table_, budget_, cap_, rep_.plan);
    if (rep_.plan.chosen < 0) unmet(table_, rep_.plan);
    rep_.tiers = rep_.plan.tried[static_cast<size_t>(rep_.plan.chosen)].tiers;
    move_.reset();
  }

 private:
  // The pack fits: true to pack again with the slack filled.
  bool fits() {
    fitted_ = rep_.tiers;
    if (static_cast<double>(rep_.file_bytes) >= 0.99 * static_cast<double>(rep_.cap) || settled_ || rep_.plan.as_stored)
      return false;
    if (rep_.packs >= kMaxPacks) {
      rep_.fill = fmt::format("stopped filling after {} packs", rep_.packs);
      return false;
    }
    FillMove next = next_fill(rep_.tiers, rep_.pack, rep_.plan.ladder, rep_.cap - rep_.file_bytes, order());
    if (!next.why.empty()) {
      rep_.fill = next.why;
      return false;
    }
    rep_.fill = next.codec.empty()
                    ? fmt::format("filled: {} more rows into tier {}", next.rows, next.base[next.from - 1].name)
                    : fmt::format("filled: {} rows of tier {} into a new tier of {}", next.rows,
                                  next.base[next.from].name, next.codec);
    move_ = std::move(next);
    rep_.tiers = move_->apply(move_->rows);
    return true;
  }

  // The pack is over the cap: true to pack again, smaller.
  bool over() {
    const uint64_t over = rep_.file_bytes - rep_.cap;
    if (rep_.packs >= kMaxPacks && fitted_.empty())
      EDO_FAIL("{}: the planned file takes {} bytes, {} over the budget's {}, after {} packs", table_.path(),
               rep_.file_bytes, over, rep_.cap, rep_.packs);
    if (move_) {
      const uint64_t back = (over + move_->row_bytes - 1) / move_->row_bytes + 1;
      if (back < move_->rows && rep_.packs < kMaxPacks) {
        move_->rows -= back;
        rep_.tiers = move_->apply(move_->rows);
        return true;
      }
      rep_.fill =
          fmt::format("a fill of tier {} overshot the cap; the file before it is kept", move_->base[move_->from].name);
      rep_.tiers = fitted_;
      move_.reset();
      settled_ = true;
      return true;
    }
    if (auto smaller = shrunk(rep_.tiers, rep_.pack, over)) {
      rep_.tiers = std::move(*smaller);
      return true;
    }
    if (replans_++ > 0)
      EDO_FAIL("{}: the planned file takes {} bytes, {} over the budget's {}", table_.path(), rep_.file_bytes, over,
               rep_.cap);
    const uint64_t lower = over + kManifestBytesPerTier;
    plan_opt_.max_bytes = plan_opt_.max_bytes > lower ? plan_opt_.max_bytes - lower : 1;
    plan();
    return true;
  }

  io::TableReader& table_;
  const std::string& out_;
  const Budget& budget_;
  const BudgetCap& cap_;
  PlanOptions plan_opt_;
  PackOptions po_;
  BudgetPackReport& rep_;
  std::optional<FillMove> move_;
  std::vector<TierSpec> fitted_;  // the last tiers whose file fit
  bool settled_ = false;          // a fill overshot and was taken back: no more fills
  int replans_ = 0;
  std::vector<uint64_t> order_;  // the hot order, read when a fill first needs it

  const std::vector<uint64_t>& order() {
    if (order_.empty())
      order_ = hot_order(!po_.freq.empty() ? po_.freq
                                           : detail::digest_and_norms(table_, true, io::kDefaultBlockBytes).norms);
    return order_;
  }
};

}  // namespace

BudgetCap apply_budget(io::TableReader& table, const Budget& budget, const PackOptions& pack_opt,
                       PlanOptions& plan_opt) {
  if (budget.gates.empty() && budget.sizes.empty()) EDO_USAGE_FAIL("--budget: no budget given (e.g. 'bytes<=2G')");
  plan_opt.budget = budget.gates;
  // A size alone: the most accurate plan under it, by neighbours kept.
  if (plan_opt.budget.empty()) plan_opt.budget.push_back(parse_gate("recall@10>=0"));
  plan_opt.size_only = budget.gates.empty();
  BudgetCap cap;
  if (budget.sizes.empty()) return cap;
  cap.probe = header_probe(table, pack_opt);
  cap.header_bytes = whole_file(cap.probe);
  cap.cap = budget_file_cap(budget, cap.probe.fp32_bytes, cap.probe.vocab_bytes);
  if (cap.cap <= cap.header_bytes) {
    // Refused before any sample is drawn, with what a file of the table's
    // rows in the candidate of fewest bytes a row would take.
    const uint64_t least = least_code_bytes(chooser_candidates(table.rows(), table.dim(), plan_opt.sample_rows),
                                            table.rows(), table.dim());
    std::string asked;
    for (const SizeBudget& s : budget.sizes) asked += (asked.empty() ? "" : ", ") + s.expression;
    EDO_FAIL(
        "{}: budget {} allows {} bytes, below the {} bytes the header and manifest{} take with no rows stored; "
        "the table in its most compact codec takes about {}",
        table.path(), asked, cap.cap, cap.header_bytes, cap.probe.vocab_bytes ? " and vocabulary" : "",
        cap_text(cap.header_bytes + least + kManifestBytesPerTier, cap.probe.fp32_bytes));
  }
  const uint64_t reserve = cap.header_bytes + 3 * kManifestBytesPerTier;
  const uint64_t data = cap.cap > reserve ? cap.cap - reserve : 1;
  plan_opt.max_bytes = plan_opt.max_bytes ? std::min(plan_opt.max_bytes, data) : data;
  // A size alone: every plan passes, so the check on the whole table would only repeat the pack that follows.
  if (budget.gates.empty()) plan_opt.check_on_table = false;
  return cap;
}

void check_budget_reached(io::TableReader& table, const Budget& budget, const BudgetCap& cap, const PlanResult& plan) {
  if (plan.chosen < 0 && plan.tried.empty() && !budget.sizes.empty())
    unreachable(table, budget, cap.cap, cap.probe, plan);
}

BudgetPackReport pack_to_budget(io::TableReader& table, const std::string& out_path, const Budget& budget,
                                PlanOptions plan_opt, const PackOptions& pack_opt) {
  BudgetPackReport rep;
  const BudgetCap cap = apply_budget(table, budget, pack_opt, plan_opt);
  rep.cap = cap.cap;
  rep.header_bytes = cap.header_bytes;
  BudgetPacker packer(table, out_path, budget, cap, std::move(plan_opt), pack_opt, rep);
  packer.run();
  return rep;
}

nlohmann::json budget_report_json(const BudgetPackReport& rep, const Budget& budget) {
  nlohmann::json asked = nlohmann::json::array();
  for (const SizeBudget& s : budget.sizes) asked.push_back(s.expression);
  for (const Gate& g : rep.plan.budget) asked.push_back(g.expression);
  nlohmann::json j = {{"budget", asked},
                      {"tiers", plan_to_json(rep.tiers)["tiers"]},
                      {"file_bytes", rep.file_bytes},
                      {"header_bytes", rep.header_bytes},
                      {"packs", rep.packs},
                      {"fill", rep.fill},
                      {"plan_candidates", rep.plan.candidates},
                      {"plan_evaluated", rep.plan.as_stored ? 0 : rep.plan.tried.size()},
                      {"as_stored", rep.plan.as_stored}};
  if (rep.cap != UINT64_MAX) {
    j["cap_bytes"] = rep.cap;
    j["cap_used"] = rep.cap ? static_cast<double>(rep.file_bytes) / static_cast<double>(rep.cap) : 0.0;
  }
  nlohmann::json planned = nlohmann::json::object();
  for (const auto& [name, value] : rep.plan.tried[static_cast<size_t>(rep.plan.chosen)].metrics) planned[name] = value;
  j["planned"] = planned;
  return j;
}

std::string budget_report_text(const BudgetPackReport& rep, const Budget& budget) {
  std::string asked;
  for (const SizeBudget& s : budget.sizes) asked += (asked.empty() ? "" : ", ") + s.expression;
  for (const Gate& g : budget.gates) asked += (asked.empty() ? "" : ", ") + g.expression;
  std::string out = fmt::format("  budget: {}\n", asked);
  if (rep.cap != UINT64_MAX)
    out += fmt::format("  file {} bytes of the {} allowed ({:.2f}%), {} of them header, manifest and vocabulary\n",
                       rep.file_bytes, rep.cap,
                       100.0 * static_cast<double>(rep.file_bytes) / static_cast<double>(rep.cap), rep.header_bytes);
  const PlanCandidate& c = rep.plan.tried[static_cast<size_t>(rep.plan.chosen)];
  if (rep.plan.as_stored)
    return out + fmt::format("  plan: {}, the table as stored (the cap holds it: no search)\n",
                             format_tier_spec(c.tiers.front()));
  std::string tiers, metrics;
  for (const TierSpec& t : c.tiers) tiers += (tiers.empty() ? "" : " ") + format_tier_spec(t);
  for (const auto& [name, value] : c.metrics)
    metrics += fmt::format("{}{} {:.4f}", metrics.empty() ? "" : ", ", name, value);
  out += fmt::format("  plan: {} ({} candidates, {} evaluated; on the sample {})\n", tiers, rep.plan.candidates,
                     rep.plan.tried.size(), metrics);
  if (!rep.fill.empty()) out += fmt::format("  {}\n", rep.fill);
  return out;
}

}  // namespace edo
