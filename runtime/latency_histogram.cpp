#include "runtime/latency_histogram.h"

#include <bit>

namespace flowrt {
namespace {

std::atomic<uint64_t> g_next_histogram_id{1};

// A thread's recent histograms and its shard in each: a few, as one thread adds to the
// two histograms of an engine (and tests run several engines).
struct CachedShard {
  uint64_t id = 0;
  void* shard = nullptr;
};
constexpr size_t kCached = 4;
thread_local CachedShard t_cached[kCached];
thread_local size_t t_next_slot = 0;

}  // namespace

LatencyHistogram::Shard::Shard(std::thread::id owner_thread) : owner(owner_thread) {
  for (auto& b : buckets) b.store(0, std::memory_order_relaxed);
}

LatencyHistogram::LatencyHistogram() : id_(g_next_histogram_id.fetch_add(1, std::memory_order_relaxed)) {}

size_t LatencyHistogram::bucket_of(int64_t ns) {
  const uint64_t v = ns < 0 ? 0 : static_cast<uint64_t>(ns);
  if (v < (uint64_t{1} << kSubBits)) return static_cast<size_t>(v);
  const int e = 63 - std::countl_zero(v);  // >= kSubBits
  const uint64_t m = v >> (e - kSubBits);   // in [128, 256)
  return static_cast<size_t>(e - kSubBits + 1) * (size_t{1} << kSubBits) + static_cast<size_t>(m - (uint64_t{1} << kSubBits));
}

int64_t LatencyHistogram::middle_of(size_t bucket) {
  constexpr size_t kSub = size_t{1} << kSubBits;
  if (bucket < kSub) return static_cast<int64_t>(bucket);
  const int e = static_cast<int>(bucket / kSub) + kSubBits - 1;
  const uint64_t m = kSub + bucket % kSub;
  const uint64_t low = m << (e - kSubBits);
  const uint64_t width = uint64_t{1} << (e - kSubBits);
  return static_cast<int64_t>(low + width / 2);
}

LatencyHistogram::Shard& LatencyHistogram::shard() {
  for (const CachedShard& c : t_cached) {
    if (c.id == id_) return *static_cast<Shard*>(c.shard);
  }
  Shard* mine = nullptr;
  {
    MutexLock lock(mu_);
    const std::thread::id self = std::this_thread::get_id();
    for (Shard& s : shards_) {
      if (s.owner == self) mine = &s;
    }
    if (!mine) mine = &shards_.emplace_back(self);
  }
  t_cached[t_next_slot] = CachedShard{id_, mine};
  t_next_slot = (t_next_slot + 1) % kCached;
  return *mine;
}

void LatencyHistogram::add(int64_t ns) {
  std::atomic<uint64_t>& b = shard().buckets[bucket_of(ns)];
  // One writer per shard: a plain increment, atomic only so that counts() may read it.
  b.store(b.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
}

LatencyHistogram::Counts LatencyHistogram::counts() const {
  Counts c;
  MutexLock lock(mu_);
  for (const Shard& s : shards_) {
    for (size_t i = 0; i < kBuckets; ++i) {
      const uint64_t n = s.buckets[i].load(std::memory_order_relaxed);
      c.buckets_[i] += n;
      c.total_ += n;
    }
  }
  return c;
}

int64_t LatencyHistogram::Counts::percentile(double q) const {
  if (total_ == 0) return 0;
  const double clamped = q < 0 ? 0 : (q > 1 ? 1 : q);
  const auto rank = static_cast<uint64_t>(clamped * static_cast<double>(total_ - 1));  // 0-based
  uint64_t seen = 0;
  for (size_t i = 0; i < buckets_.size(); ++i) {
    seen += buckets_[i];
    if (seen > rank) return middle_of(i);
  }
  return middle_of(buckets_.size() - 1);
}

}  // namespace flowrt
