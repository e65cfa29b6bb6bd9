// SPDX-License-Identifier: Apache-2.0
// The writing half of the fallback kinds for dropped rows ("zero",
// "centroids:C", "nearest"; "default" is in table_writer.cpp): docs/FORMAT.md 9.4.
#include <edo/codec.hpp>
#include <edo/error.hpp>
#include <edo/knn.hpp>
#include <edo/pq.hpp>
#include <edo/table_writer.hpp>

#include <cstring>

namespace edo {

namespace {

class ZeroTierBuilder final : public TierBuilder {
 public:
  std::string codec() const override { return tier_kind_word(TierKind::zero); }
  void add(const float*, size_t, const uint64_t*, const double*) override {}
  uint64_t finish(io::ContainerWriter&, const std::string&, nlohmann::json& entry) override {
    entry.update({{"codec", codec()}, {"code_size", 0}, {"sections", nlohmann::json::object()}});
    return 0;
  }
};

// C k-means centroids of the tier's rows (its training sample), each row
// stored as the index of its nearest centroid (l2, ties to the lower index).
class CentroidTierBuilder final : public TierBuilder {
 public:
  CentroidTierBuilder(const std::string& spec, uint64_t dim, const EncodeOptions& enc)
      : count_(centroid_count(spec)), dim_(dim), enc_(enc), index_bytes_(centroid_index_bytes(count_)) {}

  std::string codec() const override { return fmt::format("centroids:{}", count_); }
  uint64_t code_size() const override { return index_bytes_; }
  bool needs_training() const override { return true; }

  void train(const float* x, size_t n, const uint64_t* row_ids, uint64_t seed) override {
    check_rows(x, n, row_ids);
    if (n < count_)
      EDO_USAGE_FAIL("{}: centroids:{} needs at least {} rows to fit, the tier's sample has {}", enc_.input, count_,
                     count_, n);
    KmeansOptions opt;
    opt.seed = seed;
    opt.device = enc_.device;
    centroids_ = kmeans(x, n, dim_, count_, opt);
  }

  std::vector<NamedBlob> trained_state() const override { return {{"centroids", {count_, dim_}, centroids_}}; }

  void load_trained(const TrainedTier& state) override {
    if (state.blobs.size() != 1 || state.blobs[0].name != "centroids" || state.blobs[0].values.size() != count_ * dim_)
      EDO_USAGE_FAIL("--trained: tier '{}' holds no {} centroids of {} values", state.name, count_, dim_);
    centroids_ = state.blobs[0].values;
  }

  void begin(io::ContainerWriter& writer, const std::string& prefix) override {
    writer_ = &writer;
    writer.begin_section(prefix + "assign");
  }

  void add(const float* x, size_t n, const uint64_t* row_ids, const double*) override {
    check_rows(x, n, row_ids);
    assign_.resize(n);
    nearest_centroids(x, n, dim_, centroids_.data(), count_, assign_.data(), enc_.device);
    bytes_.resize(n * index_bytes_);
    for (size_t i = 0; i < n; ++i) std::memcpy(bytes_.data() + i * index_bytes_, &assign_[i], index_bytes_);
    writer_->append(bytes_.data(), bytes_.size());
    rows_ += n;
  }

  uint64_t finish(io::ContainerWriter& writer, const std::string& prefix, nlohmann::json& entry) override {
    writer.end_section();
    writer.add_section(prefix + "centroids", centroids_.data(), centroids_.size() * sizeof(float));
    section_bytes_ = {{"assign", rows_ * index_bytes_}, {"centroids", centroids_.size() * sizeof(float)}};
    entry.update({{"codec", codec()},
                  {"code_size", index_bytes_},
                  {"sections", {{"assign", prefix + "assign"}, {"centroids", prefix + "centroids"}}}});
    return rows_ * index_bytes_ + centroids_.size() * sizeof(float);
  }

 private:
  void check_rows(const float* x, size_t n, const uint64_t* row_ids) const {
    EncodeOptions enc = enc_;
    enc.row_ids = row_ids;
    check_finite(x, n, dim_, 0x7f800000u, codec(), enc, false);
  }

  uint64_t count_, dim_;
  EncodeOptions enc_;
  uint32_t index_bytes_;
  std::vector<float> centroids_;
  io::ContainerWriter* writer_ = nullptr;
  std::vector<uint32_t> assign_;
  std::vector<uint8_t> bytes_;
  uint64_t rows_ = 0;
};

// Each row of the tier answered by its nearest row (cos or l2, exact k-NN,
// ties to the lower row) among the rows the file stores (codec and sparse
// tiers), found by one pass over the input per block of the tier's rows.
class NearestTierBuilder final : public TierBuilder {
 public:
  NearestTierBuilder(const std::string& spec, uint64_t dim, const EncodeOptions& enc)
      : metric_(nearest_metric(spec)), dim_(dim), enc_(enc) {}

  std::string codec() const override { return metric_ == Metric::l2 ? "nearest:l2" : "nearest:cos"; }
  uint64_t code_size() const override { return target_bytes_; }
  // A shard's rows are searched among the stored rows of the whole table,
  // which prepare() is given.
  ShardNeed shard_need() const override { return ShardNeed::table; }

  void prepare(io::TableReader& input, const TableLayout& layout, uint8_t self) override {
    input_ = &input;
    target_bytes_ = input.rows() <= UINT32_MAX ? 4 : 8;
    std::vector<bool> stored(layout.tiers.size());
    for (size_t t = 0; t < layout.tiers.size(); ++t) {
      const TierKind kind = tier_kind_of(layout.tiers[t].codec);
      stored[t] = t != self && (kind == TierKind::codec || kind == TierKind::sparse);
    }
    for (uint64_t r = 0; r < layout.tier_of_row.size(); ++r)
      if (stored[layout.tier_of_row[r]]) kept_.push_back(r);
    if (kept_.empty())
      EDO_USAGE_FAIL("tier '{}': nearest needs rows the file keeps to point at (a codec or sparse tier)",
                     layout.tiers[self].name);
  }

  void begin(io::ContainerWriter& writer, const std::string& prefix) override {
    writer_ = &writer;
    writer.begin_section(prefix + "target");
  }

  void add(const float* x, size_t n, const uint64_t* row_ids, const double*) override {
    EncodeOptions enc = enc_;
    enc.row_ids = row_ids;
    check_finite(x, n, dim_, 0x7f800000u, codec(), enc, false);
    KnnOptions opt;
    opt.metric = metric_;
    opt.k = 1;
    opt.device = enc_.device;
    KnnSearch search(MatrixView{x, n, dim_}, opt);  // copies x before the input is read again
    const uint64_t block = input_->block_rows(io::kDefaultBlockBytes);
    std::vector<float> kept_rows;
    for (size_t next = 0; next < kept_.size();) {
      const uint64_t begin = kept_[next], end = std::min(input_->rows(), begin + block);
      const float* rows = input_->rows_f32(begin, end - begin);
      kept_rows.clear();
      for (; next < kept_.size() && kept_[next] < end; ++next)
        kept_rows.insert(kept_rows.end(), rows + (kept_[next] - begin) * dim_, rows + (kept_[next] - begin + 1) * dim_);
      search.add(kept_rows.data(), kept_rows.size() / dim_);
    }
    const KnnResult result = search.finish();
    bytes_.assign(n * target_bytes_, 0);
    for (size_t i = 0; i < n; ++i) {
      const int64_t k = result.ids_of(i)[0];
      const uint64_t target = k >= 0 ? kept_[static_cast<size_t>(k)] : kept_[0];  // NaN scores: the first kept row
      std::memcpy(bytes_.data() + i * target_bytes_, &target, target_bytes_);     // little-endian low bytes
    }
    writer_->append(bytes_.data(), bytes_.size());
    rows_ += n;
  }

  uint64_t finish(io::ContainerWriter& writer, const std::string& prefix, nlohmann::json& entry) override {
    writer.end_section();
    section_bytes_ = {{"target", rows_ * target_bytes_}};
    entry.update({{"codec", codec()},
                  {"code_size", target_bytes_},
                  {"target_bytes", target_bytes_},
                  {"sections", {{"target", prefix + "target"}}}});
    return rows_ * target_bytes_;
  }

 private:
  Metric metric_;
  uint64_t dim_;
  EncodeOptions enc_;
  io::TableReader* input_ = nullptr;
  uint32_t target_bytes_ = 4;
  std::vector<uint64_t> kept_;  // table rows of the stored tiers, ascending
  io::ContainerWriter* writer_ = nullptr;
  std::vector<uint8_t> bytes_;
  uint64_t rows_ = 0;
};

}  // namespace

std::unique_ptr<TierBuilder> make_fallback_tier_builder(TierKind kind, const std::string& spec, uint64_t dim,
                                                        const EncodeOptions& enc) {
  if (kind == TierKind::zero) return std::make_unique<ZeroTierBuilder>();
  if (kind == TierKind::nearest) return std::make_unique<NearestTierBuilder>(spec, dim, enc);
  return std::make_unique<CentroidTierBuilder>(spec, dim, enc);
}

}  // namespace edo
