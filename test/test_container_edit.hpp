// SPDX-License-Identifier: Apache-2.0
// Edits of a container's bytes that keep every checksum valid, so a test
// reaches the check it is aimed at (hostile-file tests).
#pragma once

#include <edo/io/container.hpp>

#include <nlohmann/json.hpp>

#include <functional>
#include <string>

namespace edo::test {

inline io::ContainerHeader header_of(const std::string& bytes) {
  return io::ContainerHeader::decode(reinterpret_cast<const uint8_t*>(bytes.data()));
}

// Rewrites the header fields and re-seals its checksum, so a test reaches
// the check it is aimed at rather than the header checksum.
inline std::string with_header(std::string bytes, const std::function<void(io::ContainerHeader&)>& edit) {
  io::ContainerHeader h = header_of(bytes);
  edit(h);
  h.header_xxh64 = h.compute_checksum();
  h.encode(reinterpret_cast<uint8_t*>(bytes.data()));
  return bytes;
}

// Replaces the manifest text (kept at its offset) and fixes every field that
// depends on it: length, checksum, file size, trailing pad, header checksum.
inline std::string with_manifest_text(const std::string& bytes, const std::string& text) {
  const io::ContainerHeader h = header_of(bytes);
  std::string out = bytes.substr(0, h.manifest_offset) + text;
  out.resize((out.size() + 63) / 64 * 64, '\0');
  return with_header(out, [&](io::ContainerHeader& hh) {
    hh.manifest_length = text.size();
    hh.manifest_xxh64 = io::checksum64(text.data(), text.size());
    hh.file_size = out.size();
  });
}

inline std::string with_manifest(const std::string& bytes, const std::function<void(nlohmann::json&)>& edit) {
  const io::ContainerHeader h = header_of(bytes);
  nlohmann::json m = nlohmann::json::parse(bytes.substr(h.manifest_offset, h.manifest_length));
  edit(m);
  return with_manifest_text(bytes, m.dump());
}

}  // namespace edo::test
