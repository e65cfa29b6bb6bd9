// SPDX-License-Identifier: Apache-2.0
// OCP 8-bit floating point (E4M3FN and E5M2) conversions, compiled by g++ and
// nvcc alike: the fp8 codecs (edo/codec_math.hpp) and the table formats that
// store fp8 arrays (npy, safetensors) share them.
#pragma once

#include <edo/float16.hpp>

#include <cstdint>

namespace edo::math {

enum class Fp8Format : uint8_t { e4m3, e5m2 };

struct Fp8Layout {
  int mant_bits;
  int bias;
  uint8_t max_code;  // largest finite magnitude (sign bit clear)
  uint8_t nan_code;  // canonical NaN (sign bit clear)
  float max_value;
};

EDO_HD inline Fp8Layout fp8_layout(Fp8Format f) {
  // e4m3 (E4M3FN): no infinities, S.1111.111 is NaN, max 1.75 * 2^8 = 448.
  // e5m2: IEEE-like, S.11111.00 is Inf, max 1.75 * 2^15 = 57344.
  return f == Fp8Format::e4m3 ? Fp8Layout{3, 7, 0x7e, 0x7f, 448.0f} : Fp8Layout{2, 15, 0x7b, 0x7e, 57344.0f};
}

// Float to fp8, round to nearest even, saturating: finite values (and Inf)
// beyond the largest finite magnitude become it, so finite input never gives
// NaN or Inf. NaN stays NaN.
EDO_HD inline uint8_t float_to_fp8(float f, Fp8Format fmt) {
  const Fp8Layout L = fp8_layout(fmt);
  const uint32_t x = float_bits(f);
  const uint8_t sign = static_cast<uint8_t>((x >> 24) & 0x80u);
  const uint32_t ax = x & 0x7fffffffu;
  if (ax > 0x7f800000u) return static_cast<uint8_t>(sign | L.nan_code);
  if (ax >= float_bits(L.max_value)) return static_cast<uint8_t>(sign | L.max_code);
  const int min_exp = 1 - L.bias;  // exponent of the smallest normal
  const uint32_t min_normal_bits = static_cast<uint32_t>(min_exp + 127) << 23;
  if (ax < min_normal_bits) {
    // Subnormal or zero: adding 2^(min_exp + 23 - mant_bits) puts the fp8
    // subnormal step at the float's last mantissa bit; the FPU rounds (RNE).
    // A result of 2^mant_bits is the smallest normal, which is also the right code.
    const float magic = bits_float(static_cast<uint32_t>(min_exp + 23 - L.mant_bits + 127) << 23);
    const float shifted = bits_float(ax) + magic;
    return static_cast<uint8_t>(sign | (float_bits(shifted) - float_bits(magic)));
  }
  const int shift = 23 - L.mant_bits;
  const uint32_t odd = (ax >> shift) & 1u;
  const uint32_t rounded = ax + ((1u << (shift - 1)) - 1u) + odd;  // a carry moves into the exponent, as it should
  const uint32_t rebias = static_cast<uint32_t>(127 - L.bias) << L.mant_bits;
  return static_cast<uint8_t>(sign | ((rounded >> shift) - rebias));
}

EDO_HD inline float fp8_to_float(uint8_t c, Fp8Format fmt) {
  const Fp8Layout L = fp8_layout(fmt);
  const uint32_t sign = static_cast<uint32_t>(c & 0x80u) << 24;
  const uint32_t mag = c & 0x7fu;
  const uint32_t exp_mask = (0x7fu >> L.mant_bits);
  const uint32_t exp = mag >> L.mant_bits;
  const uint32_t mant = mag & ((1u << L.mant_bits) - 1u);
  if (fmt == Fp8Format::e4m3 && mag == 0x7fu) return bits_float(sign | 0x7fc00000u);
  if (fmt == Fp8Format::e5m2 && exp == exp_mask) return bits_float(sign | 0x7f800000u | (mant ? 0x400000u : 0u));
  if (exp == 0) {
    // Subnormal: mant * 2^(1 - bias - mant_bits), exact in fp32.
    const float step = bits_float(static_cast<uint32_t>(1 - L.bias - L.mant_bits + 127) << 23);
    const float v = static_cast<float>(mant) * step;
    return sign ? -v : v;
  }
  return bits_float(sign | ((exp + static_cast<uint32_t>(127 - L.bias)) << 23) | (mant << (23 - L.mant_bits)));
}

}  // namespace edo::math
