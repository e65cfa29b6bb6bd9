// SPDX-License-Identifier: Apache-2.0
#include <edo/code_export.hpp>
#include <edo/codec.hpp>
#include <edo/edo_file.hpp>
#include <edo/error.hpp>
#include <edo/float16.hpp>
#include <edo/io/safetensors.hpp>
#include <edo/safetensors_codes.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstring>

namespace edo {

namespace {

using math::ScalarKind;
using math::ScalarLayout;

const Codec& single_codec(EdoTable& table, const char* what) {
  const Codec* codec = table.codes_codec();
  if (!codec)
    EDO_USAGE_FAIL(
        "{}: {} needs a file whose one codec tier holds every row in order (edo-quantize's output); "
        "this one is tiered, pruned or hashed: decode it instead",
        table.path(), what);
  return *codec;
}

}  // namespace

void export_safetensors_codes(EdoTable& table, const std::string& path, const std::string& tensor) {
  const Codec& codec = single_codec(table, "--codes");
  const CodeSplit s = code_split(codec);
  const uint64_t rows = table.rows();
  std::vector<io::SafetensorsTensorSpec> specs = code_tensors(s, tensor, rows);
  const std::vector<NamedBlob> state = s.layout ? std::vector<NamedBlob>{} : codec.state();
  for (const NamedBlob& b : state) specs.push_back({tensor + ".state." + b.name, "F32", b.shape});
  const std::map<std::string, std::string> metadata{{"writer", "edo"},
                                                    {"edo.codes", kSafetensorsCodesVersion},
                                                    {tensor + ".codec", codec.spec()},
                                                    {tensor + ".dim", std::to_string(codec.dim())}};
  io::SafetensorsFileWriter out(path, specs, metadata);
  for (size_t i = 0; i < state.size(); ++i)
    out.write(specs.size() - state.size() + i, 0, state[i].values.data(), state[i].values.size() * 4);
  const uint64_t block = std::max<uint64_t>(1, (uint64_t{16} << 20) / s.code_size);
  std::vector<uint8_t> payload, scales, offsets;
  for (uint64_t begin = 0; begin < rows; begin += block) {
    const uint64_t n = std::min(block, rows - begin);
    const uint8_t* codes = table.codes_of(begin, n);
    payload.resize(n * s.payload);
    scales.resize(n * s.scales * s.param_bytes);
    offsets.resize(n * s.offsets * s.param_bytes);
    for (uint64_t i = 0; i < n; ++i)
      split_row(s, codes + i * s.code_size, payload.data() + i * s.payload,
                scales.data() + i * s.scales * s.param_bytes, offsets.data() + i * s.offsets * s.param_bytes);
    out.write(0, begin * s.payload, payload.data(), payload.size());
    if (s.scales) out.write(1, begin * s.scales * s.param_bytes, scales.data(), scales.size());
    if (s.offsets) out.write(2, begin * s.offsets * s.param_bytes, offsets.data(), offsets.size());
  }
  out.commit();
}

// ---- FBGEMM ----------------------------------------------------------------------

uint32_t fbgemm_bits(FbgemmType t) { return t == FbgemmType::int8 ? 8 : t == FbgemmType::int4 ? 4 : 2; }

const char* fbgemm_type_name(FbgemmType t) {
  return t == FbgemmType::int8 ? "INT8" : t == FbgemmType::int4 ? "INT4" : "INT2";
}

std::optional<FbgemmType> fbgemm_type_of(EdoTable& table) {
  const Codec* codec = table.codes_codec();
  const std::optional<ScalarLayout> L = codec ? scalar_layout(*codec) : std::nullopt;
  if (!L || L->groups != 1) return std::nullopt;
  if (L->kind == ScalarKind::int8) return FbgemmType::int8;
  if (L->kind == ScalarKind::int4) return FbgemmType::int4;
  if (L->kind == ScalarKind::int2) return FbgemmType::int2;
  return std::nullopt;
}

namespace {

// One FBGEMM row: [fp16 scale][fp16 bias][codes LSB first], and its decode.
struct FbgemmRow {
  uint16_t scale = 0, bias = 0;
  std::vector<uint8_t> q;  // one code a value
};

float fbgemm_value(const FbgemmRow& r, size_t j) {
  return std::fmaf(static_cast<float>(r.q[j]), half_bits_to_float(r.scale), half_bits_to_float(r.bias));
}

// Squared error of the row against x, summed in double.
double fbgemm_sse(const FbgemmRow& r, const float* x, size_t dim) {
  double e = 0;
  for (size_t j = 0; j < dim; ++j) {
    const double d = static_cast<double>(fbgemm_value(r, j)) - x[j];
    e += d * d;
  }
  return e;
}

// FBGEMM's FloatToFusedNBitRowwiseQuantizedSBHalf (src/QuantUtils.cc): the
// bias is the row's minimum rounded to fp16, the scale (max - bias) / qmax
// rounded to fp16 before quantizing (1 when that is 0 or its inverse
// overflows), codes rounded to nearest even and clamped.
void fbgemm_quantize(const float* x, size_t dim, uint32_t qmax, FbgemmRow& r) {
  float lo = x[0], hi = x[0];
  for (size_t j = 1; j < dim; ++j) {
    lo = std::min(lo, x[j]);
    hi = std::max(hi, x[j]);
  }
  r.bias = float_to_half_bits(lo);
  const float bias = half_bits_to_float(r.bias);
  const float range = hi - bias;
  r.scale = float_to_half_bits(range == 0.0f ? 1.0f : range / static_cast<float>(qmax));
  float scale = half_bits_to_float(r.scale);
  if (scale == 0.0f || std::isinf(1.0f / scale)) {
    r.scale = float_to_half_bits(1.0f);
    scale = 1.0f;
  }
  const float inv = 1.0f / scale;
  r.q.resize(dim);
  for (size_t j = 0; j < dim; ++j) {
    const float q = std::nearbyint((x[j] - bias) * inv);
    r.q[j] = static_cast<uint8_t>(std::clamp(q, 0.0f, static_cast<float>(qmax)));
  }
}

// The file's own codes with its fp32 scale and offset rounded to fp16.
void fbgemm_keep(const ScalarLayout& L, const uint8_t* code, FbgemmRow& r) {
  const math::AffineParams p = math::load_group_params(L, code, 0);
  r.scale = float_to_half_bits(p.scale);
  r.bias = float_to_half_bits(p.offset);
  r.q.resize(L.dim);
  const uint8_t* payload = code + L.header_bytes;
  const uint32_t mask = (1u << L.bits) - 1u;
  for (uint32_t j = 0; j < L.dim; ++j) {
    const uint64_t bit = uint64_t{j} * L.bits;
    r.q[j] = static_cast<uint8_t>((payload[bit / 8] >> (bit % 8)) & mask);
  }
}

void fbgemm_pack(const FbgemmRow& r, uint32_t bits, uint8_t* out) {
  std::memcpy(out, &r.scale, 2);
  std::memcpy(out + 2, &r.bias, 2);
  uint8_t* codes = out + 4;
  for (size_t j = 0; j < r.q.size(); ++j) {
    const uint64_t bit = j * bits;
    codes[bit / 8] = static_cast<uint8_t>(codes[bit / 8] | (r.q[j] << (bit % 8)));
  }
}

}  // namespace

FbgemmExport export_fbgemm(EdoTable& table, const std::string& path, FbgemmType type, uint32_t row_alignment) {
  FbgemmExport result;
  result.type = type;
  const uint32_t bits = fbgemm_bits(type), per_byte = 8 / bits;
  const uint64_t dim = table.dim();
  if (dim % per_byte != 0)
    EDO_USAGE_FAIL("{}: {} rows pack {} values a byte and the table is {} wide; FBGEMM needs a multiple of {}",
                   table.path(), fbgemm_type_name(type), per_byte, dim, per_byte);
  if (row_alignment == 0 || (row_alignment & (row_alignment - 1)) != 0 || row_alignment > 4096)
    EDO_USAGE_FAIL("--row-alignment {}: a power of two up to 4096", row_alignment);
  const uint64_t unpadded = 4 + dim / per_byte;
  result.row_bytes = (unpadded + row_alignment - 1) / row_alignment * row_alignment;
  const std::optional<FbgemmType> own = fbgemm_type_of(table);
  const bool keep = own && *own == type;
  const Codec* codec = table.codes_codec();
  const std::optional<ScalarLayout> L = keep ? scalar_layout(*codec) : std::nullopt;

  auto writer = io::create_table(path, table.rows(), result.row_bytes, io::DType::u8);
  const uint64_t block = table.block_rows();
  std::vector<uint8_t> out;
  FbgemmRow fresh, kept;
  double err = 0, norm = 0;
  for (uint64_t begin = 0; begin < table.rows(); begin += block) {
    const uint64_t n = std::min(block, table.rows() - begin);
    const float* x = table.rows_f32(begin, n);
    const uint8_t* codes = keep ? table.codes_of(begin, n) : nullptr;
    out.assign(n * result.row_bytes, 0);
    for (uint64_t i = 0; i < n; ++i) {
      const float* row = x + i * dim;
      fbgemm_quantize(row, dim, (1u << bits) - 1u, fresh);
      if (!std::isfinite(half_bits_to_float(fresh.scale)) || !std::isfinite(half_bits_to_float(fresh.bias)))
        EDO_FAIL(
            "{}: row {} spans beyond fp16's range (|x| or its range > 65504): FBGEMM's fp16 scale and bias "
            "cannot hold it",
            table.path(), begin + i);
      double e = fbgemm_sse(fresh, row, dim);
      const FbgemmRow* pick = &fresh;
      if (keep) {
        fbgemm_keep(*L, codes + i * codec->code_size(), kept);
        const double ek = fbgemm_sse(kept, row, dim);
        if (ek <= e) {
          pick = &kept;
          e = ek;
        }
      }
      ++(pick == &kept ? result.rows_codes_kept : result.rows_requantized);
      fbgemm_pack(*pick, bits, out.data() + i * result.row_bytes);
      double rn = 0;
      for (uint64_t j = 0; j < dim; ++j) rn += static_cast<double>(row[j]) * row[j];
      err += e;
      norm += rn;
      if (rn > 0) result.added_row_rel_error_max = std::max(result.added_row_rel_error_max, std::sqrt(e / rn));
    }
    writer->write_raw(out.data(), n);
  }
  writer->commit();
  result.added_rel_error = norm > 0 ? std::sqrt(err / norm) : 0.0;
  return result;
}

}  // namespace edo
