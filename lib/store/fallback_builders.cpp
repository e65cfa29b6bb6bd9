// The writing half of the fallback kinds for dropped rows ("zero",
// "centroids:C"; "default" is in table_writer.cpp): docs/FORMAT.md 9.4.
#include <edo/codec.hpp>
#include <edo/error.hpp>
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

}  // namespace

std::unique_ptr<TierBuilder> make_fallback_tier_builder(TierKind kind, const std::string& spec, uint64_t dim,
                                                        const EncodeOptions& enc) {
  if (kind == TierKind::zero) return std::make_unique<ZeroTierBuilder>();
  return std::make_unique<CentroidTierBuilder>(spec, dim, enc);
}

}  // namespace edo
