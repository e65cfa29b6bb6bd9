// SPDX-License-Identifier: Apache-2.0
#include "test_codecs_util.hpp"

#include <edo/codec_math.hpp>
#include <edo/float16.hpp>
#include <edo/make_codec.hpp>
#include <edo/pca.hpp>
#include <edo/random.hpp>

#include <omp.h>

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <functional>
#include <limits>
#include <numeric>
#include <random>
#include <tuple>

using namespace edo;
using edo::test::code_of;
using edo::test::error_of;
using edo::test::Matrix;

namespace {

void check_usage_error(const std::string& spec, size_t dim, const std::string& needle) {
  CAPTURE(spec);
  std::string msg;
  ExitCode code = ExitCode::ok;
  try {
    make_codec(spec, dim);
  } catch (const Error& e) {
    msg = e.what();
    code = e.code();
  }
  CAPTURE(msg);
  CHECK(code == ExitCode::usage);
  CHECK(msg.find(needle) != std::string::npos);
}

}  // namespace

// ---- grammar ----------------------------------------------------------------------

TEST_CASE("codecs: spec grammar splits stages and continues params after a comma") {
  const auto pq = parse_spec("pq:m=32,nbits=8");
  REQUIRE(pq.size() == 1);
  CHECK(pq[0].name == "pq");
  CHECK(pq[0].params == std::vector<SpecParam>{{"m", "32"}, {"nbits", "8"}});

  const auto chain = parse_spec("pca:128,int8");
  REQUIRE(chain.size() == 2);
  CHECK(chain[0] == SpecStage{"pca", {{"", "128"}}});
  CHECK(chain[1] == SpecStage{"int8", {}});

  const auto csr = parse_spec("csr:density=0.2,values=int8,fp16");
  REQUIRE(csr.size() == 2);
  CHECK(csr[0].params.size() == 2);
  CHECK(csr[1].name == "fp16");

  for (const char* s : {"fp16", "int4:group=32", "pca:128,int8", "pq:m=32:nbits=8", "fp8:e4m3"}) {
    CAPTURE(s);
    CHECK(format_spec(parse_spec(s)) == s);
  }
  CHECK(format_spec(parse_spec("pq:m=32,nbits=8")) == "pq:m=32:nbits=8");
  CHECK(parse_spec(format_spec(pq)) == pq);

  for (const char* bad :
       {"", ",", "int8,", ",int8", "int4:", "int4::3", "=3", "group=3", "in t8", "int8;x", "int4:group=", "int4:=3"}) {
    CAPTURE(bad);
    CHECK(code_of([&] { parse_spec(bad); }) == ExitCode::usage);
  }
}

TEST_CASE("codecs: nested specs in brackets") {
  const auto csr = parse_spec("csr:density=0.25,values=[int4:group=32]");
  REQUIRE(csr.size() == 1);
  CHECK(csr[0].params == std::vector<SpecParam>{{"density", "0.25"}, {"values", "int4:group=32"}});
  CHECK(parse_spec(csr[0].params[1].value) == parse_spec("int4:group=32"));  // the value is a spec as it is
  CHECK(format_spec(csr) == "csr:density=0.25:values=[int4:group=32]");

  // A bracketed value ends at ':', ',' or the end; a ',' after it may start a stage or continue params.
  const auto group = parse_spec("group:clusters=256,residual=[pq:m=8,nbits=4]:x=1,fp16");
  REQUIRE(group.size() == 2);
  CHECK(group[0].params == std::vector<SpecParam>{{"clusters", "256"}, {"residual", "pq:m=8,nbits=4"}, {"x", "1"}});
  CHECK(group[1] == SpecStage{"fp16", {}});
  CHECK(parse_spec("a:[b:c]")[0].params == std::vector<SpecParam>{{"", "b:c"}});  // positional

  // Two levels: the outer value keeps the inner brackets.
  const auto two = parse_spec("a:x=[b:y=[c:z=1,w=2]]");
  REQUIRE(two.size() == 1);
  REQUIRE(two[0].params.size() == 1);
  CHECK(two[0].params[0].value == "b:y=[c:z=1,w=2]");
  const auto b = parse_spec(two[0].params[0].value);
  REQUIRE(b.size() == 1);
  CHECK(b[0].params == std::vector<SpecParam>{{"y", "c:z=1,w=2"}});
  CHECK(parse_spec(b[0].params[0].value) == std::vector<SpecStage>{{"c", {{"z", "1"}, {"w", "2"}}}});

  // Round trips; a bare token needs no brackets, so values=[int8] prints as values=int8.
  for (const char* s :
       {"csr:density=0.25:values=[int4:group=32]", "a:x=[b:y=[c:z=1,w=2]]", "a:[b,c]:k=v,d", "csr:values=int8"}) {
    const std::string text = s;
    CAPTURE(text);
    CHECK(format_spec(parse_spec(s)) == s);
    CHECK(parse_spec(format_spec(parse_spec(s))) == parse_spec(s));
  }
  CHECK(format_spec(parse_spec("csr:values=[int8]")) == "csr:values=int8");

  for (const char* bad :
       {"a:x=[b",   "a:x=b]",     "a:x=[b]]",  "a:x=[[b]", "a:x=[]",       "a:[]", "a:x=[b:[]]",   "a:x=b[c]",
        "a:x=[b]c", "a:x=[b][c]", "a:x=[b]=c", "a:[x]=1",  "a[x]",         "[a]",  "a:x=1,[b]",    "a:x[1]=2",
        "a:x=[,]",  "a:x=[b:]",   "a:x=[:b]",  "a:x=[b,]", "a:x=[b:y=[c]", "]",    "a:x=[b:y=[]]", "a:x=[y=1]"}) {
    const std::string text = bad;
    CAPTURE(text);
    std::string msg;
    CHECK(code_of([&] {
            try {
              parse_spec(bad);
            } catch (const Error& e) {
              msg = e.what();
              throw;
            }
          }) == ExitCode::usage);
    CAPTURE(msg);
    CHECK(msg.find(std::string("codec spec '") + bad + "'") != std::string::npos);
  }
  std::string deep = "int8";
  for (int i = 0; i < 100; ++i) deep = "a:x=[" + deep + "]";
  CHECK(code_of([&] { parse_spec(deep); }) == ExitCode::usage);
  CHECK(make_codec("int4:group=[32]", 50)->spec() == "int4:group=32");  // the codec sees the value unbracketed
  check_usage_error("int4:group=[32:1]", 50, "group '32:1'");
  check_usage_error("int4:bogus=[fp16]", 50, "unknown parameter 'bogus'");
}

TEST_CASE("codecs: specs print canonically and round-trip") {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"fp16", "fp16"},
      {"bf16", "bf16"},
      {"fp32", "fp32"},
      {"fp8", "fp8:e4m3"},
      {"fp8:e5m2", "fp8:e5m2"},
      {"fp8:format=e5m2", "fp8:e5m2"},
      {"int8", "int8"},
      {"int4:group=32", "int4:group=32"},
      {"int4:group=50", "int4"},
      {"int4:group=64", "int4"},
      {"int2:group=7", "int2:group=7"},
      {"int4:scale=fp32", "int4"},
      {"int4:group=32:scale=fp32", "int4:group=32"},
      {"int5:scale=fp16", "int5:scale=fp16"},
      {"int5:group=64,scale=fp16", "int5:scale=fp16"},
      {"int6:scale=fp16,group=16", "int6:group=16,scale=fp16"},
      {"bin", "bin"},
      {"pca:32,int8", "pca:32,int8"},
      {"pca:16", "pca:16,fp32"},
      {"pca:10,int4,group=5", "pca:10,int4:group=5"},
  };
  for (const auto& [spec, canonical] : cases) {
    CAPTURE(spec);
    const auto c = make_codec(spec, 50);
    CHECK(c->spec() == canonical);
    CHECK(make_codec(c->spec(), 50)->spec() == canonical);
    CHECK(c->dim() == 50);
  }
}

TEST_CASE("codecs: bad specs and dimensions are usage errors that say what is wrong") {
  check_usage_error("int9", 50, "unknown codec 'int9'");
  check_usage_error("int4:bogus=1", 50, "unknown parameter 'bogus'");
  check_usage_error("int4:32", 50, "unexpected parameter '32'");
  check_usage_error("int4:group=0", 50, "group '0' must be an integer from 1");
  check_usage_error("int4:group=x", 50, "group 'x'");
  check_usage_error("int4:group=-3", 50, "group '-3'");
  check_usage_error("int4:group=99999999999999999999999", 50, "group");
  check_usage_error("int4:group=4:group=8", 50, "given twice");
  check_usage_error("int4:scale=bf16", 50, "scale 'bf16' is not fp32 or fp16");
  check_usage_error("fp8:scale=fp16", 50, "scale");
  check_usage_error("fp8:e3m4", 50, "unknown format 'e3m4'");
  check_usage_error("fp8:e4m3:format=e5m2", 50, "format given twice");
  check_usage_error("fp16:x", 50, "unexpected parameter");
  check_usage_error("pca", 50, "needs the output dimension");
  check_usage_error("pca:0,int8", 50, "K '0'");
  check_usage_error("pca:51,int8", 50, "larger than the input dimension 50");
  check_usage_error("int8,pca:3", 50, "must be the first stage");
  check_usage_error("int8,fp16", 50, "must be the last stage");
  check_usage_error("pca:3,pca:2", 50, "must be the first stage");
  check_usage_error("dims:51,int8", 50, "larger than the input dimension 50");
  check_usage_error("dims,int8", 50, "(dims:K)");
  check_usage_error("pca:8,dims:4", 50, "must be the first stage");
  check_usage_error("int8", 0, "dimension 0");
  check_usage_error("int8", kMaxCodecDim + 1, "dimension");
}

TEST_CASE("codecs: traits table lists every codec and sizes need no training") {
  std::vector<std::string> names;
  for (const CodecTraits& t : codec_list()) {
    names.push_back(t.name);
    CHECK(std::string(t.grammar).rfind(t.name, 0) == 0);
    CHECK(std::string(t.description).size() > 10);
    CHECK(find_codec(t.name) == &t);
  }
  CHECK(names == std::vector<std::string>{"fp32", "fp16", "bf16", "fp8", "int8", "int6", "int5", "int4", "int3", "int2",
                                          "bin", "pq", "opq", "rq", "tc", "pca", "rot", "dims"});
  CHECK(find_codec("lsq") == nullptr);
  CHECK(find_codec("pca")->trainable);
  CHECK_FALSE(find_codec("int4")->trainable);

  // dim 50: header (fp32 scale, or scale + offset per group) + packed payload.
  const std::vector<std::pair<std::string, size_t>> sizes = {{"fp32", 200},
                                                             {"fp16", 100},
                                                             {"bf16", 100},
                                                             {"fp8:e4m3", 54},
                                                             {"int8", 58},
                                                             {"int8:group=25", 66},
                                                             {"int4", 33},
                                                             {"int4:group=32", 41},
                                                             {"int2", 21},
                                                             {"int2:group=10", 53},
                                                             {"bin", 11},
                                                             {"pca:32,int8", 40},
                                                             {"pca:16", 64},
                                                             {"dims:40,int8", 48},
                                                             {"dims:10", 40},
                                                             {"int6", 46},
                                                             {"int5", 40},
                                                             {"int5:group=32", 48},
                                                             {"int3", 27},
                                                             {"int3:group=25", 35},
                                                             {"int5:scale=fp16", 36},
                                                             {"int4:group=25,scale=fp16", 33},
                                                             {"int8:group=10,scale=fp16", 70}};
  for (const auto& [spec, bytes] : sizes) {
    CAPTURE(spec);
    CHECK(code_size(spec, 50) == bytes);
    CHECK(make_codec(spec, 50)->code_size() == bytes);
    CHECK(bits_per_value(spec, 50) == doctest::Approx(static_cast<double>(bytes) * 8 / 50));
  }
  CHECK(canonical_spec("int4:group=25", 50) == "int4:group=25");
  CHECK_FALSE(make_codec("int8", 50)->needs_training());
  CHECK(make_codec("pca:8,int8", 50)->needs_training());
}

TEST_CASE("codecs: every affine integer width of the scalar-kind table is a codec that keeps its bound") {
  // Iterates math::scalar_kind_traits, so a new width is tested without a new test.
  Rng rng(7);
  const size_t dim = 50, rows = 64;
  std::vector<float> x(rows * dim), y(rows * dim);
  for (float& v : x) v = static_cast<float>(rng.uniform() * 2 - 1);
  size_t widths = 0;
  for (uint32_t k = 0; k < math::kScalarKindCount; ++k) {
    const auto kind = static_cast<math::ScalarKind>(k);
    const math::ScalarKindTraits t = math::scalar_kind_traits(kind);
    CAPTURE(t.codec);
    CHECK(find_codec(t.codec) != nullptr);
    if (t.family != math::ScalarFamily::affine) continue;
    ++widths;
    CHECK(t.bits >= 2);
    CHECK(t.bits <= 8);
    for (const std::string suffix : {"", ":group=10", ":group=25,scale=fp16"}) {
      const std::string spec = t.codec + suffix;
      CAPTURE(spec);
      const auto codec = make_codec(spec, dim);
      const size_t group = suffix.empty() ? dim : suffix.find("10") != std::string::npos ? 10 : 25;
      const size_t header = (dim + group - 1) / group * (suffix.find("fp16") != std::string::npos ? 4 : 8);
      CHECK(codec->code_size() == header + (dim * t.bits + 7) / 8);
      std::vector<uint8_t> codes(rows * codec->code_size());
      codec->encode(x.data(), rows, codes.data());
      codec->decode(codes.data(), rows, y.data());
      for (size_t r = 0; r < rows; ++r) {
        double err = 0, norm = 0;
        for (size_t j = 0; j < dim; ++j) {
          const double d = static_cast<double>(x[r * dim + j]) - y[r * dim + j];
          err += d * d;
          norm += static_cast<double>(x[r * dim + j]) * x[r * dim + j];
        }
        REQUIRE(std::sqrt(err / norm) <= codec->row_error_bound());
      }
    }
  }
  CHECK(widths == 6);  // int8, int6, int5, int4, int3, int2 today
}

// ---- per-element math ----------------------------------------------------------------

namespace {

// The fp8 value nearest to v by brute force over all codes, ties to the even
// code (mantissa LSB 0), saturating at the largest finite value.
uint8_t fp8_brute_force(float v, math::Fp8Format fmt) {
  const float max = math::fp8_layout(fmt).max_value;
  const double a = std::min(static_cast<double>(std::fabs(v)), static_cast<double>(max));
  uint8_t best = 0;
  double best_err = std::numeric_limits<double>::infinity();
  for (uint32_t c = 0; c < 0x80; ++c) {
    const float f = math::fp8_to_float(static_cast<uint8_t>(c), fmt);
    if (!std::isfinite(f)) continue;
    const double err = std::fabs(static_cast<double>(f) - a);
    if (err < best_err || (err == best_err && (c & 1u) == 0)) {
      best_err = err;
      best = static_cast<uint8_t>(c);
    }
  }
  return static_cast<uint8_t>(best | (std::signbit(v) ? 0x80 : 0));
}

}  // namespace

TEST_CASE("codec_math: fp8 rounding, subnormals, saturation and NaN") {
  using math::float_to_fp8;
  using math::Fp8Format;
  const auto e4 = Fp8Format::e4m3, e5 = Fp8Format::e5m2;
  CHECK(float_to_fp8(1.0f, e4) == 0x38);
  CHECK(float_to_fp8(448.0f, e4) == 0x7e);
  CHECK(float_to_fp8(-448.0f, e4) == 0xfe);
  CHECK(float_to_fp8(464.0f, e4) == 0x7e);  // tie between 448 and 480 (not finite): saturates
  CHECK(float_to_fp8(1e30f, e4) == 0x7e);   // saturation, never NaN from finite input
  CHECK(float_to_fp8(INFINITY, e4) == 0x7e);
  CHECK(float_to_fp8(-INFINITY, e4) == 0xfe);
  CHECK((float_to_fp8(NAN, e4) & 0x7f) == 0x7f);
  CHECK(float_to_fp8(1.0625f, e4) == 0x38);    // tie: 1.0 (even) not 1.125
  CHECK(float_to_fp8(1.1875f, e4) == 0x3a);    // tie: 1.25 (even) not 1.125
  CHECK(float_to_fp8(0x1p-9f, e4) == 0x01);    // smallest subnormal
  CHECK(float_to_fp8(0x1p-10f, e4) == 0x00);   // tie with zero: even
  CHECK(float_to_fp8(0x3p-10f, e4) == 0x02);   // 1.5 steps: tie, even
  CHECK(float_to_fp8(0x7.8p-9f, e4) == 0x08);  // 7.5 steps rounds up into the smallest normal
  CHECK(float_to_fp8(0x1p-6f, e4) == 0x08);
  CHECK(float_to_fp8(-0.0f, e4) == 0x80);
  CHECK(float_to_fp8(57344.0f, e5) == 0x7b);
  CHECK(float_to_fp8(60000.0f, e5) == 0x7b);
  CHECK(float_to_fp8(INFINITY, e5) == 0x7b);
  CHECK(float_to_fp8(1.0f, e5) == 0x3c);
  CHECK(float_to_fp8(0x1p-16f, e5) == 0x01);
  CHECK(std::isnan(math::fp8_to_float(0x7f, e4)));
  CHECK(std::isinf(math::fp8_to_float(0x7c, e5)));
  CHECK(std::isnan(math::fp8_to_float(0x7e, e5)));
  CHECK(math::fp8_to_float(0x7e, e4) == 448.0f);
  CHECK(math::fp8_to_float(0x01, e4) == 0x1p-9f);

  for (Fp8Format fmt : {e4, e5}) {
    // Every finite code decodes and re-encodes to itself.
    for (uint32_t c = 0; c < 256; ++c) {
      const float f = math::fp8_to_float(static_cast<uint8_t>(c), fmt);
      if (std::isfinite(f)) CHECK(float_to_fp8(f, fmt) == c);
    }
    // Random magnitudes over the whole range, plus exact midpoints, against brute force.
    std::mt19937 rng(7);
    std::uniform_real_distribution<float> exponent(-22.0f, 17.0f);
    int mismatches = 0;
    for (int i = 0; i < 100000; ++i) {
      const float v = std::exp2(exponent(rng)) * (i % 2 ? -1.0f : 1.0f);
      mismatches += float_to_fp8(v, fmt) != fp8_brute_force(v, fmt);
    }
    for (uint32_t c = 0; c + 1 < 0x7b; ++c) {
      const float mid = 0.5f * (math::fp8_to_float(static_cast<uint8_t>(c), fmt) +
                                math::fp8_to_float(static_cast<uint8_t>(c + 1), fmt));
      mismatches += float_to_fp8(mid, fmt) != fp8_brute_force(mid, fmt);
    }
    CHECK(mismatches == 0);
  }
  // A zero row still gets a usable (non-zero) scale; tiny rows do not overflow.
  CHECK(math::fp8_scale(0.0f, e4) > 0.0f);
  const float s = math::fp8_scale(0x1p-149f, e4);
  CHECK(std::isfinite(0x1p-149f / s));
}

TEST_CASE("codec_math: fp16 and bf16 ties, subnormals and non-finite values") {
  CHECK(float_to_half_bits(1.0f + 0x1p-11f) == 0x3c00);  // tie: even
  CHECK(float_to_half_bits(1.0f + 0x3p-11f) == 0x3c02);  // tie: even (up)
  CHECK(float_to_half_bits(0x1p-24f) == 0x0001);         // smallest subnormal
  CHECK(float_to_half_bits(0x1p-25f) == 0x0000);         // tie with zero
  CHECK(float_to_half_bits(65504.0f) == 0x7bff);
  CHECK(float_to_half_bits(65520.0f) == 0x7c00);  // rounds to Inf
  CHECK(float_to_half_bits(-INFINITY) == 0xfc00);
  CHECK(std::isnan(half_bits_to_float(float_to_half_bits(NAN))));
  CHECK(float_to_bf16_bits(1.0f + 0x1p-8f) == 0x3f80);  // tie: even
  CHECK(float_to_bf16_bits(1.0f + 0x3p-8f) == 0x3f82);
  CHECK(std::isnan(bf16_bits_to_float(float_to_bf16_bits(NAN))));
  CHECK(bf16_bits_to_float(float_to_bf16_bits(INFINITY)) == INFINITY);
}

TEST_CASE("codec_math: integer rounding, clamping and extreme ranges") {
  CHECK(math::round_small_uint(2.5f) == 2);
  CHECK(math::round_small_uint(3.5f) == 4);
  CHECK(math::round_small_uint(0.5f) == 0);
  CHECK(math::round_small_uint(254.6f) == 255);
  const math::AffineInverse unit{1.0f, 1.0f};
  CHECK(math::affine_quantize(-5.0f, 0.0f, unit, 15.0f) == 0);
  CHECK(math::affine_quantize(100.0f, 0.0f, unit, 15.0f) == 15);
  CHECK(math::affine_quantize(INFINITY, 0.0f, unit, 15.0f) == 15);

  // A constant group: zero scale, decodes exactly.
  const math::AffineParams flat = math::affine_from_range(3.25, 3.25, 255);
  CHECK(flat.scale == 0.0f);
  CHECK(math::affine_dequantize(math::affine_quantize(3.25f, flat.offset, math::affine_inverse(flat.scale), 255.f),
                                flat) == 3.25f);
  // -0 minimum stores +0, so stored bytes do not depend on min/max order.
  CHECK_FALSE(std::signbit(math::affine_from_range(-0.0, 1.0, 255).offset));
  // A range wider than float: clipped, never Inf on decode.
  const math::AffineParams wide = math::affine_from_range(-FLT_MAX, FLT_MAX, 15);
  CHECK(std::isfinite(wide.scale));
  CHECK(std::isfinite(math::affine_dequantize(15, wide)));
  CHECK(std::isfinite(math::affine_dequantize(0, wide)));
  // A tiny range: the scale goes subnormal rather than to FLT_MIN, its
  // inverse stays finite, and the values keep int8's precision.
  const math::AffineParams tiny = math::affine_from_range(0.0, 0x1p-130, 255);
  CHECK(tiny.scale < FLT_MIN);
  const math::AffineInverse tiny_inv = math::affine_inverse(tiny.scale);
  CHECK(std::isfinite(tiny_inv.inv));
  for (const float v : {0x1p-131f, 0x1p-132f * 3.0f, 0x1p-130f}) {
    const float back = math::affine_dequantize(math::affine_quantize(v, tiny.offset, tiny_inv, 255.f), tiny);
    CHECK(std::fabs(back - v) <= 0.5f * tiny.scale * 1.01f);
  }

  // The search's unit: 2^-e for a range in [2^e, 2^(e+1)), e clamped to [-126, 126], 1 for no range; read from
  // exponent bits, so it must agree with ilogb/ldexpf at every binade's edges, subnormal and infinite ranges.
  const auto unit_by_libm = [](double range) {
    if (!(range > 0.0)) return 1.0f;
    const int e = std::clamp(std::ilogb(range), -126, 126);
    return std::ldexp(1.0f, -e);
  };
  for (int e = -1080; e <= 1030; ++e) {
    const double power = std::ldexp(1.0, e);
    for (const double range : {power, std::nextafter(power, 0.0), std::nextafter(power, INFINITY), 1.5 * power}) {
      CAPTURE(range);
      CHECK(math::affine_unit(range) == unit_by_libm(range));
    }
  }
  for (const double range : {0.0, -0.0, -1.0, 4.9e-324, static_cast<double>(INFINITY), std::nan("")})
    CHECK(math::affine_unit(range) == unit_by_libm(range));

  const float xs[4] = {-1.0f, 2.0f, -3.0f, 4.0f};
  CHECK(math::sign_scale(xs, 4) == 2.5f);
  CHECK(math::sign_bit(-0.0f) == 0);
  CHECK(math::sign_bit(-1e-30f) == 1);
}

TEST_CASE("codec_math: a candidate's error from its code sums is the error summed directly") {
  // The search ranks candidates by sum (x' - S q - M)^2 expanded into moments
  // and code sums; checked here against the same error summed in double,
  // on GloVe's rows and groups of 10 at several clips, int2 to int6.
  const Matrix glove = test::load_shared("glove.6B.50d.10k.npy", 200);
  double worst = 0;
  for (const uint32_t qmax : {3u, 15u, 63u}) {
    for (const size_t group : {size_t{50}, size_t{10}}) {
      for (size_t r = 0; r < glove.rows; ++r) {
        for (size_t begin = 0; begin < glove.dim; begin += group) {
          const float* x = glove.row(r) + begin;
          const auto [lo_it, hi_it] = std::minmax_element(x, x + group);
          const float lo = *lo_it, hi = *hi_it;
          const float unit = math::affine_unit(static_cast<double>(hi) - static_cast<double>(lo));
          const math::AffineGroup g = math::affine_group(x, group, qmax, lo, unit);
          for (const double clip : {0.0, 0.05, 0.2}) {
            const double range = static_cast<double>(hi) - static_cast<double>(lo);
            const math::AffineParams p = math::affine_stored_range(lo + clip * range, hi - clip * range, qmax, false);
            math::AffineCodeSums sums;
            g.sums_batch(&p, 1, &sums);
            const math::AffineCandidate c = math::affine_candidate(p, g.lo_units, unit);
            REQUIRE(c.measurable);
            double direct = 0;
            for (size_t i = 0; i < group; ++i) {
              const float xc = math::affine_centred(x[i], g.lo_units, unit);
              const double d = static_cast<double>(xc) -
                               static_cast<double>(math::affine_candidate_code(xc, c, static_cast<float>(qmax))) *
                                   static_cast<double>(c.scale) -
                               static_cast<double>(c.offset);
              direct += d * d;
            }
            // Relative to the group's spread (sum x'^2 about its mean), the scale the expansion cancels.
            const double spread = g.moments.sxx - g.moments.sx * g.moments.sx / g.moments.n;
            worst = std::max(worst, std::fabs(sums.sse - direct) / spread);
          }
        }
      }
    }
  }
  MESSAGE("largest difference, relative to the group's spread: " << worst);
  CHECK(worst < 1e-5);

  // Candidates no group could want are not measured: they err +Inf and never win.
  const float x[4] = {0.0f, 1.0f, 2.0f, 3.0f};
  const math::AffineGroup g = math::affine_group(x, 4, 3, 0.0f, math::affine_unit(3.0));
  for (const math::AffineParams p : {math::AffineParams{0.0f, 0.0f}, math::AffineParams{1e-35f, 0.0f},
                                     math::AffineParams{1.0f, 1e7f}, math::AffineParams{INFINITY, 0.0f}}) {
    CAPTURE(p.scale);
    CAPTURE(p.offset);
    math::AffineCodeSums sums;
    g.sums_batch(&p, 1, &sums);
    CHECK(sums.sse == INFINITY);
  }
  const math::AffineParams exact{1.0f, 0.0f};
  math::AffineCodeSums sums;
  g.sums_batch(&exact, 1, &sums);
  CHECK(sums.sse == 0.0);
  CHECK(sums.q == 6.0f);
  CHECK(sums.qq == 14.0f);
}

// ---- implementations agree ------------------------------------------------------------------

namespace {

void check_fast_matches_reference(const Matrix& m, const std::string& spec) {
  CAPTURE(spec);
  CAPTURE(m.dim);
  const auto codec = make_codec(spec, m.dim);
  EncodeOptions ref_opt, fast_opt;
  ref_opt.impl = Impl::reference;
  const auto ref = test::encode_all(*codec, m, ref_opt);
  const auto fast = test::encode_all(*codec, m, fast_opt);
  CHECK(ref == fast);
  DecodeOptions ref_dec;
  ref_dec.impl = Impl::reference;
  const std::vector<float> decoded = test::decode_all(*codec, ref, m.rows, ref_dec);
  CHECK(test::same_bits(decoded, test::decode_all(*codec, ref, m.rows)));
  // decode_gather (the reader's lookup): rows in any order, repeats, into scattered places.
  const size_t n = std::min<size_t>(m.rows, 300);
  std::vector<uint64_t> rows(n), dst(n);
  for (size_t k = 0; k < n; ++k) {
    rows[k] = (k * 7919 + 13) % m.rows;
    dst[k] = n - 1 - k;
  }
  std::vector<float> gathered(n * m.dim, std::nanf(""));
  codec->decode_gather(ref.data(), rows.data(), dst.data(), n, gathered.data());
  for (size_t k = 0; k < n; ++k) {
    const float* want = decoded.data() + rows[k] * m.dim;
    const float* got = gathered.data() + dst[k] * m.dim;
    CHECK(std::memcmp(want, got, m.dim * sizeof(float)) == 0);
  }
}

}  // namespace

TEST_CASE("codecs: fast CPU encode/decode is byte-identical to the reference on GloVe") {
  const Matrix glove = test::load_shared("glove.6B.50d.10k.npy");
  const Matrix odd = test::first_columns(glove, 37);
  for (const std::string& spec : test::scalar_specs()) {
    check_fast_matches_reference(glove, spec);
    check_fast_matches_reference(odd, spec);
  }
  const Matrix tiny = test::first_columns(glove, 3);
  for (const char* spec : {"fp16", "int4:group=2", "int2", "bin", "fp8:e5m2"}) check_fast_matches_reference(tiny, spec);
  // Rows whose minimum or maximum is a zero of either sign, at every position:
  // the fast min/max must pick the reference's zero.
  Matrix zeros{64, 40, {}};
  for (size_t r = 0; r < zeros.rows; ++r)
    for (size_t j = 0; j < zeros.dim; ++j)
      zeros.values.push_back(j == r % zeros.dim || j == (r * 7 + 3) % zeros.dim ? ((r + j) % 2 ? -0.0f : 0.0f)
                             : r % 2                                            ? 0.5f + static_cast<float>(j) / 64
                                                                                : -0.5f - static_cast<float>(j) / 64);
  for (const char* spec : {"int8", "int6", "int5", "int4", "int3", "int2", "int8:group=8"})
    check_fast_matches_reference(zeros, spec);
}

// The fast path searches eight or sixteen groups at once, a group a SIMD
// lane, and the groups of one batch can be anything: rows of one value,
// ranges wider than float, subnormal values, single outliers. Every lane
// must still get the reference's pair.
TEST_CASE("codecs: the eight- and sixteen-lane searches give the reference's parameters whatever shares a batch") {
  const Matrix glove = test::load_shared("glove.6B.50d.10k.npy", 203);
  const auto mixed = [&](bool with_huge) {
    Matrix m = glove;
    for (size_t r = 0; r < m.rows; ++r) {
      float* row = m.values.data() + r * m.dim;
      switch (r % 8) {
        case 0:  // one value repeated: no search
          for (size_t j = 0; j < m.dim; ++j) row[j] = 1.5f;
          break;
        case 1:  // wider than float can hold (fp32 pairs), or an outlier of the ranges fp16 holds
          row[r % m.dim] = with_huge ? 3e38f : 6e4f;
          row[(r + 7) % m.dim] = with_huge ? -3e38f : -6e4f;
          break;
        case 2:  // subnormal values, whose stored scales need the lifted inverse
          for (size_t j = 0; j < m.dim; ++j) row[j] *= 1e-40f;
          break;
        case 3:  // one outlier
          row[(r * 3) % m.dim] = 1e4f;
          break;
        case 4:  // half the row constant
          for (size_t j = 0; j < m.dim / 2; ++j) row[j] = -0.25f;
          break;
        default:
          break;
      }
    }
    return m;
  };
  const Matrix fp32_pairs = mixed(true), fp16_pairs = mixed(false);
  // Sixteen lanes where the CPU has AVX-512F (else both runs take eight), then eight.
  for (const bool sixteen : {true, false}) {
    CAPTURE(sixteen);
    set_affine_search_avx512(sixteen);
    for (const char* spec : {"int6", "int5", "int4", "int3", "int2", "int4:group=8", "int2:group=5", "int5:group=16"}) {
      check_fast_matches_reference(fp32_pairs, spec);
      check_fast_matches_reference(test::first_columns(fp32_pairs, 19), spec);
    }
    for (const char* spec : {"int4:scale=fp16", "int2:group=8,scale=fp16", "int5:group=32,scale=fp16"})
      check_fast_matches_reference(fp16_pairs, spec);
  }
  set_affine_search_avx512(true);
}

TEST_CASE("codecs: fast CPU encode/decode is byte-identical to the reference on BIGANN (uint8)") {
  const Matrix bigann = test::load_shared("bigann10k_base.npy", 4000);
  REQUIRE(bigann.dim == 128);
  const Matrix odd = test::first_columns(bigann, 101);
  for (const std::string& spec : test::scalar_specs()) {
    check_fast_matches_reference(bigann, spec);
    check_fast_matches_reference(odd, spec);
  }
}

TEST_CASE("codecs: encodes do not depend on the thread count") {
  const Matrix glove = test::load_shared("glove.6B.50d.10k.npy");
  const int saved = omp_get_max_threads();
  for (const char* spec : {"fp16", "bf16", "fp8:e4m3", "int8", "int6", "int5:group=16", "int4:group=32", "int3", "int2",
                           "bin", "pca:20,int8"}) {
    CAPTURE(spec);
    auto codec = make_codec(spec, glove.dim);
    omp_set_num_threads(1);
    codec->train(glove.values.data(), glove.rows, 42);
    const auto one = test::encode_all(*codec, glove);
    const auto dec_one = test::decode_all(*codec, one, glove.rows);
    omp_set_num_threads(2);
    auto codec2 = make_codec(spec, glove.dim);
    codec2->train(glove.values.data(), glove.rows, 42);
    const auto two = test::encode_all(*codec2, glove);
    CHECK(one == two);
    CHECK(test::same_bits(dec_one, test::decode_all(*codec2, two, glove.rows)));
  }
  omp_set_num_threads(saved);
}

// ---- tiny and huge values (docs/CLI.md) ----------------------------------------------------------

namespace {

// m with every value multiplied by `factor` (in double, rounded once to fp32).
Matrix scaled(const Matrix& m, double factor) {
  Matrix out = m;
  for (float& v : out.values) v = static_cast<float>(static_cast<double>(v) * factor);
  return out;
}

}  // namespace

TEST_CASE("codecs: subnormal tables keep the integer and fp8 codecs' precision, fast == reference") {
  const Matrix glove = test::load_shared("glove.6B.50d.10k.npy", 2000);
  const Matrix tiny = scaled(glove, 1e-39);  // every value subnormal in fp32
  for (const std::string spec : {"int8", "int6", "int5:group=32", "int4", "int4:group=32", "int3", "int2",
                                 "int2:group=10", "fp8:e4m3", "fp8:e5m2"}) {
    CAPTURE(spec);
    check_fast_matches_reference(tiny, spec);
    const auto codec = make_codec(spec, glove.dim);
    const auto y = test::decode_all(*codec, test::encode_all(*codec, tiny), tiny.rows);
    const auto y_normal = test::decode_all(*codec, test::encode_all(*codec, glove), glove.rows);
    const double err = test::relative_frobenius_error(tiny.values, y);
    const double err_normal = test::relative_frobenius_error(glove.values, y_normal);
    MESSAGE(spec << ": relative error " << err << " on subnormal values, " << err_normal << " on the originals");
    // The inputs themselves lose bits as subnormals (about 2^-17 of a value here).
    CHECK(err <= err_normal * 1.02 + 1e-4);
    EncodeOptions named;
    named.input = "tiny";
    CHECK_NOTHROW(check_magnitudes(*codec, tiny.values.data(), y.data(), tiny.rows, named));
  }
}

TEST_CASE("codecs: rows a codec cannot store for their magnitude are refused by row, unless allowed") {
  const Matrix glove = test::load_shared("glove.6B.50d.10k.npy", 500);
  EncodeOptions named;
  named.input = "t.npy";
  named.first_row = 1000;
  // Every codec stores the originals within its bound.
  for (const std::string& spec : test::scalar_specs()) {
    CAPTURE(spec);
    const auto codec = make_codec(spec, glove.dim);
    const auto y = test::decode_all(*codec, test::encode_all(*codec, glove), glove.rows);
    CHECK_NOTHROW(check_magnitudes(*codec, glove.values.data(), y.data(), glove.rows, named));
  }
  // Row 7 made tiny: fp16 flushes it to zeros, bf16 keeps too few bits.
  Matrix one_tiny = glove;
  for (size_t j = 0; j < glove.dim; ++j) one_tiny.values[7 * glove.dim + j] *= 1e-39f;
  for (const auto& [spec, needle] : {std::pair<const char*, const char*>{"fp16", "all zeros"}, {"bf16", "bound"}}) {
    CAPTURE(spec);
    const auto codec = make_codec(spec, glove.dim);
    const auto y = test::decode_all(*codec, test::encode_all(*codec, one_tiny), glove.rows);
    const std::string message =
        error_of([&] { check_magnitudes(*codec, one_tiny.values.data(), y.data(), glove.rows, named); });
    CHECK(message.find("t.npy: row 1007") != std::string::npos);
    CHECK(message.find(needle) != std::string::npos);
    CHECK(message.find("--allow-underflow") != std::string::npos);
    EncodeOptions allowed = named;
    allowed.allow_underflow = true;
    CHECK_NOTHROW(check_magnitudes(*codec, one_tiny.values.data(), y.data(), glove.rows, allowed));
  }
  // Trained codecs: norms outside float's reach. Huge ones are refused even when underflow is allowed.
  const Matrix huge = scaled(glove, 1e20);
  EncodeOptions allowed = named;
  allowed.allow_underflow = true;
  std::string message =
      error_of([&] { check_trainable_norms(huge.values.data(), huge.rows, huge.dim, "pq", allowed); });
  CHECK(message.find("t.npy: row 1000: norm") != std::string::npos);
  CHECK(message.find("too large") != std::string::npos);
  const uint64_t ids[3] = {5, 9, 12};
  message =
      error_of([&] { check_trainable_norms(one_tiny.values.data() + 6 * glove.dim, 3, glove.dim, "pq", named, ids); });
  CHECK(message.find("t.npy: row 9: norm") != std::string::npos);
  CHECK_NOTHROW(check_trainable_norms(one_tiny.values.data(), glove.rows, glove.dim, "pq", allowed));
  CHECK_NOTHROW(check_trainable_norms(glove.values.data(), glove.rows, glove.dim, "pq", named));
  // The codecs' own training refuses overflow before FAISS sees it, whoever calls.
  for (const char* spec : {"pq:m=10", "opq:m=10", "rq:m=4", "pca:16,pq:m=4"}) {
    CAPTURE(spec);
    auto codec = make_codec(spec, glove.dim);
    CHECK(error_of([&] { codec->train(huge.values.data(), huge.rows, 1); }).find("too large") != std::string::npos);
  }
}

// ---- accuracy ------------------------------------------------------------------------------------

TEST_CASE("codecs: round-trip error on GloVe stays within each codec's bound") {
  const Matrix glove = test::load_shared("glove.6B.50d.10k.npy");
  // Bounds are about 1.4x what the codecs measure (printed with -s).
  const std::vector<std::pair<std::string, double>> bounds = {
      {"fp32", 0.0},           {"fp16", 3e-4},        {"bf16", 2.5e-3},          {"fp8:e4m3", 0.033},
      {"fp8:e5m2", 0.066},     {"int8", 0.0082},      {"int8:group=10", 0.0047}, {"int4", 0.128},
      {"int4:group=10", 0.07}, {"int2", 0.5},         {"int2:group=10", 0.32},   {"bin", 0.75},
      {"int6", 0.032},         {"int5", 0.064},       {"int5:group=10", 0.035},  {"int3", 0.26},
      {"pca:50,fp32", 1e-5},   {"pca:25,int8", 0.55}, {"pca:40,fp16", 0.23}};
  for (const auto& [spec, bound] : bounds) {
    CAPTURE(spec);
    auto codec = make_codec(spec, glove.dim);
    codec->train(glove.values.data(), glove.rows, 1);
    const auto codes = test::encode_all(*codec, glove);
    const double err = test::relative_frobenius_error(glove.values, test::decode_all(*codec, codes, glove.rows));
    MESSAGE(spec << ": code_size " << codec->code_size() << " bytes, relative Frobenius error " << err);
    CHECK(err <= bound);
  }
}

TEST_CASE("codecs: int6 to int2 MSE-optimal ranges beat plain min/max") {
  const Matrix glove = test::load_shared("glove.6B.50d.10k.npy");
  for (const auto& [spec, bits, group] :
       {std::tuple{std::string("int4"), 4u, 50u}, std::tuple{std::string("int4:group=10"), 4u, 10u},
        std::tuple{std::string("int2"), 2u, 50u}, std::tuple{std::string("int6"), 6u, 50u},
        std::tuple{std::string("int5:group=10"), 5u, 10u}, std::tuple{std::string("int3"), 3u, 50u}}) {
    CAPTURE(spec);
    auto codec = make_codec(spec, glove.dim);
    const double err = test::relative_frobenius_error(
        glove.values, test::decode_all(*codec, test::encode_all(*codec, glove), glove.rows));
    // The plain min/max quantizer with the same layout, computed here.
    const uint32_t qmax = (1u << bits) - 1;
    std::vector<float> minmax(glove.values.size());
    for (size_t r = 0; r < glove.rows; ++r) {
      for (size_t g = 0; g < glove.dim; g += group) {
        const float* x = glove.row(r) + g;
        const auto [lo, hi] = std::minmax_element(x, x + group);
        const math::AffineParams p = math::affine_from_range(*lo, *hi, qmax);
        for (size_t j = 0; j < group; ++j) {
          const uint32_t q = math::affine_quantize(x[j], p.offset, math::affine_inverse(p.scale), float(qmax));
          minmax[r * glove.dim + g + j] = math::affine_dequantize(q, p);
        }
      }
    }
    const double err_minmax = test::relative_frobenius_error(glove.values, minmax);
    MESSAGE(spec << ": relative error, MSE-optimal " << err << " vs min/max " << err_minmax);
    // At least 10% lower MSE; 5% for int6, whose 64 levels leave less to clip.
    CHECK(err * err < (bits == 6 ? 0.95 : 0.9) * err_minmax * err_minmax);
  }
}

TEST_CASE("codecs: the int2 to int6 searches err no more than the searches they replaced") {
  // Relative Frobenius errors of earlier searches, which a faster search
  // must not give back (docs/BENCHMARKS.md, "Scalar codecs"): first the
  // exhaustive clip grid (eight clip steps an end, in double), then the
  // patient walk (steps of 5%, patience 3, at every width) that the finer,
  // shorter walk of int3 to int5 replaced.
  const std::vector<std::tuple<const char*, const char*, double>> before = {
      {"glove.6B.50d.10k.npy", "int4", 0.091946},
      {"glove.6B.50d.10k.npy", "int2", 0.365524},
      {"glove.6B.50d.10k.npy", "int4:group=32", 0.077167},
      {"glove.6B.50d.10k.npy", "int2:group=32", 0.327120},
      {"glove.6B.50d.10k.npy", "int4:group=16", 0.061414},
      {"glove.6B.50d.10k.npy", "int2:group=8", 0.203482},
      {"bigann10k_base.npy", "int4", 0.046225},
      {"bigann10k_base.npy", "int2", 0.182965},
      {"bigann10k_base.npy", "int4:group=32", 0.043227},
      {"bigann10k_base.npy", "int2:group=32", 0.170900},
      {"bigann10k_base.npy", "int4:group=16", 0.037355},
      {"bigann10k_base.npy", "int2:group=8", 0.118254},
      // The patient walk.
      {"glove.6B.50d.10k.npy", "int4", 0.091591},
      {"glove.6B.50d.10k.npy", "int4:group=32", 0.076889},
      {"glove.6B.50d.10k.npy", "int4:group=16", 0.061252},
      {"glove.6B.50d.10k.npy", "int3", 0.186237},
      {"glove.6B.50d.10k.npy", "int3:group=32", 0.158384},
      {"glove.6B.50d.10k.npy", "int5", 0.045825},
      {"glove.6B.50d.10k.npy", "int5:group=32", 0.038272},
      {"glove.6B.50d.10k.npy", "int6", 0.022623},
      {"glove.6B.50d.10k.npy", "int4:scale=fp16", 0.091585},
      {"glove.6B.50d.10k.npy", "int5:scale=fp16", 0.045834},
      {"glove.6B.50d.10k.npy", "int4:group=32,scale=fp16", 0.076881},
      {"bigann10k_base.npy", "int4", 0.046115},
      {"bigann10k_base.npy", "int4:group=32", 0.043099},
      {"bigann10k_base.npy", "int4:group=16", 0.037255},
      {"bigann10k_base.npy", "int3", 0.091401},
      {"bigann10k_base.npy", "int3:group=32", 0.085165},
      {"bigann10k_base.npy", "int5", 0.023106},
      {"bigann10k_base.npy", "int5:group=32", 0.021620},
      {"bigann10k_base.npy", "int6:group=16", 0.009246},
      {"bigann10k_base.npy", "int4:scale=fp16", 0.046118},
      {"bigann10k_base.npy", "int5:scale=fp16", 0.023107},
      {"bigann10k_base.npy", "int4:group=32,scale=fp16", 0.043102}};
  for (const auto& [file, spec, err_before] : before) {
    CAPTURE(file);
    CAPTURE(spec);
    const Matrix m = test::load_shared(file);
    auto codec = make_codec(spec, m.dim);
    const double err =
        test::relative_frobenius_error(m.values, test::decode_all(*codec, test::encode_all(*codec, m), m.rows));
    MESSAGE(file << " " << spec << ": relative error " << err << " (before " << err_before << ")");
    CHECK(err <= err_before + 5e-7);
  }
}

// ---- non-finite input -------------------------------------------------------------------------------

TEST_CASE("codecs: NaN/Inf input is refused with its row and column unless allowed") {
  Matrix m;
  m.rows = 6;
  m.dim = 9;
  m.values.assign(m.rows * m.dim, 0.5f);
  m.values[3 * 9 + 7] = NAN;
  m.values[5 * 9 + 1] = INFINITY;
  EncodeOptions opt;
  opt.input = "emb.npy";
  opt.first_row = 1000;
  for (Impl impl : {Impl::reference, Impl::fast}) {
    opt.impl = impl;
    for (const char* spec : {"fp16", "int8", "fp8:e4m3", "bin", "int4:group=3"}) {
      CAPTURE(spec);
      const std::string msg = error_of([&] { test::encode_all(*make_codec(spec, 9), m, opt); });
      CAPTURE(msg);
      CHECK(msg.find("emb.npy: row 1003, column 7") != std::string::npos);
      CHECK(msg.find("nan") != std::string::npos);
    }
  }
  opt.allow_nonfinite = true;
  for (const char* spec : {"fp16", "bf16", "fp32"}) {
    CAPTURE(spec);
    auto c = make_codec(spec, 9);
    const auto back = test::decode_all(*c, test::encode_all(*c, m, opt), m.rows);
    CHECK(std::isnan(back[3 * 9 + 7]));
    CHECK(back[5 * 9 + 1] == INFINITY);
    CHECK(back[0] == 0.5f);
  }
  const std::string msg = error_of([&] { test::encode_all(*make_codec("int8", 9), m, opt); });
  CHECK(msg.find("cannot represent NaN/Inf") != std::string::npos);

  Matrix big = m;
  big.values.assign(big.rows * big.dim, 1.0f);
  big.values[2 * 9 + 4] = 1e6f;
  const std::string overflow = error_of([&] { test::encode_all(*make_codec("fp16", 9), big); });
  CHECK(overflow.find("row 2, column 4") != std::string::npos);
  CHECK(overflow.find("overflows fp16") != std::string::npos);
  CHECK_NOTHROW(test::encode_all(*make_codec("bf16", 9), big));
  // fp16 group parameters: a value fp16 cannot reach is refused on both paths, naming it and the way out.
  for (const Impl impl : {Impl::fast, Impl::reference}) {
    EncodeOptions which;
    which.impl = impl;
    const std::string half = error_of([&] { test::encode_all(*make_codec("int4:scale=fp16", 9), big, which); });
    CHECK(half.find("row 2, column 4: value 1000000 is beyond the fp16 range") != std::string::npos);
    CHECK(half.find("use scale=fp32") != std::string::npos);
  }
  CHECK_NOTHROW(test::encode_all(*make_codec("int4", 9), big));
}

TEST_CASE("codecs: scale=fp16 stores each group's pair in 4 bytes, chosen among the pairs fp16 holds") {
  const Matrix glove = test::load_shared("glove.6B.50d.10k.npy");
  for (const auto& [half, full] : {std::pair<const char*, const char*>{"int4:group=32,scale=fp16", "int4:group=32"},
                                   {"int5:scale=fp16", "int5"},
                                   {"int8:group=10,scale=fp16", "int8:group=10"},
                                   {"int2:group=8,scale=fp16", "int2:group=8"}}) {
    CAPTURE(half);
    const auto h = make_codec(half, glove.dim), f = make_codec(full, glove.dim);
    const auto L = scalar_layout(*h);
    REQUIRE(L);
    CHECK(h->code_size() + 4 * L->groups == f->code_size());
    const auto codes = test::encode_all(*h, glove);
    const auto back = test::decode_all(*h, codes, glove.rows);
    // Every stored parameter is an fp16 value, and decodes as q * scale + offset with them.
    for (size_t r = 0; r < glove.rows; r += 97) {
      for (uint32_t g = 0; g < L->groups; ++g) {
        const math::AffineParams p = math::load_group_params(*L, codes.data() + r * L->code_size, g);
        CHECK(half_bits_to_float(float_to_half_bits(p.scale)) == p.scale);
        CHECK(half_bits_to_float(float_to_half_bits(p.offset)) == p.offset);
      }
    }
    const double err_half = test::relative_frobenius_error(glove.values, back);
    const double err_full =
        test::relative_frobenius_error(glove.values, test::decode_all(*f, test::encode_all(*f, glove), glove.rows));
    MESSAGE(std::string(half) << ": relative error " << err_half << " (fp32 pairs: " << err_full << ")");
    CHECK(err_half <= err_full * 1.02);  // the rounding of the pair costs little
  }
}

// ---- PCA ------------------------------------------------------------------------------------------------

TEST_CASE("pca: K = dim reconstructs, fits are deterministic, signs are fixed") {
  const Matrix glove = test::load_shared("glove.6B.50d.10k.npy");
  auto full = make_codec("pca:50,fp32", 50);
  CHECK_FALSE(full->is_trained());
  CHECK(error_of([&] { test::encode_all(*full, glove); }).find("not trained") != std::string::npos);
  full->train(glove.values.data(), glove.rows, 3);
  CHECK(full->is_trained());
  const auto back = test::decode_all(*full, test::encode_all(*full, glove), glove.rows);
  CHECK(test::relative_frobenius_error(glove.values, back) < 1e-5);

  const PcaModel a = fit_pca(glove.values.data(), glove.rows, 50, 10, 9, 4000);
  const PcaModel b = fit_pca(glove.values.data(), glove.rows, 50, 10, 9, 4000);
  const PcaModel c = fit_pca(glove.values.data(), glove.rows, 50, 10, 10, 4000);
  CHECK(a.components == b.components);
  CHECK(a.mean == b.mean);
  CHECK(a.mean != c.mean);  // another seed samples other rows
  for (size_t i = 0; i < a.k; ++i) {
    const float* v = a.components.data() + i * 50;
    const float* big = std::max_element(v, v + 50, [](float p, float q) { return std::fabs(p) < std::fabs(q); });
    CHECK(*big > 0.0f);
    double norm = 0;
    for (size_t j = 0; j < 50; ++j) norm += double(v[j]) * v[j];
    CHECK(norm == doctest::Approx(1.0).epsilon(1e-5));
  }
  REQUIRE(a.variance.size() == 50);
  CHECK(std::is_sorted(a.variance.rbegin(), a.variance.rend()));
  const size_t d90 = pca_dims_for_variance(a.variance, 0.9);
  CHECK(d90 > 1);
  CHECK(d90 < 50);
  CHECK(pca_dims_for_variance(a.variance, 1.0) <= 50);
}

TEST_CASE("pca: state round trip, hostile state, fast == reference") {
  const Matrix glove = test::load_shared("glove.6B.50d.10k.npy", 3000);
  auto trained = make_codec("pca:12,int8", 50);
  trained->train(glove.values.data(), glove.rows, 5);
  const std::vector<NamedBlob> st = trained->state();
  REQUIRE(st.size() == 2);
  CHECK(st[0].name == "pca.mean");
  CHECK(st[1].shape == std::vector<uint64_t>{12, 50});

  auto loaded = make_codec(trained->spec(), 50);
  loaded->load_state(st);
  const auto codes = test::encode_all(*trained, glove);
  CHECK(test::encode_all(*loaded, glove) == codes);

  EncodeOptions ref;
  ref.impl = Impl::reference;
  CHECK(test::encode_all(*trained, glove, ref) == codes);
  DecodeOptions ref_dec;
  ref_dec.impl = Impl::reference;
  CHECK(test::same_bits(test::decode_all(*trained, codes, glove.rows, ref_dec),
                        test::decode_all(*trained, codes, glove.rows)));

  auto fresh = make_codec("pca:12,int8", 50);
  CHECK(error_of([&] { fresh->load_state({st[0]}); }).find("lacks 'pca.components'") != std::string::npos);
  auto bad_shape = st;
  bad_shape[1].shape = {50, 12};
  CHECK(error_of([&] { fresh->load_state(bad_shape); }).find("has shape (50, 12)") != std::string::npos);
  auto short_values = st;
  short_values[0].values.pop_back();
  CHECK(error_of([&] { fresh->load_state(short_values); }).find("holds 49 values") != std::string::npos);
  auto nan_values = st;
  nan_values[1].values[7] = NAN;
  CHECK(error_of([&] { fresh->load_state(nan_values); }).find("value 7 is not finite") != std::string::npos);
  auto extra = st;
  extra.push_back({"pq.codebook", {1}, {0.0f}});
  CHECK(error_of([&] { fresh->load_state(extra); }).find("pq.codebook") != std::string::npos);
  CHECK_FALSE(fresh->is_trained());
  CHECK(error_of([&] { make_codec("int8", 4)->load_state(st); }).find("no trained state") != std::string::npos);
}

// ---- rot (random rotation) ------------------------------------------------------------------------------

TEST_CASE("rot: an orthonormal seeded basis, the same on any thread count, lower error for int4 on GloVe") {
  const Matrix glove = test::load_shared("glove.6B.50d.10k.npy");
  auto codec = make_codec("rot", 50);
  CHECK(codec->spec() == "rot,fp32");
  CHECK(make_codec("rot,int4:scale=fp16", 50)->spec() == "rot,int4:scale=fp16");
  CHECK(make_codec("rot,int4", 50)->code_size() == make_codec("int4", 50)->code_size());
  check_usage_error("rot:3,int4", 50, "unexpected parameter '3'");
  check_usage_error("rot:seed=1", 50, "unknown parameter 'seed'");
  check_usage_error("int4,rot", 50, "must be the first stage");
  check_usage_error("rot,int4", 8193, "dimension 8193 is above 8192");
  CHECK(make_codec("rot,int4", 8192)->code_size() == make_codec("int4", 8192)->code_size());

  codec->train(glove.values.data(), glove.rows, 11);
  const std::vector<NamedBlob> st = codec->state();
  REQUIRE(st.size() == 2);
  CHECK(st[0].name == "rot.mean");
  CHECK(st[1].name == "rot.matrix");
  CHECK(st[1].shape == std::vector<uint64_t>{50, 50});
  const std::vector<float>& q = st[1].values;
  double worst = 0;
  for (size_t a = 0; a < 50; ++a)
    for (size_t b = 0; b < 50; ++b) {
      double dot = 0;
      for (size_t j = 0; j < 50; ++j) dot += double(q[a * 50 + j]) * q[b * 50 + j];
      worst = std::max(worst, std::fabs(dot - (a == b ? 1.0 : 0.0)));
    }
  CHECK(worst < 1e-6);
  double mean0 = 0;
  for (size_t r = 0; r < glove.rows; ++r) mean0 += glove.row(r)[0];
  CHECK(st[0].values[0] == doctest::Approx(mean0 / double(glove.rows)).epsilon(1e-6));
  // fp32 inside: the rotation loses nothing a float keeps.
  CHECK(test::relative_frobenius_error(glove.values,
                                       test::decode_all(*codec, test::encode_all(*codec, glove), glove.rows)) < 1e-6);

  // The seed picks the basis; the thread count does not.
  auto again = make_codec("rot", 50);
  const int saved = omp_get_max_threads();
  omp_set_num_threads(1);
  again->train(glove.values.data(), glove.rows, 11);
  omp_set_num_threads(saved);
  CHECK(test::same_bits(again->state()[1].values, q));
  auto other = make_codec("rot", 50);
  other->train(glove.values.data(), glove.rows, 12);
  CHECK_FALSE(test::same_bits(other->state()[1].values, q));

  // GloVe's few outlying dimensions set each row's int4 range; rotated, they do not (docs/BENCHMARKS.md).
  auto plain = make_codec("int4", 50), rotated = make_codec("rot,int4", 50);
  rotated->train(glove.values.data(), glove.rows, 11);
  const double e_plain = test::relative_frobenius_error(
      glove.values, test::decode_all(*plain, test::encode_all(*plain, glove), glove.rows));
  const std::vector<uint8_t> codes = test::encode_all(*rotated, glove);
  const double e_rot = test::relative_frobenius_error(glove.values, test::decode_all(*rotated, codes, glove.rows));
  MESSAGE("int4 " << e_plain << ", rot,int4 " << e_rot);
  CHECK(e_rot * e_rot < 0.7 * e_plain * e_plain);

  // Loaded state encodes and decodes the same; reference == fast.
  auto loaded = make_codec("rot,int4", 50);
  loaded->load_state(rotated->state());
  CHECK(test::encode_all(*loaded, glove) == codes);
  EncodeOptions ref;
  ref.impl = Impl::reference;
  CHECK(test::encode_all(*rotated, glove, ref) == codes);
  DecodeOptions ref_dec;
  ref_dec.impl = Impl::reference;
  CHECK(test::same_bits(test::decode_all(*rotated, codes, glove.rows, ref_dec),
                        test::decode_all(*rotated, codes, glove.rows)));
  // A wider table (600 columns, 37 rows): the fast path still gives the reference's bits.
  Matrix wide{37, 600, {}};
  Rng rng(3);
  for (size_t i = 0; i < wide.rows * wide.dim; ++i) wide.values.push_back(static_cast<float>(rng.uniform() - 0.5));
  auto big = make_codec("rot", 600);
  big->train(wide.values.data(), wide.rows, 1);
  const std::vector<uint8_t> wide_codes = test::encode_all(*big, wide);
  CHECK(test::encode_all(*big, wide, ref) == wide_codes);
  CHECK(test::same_bits(test::decode_all(*big, wide_codes, wide.rows, ref_dec),
                        test::decode_all(*big, wide_codes, wide.rows)));
  auto fresh = make_codec("rot,int4", 50);
  CHECK(error_of([&] { fresh->load_state({st[0]}); }).find("lacks 'rot.matrix'") != std::string::npos);
  auto pca_named = st;
  pca_named[1].name = "pca.components";
  CHECK(error_of([&] { fresh->load_state(pca_named); }).find("lacks 'rot.matrix'") != std::string::npos);
}

// ---- dims (structured pruning) ------------------------------------------------------------------------

TEST_CASE("dims: keeps the columns of largest variance exactly, fills the rest with their means") {
  // Column j varies with amplitude (j % 7) + 1 around a mean of j; columns 6, 13, 20, 27 vary most.
  Matrix m{200, 28, {}};
  m.values.resize(m.rows * m.dim);
  for (size_t i = 0; i < m.rows; ++i)
    for (size_t j = 0; j < m.dim; ++j)
      m.values[i * m.dim + j] = static_cast<float>(j) + static_cast<float>((j % 7) + 1) * (i % 2 ? 1.0f : -1.0f);
  auto codec = make_codec("dims:4", 28);
  CHECK(codec->spec() == "dims:4,fp32");
  CHECK(codec->needs_training());
  CHECK(error_of([&] { test::encode_all(*codec, m); }).find("not trained") != std::string::npos);
  codec->train(m.values.data(), m.rows, 1);
  const std::vector<NamedBlob> st = codec->state();
  REQUIRE(st.size() == 2);
  CHECK(st[0].values == std::vector<float>{6, 13, 20, 27});
  const auto back = test::decode_all(*codec, test::encode_all(*codec, m), m.rows);
  for (size_t i = 0; i < m.rows; ++i)
    for (size_t j = 0; j < m.dim; ++j) {
      CAPTURE(i);
      CAPTURE(j);
      CHECK(back[i * m.dim + j] == (j % 7 == 6 ? m.values[i * m.dim + j] : static_cast<float>(j)));
    }

  // Ties in variance keep the lower column; the fit does not depend on the seed.
  auto tied = make_codec("dims:2,int8", 28);
  tied->train(m.values.data(), m.rows, 2);
  CHECK(tied->state()[0].values == std::vector<float>{6, 13});
  CHECK(tied->state()[1].values == st[1].values);
}

TEST_CASE("dims: state round trip and hostile state") {
  const Matrix glove = test::load_shared("glove.6B.50d.10k.npy", 2000);
  auto trained = make_codec("dims:20,int4", 50);
  trained->train(glove.values.data(), glove.rows, 5);
  const std::vector<NamedBlob> st = trained->state();
  const auto codes = test::encode_all(*trained, glove);
  auto loaded = make_decoder(trained->spec(), 50);  // the reader's codec decodes it too
  loaded->load_state(st);
  CHECK(test::same_bits(test::decode_all(*loaded, codes, glove.rows), test::decode_all(*trained, codes, glove.rows)));

  const auto refused = [&](std::vector<NamedBlob> blobs, const char* what) {
    CAPTURE(what);
    CHECK(error_of([&] { make_decoder("dims:20,int4", 50)->load_state(blobs); }).find(what) != std::string::npos);
  };
  auto repeat = st;
  repeat[0].values[3] = repeat[0].values[2];
  refused(repeat, "rise strictly");
  auto outside = st;
  outside[0].values[19] = 50.0f;
  refused(outside, "rise strictly");
  auto fraction = st;
  fraction[0].values[0] = 0.5f;
  refused(fraction, "rise strictly");
  auto negative = st;
  negative[0].values[0] = -1.0f;
  refused(negative, "rise strictly");
  refused({st[0]}, "lacks 'dims.fill'");
  auto shape = st;
  shape[1].shape = {49};
  refused(shape, "has shape (49)");
}

// ---- tc (transform coding) ----------------------------------------------------------------------------

TEST_CASE("tc: spec, layout, fewer bytes and less error than the row-wise integer codecs on GloVe") {
  CHECK(make_codec("tc:bits=6", 50)->spec() == "tc:bits=6");
  CHECK(make_codec("tc:bits=7.50", 50)->spec() == "tc:bits=7.5");
  CHECK(make_codec("tc:bits=6", 50)->code_size() == 2 + 38);    // 300 bits
  CHECK(make_codec("tc:bits=4.5", 50)->code_size() == 2 + 29);  // 225 bits
  CHECK(make_codec("tc:bits=12", 3)->code_size() == 2 + 5);
  check_usage_error("tc", 50, "needs bits=B");
  check_usage_error("tc:bits=0.5", 50, "from 1 to 12");
  check_usage_error("tc:bits=13", 50, "from 1 to 12");
  check_usage_error("tc:bits=6x", 50, "from 1 to 12");
  check_usage_error("tc:bits=6,group=32", 50, "unknown parameter 'group'");
  check_usage_error("tc:bits=6", 2049, "dimension 2049 is above 2048");
  CHECK(make_codec("pca:20,tc:bits=6", 50)->spec() == "pca:20,tc:bits=6");
  const Matrix glove = test::load_shared("glove.6B.50d.10k.npy");
  auto codec = make_codec("tc:bits=4", 50);
  CHECK(error_of([&] { test::encode_all(*codec, glove); }).find("not trained") != std::string::npos);
  codec->train(glove.values.data(), glove.rows, 3);
  const std::vector<uint8_t> codes = test::encode_all(*codec, glove);
  const double e_tc = test::relative_frobenius_error(glove.values, test::decode_all(*codec, codes, glove.rows));
  // 27 bytes a row against int4:scale=fp16's 29 (docs/BENCHMARKS.md, "Transform coding").
  auto int4 = make_codec("int4:scale=fp16", 50);
  const double e_int4 =
      test::relative_frobenius_error(glove.values, test::decode_all(*int4, test::encode_all(*int4, glove), glove.rows));
  MESSAGE("tc:bits=4 " << e_tc << ", int4:scale=fp16 " << e_int4);
  CHECK(codec->code_size() < int4->code_size());
  CHECK(e_tc < 0.9 * e_int4);
  // The bits go where the variance is: the first (largest) coordinate gets the most, all of them used.
  const std::vector<NamedBlob> st = codec->state();
  REQUIRE(st.size() == 6);
  CHECK(st[3].name == "tc.bits");
  const std::vector<float>& bits = st[3].values;
  CHECK(std::accumulate(bits.begin(), bits.end(), 0.0) == 200.0);
  CHECK(*std::max_element(bits.begin(), bits.end()) == bits[0]);
  CHECK(bits[0] > bits[49]);
  // The row's length is its first two bytes, an fp16 in the length unit: the power of two that puts the
  // sample's longest row in [2^12, 2^13).
  double norm0 = 0, longest = 0;
  for (size_t r = 0; r < glove.rows; ++r) {
    double nn = 0;
    for (size_t j = 0; j < 50; ++j) nn += double(glove.row(r)[j]) * glove.row(r)[j];
    if (r == 0) norm0 = std::sqrt(nn);
    longest = std::max(longest, std::sqrt(nn));
  }
  CHECK(st[0].name == "tc.unit");
  const float unit = st[0].values[0];
  CHECK(longest / unit >= 4096.0);
  CHECK(longest / unit < 8192.0);
  CHECK(half_bits_to_float(static_cast<uint16_t>(codes[0] | (codes[1] << 8))) * unit ==
        doctest::Approx(norm0).epsilon(1e-3));
}

TEST_CASE("tc: the same bytes on any thread count, state round trip through the decoder, hostile state") {
  const Matrix glove = test::load_shared("glove.6B.50d.10k.npy", 3000);
  auto codec = make_codec("tc:bits=5.5", 50);
  codec->train(glove.values.data(), glove.rows, 9);
  const std::vector<uint8_t> codes = test::encode_all(*codec, glove);
  const std::vector<float> decoded = test::decode_all(*codec, codes, glove.rows);
  const int saved = omp_get_max_threads();
  omp_set_num_threads(1);
  auto single = make_codec("tc:bits=5.5", 50);
  single->train(glove.values.data(), glove.rows, 9);
  const std::vector<uint8_t> single_codes = test::encode_all(*single, glove);
  const std::vector<float> single_decoded = test::decode_all(*single, codes, glove.rows);
  omp_set_num_threads(saved);
  CHECK(single_codes == codes);
  CHECK(test::same_bits(single_decoded, decoded));
  // The fast decode reads each code from the bytes it spans; the reference, bit by bit.
  DecodeOptions ref_dec;
  ref_dec.impl = Impl::reference;
  CHECK(test::same_bits(test::decode_all(*codec, codes, glove.rows, ref_dec), decoded));
  for (size_t k = 0; k < 6; ++k) CHECK(test::same_bits(single->state()[k].values, codec->state()[k].values));

  const std::vector<NamedBlob> st = codec->state();
  auto loaded = make_decoder(codec->spec(), 50);  // the reader's codec decodes it
  loaded->load_state(st);
  CHECK(test::same_bits(test::decode_all(*loaded, codes, glove.rows), decoded));
  CHECK(error_of([&] { test::encode_all(*loaded, glove); }).find("decode") != std::string::npos);

  const auto refused = [&](std::vector<NamedBlob> blobs, const char* what) {
    CAPTURE(what);
    CHECK(error_of([&] { make_decoder("tc:bits=5.5", 50)->load_state(blobs); }).find(what) != std::string::npos);
  };
  auto fraction = st;
  fraction[3].values[0] += 0.5f;
  refused(fraction, "whole numbers from 0 to 12");
  auto too_wide = st;
  too_wide[3].values[0] = 13.0f;
  refused(too_wide, "whole numbers from 0 to 12");
  auto moved = st;  // one bit moved between coordinates keeps the sum: accepted
  moved[3].values[0] -= 1.0f;
  moved[3].values[1] += 1.0f;
  CHECK_NOTHROW(make_decoder("tc:bits=5.5", 50)->load_state(moved));
  auto more = st;
  more[3].values[49] += 1.0f;
  refused(more, "gives 276 bits a row where the spec's code holds 275");
  auto negative = st;
  negative[5].values[2] = -1.0f;
  refused(negative, "spreads are not negative");
  auto shape = st;
  shape[2].shape = {50, 49};
  refused(shape, "tc.basis");
  refused({st[0], st[1], st[2], st[3], st[4]}, "tc.spread");
  auto nan = st;
  nan[1].values[0] = std::nanf("");
  refused(nan, "tc.mean");
  for (const float bad : {3.0f, 0.0f, -0.5f, 1e-40f}) {
    auto unit = st;
    unit[0].values[0] = bad;
    refused(unit, "a power of two");
  }
}

TEST_CASE("tc: zero rows, lengths fp16 cannot hold, and tiny tables") {
  Matrix m{4, 3, {1, 2, 3, 0, 0, 0, -3, 1, 2, 2, 2, -1}};
  auto codec = make_codec("tc:bits=8", 3);
  codec->train(m.values.data(), m.rows, 1);
  const std::vector<float> back = test::decode_all(*codec, test::encode_all(*codec, m), m.rows);
  for (size_t j = 0; j < 3; ++j) CHECK(back[3 + j] == 0.0f);  // the zero row decodes to zeros
  for (size_t i : {0, 2, 3})
    for (size_t j = 0; j < 3; ++j) CHECK(back[i * 3 + j] == doctest::Approx(m.values[i * 3 + j]).epsilon(0.02));
  Matrix zeros{2, 3, {0, 0, 0, 0, 0, 0}};
  CHECK(error_of([&] { make_codec("tc:bits=8", 3)->train(zeros.values.data(), 2, 1); }).find("a nonzero row") !=
        std::string::npos);
  // Lengths are stored in a unit the sample's longest row sets: rows of any scale keep fp16's precision...
  Matrix big = m;
  for (float& v : big.values) v *= 1e6f;
  auto scaled = make_codec("tc:bits=8", 3);
  scaled->train(big.values.data(), big.rows, 1);
  const std::vector<float> big_back = test::decode_all(*scaled, test::encode_all(*scaled, big), big.rows);
  for (size_t i = 0; i < big.values.size(); ++i) CHECK(big_back[i] == doctest::Approx(big.values[i]).epsilon(0.02));
  // ...and a row longer than 65504 units is refused, naming it.
  Matrix huge{2, 3, {1, 2, 3, 60000, 30000, 1}};
  const std::string msg = error_of([&] { test::encode_all(*codec, huge); });
  CHECK(msg.find("row 1 has length") != std::string::npos);
  CHECK(msg.find("65504 units") != std::string::npos);
}

// ---- devices ------------------------------------------------------------------------------------------

TEST_CASE("device: selection parses and refuses cuda without a GPU") {
  CHECK(select_device("cpu") == Device::cpu);
  CHECK(code_of([] { select_device("gpu"); }) == ExitCode::usage);
  if (cuda_available()) {
    CHECK(select_device("auto") == Device::cuda);
    CHECK(select_device("cuda") == Device::cuda);
  } else {
    CHECK(select_device("auto") == Device::cpu);
    CHECK(code_of([] { select_device("cuda"); }) == ExitCode::runtime);
    const Matrix m = test::first_columns(test::load_shared("glove.6B.50d.10k.npy", 4), 8);
    EncodeOptions opt;
    opt.device = Device::cuda;
    CHECK(code_of([&] { test::encode_all(*make_codec("int8", 8), m, opt); }) == ExitCode::runtime);
  }
}
