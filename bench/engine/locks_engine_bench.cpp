// Locks through the whole engine, real clock, real workers:
//   uncontended lock+unlock pairs per second (each context on its own name),
//   contended hand-offs per second (many contexts queued on one name).
// Each iteration's time is the workload's own span, from the first call to settle: the
// engine's start (threads, compiling the flow) and its teardown are not lock work.
#include <benchmark/benchmark.h>

#include "bench/workloads/lock_workloads.h"

namespace flowrt::bench {
namespace {

void BM_Engine_UncontendedLockUnlockPairs(benchmark::State& state) {
  uint64_t pairs = 0;
  for (auto _ : state) {
    const LockWorkloadResult r = run_uncontended_locks(2, 2, static_cast<uint64_t>(state.range(0)));
    pairs += r.pairs;
    state.SetIterationTime(r.seconds);
  }
  state.counters["pairs/s"] = benchmark::Counter(static_cast<double>(pairs), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_Engine_UncontendedLockUnlockPairs)->Arg(20000)->Unit(benchmark::kMillisecond)->UseManualTime();

void BM_Engine_ContendedHandOffs(benchmark::State& state) {
  uint64_t handoffs = 0;
  for (auto _ : state) {
    const LockWorkloadResult r = run_contended_locks(2, static_cast<uint64_t>(state.range(0)), 2000);
    handoffs += r.handoffs;
    state.SetIterationTime(r.seconds);
  }
  state.counters["handoffs/s"] = benchmark::Counter(static_cast<double>(handoffs), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_Engine_ContendedHandOffs)->Arg(8)->Arg(64)->Unit(benchmark::kMillisecond)->UseManualTime();

}  // namespace
}  // namespace flowrt::bench
