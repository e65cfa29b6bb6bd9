// SPDX-License-Identifier: Apache-2.0
// The writing half of lossless tiers (lossless.hpp, FORMAT.md 9.10). Raw
// parts stream straight into the file; a segment's symbols are held until
// the segment is complete, its code made from their counts, and its rows'
// code bits spooled with the offsets and tables, which are copied in at the
// end: memory is a segment (about 4M values) whatever the table's size.
#include <edo/codec.hpp>
#include <edo/error.hpp>
#include <edo/float16.hpp>
#include <edo/io/table.hpp>
#include <edo/lossless.hpp>
#include <edo/table_writer.hpp>

#include "spool.hpp"

#include <array>
#include <chrono>
#include <cmath>
#include <cstring>

namespace edo {

namespace {

class LosslessTierBuilder final : public TierBuilder {
 public:
  LosslessTierBuilder(const std::string& spec, uint64_t dim, const EncodeOptions& enc)
      : values_(parse_lossless_spec(spec).values),
        dim_(dim),
        enc_(enc),
        block_rows_(lossless_block_rows(dim)),
        segment_rows_(lossless_segment_rows(dim, block_rows_)) {}

  std::string codec() const override { return format_lossless_spec(values_); }
  // Every row's code bits depend on the counts of its whole segment.
  ShardNeed shard_need() const override { return ShardNeed::unshardable; }

  std::vector<std::string> report_notes() const override {
    const uint32_t raw = lossless_value_bits(values_) - 8;
    std::vector<std::string> notes = {
        fmt::format("{:.2f} bits a value (the symbols' entropy {:.2f} + {} raw); {} of {} segments coded",
                    bits_per_value_, symbol_entropy_, raw, coded_segments_, segments_)};
    if (coded_segments_ == 0 && segments_ > 0)
      notes.emplace_back("its values do not compress: every segment stores a byte a symbol");
    return notes;
  }

  void begin(io::ContainerWriter& writer, const std::string& prefix) override {
    recon_ = std::make_unique<RowErrorStats>(dim_);
    writer_ = &writer;
    writer.begin_section(prefix + "raw");
    symbols_.reserve(segment_rows_ * dim_);
  }

  void add(const float* x, size_t n, const uint64_t* row_ids, const double*) override {
    const auto t0 = std::chrono::steady_clock::now();
    check_values(x, n, row_ids);
    const uint32_t width = lossless_value_bits(values_), rb = lossless_raw_bytes(values_);
    std::vector<uint8_t> raw(dim_ * rb);
    for (size_t i = 0; i < n; ++i) {
      const float* row = x + i * dim_;
      for (uint64_t j = 0; j < dim_; ++j) {
        const uint32_t bits = stored_bits(row[j]);
        symbols_.push_back(static_cast<uint8_t>(lossless_symbol(bits, width)));
        const uint32_t r = lossless_raw(bits, width);
        for (uint32_t k = 0; k < rb; ++k) raw[j * rb + k] = static_cast<uint8_t>(r >> (8 * k));
      }
      writer_->append(raw.data(), raw.size());
      recon_->add(row_error(row, row, dim_));
      if (symbols_.size() == segment_rows_ * dim_) encode_segment();
    }
    encode_seconds_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  }

  uint64_t finish(io::ContainerWriter& writer, const std::string& prefix, nlohmann::json& entry) override {
    if (!symbols_.empty()) encode_segment();
    writer.end_section();
    const uint64_t raw_bytes = rows_ * dim_ * lossless_raw_bytes(values_);
    blocks_.write(&code_bytes_, 8);
    const uint8_t pad[kLosslessCodePad] = {};
    codes_.write(pad, sizeof pad);
    section_bytes_ = {{"raw", raw_bytes}};
    nlohmann::json sections = {{"raw", prefix + "raw"}};
    for (auto [role, spool] : {std::pair<const char*, Spool*>{"codes", &codes_},
                               {"blocks", &blocks_},
                               {"rows", &row_offsets_},
                               {"tables", &tables_}}) {
      writer.begin_section(prefix + role);
      spool->replay([&](const uint8_t* data, size_t size) { writer.append(data, size); });
      writer.end_section();
      section_bytes_.emplace_back(role, spool->bytes());
      sections[role] = prefix + role;
    }
    uint64_t bytes = 0;
    for (const auto& [role, b] : section_bytes_) bytes += b;
    const double values = static_cast<double>(rows_) * static_cast<double>(dim_);
    bits_per_value_ = values > 0 ? 8.0 * static_cast<double>(bytes) / values : 0.0;
    symbol_entropy_ = values > 0 ? entropy_bits_ / values : 0.0;
    entry.update({{"codec", codec()},
                  {"code_size", 0},
                  {"sections", sections},
                  {"block_rows", block_rows_},
                  {"segment_rows", segment_rows_},
                  {"coded_segments", coded_segments_},
                  {"bits_per_value", bits_per_value_},
                  {"symbol_entropy", symbol_entropy_}});
    return bytes;
  }

 private:
  // The value's bits in the tier's type, which must hold it exactly.
  uint32_t stored_bits(float v) const { return lossless_stored_bits(values_, v); }

  void check_values(const float* x, size_t n, const uint64_t* row_ids) const {
    EncodeOptions enc = enc_;
    enc.row_ids = row_ids;
    if (!enc.allow_nonfinite) check_finite(x, n, dim_, 0x7f800000u, codec(), enc, true);
    if (values_ == LosslessValues::f32) return;
    for (size_t i = 0; i < n; ++i)
      for (uint64_t j = 0; j < dim_; ++j) {
        const float v = x[i * dim_ + j];
        const uint32_t bits = stored_bits(v);
        const uint32_t back = float_bits(
            values_ == LosslessValues::bf16 ? bits_float(bits << 16) : half_bits_to_float(static_cast<uint16_t>(bits)));
        if (back == float_bits(v)) continue;
        const uint64_t row = row_ids ? row_ids[i] : enc_.first_row + i;
        EDO_FAIL(
            "{}{}row {}, column {}: {} is not exactly a {} value, and {} stores values bit for bit; `lossless` "
            "alone keeps the input's own precision, `{}` rounds",
            enc_.input, enc_.input.empty() ? "" : ": ", row, j, v, lossless_values_name(values_), codec(),
            lossless_values_name(values_));
      }
  }

  // The held rows' symbols as one segment: its code from their counts (or
  // a byte each when that is no smaller), each row's code bits byte-aligned.
  void encode_segment() {
    const uint64_t rows = symbols_.size() / dim_;
    std::array<uint64_t, 256> counts{};
    for (uint8_t s : symbols_) ++counts[s];
    for (uint64_t c : counts)
      if (c > 0) {
        const double p = static_cast<double>(c) / static_cast<double>(symbols_.size());
        entropy_bits_ -= static_cast<double>(c) * std::log2(p);
      }
    std::array<uint8_t, 256> lengths{};
    lossless_code_lengths(counts.data(), lengths.data());
    std::array<uint16_t, 256> codes{};
    if (!lossless_canonical_codes(lengths.data(), codes.data())) EDO_FAIL("lossless tier: a code overflowed");
    uint64_t coded = 0;
    for (uint64_t r = 0; r < rows; ++r) {
      uint64_t bits = 0;
      for (uint64_t j = 0; j < dim_; ++j) bits += lengths[symbols_[r * dim_ + j]];
      coded += (bits + 7) / 8;
    }
    const bool raw = coded >= rows * dim_;
    std::array<uint8_t, kLosslessTableBytes> table{};
    if (!raw)
      for (int k = 0; k < 256; ++k) table[k / 2] |= static_cast<uint8_t>(lengths[k] << (4 * (k % 2)));
    tables_.write(table.data(), table.size());
    std::vector<uint8_t> out;
    for (uint64_t r = 0; r < rows; ++r) {
      if ((rows_ + r) % block_rows_ == 0) {
        blocks_.write(&code_bytes_, 8);
        block_base_ = code_bytes_;
      }
      const uint8_t* sym = symbols_.data() + r * dim_;
      out.clear();
      if (raw) {
        out.assign(sym, sym + dim_);
      } else {
        uint64_t acc = 0;
        uint32_t held = 0;
        for (uint64_t j = 0; j < dim_; ++j) {
          acc |= uint64_t{codes[sym[j]]} << held;
          held += lengths[sym[j]];
          for (; held >= 8; held -= 8, acc >>= 8) out.push_back(static_cast<uint8_t>(acc));
        }
        if (held > 0) out.push_back(static_cast<uint8_t>(acc));
      }
      if (lossless_row_lengths(dim_)) {
        const auto length = static_cast<uint8_t>(out.size());
        row_offsets_.write(&length, 1);
      } else {
        const auto offset = static_cast<uint16_t>(code_bytes_ - block_base_);
        row_offsets_.write(&offset, 2);
      }
      codes_.write(out.data(), out.size());
      code_bytes_ += out.size();
    }
    rows_ += rows;
    ++segments_;
    coded_segments_ += raw ? 0 : 1;
    symbols_.clear();
  }

  LosslessValues values_;
  uint64_t dim_;
  EncodeOptions enc_;
  uint32_t block_rows_;
  uint64_t segment_rows_;
  io::ContainerWriter* writer_ = nullptr;
  std::vector<uint8_t> symbols_;  // the segment's, row by row
  Spool codes_{"a lossless tier"}, blocks_{"a lossless tier"}, row_offsets_{"a lossless tier"},
      tables_{"a lossless tier"};
  uint64_t rows_ = 0, segments_ = 0, coded_segments_ = 0, code_bytes_ = 0, block_base_ = 0;
  double entropy_bits_ = 0, bits_per_value_ = 0, symbol_entropy_ = 0;
};

}  // namespace

std::unique_ptr<TierBuilder> make_lossless_tier_builder(const std::string& spec, uint64_t dim,
                                                        const EncodeOptions& enc) {
  return std::make_unique<LosslessTierBuilder>(spec, dim, enc);
}

std::string resolve_tier_field(const std::string& field, io::DType input_dtype) {
  if (tier_kind_of(field) != TierKind::lossless || parse_lossless_spec(field).values_given) return field;
  switch (input_dtype) {
    case io::DType::bf16:
    case io::DType::f8_e4m3:
    case io::DType::f8_e5m2:
    case io::DType::i8:
    case io::DType::u8:
      return format_lossless_spec(LosslessValues::bf16);
    case io::DType::f16:
      return format_lossless_spec(LosslessValues::f16);
    default:
      return format_lossless_spec(LosslessValues::f32);
  }
}

}  // namespace edo
