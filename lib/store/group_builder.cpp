// SPDX-License-Identifier: Apache-2.0
// The writing half of group-shared tiers (hash.hpp, GroupSpec): each group's
// base vector is the access-weighted mean of its rows (the least-squares
// base for rows that keep no residual), groups come from k-means of the
// tier's training sample or from labels, and each row stores its residual
// from the base in the residual codec, trained on the sample's residuals.
// Memory: the bases, 12 bytes a row of the tier (ids and groups), a block.
#include <edo/codec.hpp>
#include <edo/error.hpp>
#include <edo/hash.hpp>
#include <edo/io/table.hpp>
#include <edo/make_codec.hpp>
#include <edo/pq.hpp>
#include <edo/table_writer.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>

namespace edo {

namespace {

class GroupTierBuilder final : public TierBuilder {
 public:
  GroupTierBuilder(const std::string& spec, uint64_t dim, const EncodeOptions& enc, const HashFitOptions& fit)
      : spec_(parse_group_spec(spec, dim)), dim_(dim), enc_(enc), labels_(fit.group_labels) {
    if (spec_.from_labels && labels_ != nullptr && !labels_->empty()) {
      const int64_t top = *std::max_element(labels_->begin(), labels_->end());
      if (*std::min_element(labels_->begin(), labels_->end()) < 0)
        EDO_USAGE_FAIL("'{}': a group label is negative", spec);
      if (static_cast<uint64_t>(top) >= kMaxCentroids)
        EDO_USAGE_FAIL("'{}': group label {} is beyond the {} groups a tier holds", spec, top, kMaxCentroids);
      spec_.groups = static_cast<uint64_t>(top) + 1;
    }
    if (spec_.residual != "none") residual_ = make_codec(spec_.residual, dim);
    index_bytes_ = centroid_index_bytes(spec_.groups);
  }

  std::string codec() const override { return format_group_spec(spec_); }
  uint64_t code_size() const override { return index_bytes_ + (residual_ ? residual_->code_size() : 0); }
  bool needs_training() const override { return true; }
  ShardNeed shard_need() const override { return ShardNeed::unshardable; }

  void prepare(io::TableReader& input, const TableLayout& layout, uint8_t self) override {
    input_ = &input;
    name_ = layout.tiers[self].name;
    if (spec_.from_labels && (labels_ == nullptr || labels_->empty()))
      EDO_USAGE_FAIL("tier '{}': group:labels needs the labels (edo-hash --group-labels FILE)", name_);
    if (labels_ && !labels_->empty() && labels_->size() != input.rows())
      EDO_USAGE_FAIL("tier '{}': {} group labels for {} rows", name_, labels_->size(), input.rows());
    double mass = 0;
    for (uint64_t r = 0; r < input.rows(); ++r)
      if (layout.tier_of_row.empty() || layout.tier_of_row[r] == self) {
        ids_.push_back(r);
        mass += layout.freq.empty() ? 0.0 : layout.freq[r];
      }
    for (uint64_t r : ids_) freq_.push_back(mass > 0 ? layout.freq[r] : 1.0);
  }

  // Groups (k-means on the sample, or the labels), then each group's
  // weighted mean by one pass over the tier, then the residual codec.
  void train(const float* x, size_t n, const uint64_t* row_ids, uint64_t seed) override {
    EncodeOptions enc = enc_;
    enc.row_ids = row_ids;
    check_finite(x, n, dim_, 0x7f800000u, codec(), enc, false);
    std::vector<float> centroids;
    if (!spec_.from_labels) {
      if (n < spec_.groups)
        EDO_USAGE_FAIL("tier '{}': {} clusters need at least as many rows to fit, the tier's sample has {}", name_,
                       spec_.groups, n);
      KmeansOptions ko;
      ko.seed = seed;
      ko.device = enc_.device;
      centroids = kmeans(x, n, dim_, spec_.groups, ko);
    }
    assign_rows(centroids);
    if (!residual_) return;
    std::vector<float> residuals(n * dim_);
    for (size_t i = 0; i < n; ++i) {
      const size_t local = static_cast<size_t>(std::lower_bound(ids_.begin(), ids_.end(), row_ids[i]) - ids_.begin());
      const float* b = base_.data() + group_[local] * dim_;
      for (uint64_t j = 0; j < dim_; ++j) residuals[i * dim_ + j] = x[i * dim_ + j] - b[j];
    }
    if (residual_->needs_training()) residual_->train(residuals.data(), n, seed);
  }

  // The residual codes stream into the file; the groups (already in
  // memory) are written at the end.
  void begin(io::ContainerWriter& writer, const std::string& prefix) override {
    recon_ = std::make_unique<RowErrorStats>(dim_);
    writer_ = &writer;
    if (residual_) writer.begin_section(prefix + "codes");
  }

  void add(const float* x, size_t n, const uint64_t* row_ids, const double* weights) override {
    const auto t0 = std::chrono::steady_clock::now();
    std::vector<float> residual(n * dim_), decoded(n * dim_);
    for (size_t i = 0; i < n; ++i) {
      const float* b = base_.data() + group_[added_ + i] * dim_;
      for (uint64_t j = 0; j < dim_; ++j) residual[i * dim_ + j] = x[i * dim_ + j] - b[j];
    }
    if (residual_) {
      EncodeOptions enc = enc_;
      enc.row_ids = row_ids;
      enc.allow_underflow = true;  // a residual is judged against its row, by the error report
      enc.input = enc_.input + " (residuals from the group bases)";
      codes_.resize(n * residual_->code_size());
      residual_->encode(residual.data(), n, codes_.data(), enc);
      residual_->decode(codes_.data(), n, decoded.data());
      writer_->append(codes_.data(), codes_.size());
    }
    for (size_t i = 0; i < n; ++i) {
      const float* b = base_.data() + group_[added_ + i] * dim_;
      float* y = decoded.data() + i * dim_;
      for (uint64_t j = 0; j < dim_; ++j) y[j] = residual_ ? b[j] + y[j] : b[j];
      const RowError e = row_error(x + i * dim_, y, dim_);
      recon_->add(e);
      const double w = weights ? weights[i] : 1.0;
      err_ += w * e.err2;
      norm_ += w * e.norm2;
    }
    added_ += n;
    encode_seconds_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  }

  uint64_t finish(io::ContainerWriter& writer, const std::string& prefix, nlohmann::json& entry) override {
    nlohmann::json sections = nlohmann::json::object();
    if (residual_) {
      writer.end_section();
      sections["codes"] = prefix + "codes";
      section_bytes_ = {{"codes", added_ * residual_->code_size()}};
    }
    const auto put = [&](const std::string& role, const void* data, uint64_t bytes) {
      writer.add_section(prefix + role, data, bytes);
      sections[role] = prefix + role;
      section_bytes_.emplace_back(role, bytes);
    };
    std::vector<uint8_t> index(group_.size() * index_bytes_);
    for (size_t p = 0; p < group_.size(); ++p) std::memcpy(index.data() + p * index_bytes_, &group_[p], index_bytes_);
    put("assign", index.data(), index.size());
    put("base", base_.data(), base_.size() * sizeof(float));
    nlohmann::json shapes = nlohmann::json::object(), dtypes = nlohmann::json::object();
    if (residual_) {
      for (const NamedBlob& blob : residual_->state()) {
        const std::vector<uint8_t> bytes = state_section_bytes(blob);
        put(blob.name, bytes.data(), bytes.size());
        shapes[blob.name] = blob.shape;
        if (blob.storage != StateStorage::f32) dtypes[blob.name] = state_dtype_name(blob.storage);
      }
    }
    if (!dtypes.empty()) entry["state_dtypes"] = dtypes;
    uint64_t bytes = 0;
    for (const auto& [role, b] : section_bytes_) bytes += b;
    entry.update({{"codec", codec()},
                  {"code_size", code_size()},
                  {"sections", sections},
                  {"state_shapes", shapes},
                  {"fit",
                   {{"method", spec_.from_labels ? "labels, weighted means" : "k-means groups, weighted means"},
                    {"iterations", 0},
                    {"residual", 0},
                    {"converged", true},
                    {"weighted_relative_error", norm_ > 0 ? std::sqrt(err_ / norm_) : 0.0}}},
                  {"collisions", collisions()}});
    return bytes;
  }

 private:
  // Each row's group (the labels, or its nearest centroid) and each
  // group's weighted mean, by one pass over the tier; a group no row
  // joined keeps its centroid (zeros for labels).
  void assign_rows(const std::vector<float>& centroids) {
    group_.resize(ids_.size());
    std::vector<double> sum(spec_.groups * dim_, 0.0), mass(spec_.groups, 0.0);
    const uint64_t block = input_->block_rows(io::kDefaultBlockBytes);
    std::vector<float> rows;
    std::vector<uint32_t> nearest;
    for (size_t a = 0; a < ids_.size();) {
      size_t b = a;
      while (b < ids_.size() && ids_[b] < ids_[a] + block) ++b;
      rows.resize((b - a) * dim_);
      for (size_t p = a; p < b; ++p) input_->read_f32(ids_[p], 1, rows.data() + (p - a) * dim_);
      if (spec_.from_labels) {
        for (size_t p = a; p < b; ++p) group_[p] = static_cast<uint32_t>((*labels_)[ids_[p]]);
      } else {
        nearest.resize(b - a);
        nearest_centroids(rows.data(), b - a, dim_, centroids.data(), spec_.groups, nearest.data(), enc_.device);
        std::copy(nearest.begin(), nearest.end(), group_.begin() + static_cast<long>(a));
      }
      for (size_t p = a; p < b; ++p) {
        mass[group_[p]] += freq_[p];
        for (uint64_t j = 0; j < dim_; ++j) sum[group_[p] * dim_ + j] += freq_[p] * rows[(p - a) * dim_ + j];
      }
      a = b;
    }
    base_.assign(spec_.groups * dim_, 0.0f);
    for (uint64_t g = 0; g < spec_.groups; ++g)
      for (uint64_t j = 0; j < dim_; ++j)
        base_[g * dim_ + j] = mass[g] > 0         ? static_cast<float>(sum[g * dim_ + j] / mass[g])
                              : centroids.empty() ? 0.0f
                                                  : centroids[g * dim_ + j];
  }

  nlohmann::json collisions() const {
    std::vector<uint64_t> load(spec_.groups, 0);
    std::vector<double> mass(spec_.groups, 0.0);
    double total = 0;
    for (size_t p = 0; p < group_.size(); ++p) ++load[group_[p]], mass[group_[p]] += freq_[p], total += freq_[p];
    return {{"buckets", spec_.groups},
            {"rows", ids_.size()},
            {"max_rows", *std::max_element(load.begin(), load.end())},
            {"mean_rows", static_cast<double>(ids_.size()) / static_cast<double>(spec_.groups)},
            {"empty", std::count(load.begin(), load.end(), 0)},
            {"max_mass", total > 0 ? *std::max_element(mass.begin(), mass.end()) / total : 0.0}};
  }

  GroupSpec spec_;
  uint64_t dim_;
  EncodeOptions enc_;
  const std::vector<int64_t>* labels_;
  std::unique_ptr<Codec> residual_;
  uint32_t index_bytes_ = 0;
  io::TableReader* input_ = nullptr;
  io::ContainerWriter* writer_ = nullptr;
  std::string name_;
  std::vector<uint64_t> ids_;
  std::vector<double> freq_;
  std::vector<uint32_t> group_;
  std::vector<float> base_;
  std::vector<uint8_t> codes_;
  uint64_t added_ = 0;
  double err_ = 0, norm_ = 0;
};

}  // namespace

std::unique_ptr<TierBuilder> make_group_tier_builder(const std::string& spec, uint64_t dim, const EncodeOptions& enc,
                                                     const HashFitOptions& fit) {
  return std::make_unique<GroupTierBuilder>(spec, dim, enc, fit);
}

}  // namespace edo
