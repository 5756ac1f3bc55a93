#include "bench/histogram.h"

#include <algorithm>
#include <bit>
#include <cmath>

namespace clustermax::bench {
namespace {
constexpr int kSubBits = 7;  // 128 buckets per octave
constexpr uint64_t kSub = uint64_t{1} << kSubBits;
constexpr size_t kBuckets = (64 - kSubBits + 1) * kSub;
}  // namespace

LatencyHistogram::LatencyHistogram() : buckets_(kBuckets, 0) {}

size_t LatencyHistogram::BucketIndex(uint64_t ns) {
  if (ns < kSub) return static_cast<size_t>(ns);
  int shift = std::bit_width(ns) - 1 - kSubBits;  // >= 0
  uint64_t mantissa = ns >> shift;                // in [128, 255]
  return (static_cast<size_t>(shift) << kSubBits) + static_cast<size_t>(mantissa);
}

uint64_t LatencyHistogram::BucketUpperEdge(size_t index) {
  if (index < 2 * kSub) return index;  // exact region (shift 0 covers [128, 255] exactly too)
  size_t shift = (index >> kSubBits) - 1;
  uint64_t mantissa = index - (shift << kSubBits);
  return ((mantissa + 1) << shift) - 1;
}

void LatencyHistogram::Record(uint64_t ns) {
  ++buckets_[BucketIndex(ns)];
  ++count_;
  sum_ += ns;
  min_ = std::min(min_, ns);
  max_ = std::max(max_, ns);
}

void LatencyHistogram::Merge(const LatencyHistogram& o) {
  for (size_t i = 0; i < buckets_.size(); ++i) buckets_[i] += o.buckets_[i];
  count_ += o.count_;
  sum_ += o.sum_;
  min_ = std::min(min_, o.min_);
  max_ = std::max(max_, o.max_);
}

uint64_t LatencyHistogram::Percentile(double p) const {
  if (count_ == 0) return 0;
  p = std::clamp(p, 0.0, 100.0);
  auto rank = static_cast<uint64_t>(std::ceil(p / 100.0 * static_cast<double>(count_)));
  rank = std::max<uint64_t>(rank, 1);
  uint64_t seen = 0;
  for (size_t i = 0; i < buckets_.size(); ++i) {
    seen += buckets_[i];
    if (seen >= rank) return std::clamp(BucketUpperEdge(i), min_, max_);
  }
  return max_;
}

nlohmann::json LatencyHistogram::SummaryUs() const {
  auto us = [](double ns) { return std::round(ns / 10.0) / 100.0; };  // microseconds, 2 decimals
  return {{"count", count_},
          {"mean_us", us(mean())},
          {"min_us", us(static_cast<double>(min()))},
          {"p50_us", us(static_cast<double>(Percentile(50)))},
          {"p90_us", us(static_cast<double>(Percentile(90)))},
          {"p99_us", us(static_cast<double>(Percentile(99)))},
          {"p99_9_us", us(static_cast<double>(Percentile(99.9)))},
          {"max_us", us(static_cast<double>(max()))}};
}

}  // namespace clustermax::bench
