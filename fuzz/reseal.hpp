// SPDX-License-Identifier: Apache-2.0
// Shared by the container fuzz targets: mutated inputs almost never get past
// the header and manifest checksums, so each input is also tried "resealed",
// with those checksums recomputed, to reach the checks behind them.
#pragma once

#include <edo/io/container.hpp>

#include <cstdint>
#include <vector>

namespace edo::fuzz {

// Recomputes the manifest and header checksums when the manifest lies
// inside the input; returns false when there is nothing to reseal.
inline bool reseal(std::vector<uint8_t>& bytes) {
  using edo::io::ContainerHeader;
  if (bytes.size() < edo::io::kContainerHeaderSize) return false;
  ContainerHeader h = ContainerHeader::decode(bytes.data());
  if (h.manifest_offset <= bytes.size() && h.manifest_length <= bytes.size() - h.manifest_offset)
    h.manifest_xxh64 = edo::io::checksum64(bytes.data() + h.manifest_offset, h.manifest_length);
  h.header_xxh64 = h.compute_checksum();
  h.encode(bytes.data());
  return true;
}

}  // namespace edo::fuzz
