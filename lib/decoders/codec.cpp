// SPDX-License-Identifier: Apache-2.0
// Spec grammar, the traits table and the factory.
#include "codec_impl.hpp"
#include "pq_codecs.hpp"

#include <edo/checked.hpp>
#include <edo/error.hpp>
#include <edo/parallel.hpp>

#include <edo/float16.hpp>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <cstring>
#include <limits>

namespace edo {

void Codec::train(const float*, size_t, uint64_t) {}

double Codec::row_error_bound() const { return std::numeric_limits<double>::infinity(); }

void Codec::decode_gather(const uint8_t* codes, const uint64_t* rows, const uint64_t* dst, size_t n, float* x) const {
  const size_t cs = code_size(), d = dim();
  // Up to 256 rows a chunk, fewer for wide rows: the buffers stay near 1 MiB
  // whatever dim a file declares.
  // The buffers are this thread's, kept from call to call: fresh ones were
  // fresh mappings each call, whose page faults cost a pooled lookup more
  // than its decoding.
  const size_t chunk = std::clamp<size_t>((size_t{1} << 18) / d, 1, 256);
  thread_local std::vector<uint8_t> gathered;
  thread_local std::vector<float> decoded;
  gathered.resize(std::min(chunk, n) * cs);
  decoded.resize(std::min(chunk, n) * d);
  for (size_t k0 = 0; k0 < n; k0 += chunk) {
    const size_t m = std::min(chunk, n - k0);
    for (size_t k = 0; k < m; ++k) std::memcpy(gathered.data() + k * cs, codes + rows[k0 + k] * cs, cs);
    decode(gathered.data(), m, decoded.data());
    for (size_t k = 0; k < m; ++k) std::memcpy(x + dst[k0 + k] * d, decoded.data() + k * d, d * sizeof(float));
  }
}

// ---- magnitudes -----------------------------------------------------------------------

namespace {

double squared_norm(const float* x, size_t dim) {
  double s = 0;
  for (size_t j = 0; j < dim; ++j) s += static_cast<double>(x[j]) * x[j];
  return s;
}

// The smallest i in [0, n) for which bad(i) holds, or -1; rows are scanned in
// parallel, so the answer does not depend on the thread count.
template <class Bad>
int64_t first_bad_row(size_t n, size_t dim, Bad&& bad) {
  int64_t first = std::numeric_limits<int64_t>::max();
  const int64_t rows = static_cast<int64_t>(n);
#pragma omp parallel for schedule(static) reduction(min : first) if (parallel_worth(n * dim))
  for (int64_t i = 0; i < rows; ++i)
    if (bad(static_cast<size_t>(i))) first = std::min(first, i);
  return first == std::numeric_limits<int64_t>::max() ? -1 : first;
}

std::string row_name(const EncodeOptions& opt, uint64_t row) {
  return fmt::format("{}{}row {}", opt.input, opt.input.empty() ? "" : ": ", row);
}

bool norm_out_of_range(double s, bool allow_underflow) {
  return s > kMaxTrainableNorm2 || (!allow_underflow && s > 0 && s < kMinTrainableNorm2);
}

[[noreturn]] void fail_norm(const std::string& where, double s, const std::string& spec) {
  if (s > kMaxTrainableNorm2)
    EDO_FAIL("{}: norm {:.3g} is too large for the float arithmetic of {} (at most {:.3g}); scale the table down",
             where, std::sqrt(s), spec, std::sqrt(kMaxTrainableNorm2));
  EDO_FAIL(
      "{}: norm {:.3g} is too small for the float arithmetic of {} (at least {:.3g}); scale the table up, or "
      "pass --allow-underflow to store it anyway",
      where, std::sqrt(s), spec, std::sqrt(kMinTrainableNorm2));
}

}  // namespace

void check_trainable_norms(const float* x, size_t n, size_t dim, const std::string& spec, const EncodeOptions& opt,
                           const uint64_t* row_ids) {
  const int64_t bad = first_bad_row(
      n, dim, [&](size_t i) { return norm_out_of_range(squared_norm(x + i * dim, dim), opt.allow_underflow); });
  if (bad >= 0) {
    const size_t i = static_cast<size_t>(bad);
    fail_norm(row_name(opt, row_ids ? row_ids[i] : opt.first_row + i), squared_norm(x + i * dim, dim), spec);
  }
}

MagnitudeRule::MagnitudeRule(const Codec& codec, const EncodeOptions& opt)
    : codec_(codec),
      opt_(opt),
      trained_(codec.needs_training()),
      bound_(codec.row_error_bound()),
      // Slack for rounding in the error sum itself; the bounds are worst cases.
      limit_(bound_ * 1.01 + 1e-9) {}

// A float's square never underflows a double, so a nonzero row has xx > 0 and
// a row decoded to all zeros has yy == 0. NaN sums compare false throughout.
bool MagnitudeRule::refuses(double xx, double ee, double yy) const {
  if (trained_ && norm_out_of_range(xx, opt_.allow_underflow)) return true;
  if (opt_.allow_underflow || !(xx > 0)) return false;
  return yy == 0 || (std::isfinite(bound_) && std::sqrt(ee / xx) > limit_);
}

void MagnitudeRule::fail(uint64_t row, double xx, double ee, double yy) const {
  const std::string where = row_name(opt_, row);
  if (trained_ && norm_out_of_range(xx, opt_.allow_underflow)) fail_norm(where, xx, codec_.spec());
  if (yy == 0)
    EDO_FAIL(
        "{}: nonzero, but {} stores it as all zeros (its values are below the codec's smallest step); pass "
        "--allow-underflow to store it anyway",
        where, codec_.spec());
  EDO_FAIL(
      "{}: its values are too small for {}: relative error {:.3g}, beyond the codec's bound {:.3g}; pass "
      "--allow-underflow to store it anyway",
      where, codec_.spec(), std::sqrt(ee / xx), bound_);
}

void check_magnitudes(const Codec& codec, const float* x, const float* y, size_t n, const EncodeOptions& opt,
                      const uint64_t* row_ids) {
  const size_t dim = codec.dim();
  const MagnitudeRule rule(codec, opt);
  auto sums = [&](size_t i) {
    std::array<double, 3> s{0, 0, 0};  // xx, ee, yy
    const float* a = x + i * dim;
    const float* b = y + i * dim;
    for (size_t j = 0; j < dim; ++j) {
      const double d = static_cast<double>(a[j]) - b[j];
      s[0] += static_cast<double>(a[j]) * a[j];
      s[1] += d * d;
      s[2] += static_cast<double>(b[j]) * b[j];
    }
    return s;
  };
  const int64_t first = first_bad_row(n, dim, [&](size_t i) {
    const auto s = sums(i);
    return rule.refuses(s[0], s[1], s[2]);
  });
  if (first < 0) return;
  const size_t i = static_cast<size_t>(first);
  const auto s = sums(i);
  rule.fail(row_ids ? row_ids[i] : opt.first_row + i, s[0], s[1], s[2]);
}

void Codec::load_state(const std::vector<NamedBlob>& blobs) {
  if (!blobs.empty()) EDO_FAIL("{}: codec has no trained state, but got a blob named '{}'", spec(), blobs[0].name);
}

// ---- grammar ---------------------------------------------------------------------

namespace {

// Bracketed values nest at most this deep ("a:x=[b:y=[c]]" is 2), so a
// hostile manifest cannot recurse the parser off the stack.
constexpr int kMaxSpecNesting = 8;

bool is_token_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '.' ||
         c == '+' || c == '-';
}

void check_token(std::string_view spec, std::string_view token, const char* what) {
  if (token.empty()) EDO_USAGE_FAIL("codec spec '{}': empty {} (stray ',' or ':'?)", spec, what);
  for (char c : token) {
    if (c == '[' || c == ']')
      EDO_USAGE_FAIL("codec spec '{}': '{}' inside {} '{}' (brackets enclose a whole parameter value: key=[spec])",
                     spec, c, what, token);
    if (!is_token_char(c))
      EDO_USAGE_FAIL("codec spec '{}': character '{}' not allowed in {} '{}'", spec, c, what, token);
  }
}

std::vector<SpecStage> parse_stages(std::string_view spec, std::string_view text, int depth);

// A token, or '[' spec ']' stored without the brackets. `text` is balanced
// (split_spec checked the whole spec), so its first '[' has a match.
std::string parse_value(std::string_view spec, std::string_view text, const char* what, int depth) {
  if (!text.starts_with('[')) {
    check_token(spec, text, what);
    return std::string(text);
  }
  size_t close = 0;
  for (int level = 0; close < text.size(); ++close) {
    if (text[close] == '[') ++level;
    if (text[close] == ']' && --level == 0) break;
  }
  if (close + 1 < text.size())
    EDO_USAGE_FAIL("codec spec '{}': '{}' follows ']' in {} '{}' (a bracketed value ends at ':', ',' or the end)", spec,
                   text.substr(close + 1), what, text);
  const std::string_view inner = text.substr(1, close - 1);
  if (inner.empty()) EDO_USAGE_FAIL("codec spec '{}': empty brackets '[]' as a {}", spec, what);
  if (depth >= kMaxSpecNesting) EDO_USAGE_FAIL("codec spec '{}': brackets nest deeper than {}", spec, kMaxSpecNesting);
  parse_stages(spec, inner, depth + 1);  // a nested value is a spec itself
  return std::string(inner);
}

SpecParam parse_param(std::string_view spec, std::string_view text, int depth) {
  const size_t eq = text.starts_with('[') ? std::string_view::npos : text.find('=');
  if (eq == std::string_view::npos) return {"", parse_value(spec, text, "parameter", depth)};
  const std::string_view key = text.substr(0, eq), value = text.substr(eq + 1);
  check_token(spec, key, "parameter name");
  return {std::string(key), parse_value(spec, value, "parameter value", depth)};
}

// Error messages name the whole `spec`; `text` is it or a bracketed value in it.
std::vector<SpecStage> parse_stages(std::string_view spec, std::string_view text, int depth) {
  std::vector<SpecStage> stages;
  for (const std::string_view piece : split_spec(text, ',')) {
    const std::vector<std::string_view> parts = split_spec(piece, ':');
    size_t first_param = 0;
    if (!parts[0].starts_with('[') && parts[0].find('=') != std::string_view::npos) {
      // key=value after a comma: more params of the previous stage.
      if (stages.empty())
        EDO_USAGE_FAIL("codec spec '{}': starts with a parameter '{}', not a codec name", spec, piece);
    } else {
      check_token(spec, parts[0], "codec name");
      stages.push_back({std::string(parts[0]), {}});
      first_param = 1;
    }
    for (size_t i = first_param; i < parts.size(); ++i)
      stages.back().params.push_back(parse_param(spec, parts[i], depth));
  }
  return stages;
}

}  // namespace

std::vector<std::string_view> split_spec(std::string_view text, char sep, std::string_view what) {
  std::vector<std::string_view> out;
  size_t start = 0, depth = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '[') {
      ++depth;
    } else if (text[i] == ']') {
      if (depth == 0) EDO_USAGE_FAIL("{} '{}': ']' at character {} closes no '['", what, text, i + 1);
      --depth;
    } else if (text[i] == sep && depth == 0) {
      out.push_back(text.substr(start, i - start));
      start = i + 1;
    }
  }
  if (depth > 0) EDO_USAGE_FAIL("{} '{}': unbalanced brackets, {} '[' never closed", what, text, depth);
  out.push_back(text.substr(start));
  return out;
}

std::vector<SpecStage> parse_spec(std::string_view spec) {
  if (spec.empty()) EDO_USAGE_FAIL("codec spec is empty (see --list)");
  return parse_stages(spec, spec, 0);
}

namespace {

void collect_format_features(std::string_view spec, std::vector<std::string>& out, int depth) {
  std::vector<SpecStage> stages;
  try {
    stages = parse_spec(spec);
  } catch (const Error&) {
    return;  // a value that is no spec (a number, a word) names no feature
  }
  for (const SpecStage& st : stages) {
    if (const CodecTraits* t = find_codec(st.name); t && t->format_feature) out.push_back("codec:" + st.name);
    for (const SpecParam& p : st.params) {
      if ((p.key == "scale" && p.value == "fp16") || (p.key == "codebooks" && (p.value == "fp16" || p.value == "int8")))
        out.push_back(p.key + "=" + p.value);
      else if (depth < 4 && (p.key == "residual" || p.value.find_first_of(":,") != std::string::npos))
        collect_format_features(p.value, out, depth + 1);  // a nested spec: a group tier's residual
    }
  }
}

}  // namespace

std::vector<std::string> spec_format_features(std::string_view spec) {
  std::vector<std::string> out;
  collect_format_features(spec, out, 0);
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

std::string format_spec(const std::vector<SpecStage>& stages) {
  std::string out;
  for (const SpecStage& s : stages) {
    if (!out.empty()) out += ',';
    out += s.name;
    for (const SpecParam& p : s.params) {
      out += ':';
      if (!p.key.empty()) out += p.key + '=';
      // A nested spec (anything beyond a token) goes back in brackets.
      if (p.value.find_first_of(",:=[]") != std::string::npos) {
        out += '[' + p.value + ']';
      } else {
        out += p.value;
      }
    }
  }
  return out;
}

// ---- state sections -------------------------------------------------------------------

namespace {

// int8_exp2 rows: the smallest exponent with amax <= 127 x 2^e. With amax =
// f x 2^x, f in [0.5, 1), that is x - 7 or x - 6; at least -128 (values
// below 2^-129 round to zeros) and at most 121, where 127 x 2^e is still
// finite (values beyond 127 x 2^121, 3.37e38, saturate there).
constexpr int kInt8ExpMin = -128, kInt8ExpMax = 121;

int int8_row_exponent(const float* v, size_t n) {
  float amax = 0.0f;
  for (size_t i = 0; i < n; ++i) amax = std::max(amax, std::fabs(v[i]));
  if (!(amax > 0.0f)) return 0;
  int x = 0;
  std::frexp(amax, &x);
  int e = x - 7;
  if (std::ldexp(127.0, e) < static_cast<double>(amax)) ++e;
  return std::clamp(e, kInt8ExpMin, kInt8ExpMax);
}

int8_t int8_code(float v, int e) {
  const float q = std::nearbyint(std::ldexp(v, -e));
  return static_cast<int8_t>(std::clamp(q, -127.0f, 127.0f));
}

uint64_t int8_row_width(const NamedBlob& blob) { return blob.shape.empty() ? blob.values.size() : blob.shape.back(); }

}  // namespace

std::optional<uint64_t> state_section_size(StateStorage storage, uint64_t count, uint64_t row) {
  if (storage == StateStorage::f32) return checked_mul(count, sizeof(float));
  if (storage == StateStorage::f16) return checked_mul(count, sizeof(uint16_t));
  if (count == 0) return 0;
  if (row == 0 || count % row != 0) return std::nullopt;
  return checked_mul(count / row, row + 1);
}

uint64_t state_stored_bytes(const NamedBlob& blob) {
  return state_section_size(blob.storage, blob.values.size(), int8_row_width(blob)).value_or(0);
}

void round_to_int8_exp2(std::vector<float>& values, uint64_t row) {
  if (row == 0) return;
  for (size_t r0 = 0; r0 < values.size(); r0 += row) {
    const size_t n = std::min<size_t>(row, values.size() - r0);
    float* v = values.data() + r0;
    const int e = int8_row_exponent(v, n);
    for (size_t i = 0; i < n; ++i) v[i] = std::ldexp(static_cast<float>(int8_code(v[i], e)), e);
  }
}

std::vector<uint8_t> state_section_bytes(const NamedBlob& blob) {
  std::vector<uint8_t> out(state_stored_bytes(blob));
  if (blob.storage == StateStorage::f32) {
    if (!out.empty()) std::memcpy(out.data(), blob.values.data(), out.size());
    return out;
  }
  if (blob.storage == StateStorage::f16) {
    for (size_t i = 0; i < blob.values.size(); ++i) {
      const uint16_t h = float_to_half_bits(blob.values[i]);
      std::memcpy(out.data() + 2 * i, &h, sizeof h);
    }
    return out;
  }
  const uint64_t row = int8_row_width(blob);
  if (!blob.values.empty() && state_section_size(blob.storage, blob.values.size(), row).value_or(0) == 0)
    EDO_FAIL("state '{}': {} values are not rows of {}", blob.name, blob.values.size(), row);
  uint8_t* p = out.data();
  for (size_t r0 = 0; r0 < blob.values.size(); r0 += row) {
    const float* v = blob.values.data() + r0;
    const int e = int8_row_exponent(v, row);
    *p++ = static_cast<uint8_t>(static_cast<int8_t>(e));
    for (size_t i = 0; i < row; ++i) {
      const int8_t q = int8_code(v[i], e);
      if (std::ldexp(static_cast<float>(q), e) != v[i])
        EDO_FAIL("state '{}': value {:g} is not one int8_exp2 storage holds (not rounded by round_to_int8_exp2)",
                 blob.name, v[i]);
      *p++ = static_cast<uint8_t>(q);
    }
  }
  return out;
}

const char* state_dtype_name(StateStorage s) {
  switch (s) {
    case StateStorage::f16:
      return "float16";
    case StateStorage::i8:
      return "int8_exp2";
    case StateStorage::f32:
      break;
  }
  return "float32";
}

StateStorage state_storage_in(const nlohmann::json& tier_entry, const std::string& role, const std::string& where) {
  const auto dtypes = tier_entry.find("state_dtypes");
  if (dtypes == tier_entry.end()) return StateStorage::f32;
  if (!dtypes->is_object()) EDO_FAIL("{}: state_dtypes is not an object", where);
  const auto dtype = dtypes->find(role);
  if (dtype == dtypes->end()) return StateStorage::f32;
  for (const StateStorage s : {StateStorage::f32, StateStorage::f16, StateStorage::i8})
    if (dtype->is_string() && dtype->get<std::string>() == state_dtype_name(s)) return s;
  EDO_FAIL("{}: state '{}' has an unknown dtype (float32, float16 or int8_exp2)", where, role);
}

bool read_state_section(NamedBlob& blob, StateStorage storage, const void* data, uint64_t bytes, uint64_t count) {
  const uint64_t row = blob.shape.empty() ? count : blob.shape.back();
  const auto need = state_section_size(storage, count, row);
  if (!need || *need != bytes) return false;
  const auto* p = static_cast<const uint8_t*>(data);
  if (storage == StateStorage::i8) {
    std::vector<float> values(count);
    for (uint64_t r0 = 0; r0 < count; r0 += row) {
      const int e = static_cast<int8_t>(*p++);
      if (e > kInt8ExpMax) return false;
      for (uint64_t i = 0; i < row; ++i) {
        const int q = static_cast<int8_t>(*p++);
        if (q < -127) return false;
        values[r0 + i] = std::ldexp(static_cast<float>(q), e);
      }
    }
    blob.storage = storage;
    blob.values = std::move(values);
    return true;
  }
  blob.storage = storage;
  blob.values.resize(count);
  if (storage == StateStorage::f32) {
    if (count) std::memcpy(blob.values.data(), p, bytes);
    return true;
  }
  for (uint64_t i = 0; i < count; ++i) {
    uint16_t h;
    std::memcpy(&h, p + 2 * i, sizeof h);
    blob.values[i] = half_bits_to_float(h);
  }
  return true;
}

// ---- parameter helpers ----------------------------------------------------------------

namespace detail {

StageParams::StageParams(const SpecStage& stage, const char* grammar, bool takes_positional,
                         std::initializer_list<const char*> keys)
    : stage_(stage), grammar_(grammar) {
  for (size_t i = 0; i < stage.params.size(); ++i) {
    const SpecParam& p = stage.params[i];
    if (p.key.empty()) {
      if (!takes_positional || positional_) {
        EDO_USAGE_FAIL("codec '{}': unexpected parameter '{}' (expected {})", stage.name, p.value, grammar);
      }
      positional_ = &p.value;
      continue;
    }
    bool known = false;
    for (const char* k : keys) known = known || p.key == k;
    if (!known) EDO_USAGE_FAIL("codec '{}': unknown parameter '{}' (expected {})", stage.name, p.key, grammar);
    for (size_t j = 0; j < i; ++j) {
      if (stage.params[j].key == p.key) EDO_USAGE_FAIL("codec '{}': parameter '{}' given twice", stage.name, p.key);
    }
  }
}

const std::string* StageParams::get(std::string_view key) const {
  for (const SpecParam& p : stage_.params) {
    if (p.key == key) return &p.value;
  }
  return nullptr;
}

size_t StageParams::get_size(const std::string& value, std::string_view what, size_t max) const {
  size_t v = 0;
  const char* end = value.data() + value.size();
  const auto r = std::from_chars(value.data(), end, v);
  if (r.ec != std::errc() || r.ptr != end || v == 0 || v > max) {
    EDO_USAGE_FAIL("codec '{}': {} '{}' must be an integer from 1 to {} (expected {})", stage_.name, what, value, max,
                   grammar_);
  }
  return v;
}

void check_dim(std::string_view spec, size_t dim) {
  if (dim == 0 || dim > kMaxCodecDim) {
    EDO_USAGE_FAIL("codec '{}': dimension {} is outside 1..{}", spec, dim, kMaxCodecDim);
  }
}

}  // namespace detail

void check_finite(const float* x, size_t n, size_t dim, uint32_t limit_bits, const std::string& spec,
                  const EncodeOptions& opt, bool passthrough_allowed) {
  if (opt.allow_nonfinite && passthrough_allowed) return;
  // Rows are scanned in parallel; the first offender is the smallest row.
  int64_t bad_row = -1;
  const int64_t rows = static_cast<int64_t>(n);
#pragma omp parallel for schedule(static) if (opt.impl == Impl::fast && parallel_worth(n * dim))
  for (int64_t r = 0; r < rows; ++r) {
    const float* row = x + static_cast<size_t>(r) * dim;
    uint32_t worst = 0;
    for (size_t j = 0; j < dim; ++j) {
      const uint32_t m = float_bits(row[j]) & 0x7fffffffu;
      worst = m > worst ? m : worst;
    }
    if (worst >= limit_bits) {
#pragma omp critical(edo_check_finite)
      if (bad_row < 0 || r < bad_row) bad_row = r;
    }
  }
  if (bad_row < 0) return;
  const float* row = x + static_cast<size_t>(bad_row) * dim;
  size_t col = 0;
  while ((float_bits(row[col]) & 0x7fffffffu) < limit_bits) ++col;
  const float v = row[col];
  const std::string where =
      fmt::format("{}{}row {}, column {}", opt.input, opt.input.empty() ? "" : ": ",
                  opt.row_ids ? opt.row_ids[bad_row] : opt.first_row + static_cast<uint64_t>(bad_row), col);
  if (std::isnan(v) || std::isinf(v)) {
    if (passthrough_allowed) {
      EDO_FAIL("{}: value is {} (pass --allow-nonfinite to keep NaN/Inf with {})", where, v, spec);
    }
    EDO_FAIL("{}: value is {}; codec {} cannot represent NaN/Inf (only fp32, fp16 and bf16 can keep them)", where, v,
             spec);
  }
  if (spec.find("scale=fp16") != std::string::npos)
    EDO_FAIL("{}: value {} is beyond the fp16 range (65504) of {}'s scales and offsets (use scale=fp32)", where, v,
             spec);
  EDO_FAIL("{}: value {} overflows {} to Inf (use bf16 or a scaled codec such as fp8 or int8)", where, v, spec);
}

detail::ColumnStats detail::column_stats(const float* x, size_t n, size_t dim) {
  ColumnStats c{std::vector<double>(dim, 0.0), std::vector<double>(dim, 0.0)};
  for (size_t i = 0; i < n; ++i)
    for (size_t j = 0; j < dim; ++j) c.mean[j] += x[i * dim + j];
  for (double& m : c.mean) m /= static_cast<double>(n);
  for (size_t i = 0; i < n; ++i)
    for (size_t j = 0; j < dim; ++j) {
      const double d = x[i * dim + j] - c.mean[j];
      c.squares[j] += d * d;
    }
  return c;
}

// ---- the traits table -----------------------------------------------------------------

namespace {

// ---- trained state sizes, from the spec alone (CodecTraits::state_bytes) ----

uint64_t param_or(const SpecStage& s, std::string_view key, uint64_t fallback) {
  for (const SpecParam& p : s.params)
    if (p.key == key) return std::stoull(p.value);
  return fallback;
}

StateStorage codebook_storage(const SpecStage& s) {
  for (const SpecParam& p : s.params)
    if (p.key == "codebooks")
      return p.value == "fp16" ? StateStorage::f16 : p.value == "int8" ? StateStorage::i8 : StateStorage::f32;
  return StateStorage::f32;
}

uint64_t section_bytes(StateStorage storage, uint64_t count, uint64_t row) {
  return state_section_size(storage, count, row).value_or(0);
}

constexpr uint64_t kF = sizeof(float);

uint64_t tc_state_bytes(const SpecStage&, size_t dim) {  // unit, mean, fp16 basis, bits, centre, spread
  return kF + 4 * dim * kF + section_bytes(StateStorage::f16, uint64_t{dim} * dim, dim);
}
uint64_t rot_state_bytes(const SpecStage&, size_t dim) { return dim * kF + uint64_t{dim} * dim * kF; }  // mean, matrix
uint64_t pca_state_bytes(const SpecStage& s, size_t dim) {  // mean, K x d basis
  return dim * kF + std::stoull(s.params.at(0).value) * dim * kF;
}
uint64_t dims_state_bytes(const SpecStage& s, size_t dim) {  // kept columns, every column's mean
  return (std::stoull(s.params.at(0).value) + dim) * kF;
}
uint64_t pq_state_bytes(const SpecStage& s, size_t dim) {  // codebooks; opq's rotation stays fp32
  const uint64_t m = param_or(s, "m", 0), ksub = uint64_t{1} << param_or(s, "nbits", 8);
  const uint64_t dsub = m ? (dim + m - 1) / m : 0;
  const uint64_t books = section_bytes(codebook_storage(s), m * ksub * dsub, dsub);
  return s.name == "opq" ? books + uint64_t{dim} * dim * kF : books;
}
uint64_t rq_state_bytes(const SpecStage& s, size_t dim) {
  const uint64_t m = param_or(s, "m", 0), ksub = uint64_t{1} << param_or(s, "nbits", 8);
  return section_bytes(codebook_storage(s), m * ksub * dim, dim);
}

// A codec that is no transform stage: its strings, whether it trains, and its decoder.
constexpr CodecTraits codec_row(const char* name, const char* grammar, const char* description,
                                const char* bits_formula, bool trainable, decltype(CodecTraits::make) make,
                                const char* example) {
  return {.name = name,
          .grammar = grammar,
          .description = description,
          .bits_formula = bits_formula,
          .trainable = trainable,
          .transform = false,
          .make = make,
          .output_dim = nullptr,
          .example = example};
}

// The affine integer codecs' rows, one per width in math::scalar_kind_traits
// (widest first, as the kinds are listed): their strings are made from the
// width, so a new width needs no row here.
std::vector<CodecTraits> integer_codecs() {
  static const std::vector<std::array<std::string, 5>> strings = [] {
    std::vector<std::array<std::string, 5>> out;
    for (uint32_t k = 0; k < math::kScalarKindCount; ++k) {
      const math::ScalarKindTraits t = math::scalar_kind_traits(static_cast<math::ScalarKind>(k));
      if (t.family != math::ScalarFamily::affine) continue;
      const std::string range =
          t.range_search ? "scale+offset (fp32 or fp16) per row or group, range chosen to minimise squared error"
                         : "scale+offset (fp32, or fp16 with scale=fp16) per row or per group of G (min/max range)";
      out.push_back({t.codec, fmt::format("{}[:group=G][,scale=fp16]", t.codec),
                     fmt::format("{}-bit codes, {}", t.bits, range), fmt::format("{} + 64/G (fp16: 32/G)", t.bits),
                     fmt::format("{}:group=32", t.codec)});
    }
    return out;
  }();
  std::vector<CodecTraits> rows;
  for (const auto& [name, grammar, description, bits, example] : strings) {
    rows.push_back(codec_row(name.c_str(), grammar.c_str(), description.c_str(), bits.c_str(), false,
                             detail::make_scalar, example.c_str()));
    // Format 1.1 had the 8-, 4- and 2-bit widths; a reader names every later one.
    rows.back().format_feature = name != "int8" && name != "int4" && name != "int2";
  }
  return rows;
}

// The trained codecs that are no transform stage (pq, opq, rq, tc).
constexpr CodecTraits trained_codec(const char* name, const char* grammar, const char* description,
                                    const char* bits_formula, decltype(CodecTraits::make) make,
                                    decltype(CodecTraits::state_bytes) state_bytes, const char* example) {
  CodecTraits t = codec_row(name, grammar, description, bits_formula, true, make, example);
  t.state_bytes = state_bytes;
  return t;
}

}  // namespace

const std::vector<CodecTraits>& codec_list() {
  using namespace detail;
  static const std::vector<CodecTraits> table = [] {
    std::vector<CodecTraits> rows = {
        {.name = "fp32",
         .grammar = "fp32",
         .description = "float32, unchanged (a baseline; keeps NaN/Inf with --allow-nonfinite)",
         .bits_formula = "32",
         .trainable = false,
         .transform = false,
         .make = make_scalar,
         .output_dim = nullptr,
         .example = "fp32"},
        {.name = "fp16",
         .grammar = "fp16",
         .description = "IEEE half precision, round to nearest even; keeps NaN/Inf with --allow-nonfinite",
         .bits_formula = "16",
         .trainable = false,
         .transform = false,
         .make = make_scalar,
         .output_dim = nullptr,
         .example = "fp16"},
        {.name = "bf16",
         .grammar = "bf16",
         .description = "bfloat16 (fp32 range, 8-bit mantissa), round to nearest even",
         .bits_formula = "16",
         .trainable = false,
         .transform = false,
         .make = make_scalar,
         .output_dim = nullptr,
         .example = "bf16"},
        {.name = "fp8",
         .grammar = "fp8:e4m3|e5m2",
         .description = "8-bit float (OCP e4m3: max 448, e5m2: max 57344), per-row fp32 scale, saturating",
         .bits_formula = "8 + 32/d",
         .trainable = false,
         .transform = false,
         .make = make_scalar,
         .output_dim = nullptr,
         .example = "fp8:e4m3"},
        {.name = "bin",
         .grammar = "bin",
         .description = "1 bit (sign) per value, per-row fp32 scale = mean |x|",
         .bits_formula = "1 + 32/d",
         .trainable = false,
         .transform = false,
         .make = make_scalar,
         .output_dim = nullptr,
         .example = "bin"},
        trained_codec(
            "pq", "pq:m=M[,nbits=B][,train=faiss|edo][,codebooks=fp32|fp16|int8]",
            "product quantizer: M sub-spaces (balanced widths), 2^B centroids each (B 4-8, default 8), "
            "bit-packed codes; codebooks=fp16 stores the codebooks in half the bytes, codebooks=int8 in a byte a value "
            "and one a centroid (int8 codes under a power of two)",
            "M*B/d", make_pq_decoder, pq_state_bytes, "pq:m=8"),
        trained_codec("opq", "opq:m=M[,nbits=B][,train=faiss|edo][,codebooks=fp32|fp16|int8]",
                      "FAISS OPQ rotation learned with the codebooks, then pq in the rotated space (the rotation "
                      "stays fp32)",
                      "M*B/d", make_pq_decoder, pq_state_bytes, "opq:m=8"),
        trained_codec("rq", "rq:m=M[,nbits=B][,beam=W][,train_beam=T][,refine=R][,codebooks=fp32|fp16|int8]",
                      "residual quantizer: sum of M codewords, beam-W search (default 8), greedy training at beam T "
                      "(default min(W, 2)), then R codebook refit rounds (default 2); beam=4,train_beam=1,refine=1 "
                      "trains in about half the time for a little recall; codebooks=fp16 halves its "
                      "M x 2^B x d codebook bytes, codebooks=int8 quarters them (each codeword int8 codes under a "
                      "power of two)",
                      "M*B/d", make_rq_decoder, rq_state_bytes, "rq:m=4,beam=4,train_beam=1,refine=1"),
        [] {
          CodecTraits tc = trained_codec(
              "tc", "tc:bits=B",
              "transform coding: a row's length (fp16) and its direction's coordinates in the sample's "
              "principal basis, round(B x d) bits a row shared out by variance (B from 1 to 12, fractions "
              "allowed), each coordinate's cells those of a fitted normal distribution; no per-row scales; "
              "stores a d x d fp16 basis (d <= 2048), d^2 flops a row each way",
              "B + 16/d", make_tc_decoder, tc_state_bytes, "tc:bits=4");
          tc.plan_fits_per_tier = tc.format_feature = true;  // fitted per tier by the planner; a 1.2 codec
          return tc;
        }(),
        {.name = "pca",
         .grammar = "pca:K,CODEC",
         .description = "PCA to K dims (seeded sample fit), then CODEC on the projections (fp32 if omitted)",
         .bits_formula = "CODEC's bits * K/d",
         .trainable = true,
         .transform = true,
         .make = make_pca_decoder,
         .output_dim = transform_output_dim,
         .state_bytes = pca_state_bytes,
         .example = "pca:16,int8"},
        {.name = "rot",
         .grammar = "rot,CODEC",
         .description =
             "seeded random rotation of the centred rows (outlying dimensions spread over all), then CODEC "
             "on the rotated rows (fp32 if omitted); stores a d x d fp32 matrix (d <= 8192), d^2 flops a row each way",
         .bits_formula = "CODEC's bits",
         .trainable = true,
         .transform = true,
         .make = make_rot_decoder,
         .output_dim = rotation_output_dim,
         .state_bytes = rot_state_bytes,
         .format_feature = true,
         .example = "rot,int4"},
        {.name = "dims",
         .grammar = "dims:K,CODEC",
         .description = "keep the K dimensions of largest variance (the rest decode to their mean), CODEC on them",
         .bits_formula = "CODEC's bits * K/d",
         .trainable = true,
         .transform = true,
         .make = make_dims,
         .output_dim = transform_output_dim,
         .state_bytes = dims_state_bytes,
         .example = "dims:16,int8"},
    };
    // The integer widths follow fp8 (the order --list shows).
    const auto after_fp8 =
        std::find_if(rows.begin(), rows.end(), [](const CodecTraits& c) { return std::string_view(c.name) == "fp8"; });
    const std::vector<CodecTraits> ints = integer_codecs();
    rows.insert(after_fp8 + 1, ints.begin(), ints.end());
    return rows;
  }();
  return table;
}

const CodecTraits* find_codec(std::string_view name) {
  for (const CodecTraits& t : codec_list()) {
    if (name == t.name) return &t;
  }
  return nullptr;
}

std::unique_ptr<Codec> detail::assemble_codec(std::string_view spec, size_t dim, const StageMaker& make) {
  const std::vector<SpecStage> stages = parse_spec(spec);
  detail::check_dim(spec, dim);
  std::vector<const CodecTraits*> traits;
  for (const SpecStage& s : stages) {
    const CodecTraits* t = find_codec(s.name);
    if (!t) EDO_USAGE_FAIL("codec spec '{}': unknown codec '{}' (see --list)", spec, s.name);
    traits.push_back(t);
  }
  // Shape: [transform] codec, or a transform alone (then fp32).
  for (size_t i = 1; i < stages.size(); ++i) {
    if (traits[i]->transform) EDO_USAGE_FAIL("codec spec '{}': '{}' must be the first stage", spec, stages[i].name);
  }
  for (size_t i = 0; i + 1 < stages.size(); ++i) {
    if (!traits[i]->transform) {
      EDO_USAGE_FAIL("codec spec '{}': '{}' must be the last stage (one codec per spec)", spec, stages[i].name);
    }
  }
  if (!traits[0]->transform) return make(*traits[0], stages[0], dim, nullptr);
  const size_t inner_dim = traits[0]->output_dim(stages[0], dim);
  const SpecStage fp32{"fp32", {}};
  const SpecStage& inner_stage = stages.size() > 1 ? stages[1] : fp32;
  auto inner = make(*find_codec(inner_stage.name), inner_stage, inner_dim, nullptr);
  return make(*traits[0], stages[0], dim, std::move(inner));
}

std::unique_ptr<Codec> make_decoder(std::string_view spec, size_t dim) {
  return detail::assemble_codec(
      spec, dim, [](const CodecTraits& t, const SpecStage& stage, size_t d, std::unique_ptr<Codec> inner) {
        return t.make(stage, d, std::move(inner));
      });
}

size_t code_size(std::string_view spec, size_t dim) { return make_decoder(spec, dim)->code_size(); }

double bits_per_value(std::string_view spec, size_t dim) {
  return static_cast<double>(code_size(spec, dim)) * 8.0 / static_cast<double>(dim);
}

std::string canonical_spec(std::string_view spec, size_t dim) { return make_decoder(spec, dim)->spec(); }

}  // namespace edo
