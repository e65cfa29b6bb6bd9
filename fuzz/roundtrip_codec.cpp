// SPDX-License-Identifier: Apache-2.0
// libFuzzer round-trip target for the codecs that train nothing (run by
// test/cli/fuzz_roundtrip.sh, not by fuzz_parsers.sh): the input becomes a
// small table (at most 64 x 64 finite floats: zeros, constant rows, values
// near 1, tiny and subnormal ones, huge ones up to FLT_MAX, raw float bits)
// and every spec of every plain codec the registry lists (codec_list(): those
// neither trainable nor a transform; their grammar's alternatives, groups
// and scale=fp16 taken from the traits' grammar string) encodes and decodes
// it. What must hold, else abort() with a message:
//  - the spec is canonical: make_codec(spec()) gives the same spec, code
//    size as code_size(spec, dim), and the documented bound (docs/CLI.md,
//    "Tiny and huge values") is row_error_bound();
//  - encode() and decode() of Impl::fast give the bytes and bits of
//    Impl::reference (codec.hpp: "Both give byte-identical results"), as do
//    decode_gather() of shuffled rows and make_decoder()'s codec;
//  - finite input either is refused with edo::Error (fp16's overflow) or
//    decodes to finite values;
//  - on a row whose values lie in the codec's normal range (normal_range()
//    below), encode() does not refuse it, ||x - y|| / ||x|| <= bound * 1.01 +
//    1e-9 (the bound with the slack check_magnitudes() allows for rounding
//    in the sums), and check_magnitudes() accepts it; fp16/bf16 values err
//    by at most half an ulp of their precision, and int8 with fp32
//    parameters (min/max range, no search) each value by half its group's
//    stored step plus float rounding (and, for a subnormal step, the clamp
//    its rounding down causes).
#include <edo/codec.hpp>
#include <edo/codec_math.hpp>
#include <edo/error.hpp>
#include <edo/float16.hpp>
#include <edo/make_codec.hpp>

#include <fuzzer/FuzzedDataProvider.h>

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <numeric>
#include <optional>
#include <string>
#include <vector>

namespace {

constexpr size_t kMaxRows = 64, kMaxDim = 64;

struct Table {
  size_t rows = 0, dim = 0;
  std::vector<float> x;
  const float* row(size_t r) const { return x.data() + r * dim; }
};

std::string hex(float v) {
  char b[64];
  std::snprintf(b, sizeof b, "%a", static_cast<double>(v));
  return b;
}

// Prints the finding (and the row it is about, when `row` is a row of t) and aborts.
[[noreturn]] void fail(const std::string& spec, const Table& t, const std::string& what, size_t row = SIZE_MAX) {
  std::fprintf(stderr, "roundtrip_codec: %s on a %zu x %zu table: %s\n", spec.c_str(), t.rows, t.dim, what.c_str());
  if (row < t.rows) {
    std::fprintf(stderr, "roundtrip_codec: row %zu:", row);
    for (size_t j = 0; j < t.dim; ++j) std::fprintf(stderr, " %s", hex(t.row(row)[j]).c_str());
    std::fprintf(stderr, "\n");
  }
  std::abort();
}

// One value of magnitude about 2^e (e clamped to float's range), from 3 bytes.
float value_near(FuzzedDataProvider& in, int e) {
  const uint32_t mant = in.ConsumeIntegral<uint32_t>() & 0x7fffffu;
  const bool negative = in.ConsumeBool();
  e = std::clamp(e, -149, 127);
  float v;
  if (e >= -126) {
    v = edo::bits_float((static_cast<uint32_t>(e + 127) << 23) | mant);
  } else {  // a subnormal: its top bit at 2^e
    const uint32_t top = 1u << (e + 149);
    v = edo::bits_float(top | (mant & (top - 1)));
  }
  return negative ? -v : v;
}

// The table: a shape, then a way to fill each row (chosen per row).
Table make_table(FuzzedDataProvider& in) {
  Table t;
  t.rows = in.ConsumeIntegralInRange<size_t>(1, kMaxRows);
  t.dim = in.ConsumeIntegralInRange<size_t>(1, kMaxDim);
  t.x.assign(t.rows * t.dim, 0.0f);
  for (size_t r = 0; r < t.rows; ++r) {
    float* row = t.x.data() + r * t.dim;
    const int mode = in.ConsumeIntegralInRange<int>(0, 5);
    // The row's magnitude: near 1, or anywhere in float's range.
    const int e = mode == 1 ? in.ConsumeIntegralInRange<int>(-149, 127) : in.ConsumeIntegralInRange<int>(-12, 12);
    const int spread = in.ConsumeIntegralInRange<int>(0, mode == 4 ? 60 : 12);
    const int zero_share = in.ConsumeIntegralInRange<int>(0, 8);  // of 16
    switch (mode) {
      case 0:
      case 1:
      case 4:  // values 2^e down to 2^(e - spread), some zeros
        for (size_t j = 0; j < t.dim; ++j) {
          if (static_cast<int>(in.ConsumeIntegral<uint8_t>() & 15) < zero_share) continue;
          row[j] = value_near(in, e - in.ConsumeIntegralInRange<int>(0, spread));
        }
        break;
      case 2:  // raw float bits; non-finite ones become zeros
        for (size_t j = 0; j < t.dim; ++j) {
          const float v = edo::bits_float(in.ConsumeIntegral<uint32_t>());
          row[j] = std::isfinite(v) ? v : 0.0f;
        }
        break;
      case 3: {  // one value repeated (all zeros when the input has run out)
        const float v = in.remaining_bytes() ? value_near(in, e) : 0.0f;
        std::fill(row, row + t.dim, v);
        break;
      }
      case 5: {  // extremes: +-FLT_MAX, +-FLT_MIN, the smallest subnormal, zeros, 1
        const float pick[] = {FLT_MAX, -FLT_MAX, FLT_MIN,  -FLT_MIN, 0x1p-149f, -0x1p-149f, 0.0f,
                              1.0f,    65504.0f, 65519.0f, 448.0f,   57344.0f,  0x1p-14f,   0x1p-24f};
        for (size_t j = 0; j < t.dim; ++j) row[j] = pick[in.ConsumeIntegralInRange<size_t>(0, std::size(pick) - 1)];
        break;
      }
    }
  }
  return t;
}

// ---- specs, from the registry ----------------------------------------------------------

struct Spec {
  std::string text;
  std::string name;     // the traits' name
  std::string variant;  // fp8: e4m3 / e5m2
  size_t group = 0;     // 0: row-wise
  bool half = false;    // scale=fp16
};

// Every spec of every plain codec: the traits' grammar "name[:a|b][:group=G][,scale=fp16]"
// says which positional alternatives and parameters a codec takes.
std::vector<Spec> plain_specs(size_t group) {
  std::vector<Spec> out;
  for (const edo::CodecTraits& t : edo::codec_list()) {
    if (t.trainable || t.transform) continue;
    const std::string name = t.name, grammar = t.grammar;
    std::vector<std::string> variants = {""};
    if (grammar.size() > name.size() && grammar.compare(0, name.size(), name) == 0 && grammar[name.size()] == ':' &&
        grammar.find('=', name.size()) == std::string::npos) {
      variants.clear();
      std::string rest = grammar.substr(name.size() + 1);
      rest = rest.substr(0, rest.find('['));
      for (size_t at = 0; at <= rest.size();) {
        const size_t bar = std::min(rest.find('|', at), rest.size());
        variants.push_back(rest.substr(at, bar - at));
        at = bar + 1;
      }
    }
    const bool groups = grammar.find("group=") != std::string::npos;
    const bool halves = grammar.find("scale=fp16") != std::string::npos;
    for (const std::string& v : variants)
      for (int g = 0; g < (groups ? 2 : 1); ++g)
        for (int h = 0; h < (halves ? 2 : 1); ++h) {
          Spec s{name + (v.empty() ? "" : ":" + v), name, v, g ? group : 0, h == 1};
          if (g) s.text += ":group=" + std::to_string(group);
          if (h) s.text += ",scale=fp16";
          out.push_back(std::move(s));
        }
  }
  return out;
}

// docs/CLI.md, "Tiny and huge values": fp32 0, fp16 2^-11, bf16 2^-8,
// fp8:e4m3 2^-4 + sqrt(d) 2^-10/448, fp8:e5m2 2^-3 + sqrt(d) 2^-17/57344,
// int8 to int2 sqrt(G/2)/qmax (plus 2^-9 for fp16 parameters, codec_scalar.cpp), bin 1.
std::optional<double> documented_bound(const Spec& s, size_t dim) {
  const double d = static_cast<double>(dim);
  if (s.name == "fp32") return 0.0;
  if (s.name == "fp16") return 0x1p-11;
  if (s.name == "bf16") return 0x1p-8;
  if (s.name == "fp8")
    return s.variant == "e5m2" ? 0x1p-3 + std::sqrt(d) * 0x1p-17 / 57344.0 : 0x1p-4 + std::sqrt(d) * 0x1p-10 / 448.0;
  if (s.name == "bin") return 1.0;
  if (s.name.size() == 4 && s.name.compare(0, 3, "int") == 0) {
    const int bits = s.name[3] - '0';
    const double g = static_cast<double>(s.group ? std::min(s.group, dim) : dim);
    return std::sqrt(g / 2.0) / static_cast<double>((1u << bits) - 1u) + (s.half ? 0x1p-9 : 0.0);
  }
  return std::nullopt;  // a codec this target does not know: no bound checked
}

// Whether every value of a row lies where the codec's bound is documented
// to hold: fp16 normal halves; bf16 normal floats away from overflow; fp8 a
// row whose largest magnitude is at least 2^-130 ("int and fp8 codecs store
// subnormal tables with their usual precision"; below that the rounding of
// a subnormal scale alone can exceed the bound, and the magnitude rule
// refuses such rows); integer codecs values that are zero or from 2^-133
// (the same, for a group's subnormal step) up to 2^126 (a group's range
// fits in a float: no clipping), with fp16 parameters from 2^-6 to 2^14
// (normal fp16 steps and offsets); bin normal floats (below, the row's
// scale can round to zero, which the magnitude rule refuses); fp32 every
// finite row.
bool normal_range(const Spec& s, const float* x, size_t dim) {
  float amax = 0;
  auto within = [&](float lo, float hi) {
    for (size_t j = 0; j < dim; ++j) {
      const float a = std::fabs(x[j]);
      if (a != 0 && (a < lo || a > hi)) return false;
    }
    return true;
  };
  for (size_t j = 0; j < dim; ++j) amax = std::max(amax, std::fabs(x[j]));
  if (s.name == "fp32") return true;
  if (s.name == "bin") return within(FLT_MIN, FLT_MAX);
  if (s.name == "fp16") return within(0x1p-14f, 65504.0f);
  if (s.name == "bf16") return within(FLT_MIN, 0x1p127f);
  if (s.name == "fp8") return amax == 0 || amax >= 0x1p-130f;
  if (s.name.compare(0, 3, "int") == 0) return s.half ? within(0x1p-6f, 0x1p14f) : within(0x1p-133f, 0x1p126f);
  return false;
}

std::vector<uint8_t> encode(const edo::Codec& c, const Table& t, edo::Impl impl, std::string& error) {
  std::vector<uint8_t> codes(t.rows * c.code_size());
  edo::EncodeOptions opt;
  opt.impl = impl;
  opt.input = "fuzz";
  try {
    c.encode(t.x.data(), t.rows, codes.data(), opt);
  } catch (const edo::Error& e) {
    error = e.what();
    codes.clear();
  }
  return codes;
}

std::vector<float> decode(const edo::Codec& c, const std::vector<uint8_t>& codes, size_t rows, edo::Impl impl) {
  std::vector<float> y(rows * c.dim());
  edo::DecodeOptions opt;
  opt.impl = impl;
  c.decode(codes.data(), rows, y.data(), opt);
  return y;
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

void check_spec(const Spec& s, const Table& t, const std::vector<size_t>& shuffle) {
  std::unique_ptr<edo::Codec> codec;
  try {
    codec = edo::make_codec(s.text, t.dim);
  } catch (const edo::Error& e) {
    fail(s.text, t, std::string("make_codec refused a spec its grammar allows: ") + e.what());
  }
  const edo::Codec& c = *codec;
  const std::string canon = c.spec();
  if (edo::make_codec(canon, t.dim)->spec() != canon) fail(s.text, t, "spec '" + canon + "' is not canonical");
  if (edo::code_size(s.text, t.dim) != c.code_size()) fail(s.text, t, "code_size(spec) differs from the codec's");
  if (c.needs_training()) fail(s.text, t, "a plain codec needs training");
  const std::optional<double> bound = documented_bound(s, t.dim);
  if (bound && std::fabs(c.row_error_bound() - *bound) > 1e-12 * (1 + *bound))
    fail(s.text, t,
         "row_error_bound() " + std::to_string(c.row_error_bound()) + " is not the documented " +
             std::to_string(*bound));

  std::string error_fast, error_ref;
  const std::vector<uint8_t> fast = encode(c, t, edo::Impl::fast, error_fast);
  const std::vector<uint8_t> ref = encode(c, t, edo::Impl::reference, error_ref);
  if (error_fast.empty() != error_ref.empty())
    fail(s.text, t, "fast and reference encodes disagree on refusing: '" + error_fast + "' / '" + error_ref + "'");
  if (fast != ref) fail(s.text, t, "fast and reference encodes differ");

  // Rows in the codec's normal range are never refused.
  std::vector<bool> in_range(t.rows);
  for (size_t r = 0; r < t.rows; ++r) in_range[r] = normal_range(s, t.row(r), t.dim);
  if (!error_fast.empty()) {
    if (std::all_of(in_range.begin(), in_range.end(), [](bool b) { return b; }))
      fail(s.text, t, "encode refused a table in the codec's normal range: " + error_fast);
    return;
  }

  const std::vector<float> y = decode(c, fast, t.rows, edo::Impl::fast);
  if (!same_bits(y, decode(c, fast, t.rows, edo::Impl::reference)))
    fail(s.text, t, "fast and reference decodes differ");
  {
    const auto reader = edo::make_decoder(canon, t.dim);
    if (reader->code_size() != c.code_size() || !same_bits(y, decode(*reader, fast, t.rows, edo::Impl::fast)))
      fail(s.text, t, "make_decoder's codec decodes differently");
    std::vector<uint64_t> rows(t.rows), dst(t.rows);
    for (size_t k = 0; k < t.rows; ++k) rows[k] = shuffle[k], dst[k] = k;
    std::vector<float> g(t.rows * t.dim);
    reader->decode_gather(fast.data(), rows.data(), dst.data(), t.rows, g.data());
    for (size_t k = 0; k < t.rows; ++k)
      if (std::memcmp(g.data() + k * t.dim, y.data() + rows[k] * t.dim, t.dim * sizeof(float)) != 0)
        fail(s.text, t, "decode_gather of row " + std::to_string(rows[k]) + " differs from decode");
  }

  const auto layout = edo::scalar_layout(c);
  for (size_t r = 0; r < t.rows; ++r) {
    const float* x = t.row(r);
    const float* yr = y.data() + r * t.dim;
    double xx = 0, ee = 0;
    for (size_t j = 0; j < t.dim; ++j) {
      if (!std::isfinite(yr[j]))
        fail(s.text, t,
             "row " + std::to_string(r) + " column " + std::to_string(j) + ": finite " + hex(x[j]) + " decoded to " +
                 hex(yr[j]),
             r);
      const double d = static_cast<double>(x[j]) - yr[j];
      xx += static_cast<double>(x[j]) * x[j];
      ee += d * d;
    }
    if (!in_range[r]) continue;
    const std::string where = "row " + std::to_string(r);
    if (s.name == "fp32" && std::memcmp(x, yr, t.dim * sizeof(float)) != 0) fail(s.text, t, where + " changed", r);
    if (bound && xx > 0) {
      const double rel = std::sqrt(ee / xx);
      if (!(rel <= *bound * 1.01 + 1e-9))
        fail(s.text, t,
             where + ": relative error " + std::to_string(rel) + " beyond the bound " + std::to_string(*bound), r);
    }
    if (s.name == "fp16" || s.name == "bf16") {
      const double half_ulp = s.name == "fp16" ? 0x1p-11 : 0x1p-8;
      for (size_t j = 0; j < t.dim; ++j)
        if (std::fabs(static_cast<double>(x[j]) - yr[j]) > half_ulp * std::fabs(static_cast<double>(x[j])))
          fail(s.text, t, where + ": " + hex(x[j]) + " stored as " + hex(yr[j]), r);
    }
    if (s.name == "int8" && !s.half && layout) {
      // Each group: x = q * scale + offset with q rounded, so within half a step.
      const uint8_t* code = fast.data() + r * c.code_size();
      for (uint32_t g = 0; g < layout->groups; ++g) {
        const edo::math::AffineParams p = edo::math::load_group_params(*layout, code, g);
        const size_t begin = static_cast<size_t>(g) * layout->group;
        const size_t end = std::min<size_t>(t.dim, begin + layout->group);
        for (size_t j = begin; j < end; ++j) {
          const double a = std::max(std::fabs(static_cast<double>(x[j])), std::fabs(static_cast<double>(yr[j])));
          // A subnormal scale is rounded to a multiple of 2^-149: when it rounds
          // down, the group's top values clamp by up to qmax x 2^-150.
          const double clamp = p.scale < FLT_MIN ? 255.0 * 0x1p-150 : 0.0;
          const double slack = 0.5 * p.scale * 0x1p-12 + 4 * a * 0x1p-24 + 0x1p-149 + clamp;
          if (std::fabs(static_cast<double>(x[j]) - yr[j]) > 0.5 * static_cast<double>(p.scale) + slack)
            fail(s.text, t,
                 where + " column " + std::to_string(j) + ": " + hex(x[j]) + " stored as " + hex(yr[j]) +
                     ", more than half the step " + hex(p.scale),
                 r);
        }
      }
    }
    edo::EncodeOptions opt;
    opt.input = "fuzz";
    try {
      edo::check_magnitudes(c, x, yr, 1, opt);
    } catch (const edo::Error& e) {
      fail(s.text, t, where + ": check_magnitudes refused a row in the normal range: " + e.what(), r);
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  FuzzedDataProvider in(data, size);
  const size_t group_pick = in.ConsumeIntegral<uint8_t>();
  const uint64_t shuffle_seed = in.ConsumeIntegral<uint64_t>();
  const Table t = make_table(in);
  const size_t group = 1 + group_pick % t.dim;
  std::vector<size_t> shuffle(t.rows);
  std::iota(shuffle.begin(), shuffle.end(), size_t{0});
  uint64_t state = shuffle_seed | 1;
  for (size_t k = t.rows; k > 1; --k) {
    state ^= state << 13, state ^= state >> 7, state ^= state << 17;
    std::swap(shuffle[k - 1], shuffle[state % k]);
  }
  for (const Spec& s : plain_specs(group)) check_spec(s, t, shuffle);
  return 0;
}
