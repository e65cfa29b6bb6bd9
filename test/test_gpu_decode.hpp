// SPDX-License-Identifier: Apache-2.0
// What the GPU decode tests share: a reader decoding on a device, a range of
// its rows decoded, and bit-for-bit equality of two decodes.
#pragma once

#include <edo/device.hpp>
#include <edo/reader.hpp>

#include <cstring>
#include <string>
#include <vector>

namespace edo::test {

inline Reader open_on(const std::string& path, Device d, io::Verify verify = io::Verify::small) {
  ReaderOptions opt;
  opt.decode_device = d;
  opt.verify = verify;
  return Reader::open(path, opt);
}

inline std::vector<float> decode(const Reader& r, uint64_t begin, uint64_t count) {
  std::vector<float> out(count * r.dim(), -1.0f);
  r.decode_rows(begin, count, out.data());
  return out;
}

inline bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

}  // namespace edo::test
