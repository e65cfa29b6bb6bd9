// SPDX-License-Identifier: Apache-2.0
// IEEE binary16 and bfloat16 conversions shared by the CPU and the GPU.
// Round-to-nearest-even, NaN stays NaN (quiet, sign and top payload bits
// kept), overflow goes to infinity: the same results as F16C's vcvtps2ph and
// CUDA's __float2half_rn for every finite and infinite input.
#pragma once

#include <cstdint>
#include <cstring>

#if defined(__CUDACC__)
#define EDO_HD __host__ __device__
#else
#define EDO_HD
#endif

namespace edo {

EDO_HD inline uint32_t float_bits(float f) {
  uint32_t u;
  memcpy(&u, &f, sizeof u);
  return u;
}

EDO_HD inline float bits_float(uint32_t u) {
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}

// Magnitude bits (sign cleared) from which a float rounds to Inf in fp16:
// 65520, halfway between fp16's largest finite value and the next step.
inline constexpr uint32_t kHalfOverflowBits = 0x477ff000u;

EDO_HD inline uint16_t float_to_half_bits(float f) {
  uint32_t x = float_bits(f);
  const uint32_t sign = (x >> 16) & 0x8000u;
  uint32_t ax = x & 0x7fffffffu;
  if (ax >= 0x7f800000u) {  // Inf or NaN
    return static_cast<uint16_t>(sign | 0x7c00u | (ax > 0x7f800000u ? (0x200u | ((ax >> 13) & 0x3ffu)) : 0u));
  }
  if (ax >= kHalfOverflowBits) return static_cast<uint16_t>(sign | 0x7c00u);
  if (ax < 0x38800000u) {
    // Result is subnormal or zero: adding 0.5f lines the half's last mantissa
    // bit up with the float's, so the FPU does the round-to-nearest-even.
    const float shifted = bits_float(ax) + 0.5f;
    return static_cast<uint16_t>(sign | (float_bits(shifted) - 0x3f000000u));
  }
  const uint32_t odd = (ax >> 13) & 1u;
  ax += 0xc8000fffu + odd;  // rebias exponent (127 -> 15) and round half to even
  return static_cast<uint16_t>(sign | (ax >> 13));
}

EDO_HD inline float half_bits_to_float(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exp = (h >> 10) & 0x1fu;
  const uint32_t mant = h & 0x3ffu;
  if (exp == 0x1fu) return bits_float(sign | 0x7f800000u | (mant << 13));
  if (exp == 0) {
    // Subnormal: mant * 2^-24 is exact in fp32.
    const float v = static_cast<float>(mant) * 5.9604644775390625e-08f;
    return sign ? -v : v;
  }
  return bits_float(sign | ((exp + 112u) << 23) | (mant << 13));
}

EDO_HD inline uint16_t float_to_bf16_bits(float f) {
  uint32_t x = float_bits(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((x >> 16) | 0x40u);  // quiet NaN
  x += 0x7fffu + ((x >> 16) & 1u);
  return static_cast<uint16_t>(x >> 16);
}

EDO_HD inline float bf16_bits_to_float(uint16_t b) { return bits_float(static_cast<uint32_t>(b) << 16); }

}  // namespace edo
