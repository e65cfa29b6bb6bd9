// SPDX-License-Identifier: Apache-2.0
#include "rec_proxies.hpp"

#include <edo/error.hpp>
#include <edo/random.hpp>
#include <edo/word_tasks.hpp>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

namespace edo::detail {

namespace {

// NaN ranks worst, so a broken row always shows.
bool worse(double a, double b) { return (std::isnan(a) && !std::isnan(b)) || a > b; }

double relative_error(double err2, double norm2) {
  if (norm2 == 0) return err2 == 0 ? 0.0 : std::numeric_limits<double>::infinity();
  return std::sqrt(err2 / norm2);
}

// ceil(n / 1000), at least 1: the nearest rank of the worst 0.1%.
uint64_t worst_rank(uint64_t n) { return std::max<uint64_t>(1, (n + 999) / 1000); }

// Seeds of their own, so adding a proxy never changes another's draw.
constexpr uint64_t kBagSeed = 0x6261677320707278ULL, kPairSeed = 0x646f742070616972ULL;

std::vector<uint64_t> draw_ids(uint64_t rows, const std::vector<double>& freq, uint64_t count, uint64_t seed) {
  if (!freq.empty()) return sample_weighted_ids(freq, count, seed);
  Rng rng(seed);
  std::vector<uint64_t> ids(count);
  for (auto& id : ids) id = rng.below(rows);
  return ids;
}

}  // namespace

void WorstValues::add(double v) {
  // Under `worse` as the heap order the top is the least bad value kept.
  if (heap_.size() < keep_) {
    heap_.push_back(v);
    std::push_heap(heap_.begin(), heap_.end(), worse);
  } else if (keep_ > 0 && worse(v, heap_.front())) {
    std::pop_heap(heap_.begin(), heap_.end(), worse);
    heap_.back() = v;
    std::push_heap(heap_.begin(), heap_.end(), worse);
  }
}

double WorstValues::worst(uint64_t rank) const {
  if (rank == 0 || rank > heap_.size()) return std::numeric_limits<double>::quiet_NaN();
  std::vector<double> sorted = heap_;
  std::sort(sorted.begin(), sorted.end(), worse);
  return sorted[rank - 1];
}

RecProxies::RecProxies(uint64_t rows, uint64_t dim, const EvalOptions& opts) : dim_(dim), opts_(opts) {
  if (!opts.freq.empty()) {
    freq_sum_ = std::accumulate(opts.freq.begin(), opts.freq.end(), 0.0);
    // Rows by frequency, most looked-up first (ties: lower id first); a row
    // is in the head while the lookups before it are under half of all.
    std::vector<uint64_t> order(rows);
    std::iota(order.begin(), order.end(), uint64_t{0});
    std::stable_sort(order.begin(), order.end(), [&](uint64_t a, uint64_t b) { return opts.freq[a] > opts.freq[b]; });
    bucket_of_.resize(rows);
    std::vector<uint64_t> bucket_rows(3, 0);
    double before = 0;
    for (uint64_t r : order) {
      const double share = before / freq_sum_;
      const uint8_t b = opts.freq[r] == 0 ? 2 : share < kBucketEnds[0] ? 0 : share < kBucketEnds[1] ? 1 : 2;
      bucket_of_[r] = b;
      ++bucket_rows[b];
      before += opts.freq[r];
    }
    for (uint64_t n : bucket_rows)
      buckets_.push_back({RowErrorStats(dim), WorstValues(worst_rank(n)), WorstValues(worst_rank(n)), 0, 0});
    group_lookups_.assign(opts.group_names.size(), 0);
  }
  if (opts.bags > 0 && opts.bag_size > 0) {
    const auto ids = draw_ids(rows, opts.freq, opts.bags * opts.bag_size, opts.seed ^ kBagSeed);
    for (uint64_t i = 0; i < ids.size(); ++i) bag_draws_.push_back({ids[i], static_cast<uint32_t>(i / opts.bag_size)});
    bag_x_.assign(opts.bags * dim, 0);
    bag_y_.assign(opts.bags * dim, 0);
  }
  if (opts.dot_pairs > 0) {
    const auto ids = draw_ids(rows, opts.freq, 2 * opts.dot_pairs, opts.seed ^ kPairSeed);
    for (uint64_t i = 0; i < ids.size(); ++i) pair_draws_.push_back({ids[i], static_cast<uint32_t>(i)});
    pair_x_.assign(ids.size() * dim, 0);
    pair_y_.assign(ids.size() * dim, 0);
  }
  const auto by_row = [](const Draw& a, const Draw& b) { return a.row != b.row ? a.row < b.row : a.slot < b.slot; };
  std::sort(bag_draws_.begin(), bag_draws_.end(), by_row);
  std::sort(pair_draws_.begin(), pair_draws_.end(), by_row);
}

void RecProxies::add(uint64_t begin, uint64_t n, const float* x, const float* y, const RowError* errors) {
  if (!bucket_of_.empty()) {
    for (uint64_t i = 0; i < n; ++i) {
      const double f = opts_.freq[begin + i];
      Bucket& b = buckets_[bucket_of_[begin + i]];
      b.weighted.add(errors[i], f);
      b.low_cos.add(-errors[i].cos);  // worse = higher: the lowest cosines
      b.high_rel.add(relative_error(errors[i].err2, errors[i].norm2));
      ++b.rows;
      b.lookups += f;
      if (!opts_.groups.empty()) group_lookups_[opts_.groups[begin + i]] += f;
    }
  }
  const uint64_t end = begin + n;
  for (; bag_next_ < bag_draws_.size() && bag_draws_[bag_next_].row < end; ++bag_next_) {
    const Draw& d = bag_draws_[bag_next_];
    const uint64_t off = (d.row - begin) * dim_;
    double* sx = &bag_x_[d.slot * dim_];
    double* sy = &bag_y_[d.slot * dim_];
    for (uint64_t j = 0; j < dim_; ++j) {
      sx[j] += x[off + j];
      sy[j] += y[off + j];
    }
  }
  for (; pair_next_ < pair_draws_.size() && pair_draws_[pair_next_].row < end; ++pair_next_) {
    const Draw& d = pair_draws_[pair_next_];
    const uint64_t off = (d.row - begin) * dim_;
    std::copy_n(x + off, dim_, &pair_x_[d.slot * dim_]);
    std::copy_n(y + off, dim_, &pair_y_[d.slot * dim_]);
  }
}

void RecProxies::report(EvalResult& r) const {
  for (size_t b = 0; b < buckets_.size(); ++b) {
    const std::string name = kBucketNames[b];
    const Bucket& bucket = buckets_[b];
    r.set(name + ".rows", static_cast<double>(bucket.rows));
    r.set(name + ".lookups", bucket.lookups / freq_sum_);
    if (bucket.rows == 0) continue;
    const RowErrorSummary s = bucket.weighted.finish();
    if (s.rows > 0) {  // rows looked up at least once
      r.set(name + ".rel_fro", s.rel_fro);
      r.set(name + ".cos.mean", s.cos_mean);
    }
    const uint64_t rank = worst_rank(bucket.rows);
    r.set(name + ".cos.p0.1", -bucket.low_cos.worst(rank));
    r.set(name + ".rel_err.p99.9", bucket.high_rel.worst(rank));
  }
  if (!group_lookups_.empty() && !opts_.groups.empty()) {
    double fallback = 0;
    for (size_t g = 0; g < group_lookups_.size(); ++g) {
      r.set(opts_.group_names[g] + ".lookups", group_lookups_[g] / freq_sum_);
      if (std::find(opts_.fallback_groups.begin(), opts_.fallback_groups.end(), g) != opts_.fallback_groups.end())
        fallback += group_lookups_[g];
    }
    r.set("fallback.lookups", fallback / freq_sum_);
  }
  if (!bag_x_.empty()) {
    std::vector<double> rel(opts_.bags);
    for (uint64_t b = 0; b < opts_.bags; ++b) {
      double err2 = 0, norm2 = 0;
      for (uint64_t j = 0; j < dim_; ++j) {
        const double a = bag_x_[b * dim_ + j], d = a - bag_y_[b * dim_ + j];
        err2 += d * d;
        norm2 += a * a;
      }
      rel[b] = relative_error(err2, norm2);
    }
    r.set("bag.rel_err.mean", std::accumulate(rel.begin(), rel.end(), 0.0) / static_cast<double>(rel.size()));
    std::vector<double> sorted = rel;
    std::sort(sorted.begin(), sorted.end(), [](double a, double b) { return worse(b, a); });
    // Nearest rank: the ceil(0.99 n)-th smallest.
    r.set("bag.rel_err.p99", sorted[(sorted.size() * 99 + 99) / 100 - 1]);
  }
  if (!pair_x_.empty()) {
    std::vector<double> dx(opts_.dot_pairs), dy(opts_.dot_pairs);
    double err2 = 0, norm2 = 0;
    for (uint64_t p = 0; p < opts_.dot_pairs; ++p) {
      const float *a = &pair_x_[2 * p * dim_], *b = &pair_x_[(2 * p + 1) * dim_];
      const float *c = &pair_y_[2 * p * dim_], *d = &pair_y_[(2 * p + 1) * dim_];
      double sx = 0, sy = 0;
      for (uint64_t j = 0; j < dim_; ++j) {
        sx += static_cast<double>(a[j]) * b[j];
        sy += static_cast<double>(c[j]) * d[j];
      }
      dx[p] = sx;
      dy[p] = sy;
      err2 += (sy - sx) * (sy - sx);
      norm2 += sx * sx;
    }
    r.set("dot.rel_err", relative_error(err2, norm2));
    r.set("dot.rho", spearman_rho(dx, dy));
  }
}

}  // namespace edo::detail
