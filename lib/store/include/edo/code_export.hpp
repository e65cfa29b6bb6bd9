// SPDX-License-Identifier: Apache-2.0
// A one-tier .edo's codes in the layouts other tools read (edo-unpack
// --codes, --to fbgemm). docs/PACK.md, "Stored codes in safetensors" and
// "FBGEMM rows", gives each layout byte by byte.
#pragma once

#include <edo/io/table.hpp>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

namespace edo {

class EdoTable;

// ---- stored codes in safetensors ---------------------------------------------------

// Writes the codes of a file whose one tier holds every row in order as
// tensors "<tensor>.codes" (plus ".scales" and ".offsets" for the scalar
// codecs, ".state.<blob>" for trained ones) with "<tensor>.codec" and
// "<tensor>.dim" in __metadata__. No decoding: the bytes are the file's.
void export_safetensors_codes(EdoTable& table, const std::string& path, const std::string& tensor);

// ---- FBGEMM's IntNBitTableBatchedEmbeddingBagsCodegen rows -----------------------

enum class FbgemmType : uint8_t { int8, int4, int2 };
uint32_t fbgemm_bits(FbgemmType t);
const char* fbgemm_type_name(FbgemmType t);  // "INT8", "INT4", "INT2"

// The weight type matching a file's codec bit for bit (int8/int4/int2
// row-wise), else nullopt.
std::optional<FbgemmType> fbgemm_type_of(EdoTable& table);

struct FbgemmExport {
  FbgemmType type = FbgemmType::int8;
  uint64_t row_bytes = 0;         // 4 + packed codes, rounded up to the alignment
  uint64_t rows_codes_kept = 0;   // the file's codes, its scale and offset rounded to fp16
  uint64_t rows_requantized = 0;  // decoded and quantized again, FBGEMM's way
  double added_rel_error = 0;     // ||fbgemm rows - edo rows||_F / ||edo rows||_F
  double added_row_rel_error_max = 0;
};

// Writes every row of `table` (any .edo) as `type` rows, [fp16 scale][fp16
// bias][codes, value j at bits (j % per_byte) * bits of byte j / per_byte]
// [zero padding to `row_alignment` bytes], a uint8 rows x row_bytes table
// (`path` an .npy or x.safetensors:name). A row whose codes map one to one
// keeps them where that loses less than quantizing the decoded row again.
FbgemmExport export_fbgemm(EdoTable& table, const std::string& path, FbgemmType type, uint32_t row_alignment);

}  // namespace edo
