// SPDX-License-Identifier: Apache-2.0
// Stored codes in safetensors (edo-unpack --codes; docs/PACK.md, "Stored
// codes in safetensors"): how a one-tier file's code rows split into
// tensors, and the reader that decodes such a file as a table. In the
// reader library, so a server (and the fuzzer) reads them without the rest.
#pragma once

#include <edo/codec_math.hpp>
#include <edo/io/safetensors.hpp>
#include <edo/io/table.hpp>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace edo {

class Codec;

inline constexpr const char* kSafetensorsCodesVersion = "1";  // __metadata__ "edo.codes"

// How a codec's code rows split into tensors. Scalar codecs: the values (or
// packed codes) in ".codes" and each group's fp32 parameters in ".scales"
// (and ".offsets"); any other codec: whole code rows in ".codes".
struct CodeSplit {
  std::optional<math::ScalarLayout> layout;
  uint64_t code_size = 0;
  uint64_t payload = 0;              // bytes of a row in ".codes"
  uint64_t scales = 0;               // scales a row
  uint64_t offsets = 0;              // offsets a row
  uint64_t param_bytes = 4;          // bytes of one scale or offset
  const char* params_dtype = "F32";  // their dtype: F32, or F16 for scale=fp16
  const char* codes_dtype = "U8";
  uint64_t codes_width = 0;  // ".codes" columns
};

CodeSplit code_split(const Codec& codec);
// ".codes" first, then ".scales" and ".offsets" where the split has them.
std::vector<io::SafetensorsTensorSpec> code_tensors(const CodeSplit& s, const std::string& tensor, uint64_t rows);
// One code row (code_size bytes) into its parts and back; null parts are absent.
void split_row(const CodeSplit& s, const uint8_t* code, uint8_t* payload, uint8_t* scales, uint8_t* offsets);
void join_row(const CodeSplit& s, const uint8_t* payload, const uint8_t* scales, const uint8_t* offsets, uint8_t* code);

// The table "<tensor>" of codes that edo-unpack --codes wrote, decoded block
// by block; null when the file's metadata has no "<tensor>.codec" (an
// ordinary tensor). An empty `tensor` picks the file's only group of codes,
// if it has exactly one. The tensors are hostile input: their dtypes and
// shapes are checked against the codec before any decoding.
std::unique_ptr<io::TableReader> open_safetensors_codes(const std::string& path, const std::string& tensor,
                                                        const std::string& display);

}  // namespace edo
