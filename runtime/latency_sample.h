// LatencySample: the commit-to-end latencies of contexts whose live form (which has the
// times) left the ContextStore: with a durable store once their final record is durable
// (Journal::release), with the memory store when they finish (they are kept frozen, without
// the times; EngineCore::finish_context). Kept as a fixed-size uniform sample (reservoir sampling, a
// fixed seed): memory stays bounded however many contexts finish. Only with
// EngineOptions::measure_latency (flowrt bench).
// Thread-safety: every method takes mu_ (a spin lock: a few instructions, on the path of
// every context that ends while a benchmark measures).
#pragma once

#include <cstdint>
#include <random>
#include <vector>

#include "base/thread_annotations.h"

namespace flowrt {

class LatencySample {
 public:
  static constexpr size_t kSize = 200000;

  void add(int64_t ns) EXCLUDES(mu_) {
    SpinLockGuard lock(mu_);
    ++seen_;
    if (sample_.size() < kSize) {
      sample_.push_back(ns);
      return;
    }
    const uint64_t i = std::uniform_int_distribution<uint64_t>(0, seen_ - 1)(rng_);
    if (i < kSize) sample_[i] = ns;
  }
  std::vector<int64_t> values() const EXCLUDES(mu_) {
    SpinLockGuard lock(mu_);
    return sample_;
  }

 private:
  mutable SpinLock mu_;
  std::vector<int64_t> sample_ GUARDED_BY(mu_);
  uint64_t seen_ GUARDED_BY(mu_) = 0;
  std::mt19937_64 rng_ GUARDED_BY(mu_){42};
};

}  // namespace flowrt
