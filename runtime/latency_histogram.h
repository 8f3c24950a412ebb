// LatencyHistogram: how long contexts took (commit to end, commit to taken), counted per
// thread in log-linear buckets, for flowrt bench's percentiles. Only with
// EngineOptions::measure_latency.
//
// Every value is counted (no sampling) in a bucket at most 1/128 of its value wide, so a
// percentile read back is within 0.8% of the exact one. Memory is fixed: one bucket array
// per thread that ever adds (about 58 KiB), whatever the number of contexts.
//
// Thread-safety: add() may run on any thread at any time; each thread writes only its own
// shard (found through a thread-local cache, set up once per thread under mu_), with plain
// relaxed stores: no lock and no shared cache line on the path of a context's end.
// counts() may run at any time and reads every shard; a value added meanwhile may or may
// not be in it. Ownership: the histogram owns the shards; a thread's cache names the
// histogram by a process-unique id, so a histogram made later at the same address is
// never confused with a destroyed one.
#pragma once

#include <atomic>
#include <cstdint>
#include <deque>
#include <thread>
#include <vector>

#include "base/thread_annotations.h"

namespace flowrt {

class LatencyHistogram {
 public:
  static constexpr int kSubBits = 7;                          // 128 buckets per power of two
  static constexpr size_t kBuckets = (63 - kSubBits + 1) * (size_t{1} << kSubBits);

  LatencyHistogram();
  LatencyHistogram(const LatencyHistogram&) = delete;
  LatencyHistogram& operator=(const LatencyHistogram&) = delete;

  // Counts `ns` (negative counts as 0).
  void add(int64_t ns);

  // Merged counts: what percentiles are read from; more values may be added to it.
  class Counts {
   public:
    Counts() : buckets_(kBuckets, 0) {}
    void add(int64_t ns) {
      ++buckets_[bucket_of(ns)];
      ++total_;
    }
    uint64_t total() const { return total_; }
    // The value at fraction `q` (0..1) of the counted values in order, as the sorted
    // list's element at index floor(q * (total - 1)) would be, to within its bucket (the
    // bucket's middle); 0 when nothing was counted.
    int64_t percentile(double q) const;

   private:
    friend class LatencyHistogram;
    std::vector<uint64_t> buckets_;
    uint64_t total_ = 0;
  };
  Counts counts() const EXCLUDES(mu_);

  // The bucket of `ns`, and the middle of a bucket's range (exact below 128 ns).
  static size_t bucket_of(int64_t ns);
  static int64_t middle_of(size_t bucket);

 private:
  struct Shard {
    explicit Shard(std::thread::id owner);
    const std::thread::id owner;
    std::atomic<uint64_t> buckets[kBuckets];  // one writer: `owner`
  };
  Shard& shard() EXCLUDES(mu_);

  const uint64_t id_;
  mutable Mutex mu_;
  std::deque<Shard> shards_ GUARDED_BY(mu_);  // a deque: a shard never moves
};

}  // namespace flowrt
