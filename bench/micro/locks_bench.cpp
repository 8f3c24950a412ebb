// The lock table alone: the cost of a grant and release, and of a hand-off to a waiter.
#include <benchmark/benchmark.h>

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

}  // namespace
}  // namespace flowrt
