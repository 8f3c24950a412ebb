// LatencyHistogram: percentiles within a bucket's width of the exact ones, every value
// counted from every thread, and histograms that never share a thread's shard.
#include "runtime/latency_histogram.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <random>
#include <thread>
#include <vector>

namespace flowrt {
namespace {

// The sorted list's element at floor(q * (n - 1)): what the percentiles mean.
int64_t exact(std::vector<int64_t> v, double q) {
  std::sort(v.begin(), v.end());
  return v[static_cast<size_t>(q * static_cast<double>(v.size() - 1))];
}

TEST(LatencyHistogramTest, Percentiles_AreWithinABucketOfTheExactOnes) {
  std::mt19937_64 rng(7);
  // Log-uniform from 1 ns to about 10 s, as latencies spread.
  std::uniform_real_distribution<double> exponent(0.0, 10.0);
  std::vector<int64_t> values;
  LatencyHistogram h;
  for (int i = 0; i < 200000; ++i) {
    const auto v = static_cast<int64_t>(std::pow(10.0, exponent(rng)));
    values.push_back(v);
    h.add(v);
  }
  const LatencyHistogram::Counts c = h.counts();
  ASSERT_EQ(c.total(), values.size());
  for (double q : {0.0, 0.1, 0.5, 0.9, 0.99, 0.999, 1.0}) {
    const double want = static_cast<double>(exact(values, q));
    const double got = static_cast<double>(c.percentile(q));
    EXPECT_LE(std::abs(got - want), want / 128.0 + 1.0) << "q " << q << ": " << got << " against " << want;
  }
}

TEST(LatencyHistogramTest, Buckets_AreExactBelow128_AndAtMostAn128thWideAbove) {
  for (int64_t v = 0; v < 128; ++v) {
    EXPECT_EQ(LatencyHistogram::middle_of(LatencyHistogram::bucket_of(v)), v);
  }
  EXPECT_EQ(LatencyHistogram::bucket_of(-5), 0u) << "a negative value counts as 0";
  size_t last = 0;
  for (int64_t v = 128; v < (int64_t{1} << 40); v += v / 97 + 1) {
    const size_t b = LatencyHistogram::bucket_of(v);
    ASSERT_LT(b, LatencyHistogram::kBuckets);
    ASSERT_GE(b, last) << "buckets follow the values' order";
    last = b;
    const int64_t mid = LatencyHistogram::middle_of(b);
    EXPECT_LE(std::abs(mid - v), v / 128 + 1) << v;
  }
  EXPECT_LT(LatencyHistogram::bucket_of(INT64_MAX), LatencyHistogram::kBuckets);
  EXPECT_EQ(LatencyHistogram::Counts().percentile(0.5), 0) << "nothing counted";
}

TEST(LatencyHistogramTest, EveryThreadsValues_AreCounted_EachHistogramApart) {
  auto a = std::make_unique<LatencyHistogram>();
  auto b = std::make_unique<LatencyHistogram>();
  constexpr int kThreads = 4, kEach = 50000;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kEach; ++i) {
        a->add(1000 + t);
        if (i % 2 == 0) b->add(5);
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(a->counts().total(), uint64_t{kThreads} * kEach);
  EXPECT_EQ(b->counts().total(), uint64_t{kThreads} * kEach / 2);
  EXPECT_EQ(b->counts().percentile(1.0), 5);

  // A histogram made after one is destroyed (perhaps at its address) starts empty, and
  // this thread's cache never writes into the destroyed one's shard.
  a->add(1);
  a.reset();
  auto c = std::make_unique<LatencyHistogram>();
  c->add(42);
  EXPECT_EQ(c->counts().total(), 1u);
  EXPECT_EQ(c->counts().percentile(0.5), 42);
}

}  // namespace
}  // namespace flowrt
