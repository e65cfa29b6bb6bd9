// SPDX-License-Identifier: Apache-2.0
// The reading half of lossless tiers (lossless.hpp, FORMAT.md 9.10): the
// canonical Huffman code both halves share, and the tier that decodes a
// row's code bits and raw bytes back into its fp32 values.
#include "first_read_check.hpp"
#include "tier_kinds.hpp"

#include <edo/checked.hpp>
#include <edo/codec.hpp>
#include <edo/error.hpp>
#include <edo/lossless.hpp>
#include <edo/tier.hpp>

#include <algorithm>
#include <array>
#include <atomic>

#ifdef __AVX2__
#include <immintrin.h>
#endif

#ifdef EDO_HAVE_CUDA
#include <edo/cuda/lossless.cuh>
#include <edo/device.hpp>
#endif
#include <cstring>
#include <memory>
#include <vector>

namespace edo {

namespace {
constexpr const char* kLosslessGrammar = "lossless[:values=bf16|fp16|fp32]";
}  // namespace

LosslessSpec parse_lossless_spec(std::string_view spec) {
  const std::vector<SpecStage> stages = parse_spec(spec);
  if (stages.size() != 1 || stages[0].name != "lossless")
    EDO_USAGE_FAIL("lossless spec '{}': expected {}", spec, kLosslessGrammar);
  LosslessSpec s;
  for (const SpecParam& p : stages[0].params) {
    if (p.key != "values" || s.values_given)
      EDO_USAGE_FAIL("lossless spec '{}': unexpected parameter '{}' (expected {})", spec,
                     p.key.empty() ? p.value : p.key, kLosslessGrammar);
    s.values_given = true;
    if (p.value == "bf16")
      s.values = LosslessValues::bf16;
    else if (p.value == "fp16")
      s.values = LosslessValues::f16;
    else if (p.value == "fp32")
      s.values = LosslessValues::f32;
    else
      EDO_USAGE_FAIL("lossless spec '{}': values={} (bf16, fp16 or fp32)", spec, p.value);
  }
  return s;
}

const char* lossless_values_name(LosslessValues v) {
  switch (v) {
    case LosslessValues::bf16:
      return "bf16";
    case LosslessValues::f16:
      return "fp16";
    case LosslessValues::f32:
      break;
  }
  return "fp32";
}

std::string format_lossless_spec(LosslessValues v) { return std::string("lossless:values=") + lossless_values_name(v); }

uint32_t lossless_block_rows(uint64_t dim) {
  // A row's code takes at most ceil(11 dim / 8) bytes, so 43690 / dim rows
  // end within 65536 bytes of their block's start.
  return static_cast<uint32_t>(std::clamp<uint64_t>(43690 / std::max<uint64_t>(dim, 1), 1, 64));
}

uint64_t lossless_segment_rows(uint64_t dim, uint32_t block_rows) {
  const uint64_t blocks = (uint64_t{1} << 22) / (std::max<uint64_t>(dim, 1) * block_rows);
  return std::max<uint64_t>(blocks, 1) * block_rows;
}

bool lossless_canonical_codes(const uint8_t* lengths, uint16_t* codes) {
  uint32_t count[kLosslessMaxCodeBits + 1] = {};
  uint64_t kraft = 0;
  for (int s = 0; s < 256; ++s) {
    if (lengths[s] > kLosslessMaxCodeBits) return false;
    if (lengths[s] == 0) continue;
    ++count[lengths[s]];
    kraft += uint64_t{1} << (kLosslessMaxCodeBits - lengths[s]);
  }
  if (kraft > (uint64_t{1} << kLosslessMaxCodeBits)) return false;
  // The first code of each length: shorter codes first, then by symbol.
  uint32_t next[kLosslessMaxCodeBits + 2] = {};
  for (uint32_t len = 1, code = 0; len <= kLosslessMaxCodeBits; ++len) {
    code = (code + count[len - 1]) << 1;
    next[len] = code;
  }
  for (int s = 0; s < 256; ++s) {
    const uint32_t len = lengths[s];
    if (len == 0) {
      codes[s] = 0;
      continue;
    }
    const uint32_t code = next[len]++;
    uint32_t reversed = 0;
    for (uint32_t b = 0; b < len; ++b) reversed |= ((code >> b) & 1u) << (len - 1 - b);
    codes[s] = static_cast<uint16_t>(reversed);
  }
  return true;
}

void lossless_code_lengths(const uint64_t* counts, uint8_t* lengths) {
  std::fill(lengths, lengths + 256, uint8_t{0});
  std::vector<uint64_t> weight(counts, counts + 256);
  std::vector<int> symbols;
  for (int s = 0; s < 256; ++s)
    if (weight[s] > 0) symbols.push_back(s);
  if (symbols.empty()) return;
  if (symbols.size() == 1) {
    lengths[symbols[0]] = 1;
    return;
  }
  // Two-queue Huffman over the leaves sorted by (weight, symbol); when the
  // deepest leaf is too deep, the weights are halved (rounding up, so none
  // reaches 0) and the code made again.
  for (;;) {
    std::vector<int> leaves = symbols;
    std::stable_sort(leaves.begin(), leaves.end(), [&](int a, int b) { return weight[a] < weight[b]; });
    const size_t n = leaves.size();
    std::vector<uint64_t> w(2 * n);
    std::vector<size_t> parent(2 * n, 0);
    for (size_t i = 0; i < n; ++i) w[i] = weight[leaves[i]];
    size_t leaf = 0, inner = n, made = n;
    auto take = [&]() {
      if (leaf < n && (inner >= made || w[leaf] <= w[inner])) return leaf++;
      return inner++;
    };
    while (made < 2 * n - 1) {
      const size_t a = take(), b = take();
      w[made] = w[a] + w[b];
      parent[a] = parent[b] = made;
      ++made;
    }
    std::vector<uint32_t> depth(2 * n - 1, 0);
    uint32_t deepest = 0;
    for (size_t i = 2 * n - 2; i-- > 0;) {
      depth[i] = depth[parent[i]] + 1;
      if (i < n) deepest = std::max(deepest, depth[i]);
    }
    if (deepest <= kLosslessMaxCodeBits) {
      for (size_t i = 0; i < n; ++i) lengths[leaves[i]] = static_cast<uint8_t>(depth[i]);
      return;
    }
    for (int s : symbols) weight[s] = (weight[s] + 1) / 2;
  }
}

double lossless_row_bytes(LosslessValues v, const float* x, uint64_t n, uint64_t dim) {
  if (n == 0 || dim == 0) return 0;
  const uint32_t width = lossless_value_bits(v);
  std::vector<uint8_t> symbols(n * dim);
  std::vector<uint64_t> counts(256, 0);
  for (uint64_t i = 0; i < n * dim; ++i) {
    symbols[i] = static_cast<uint8_t>(lossless_symbol(lossless_stored_bits(v, x[i]), width));
    ++counts[symbols[i]];
  }
  uint8_t lengths[256];
  lossless_code_lengths(counts.data(), lengths);
  uint64_t coded = 0;
  for (uint64_t i = 0; i < n; ++i) {
    uint64_t bits = 0;
    for (uint64_t j = 0; j < dim; ++j) bits += lengths[symbols[i * dim + j]];
    coded += (bits + 7) / 8;
  }
  const double code = std::min(static_cast<double>(coded) / static_cast<double>(n), static_cast<double>(dim));
  const double index = lossless_row_lengths(dim) ? 1.0 : 2.0;
  return code + static_cast<double>(dim * lossless_raw_bytes(v)) + index + 8.0 / lossless_block_rows(dim);
}

namespace {

// A segment's decoding table: entry (the next kLosslessMaxCodeBits code
// bits) = symbol | length << 8; length 0 where no code begins so.
struct DecodeTable {
  std::array<uint16_t, size_t{1} << kLosslessMaxCodeBits> entry{};
};

inline uint64_t load_u64(const uint8_t* p) {
  uint64_t v;
  std::memcpy(&v, p, sizeof v);
  return v;  // little-endian hosts only (FORMAT.md 1)
}

class LosslessTier final : public TierView {
 public:
  LosslessTier(const io::Container& c, const io::TierInfo& info, const nlohmann::json& jt) : path_(c.path()) {
    dim_ = c.dim();
    stats_ = tier_base_stats(info, TierKind::lossless);
    const LosslessSpec spec = parse_lossless_spec(info.codec);
    if (!spec.values_given) fail("a stored lossless tier names its values (lossless:values=V)");
    values_ = spec.values;
    raw_bytes_ = lossless_raw_bytes(values_);
    stats_.codec = format_lossless_spec(values_);
    block_rows_ = unsigned_key(jt, "block_rows");
    segment_rows_ = unsigned_key(jt, "segment_rows");
    if (block_rows_ == 0 || block_rows_ > kLosslessMaxBlockRows)
      fail(fmt::format("block_rows {} (1 to {})", block_rows_, kLosslessMaxBlockRows));
    const auto segment_values = checked_mul(segment_rows_, dim_);
    if (segment_rows_ == 0 || segment_rows_ % block_rows_ != 0 || !segment_values ||
        *segment_values > kLosslessMaxSegmentValues)
      fail(fmt::format("segment_rows {}: a multiple of block_rows {} of at most {} values", segment_rows_, block_rows_,
                       kLosslessMaxSegmentValues));
    if (info.sections.size() != 5) fail("unexpected sections (raw, codes, blocks, rows, tables)");
    const uint64_t rows = info.rows;
    blocks_count_ = (rows + block_rows_ - 1) / block_rows_;
    segments_ = (rows + segment_rows_ - 1) / segment_rows_;
    raw_ = tier_section(c, info, "raw", checked_mul(rows, dim_ * raw_bytes_), stats_).data;
    tables_ = tier_section(c, info, "tables", checked_mul(segments_, kLosslessTableBytes), stats_).data;
    blocks_ = tier_section(c, info, "blocks", checked_mul(blocks_count_ + 1, 8), stats_).data;
    lengths_ = lossless_row_lengths(dim_);
    rows_ = tier_section(c, info, "rows", checked_mul(rows, lengths_ ? 1 : 2), stats_).data;
    const auto it = info.sections.find("codes");
    if (it == info.sections.end()) fail("no 'codes' section");
    const io::SectionView codes = c.section(it->second);
    codes_ = codes.data;
    if (codes.size < kLosslessCodePad || load_u64(blocks_) != 0 ||
        load_u64(blocks_ + 8 * blocks_count_) != codes.size - kLosslessCodePad)
      fail(fmt::format("the code offsets do not span the 'codes' section ({} bytes, {} of padding)", codes.size,
                       kLosslessCodePad));
    stats_.bytes += codes.size;
    codes_end_ = codes.size - kLosslessCodePad;
    decoders_ = std::make_unique<std::atomic<const DecodeTable*>[]>(segments_);
    for (uint64_t s = 0; s < segments_; ++s) decoders_[s].store(nullptr, std::memory_order_relaxed);
  }

  ~LosslessTier() override {
    for (uint64_t s = 0; s < segments_; ++s)
      if (const DecodeTable* t = decoders_[s].load(std::memory_order_relaxed); t != raw_segment()) delete t;
  }
  LosslessTier(const LosslessTier&) = delete;
  LosslessTier& operator=(const LosslessTier&) = delete;

  void gather(const uint64_t* local, const uint64_t* dst, size_t n, float* out) const override {
    if (check_) check_->ensure();
    decode_rows(
        n, [&](size_t k) { return local[k]; }, [&](size_t k) { return out + dst[k] * dim_; });
  }

  void decode_range(uint64_t begin, uint64_t count, float* out, Device device) const override {
    if (check_) check_->ensure();
    if (device == Device::cuda) return decode_range_cuda(begin, count, out);
    decode_rows(
        count, [&](size_t k) { return begin + k; }, [&](size_t k) { return out + k * dim_; });
  }

  bool check_on_first_read(std::shared_ptr<const detail::FirstReadCheck> check) override {
    check_ = std::move(check);
    return true;
  }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    EDO_CORRUPT_FAIL("{}: tier '{}': {}", path_, stats_.name, what);
  }

  uint64_t unsigned_key(const nlohmann::json& jt, const char* key) const {
    if (!jt.contains(key) || !jt[key].is_number_unsigned())
      fail(fmt::format("a lossless tier needs unsigned '{}'", key));
    return jt[key].get<uint64_t>();
  }

  // The marker of a segment whose symbols are stored a byte each.
  static const DecodeTable* raw_segment() {
    static const DecodeTable marker{};
    return &marker;
  }

  // Segment s's table, made and checked at its first use (threads racing
  // to make it keep the first one stored).
  const DecodeTable* decoder(uint64_t s) const {
    if (const DecodeTable* t = decoders_[s].load(std::memory_order_acquire)) return t;
    const uint8_t* packed = tables_ + s * kLosslessTableBytes;
    uint8_t lengths[256];
    bool any = false;
    for (int k = 0; k < 256; ++k) {
      lengths[k] = static_cast<uint8_t>((packed[k / 2] >> (4 * (k % 2))) & 0xfu);
      any = any || lengths[k] != 0;
    }
    const DecodeTable* made = raw_segment();
    std::unique_ptr<DecodeTable> table;
    if (any) {
      uint16_t codes[256];
      if (!lossless_canonical_codes(lengths, codes))
        fail(fmt::format("segment {}: its code lengths overflow the code space or exceed {} bits", s,
                         kLosslessMaxCodeBits));
      table = std::make_unique<DecodeTable>();
      for (int k = 0; k < 256; ++k) {
        const uint32_t len = lengths[k];
        if (len == 0) continue;
        for (uint32_t at = codes[k]; at < table->entry.size(); at += 1u << len)
          table->entry[at] = static_cast<uint16_t>(k | (len << 8));
      }
      made = table.get();
    }
    const DecodeTable* expected = nullptr;
    if (decoders_[s].compare_exchange_strong(expected, made, std::memory_order_acq_rel)) {
      table.release();  // NOLINT(bugprone-unused-return-value): owned by decoders_ now
      return made;
    }
    return expected;
  }

  // Row r's code bytes [start, end) in codes_, checked against its block.
  void row_span(uint64_t r, uint64_t& start, uint64_t& end) const {
    const uint64_t b = r / block_rows_;
    const uint64_t base = load_u64(blocks_ + 8 * b), next = load_u64(blocks_ + 8 * (b + 1));
    const bool last = r + 1 == stats_.rows || (r + 1) % block_rows_ == 0;
    bool ok;
    if (lengths_) {
      // The lengths of the rows before it in its block, summed.
      uint64_t before = 0;
      for (uint64_t k = b * block_rows_; k < r; ++k) before += rows_[k];
      start = base + before;
      end = start + rows_[r];
      ok = !last || end == next;
    } else {
      const uint64_t off = row_offset(r);
      start = base + off;
      end = last ? next : base + row_offset(r + 1);
      ok = start <= end && (r % block_rows_ != 0 || off == 0);
    }
    if (!(ok && base <= next && next <= codes_end_ && end <= next))
      fail(fmt::format("row {}: its code offsets are out of order or beyond the section", r));
  }

  uint64_t row_offset(uint64_t r) const {
    uint16_t off;
    std::memcpy(&off, rows_ + 2 * r, 2);
    return off;
  }

  // Rows row(k) into dst(k), k < n: kStreams rows at once where they lie in
  // coded segments (one Huffman code's decode is a chain of dependent table
  // loads; several rows' chains overlap), any other row alone. A group with
  // a corrupt row is decoded again row by row, so the error names the first.
  template <class RowOf, class DstOf>
  void decode_rows(size_t n, RowOf row, DstOf dst) const {
    switch (values_) {
      case LosslessValues::bf16:
        return decode_rows_as<LosslessValues::bf16>(n, row, dst);
      case LosslessValues::f16:
        return decode_rows_as<LosslessValues::f16>(n, row, dst);
      case LosslessValues::f32:
        break;
    }
    decode_rows_as<LosslessValues::f32>(n, row, dst);
  }

  // Rows [begin, begin + count) on the GPU (kernels/lossless.cu): their
  // offsets checked and spans found here, the codes, raw parts and the
  // segments' tables copied in, the rows copied out. A row the kernel cannot
  // decode is decoded again here, which throws its error.
  void decode_range_cuda(uint64_t begin, uint64_t count, float* out) const {
    require_device(Device::cuda);
#ifdef EDO_HAVE_CUDA
    if (count == 0) return;
    std::vector<uint64_t> spans(2 * count);
    std::vector<int32_t> table_of(count, -1);
    std::vector<uint16_t> tables;
    uint64_t lo = UINT64_MAX, hi = 0, last_segment = UINT64_MAX;
    for (uint64_t k = 0; k < count; ++k) {
      const uint64_t r = begin + k;
      try {
        row_span(r, spans[2 * k], spans[2 * k + 1]);
      } catch (const Error&) {
        // The rows before it first, on the host: the error names the first
        // corrupt row, as a decode row by row does.
        std::vector<float> scratch(k * dim_);
        decode_rows(
            k, [&](size_t i) { return begin + i; }, [&](size_t i) { return scratch.data() + i * dim_; });
        throw;
      }
      lo = std::min(lo, spans[2 * k]);
      hi = std::max(hi, spans[2 * k + 1]);
      const DecodeTable* t = decoder(r / segment_rows_);
      if (t == raw_segment()) continue;
      if (r / segment_rows_ != last_segment) {
        last_segment = r / segment_rows_;
        tables.insert(tables.end(), t->entry.begin(), t->entry.end());
      }
      table_of[k] = static_cast<int32_t>(tables.size() / t->entry.size() - 1);
    }
    for (uint64_t& s : spans) s -= lo;
    DeviceBuffer d_codes(hi - lo), d_spans(spans.size() * 8), d_raw(count * dim_ * raw_bytes_),
        d_tables(tables.size() * 2), d_table_of(count * 4), d_out(count * dim_ * sizeof(float)),
        d_bad(sizeof(unsigned long long));
    d_codes.upload(codes_ + lo, hi - lo);
    d_spans.upload(spans.data(), d_spans.bytes());
    d_raw.upload(raw_ + begin * dim_ * raw_bytes_, d_raw.bytes());
    d_tables.upload(tables.data(), d_tables.bytes());
    d_table_of.upload(table_of.data(), d_table_of.bytes());
    unsigned long long bad = ~0ull;
    d_bad.upload(&bad, sizeof bad);
    cuda::LosslessRows s;
    s.values = values_;
    s.dim = dim_;
    s.codes = d_codes.as<uint8_t>();
    s.spans = d_spans.as<uint64_t>();
    s.raw = d_raw.as<uint8_t>();
    s.tables = d_tables.as<uint16_t>();
    s.table_of = d_table_of.as<int32_t>();
    cuda::decode_lossless(s, count, d_out.as<float>(), d_bad.as<unsigned long long>());
    check_cuda_launch("decode_lossless");
    d_bad.download(&bad, sizeof bad);
    if (bad != ~0ull) {
      std::vector<float> row(dim_);
      decode_row(begin + bad, row.data());  // throws its error
      fail(fmt::format("row {}: the GPU could not decode it", begin + bad));
    }
    d_out.download(out, d_out.bytes());
#else
    (void)begin, (void)count, (void)out;
#endif
  }

  static constexpr size_t kStreams = 4;

  struct Stream {
    const uint8_t *p, *begin, *end, *raw;
    const uint16_t* entry;
    float* out;
    uint64_t buf = 0;
    int64_t bits = 0;
    uint32_t bad = 0;
  };

  template <LosslessValues V, class RowOf, class DstOf>
  void decode_rows_as(size_t n, RowOf row, DstOf dst) const {
    Stream s[kStreams];
    size_t held = 0;
    size_t first[kStreams];
    auto flush = [&]() {
      if (held == kStreams && decode_streams<V, kStreams>(s)) return void(held = 0);
      for (size_t k = 0; k < held; ++k) decode_row_as<V>(row(first[k]), dst(first[k]));
      held = 0;
    };
    for (size_t k = 0; k < n; ++k) {
      const uint64_t r = row(k);
      uint64_t start, end;
      const DecodeTable* table;
      try {
        row_span(r, start, end);
        table = decoder(r / segment_rows_);
      } catch (const Error&) {
        flush();  // the held rows' error first, when one is corrupt
        throw;
      }
      if (table == raw_segment()) {
        flush();
        decode_row_as<V>(r, dst(k));
        continue;
      }
      s[held] = {codes_ + start,      codes_ + start, codes_ + end, raw_ + r * dim_ * raw_bytes_,
                 table->entry.data(), dst(k)};
      first[held++] = k;
      if (held == kStreams) flush();
    }
    flush();
  }

  // K rows decoded together from their streams into their outputs: five
  // symbols (55 bits at most) of each a refill of its bit buffer (at least
  // 56 bits after it). False when any is corrupt: a code not in its table,
  // or codes that do not take exactly its row's bytes. A load never starts
  // at or beyond a stream's end, which lies kLosslessCodePad or more bytes
  // before the section's end.
  template <LosslessValues V, size_t K>
  bool decode_streams(Stream* s) const {
    constexpr uint64_t kMask = (uint64_t{1} << kLosslessMaxCodeBits) - 1;
    constexpr uint64_t kPerRefill = 56 / kLosslessMaxCodeBits;
    const uint64_t n = dim_;
    uint64_t j = 0;
    auto step = [&](uint64_t count) {
      for (size_t t = 0; t < K; ++t) {
        Stream& st = s[t];
        if (st.bits < 0) st.bad = 1, st.bits = 0;
        if (st.p < st.end) {
          st.buf |= load_u64(st.p) << st.bits;
          st.p += (63 - st.bits) >> 3;
          st.bits |= 56;
        }
      }
      for (uint64_t k = 0; k < count; ++k, ++j)
        for (size_t t = 0; t < K; ++t) {
          Stream& st = s[t];
          const uint32_t e = st.entry[st.buf & kMask];
          const uint32_t len = e >> 8;
          st.bad |= static_cast<uint32_t>(len == 0);
          st.buf >>= len;
          st.bits -= len;
          store<V>(st.out, j, e & 0xffu, raw_part<V>(st.raw, j));
        }
    };
    while (j + kPerRefill <= n) step(kPerRefill);
    if (j < n) step(n - j);
    bool ok = true;
    for (size_t t = 0; t < K; ++t) {
      const Stream& st = s[t];
      const auto used =
          static_cast<uint64_t>(st.p - st.begin) - static_cast<uint64_t>(std::max<int64_t>(st.bits, 0)) / 8;
      ok = ok && !st.bad && st.bits >= 0 && used == static_cast<uint64_t>(st.end - st.begin);
    }
    if constexpr (V == LosslessValues::f16)
      if (ok)
        for (size_t t = 0; t < K; ++t) widen_halves(s[t].out, n);
    return ok;
  }

  void decode_row(uint64_t r, float* out) const {
    switch (values_) {
      case LosslessValues::bf16:
        return decode_row_as<LosslessValues::bf16>(r, out);
      case LosslessValues::f16:
        return decode_row_as<LosslessValues::f16>(r, out);
      case LosslessValues::f32:
        break;
    }
    decode_row_as<LosslessValues::f32>(r, out);
  }

  template <LosslessValues V>
  void decode_row_as(uint64_t r, float* out) const {
    uint64_t start, end;
    row_span(r, start, end);
    const uint8_t* raw = raw_ + r * dim_ * raw_bytes_;
    const DecodeTable* table = decoder(r / segment_rows_);
    if (table == raw_segment()) {
      if (end - start != dim_) fail(fmt::format("row {}: {} code bytes, a raw row holds {}", r, end - start, dim_));
      const uint8_t* sym = codes_ + start;
      for (uint64_t j = 0; j < dim_; ++j) store<V>(out, j, sym[j], raw_part<V>(raw, j));
      if constexpr (V == LosslessValues::f16) widen_halves(out, dim_);
      return;
    }
    Stream one{codes_ + start, codes_ + start, codes_ + end, raw, table->entry.data(), out};
    if (!decode_streams<V, 1>(&one))
      fail(fmt::format("row {}: its code bits do not decode to {} values in {} bytes", r, dim_, end - start));
  }

  // Value j of a row as its type reads: fp16 bits are held in the float's
  // slot until the row is whole, then widened together (widen_halves).
  template <LosslessValues V>
  static void store(float* out, uint64_t j, uint32_t symbol, uint32_t raw) {
    if constexpr (V == LosslessValues::f16) {
      const uint32_t bits = lossless_join(symbol, raw, 16);
      std::memcpy(out + j, &bits, sizeof bits);
    } else {
      out[j] = lossless_value(V, symbol, raw);
    }
  }

  // The n fp16 bit patterns held in out's slots, widened in place exactly as
  // half_bits_to_float does: eight at a time by F16C, whose NaNs (made quiet
  // there) are put back from their bits.
  static void widen_halves(float* out, uint64_t n) {
    uint64_t j = 0;
#ifdef __AVX2__
    const __m256i low = _mm256_set1_epi32(0x7fff), inf = _mm256_set1_epi32(0x7c00);
    for (; j + 8 <= n; j += 8) {
      const __m256i h = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(out + j));
      const __m256 wide = _mm256_cvtph_ps(pack_halves(h));
      const __m256i nan = _mm256_cmpgt_epi32(_mm256_and_si256(h, low), inf);
      const __m256i exact =
          _mm256_or_si256(_mm256_or_si256(_mm256_slli_epi32(_mm256_and_si256(h, _mm256_set1_epi32(0x8000)), 16),
                                          _mm256_set1_epi32(0x7f800000)),
                          _mm256_slli_epi32(_mm256_and_si256(h, _mm256_set1_epi32(0x3ff)), 13));
      _mm256_storeu_ps(out + j, _mm256_blendv_ps(wide, _mm256_castsi256_ps(exact), _mm256_castsi256_ps(nan)));
    }
#endif
    for (; j < n; ++j) {
      uint32_t bits;
      std::memcpy(&bits, out + j, sizeof bits);
      out[j] = half_bits_to_float(static_cast<uint16_t>(bits));
    }
  }

#ifdef __AVX2__
  // Eight 32-bit lanes holding 16-bit values, packed to eight u16 in order.
  static __m128i pack_halves(__m256i v) {
    const __m256i packed = _mm256_packus_epi32(v, v);  // lanes 0-3, 0-3 | 4-7, 4-7 in each 128-bit half
    return _mm256_castsi256_si128(_mm256_permute4x64_epi64(packed, 0x08));
  }
#endif

  template <LosslessValues V>
  static uint32_t raw_part(const uint8_t* raw, uint64_t j) {
    if constexpr (V != LosslessValues::f32) {
      return raw[j];
    } else {
      const uint8_t* p = raw + 3 * j;
      return uint32_t{p[0]} | uint32_t{p[1]} << 8 | uint32_t{p[2]} << 16;
    }
  }

  std::string path_;
  uint64_t dim_ = 0;
  LosslessValues values_ = LosslessValues::f32;
  uint32_t raw_bytes_ = 3;
  uint64_t block_rows_ = 1, segment_rows_ = 1, blocks_count_ = 0, segments_ = 0, codes_end_ = 0;
  bool lengths_ = true;  // the rows section holds lengths, not offsets
  const uint8_t *raw_ = nullptr, *tables_ = nullptr, *blocks_ = nullptr, *rows_ = nullptr, *codes_ = nullptr;
  std::unique_ptr<std::atomic<const DecodeTable*>[]> decoders_;
  std::shared_ptr<const detail::FirstReadCheck> check_;
};

}  // namespace

std::unique_ptr<TierView> open_lossless_tier(const io::Container& c, const io::TierInfo& info,
                                             const nlohmann::json& jt) {
  try {
    return std::make_unique<LosslessTier>(c, info, jt);
  } catch (const Error& e) {
    if (e.code() == ExitCode::usage) EDO_CORRUPT_FAIL("{}: tier '{}': {}", c.path(), info.name, e.what());
    throw;
  }
}

}  // namespace edo
