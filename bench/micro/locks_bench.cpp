// The lock table alone: the cost of a grant and release, and of a hand-off to a waiter.
#include <benchmark/benchmark.h>

#include <deque>

#include "runtime/lock_deadlines.h"
#include "runtime/lock_table.h"

namespace flowrt {
namespace {

LockRequest request(uint64_t who) {
  LockRequest r;
  r.who = who;
  r.name = "k";
  r.give_up_at = INT64_MAX;
  return r;
}

void BM_LockTable_UncontendedAcquireRelease(benchmark::State& state) {
  LockTable table;
  std::vector<LockGrant> grants;
  const LockRequest r = request(1);
  for (auto _ : state) {
    benchmark::DoNotOptimize(table.acquire(r));
    table.release(1, "k", 0, &grants);
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_LockTable_UncontendedAcquireRelease);

void BM_LockTable_HandOff(benchmark::State& state) {
  // Two contexts pass the lock back and forth: each release grants the one queued.
  LockTable table;
  std::vector<LockGrant> grants;
  (void)table.acquire(request(1));
  (void)table.acquire(request(2));
  uint64_t holder = 1;
  for (auto _ : state) {
    grants.clear();
    table.release(holder, "k", 0, &grants);
    (void)table.acquire(request(holder));
    holder = holder == 1 ? 2 : 1;
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_LockTable_HandOff);

// The deadlines' side of a hand-off with state.range(0) requests queued: the next
// holder's give-up (added when it queued, the oldest) is cancelled, its lease added, the
// last holder's lease cancelled; a new request queues so that the number stays the same.
// A thousand requests queue per millisecond, as when a burst of contexts queues at once.
void BM_LockDeadlines_HandOff(benchmark::State& state) {
  const auto queued = static_cast<size_t>(state.range(0));
  LockDeadlines deadlines;
  std::deque<TimerHandle> give_ups;
  uint64_t added = 0;
  auto queue_one = [&] {
    const TimeMs at = 1000000000 + static_cast<TimeMs>(added++ / 1000);
    give_ups.push_back(deadlines.add(at, LockDeadline{LockDeadline::Kind::kGiveUp, nullptr, "k", 0}));
  };
  for (size_t i = 0; i < queued; ++i) queue_one();
  TimerHandle lease;
  TimeMs now = 0;
  for (auto _ : state) {
    deadlines.cancel(give_ups.front());
    give_ups.pop_front();
    deadlines.cancel(lease);
    lease = deadlines.add(3600000 + now++ / 4, LockDeadline{LockDeadline::Kind::kLease, nullptr, "k", 0});
    queue_one();
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_LockDeadlines_HandOff)->Arg(1000)->Arg(1000000);

}  // namespace
}  // namespace flowrt
