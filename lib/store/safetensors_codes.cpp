// SPDX-License-Identifier: Apache-2.0
#include <edo/codec.hpp>
#include <edo/error.hpp>
#include <edo/safetensors_codes.hpp>

#include <charconv>
#include <cstring>

namespace edo {

using math::ScalarKind;
using math::ScalarLayout;

namespace {

const char* values_dtype(ScalarKind k) {
  switch (k) {
    case ScalarKind::f32:
      return "F32";
    case ScalarKind::f16:
      return "F16";
    case ScalarKind::bf16:
      return "BF16";
    case ScalarKind::fp8_e4m3:
      return "F8_E4M3";
    case ScalarKind::fp8_e5m2:
      return "F8_E5M2";
    default:
      return "U8";
  }
}

}  // namespace

CodeSplit code_split(const Codec& codec) {
  CodeSplit s;
  s.layout = scalar_layout(codec);
  s.code_size = codec.code_size();
  if (!s.layout) {
    s.payload = s.codes_width = s.code_size;
    return s;
  }
  const ScalarLayout& L = *s.layout;
  s.payload = L.code_size - L.header_bytes;
  s.codes_dtype = values_dtype(L.kind);
  s.codes_width = s.payload / io::safetensors_dtype_size(s.codes_dtype);
  if (math::is_affine(L.kind)) {
    s.scales = s.offsets = L.groups;
    if (L.half_params) {
      s.param_bytes = 2;
      s.params_dtype = "F16";
    }
  } else if (L.header_bytes > 0) {
    s.scales = 1;  // fp8, sign: one scale a row
  }
  return s;
}

std::vector<io::SafetensorsTensorSpec> code_tensors(const CodeSplit& s, const std::string& tensor, uint64_t rows) {
  std::vector<io::SafetensorsTensorSpec> out{{tensor + ".codes", s.codes_dtype, {rows, s.codes_width}}};
  if (s.scales) out.push_back({tensor + ".scales", s.params_dtype, {rows, s.scales}});
  if (s.offsets) out.push_back({tensor + ".offsets", s.params_dtype, {rows, s.offsets}});
  return out;
}

// Row `code` (code_size bytes) into its parts; the inverse is join_row.
void split_row(const CodeSplit& s, const uint8_t* code, uint8_t* payload, uint8_t* scales, uint8_t* offsets) {
  const uint64_t header = s.code_size - s.payload;
  std::memcpy(payload, code + header, s.payload);
  if (s.offsets) {
    const uint64_t w = s.param_bytes;  // a group's pair is (scale, offset), 2w bytes
    for (uint64_t g = 0; g < s.scales; ++g) {
      std::memcpy(scales + w * g, code + 2 * w * g, w);
      std::memcpy(offsets + w * g, code + 2 * w * g + w, w);
    }
  } else if (s.scales) {
    std::memcpy(scales, code, 4);
  }
}

void join_row(const CodeSplit& s, const uint8_t* payload, const uint8_t* scales, const uint8_t* offsets,
              uint8_t* code) {
  const uint64_t header = s.code_size - s.payload;
  std::memcpy(code + header, payload, s.payload);
  if (s.offsets) {
    const uint64_t w = s.param_bytes;
    for (uint64_t g = 0; g < s.scales; ++g) {
      std::memcpy(code + 2 * w * g, scales + w * g, w);
      std::memcpy(code + 2 * w * g + w, offsets + w * g, w);
    }
  } else if (s.scales) {
    std::memcpy(code, scales, 4);
  }
}

namespace {

// The group of tensors export_safetensors_codes() wrote, decoded on demand.
class SafetensorsCodesTable final : public io::TableReader {
 public:
  SafetensorsCodesTable(io::SafetensorsFile file, const std::string& tensor, const std::string& display)
      : TableReader(display, "safetensors codes"), file_(std::move(file)) {
    const auto& meta = file_.header.metadata;
    const std::string spec = meta.at(tensor + ".codec");
    const auto dim_text = meta.find(tensor + ".dim");
    uint64_t dim = 0;
    if (dim_text == meta.end() ||
        std::from_chars(dim_text->second.data(), dim_text->second.data() + dim_text->second.size(), dim).ec !=
            std::errc{} ||
        dim == 0 || dim > io::kMaxDim)
      EDO_FAIL("{}: __metadata__ '{}.dim' is not a width from 1 to {}", display, tensor, io::kMaxDim);
    try {
      codec_ = make_decoder(spec, dim);
    } catch (const Error& e) {
      EDO_FAIL("{}: __metadata__ '{}.codec' = '{}': {}", display, tensor, spec, e.what());
    }
    split_ = code_split(*codec_);
    const io::SafetensorsTensor* codes = file_.find(tensor + ".codes");
    if (!codes || codes->shape.size() != 2 || codes->shape[0] == 0)
      EDO_FAIL("{}: no 2-D tensor '{}.codes' with rows for codec {}", display, tensor, spec);
    for (const io::SafetensorsTensorSpec& want : code_tensors(split_, tensor, codes->shape[0])) {
      const io::SafetensorsTensor* t = file_.find(want.name);
      if (!t || t->dtype_name != want.dtype_name || t->shape != want.shape)
        EDO_FAIL("{}: codec {} at width {} needs tensor '{}' of {} [{}, {}]", display, spec, dim, want.name,
                 want.dtype_name, want.shape[0], want.shape[1]);
      parts_.push_back(t);
      stored_bytes_ += t->bytes();
    }
    if (!split_.layout) load_state(tensor, display);
    rows_ = codes->shape[0];
    dim_ = dim;
    dtype_ = io::DType::f32;
  }

  const float* rows_f32(uint64_t begin, uint64_t count) override {
    check_range(begin, count);
    code_rows_.resize(count * split_.code_size);
    const auto part = [&](size_t i, uint64_t width) {
      return i < parts_.size() ? file_.bytes(*parts_[i]) + begin * width : nullptr;
    };
    const uint8_t* payload = part(0, split_.payload);
    const uint64_t w = split_.param_bytes;
    const uint8_t* scales = part(1, split_.scales * w);
    const uint8_t* offsets = split_.offsets ? part(2, split_.offsets * w) : nullptr;
    for (uint64_t i = 0; i < count; ++i)
      join_row(split_, payload + i * split_.payload, scales ? scales + i * split_.scales * w : nullptr,
               offsets ? offsets + i * split_.offsets * w : nullptr, code_rows_.data() + i * split_.code_size);
    out_.resize(count * dim_);
    codec_->decode(code_rows_.data(), count, out_.data());
    return out_.data();
  }

  uint64_t payload_bytes() const override { return stored_bytes_; }

 private:
  void load_state(const std::string& tensor, const std::string& display) {
    const std::string prefix = tensor + ".state.";
    std::vector<NamedBlob> blobs;
    for (const io::SafetensorsTensor& t : file_.header.tensors) {
      if (!t.name.starts_with(prefix)) continue;
      if (t.dtype_name != "F32") EDO_FAIL("{}: tensor '{}' is {}, not F32", display, t.name, t.dtype_name);
      NamedBlob b{t.name.substr(prefix.size()), t.shape, std::vector<float>(t.bytes() / 4)};
      std::memcpy(b.values.data(), file_.bytes(t), t.bytes());
      stored_bytes_ += t.bytes();
      blobs.push_back(std::move(b));
    }
    try {
      codec_->load_state(blobs);
    } catch (const Error& e) {
      EDO_FAIL("{}: the state of '{}': {}", display, tensor, e.what());
    }
  }

  io::SafetensorsFile file_;
  std::unique_ptr<Codec> codec_;
  CodeSplit split_;
  std::vector<const io::SafetensorsTensor*> parts_;
  uint64_t stored_bytes_ = 0;
  std::vector<uint8_t> code_rows_;
  std::vector<float> out_;
};

}  // namespace

std::unique_ptr<io::TableReader> open_safetensors_codes(const std::string& path, const std::string& tensor,
                                                        const std::string& display) {
  io::SafetensorsFile file = io::open_safetensors_file(path);
  const auto& meta = file.header.metadata;
  std::string name = tensor;
  if (name.empty()) {
    std::vector<std::string> groups;
    for (const auto& [key, value] : meta)
      if (key.ends_with(".codec")) groups.push_back(key.substr(0, key.size() - 6));
    if (groups.size() != 1 || meta.find("edo.codes") == meta.end()) return nullptr;
    name = groups[0];
  }
  if (meta.find(name + ".codec") == meta.end()) return nullptr;
  const auto version = meta.find("edo.codes");
  if (version == meta.end() || version->second != kSafetensorsCodesVersion)
    EDO_FAIL("{}: codes of layout version '{}'; this edo reads version {}", display,
             version == meta.end() ? std::string("none") : version->second, kSafetensorsCodesVersion);
  return std::make_unique<SafetensorsCodesTable>(std::move(file), name, display);
}

}  // namespace edo
