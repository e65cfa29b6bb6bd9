// SPDX-License-Identifier: Apache-2.0
// Helpers shared by the codec tests: real data loading and codec round trips.
#pragma once

#include "test_util.hpp"

#include <edo/codec.hpp>
#include <edo/io/table.hpp>

#include <cmath>
#include <cstring>
#include <vector>

namespace edo::test {

struct Matrix {
  size_t rows = 0, dim = 0;
  std::vector<float> values;
  const float* row(size_t r) const { return values.data() + r * dim; }
};

// The first `rows` rows (all when 0) of a shared data file, as fp32.
inline Matrix load_shared(const std::string& name, size_t rows = 0) {
  auto t = io::open_table(shared_data(name));
  Matrix m;
  m.rows = rows && rows < t->rows() ? rows : t->rows();
  m.dim = t->dim();
  m.values.resize(m.rows * m.dim);
  t->read_f32(0, m.rows, m.values.data());
  return m;
}

// The first `dim` columns of m: odd dimensions from real data.
inline Matrix first_columns(const Matrix& m, size_t dim) {
  Matrix out;
  out.rows = m.rows;
  out.dim = dim;
  out.values.resize(m.rows * dim);
  for (size_t r = 0; r < m.rows; ++r) std::memcpy(out.values.data() + r * dim, m.row(r), dim * sizeof(float));
  return out;
}

inline std::vector<uint8_t> encode_all(const Codec& c, const Matrix& m, const EncodeOptions& opt = {}) {
  std::vector<uint8_t> codes(m.rows * c.code_size());
  c.encode(m.values.data(), m.rows, codes.data(), opt);
  return codes;
}

inline std::vector<float> decode_all(const Codec& c, const std::vector<uint8_t>& codes, size_t rows,
                                     const DecodeOptions& opt = {}) {
  std::vector<float> x(rows * c.dim());
  c.decode(codes.data(), rows, x.data(), opt);
  return x;
}

// Bitwise equality (NaN payloads and signed zeros included).
inline bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

inline double relative_frobenius_error(const std::vector<float>& x, const std::vector<float>& y) {
  double num = 0, den = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    const double d = static_cast<double>(x[i]) - static_cast<double>(y[i]);
    num += d * d;
    den += static_cast<double>(x[i]) * static_cast<double>(x[i]);
  }
  return std::sqrt(num / den);
}

// Specs every scalar-codec equivalence test runs, for a table of `dim` columns.
inline std::vector<std::string> scalar_specs() {
  return {"fp32",
          "fp16",
          "bf16",
          "fp8:e4m3",
          "fp8:e5m2",
          "int8",
          "int8:group=16",
          "int6",
          "int6:group=9",
          "int5",
          "int5:group=32",
          "int4",
          "int4:group=32",
          "int4:group=7",
          "int3",
          "int3:group=5",
          "int2",
          "int2:group=10",
          "bin",
          "int8:scale=fp16",
          "int5:group=32,scale=fp16",
          "int4:group=7,scale=fp16",
          "int2:scale=fp16"};
}

}  // namespace edo::test
