// Two defects of the lock table's deadlock check that the seeded simulation found
// (tests/simulation), reproduced on the lock table alone. DISABLED_ until fixed; the
// simulation meanwhile accepts the engine's naming of cycles and keeps its scenarios from
// queueing hundreds of lock holders (see tests/simulation/README.md, "Engine defects found").
#include <gtest/gtest.h>

#include <chrono>
#include <string>

#include "runtime/lock_table.h"

namespace flowrt {
namespace {

LockRequest req(uint64_t who, std::string name) {
  LockRequest r;
  r.who = who;
  r.name = std::move(name);
  r.give_up_at = 100000;
  r.max_duration = 3600000;
  r.wait_id = who * 10;
  return r;
}

// k0 has room for two. ctx-2 and ctx-3 hold it; ctx-4 and then ctx-1 (which holds k1) queue
// for it; ctx-2 queues for k1. When ctx-3 asks for k1 too, nobody can go on: ctx-4 needs
// one of ctx-2 and ctx-3 to let go of k0, and both wait (behind ctx-1, who waits behind
// ctx-4). The refusal is right, but the message follows the first holder of k0 that
// cannot proceed, ctx-2, and names "ctx-2 ... ctx-1 ... ctx-4 ... held by ctx-2": a loop
// that is no deadlock by itself (were ctx-3 not waiting, it would release k0 and ctx-4
// would go on). SPEC 8 says the error names the cycle the request would close, which goes
// through ctx-3 (LockTable::find_deadlock, the naming half).
TEST(LockTableEdgesTest, DISABLED_WithWeights_TheNamedCycleGoesThroughTheRequester) {
  LockTable t;
  t.set_limit("k0", 2);
  ASSERT_EQ(t.acquire(req(1, "k1")).kind, AcquireOutcome::Kind::kGranted);
  ASSERT_EQ(t.acquire(req(2, "k0")).kind, AcquireOutcome::Kind::kGranted);
  ASSERT_EQ(t.acquire(req(3, "k0")).kind, AcquireOutcome::Kind::kGranted);
  ASSERT_EQ(t.acquire(req(4, "k0")).kind, AcquireOutcome::Kind::kQueued);
  ASSERT_EQ(t.acquire(req(1, "k0")).kind, AcquireOutcome::Kind::kQueued);
  ASSERT_EQ(t.acquire(req(2, "k1")).kind, AcquireOutcome::Kind::kQueued) << "ctx-3 still runs: no deadlock yet";
  const AcquireOutcome refused = t.acquire(req(3, "k1"));
  ASSERT_EQ(refused.kind, AcquireOutcome::Kind::kDeadlock);
  EXPECT_NE(refused.message.find("held by ctx-3"), std::string::npos)
      << "the named cycle should come back to the requester: " << refused.message;
}

// The deadlock check runs under the commit lock at every request of a context that holds a
// lock, and costs about the cube of the contexts waiting: its greatest fixpoint makes up to
// one round per waiter over every waiter, and each look scans the queue ahead
// (LockTable::find_deadlock). Here 600 contexts each hold a lock of their own and queue for
// a hub that a running context holds; none of this can deadlock, yet the requests cost
// seconds in all, the last ones tens of milliseconds each, every commit of the engine
// waiting meanwhile (on the reference machine: 400 waiters, 3.5 s in all; 800, 52 s).
// Found by threads seed 877, whose storm of contexts then stalled for minutes.
TEST(LockTableEdgesTest, DISABLED_ARequestWhileManyHoldersWait_CostsLittle) {
  LockTable t;
  ASSERT_EQ(t.acquire(req(1, "hub")).kind, AcquireOutcome::Kind::kGranted);
  for (uint64_t who = 2; who <= 600; ++who) {
    ASSERT_EQ(t.acquire(req(who, "own" + std::to_string(who))).kind, AcquireOutcome::Kind::kGranted);
    ASSERT_EQ(t.acquire(req(who, "hub")).kind, AcquireOutcome::Kind::kQueued);
  }
  ASSERT_EQ(t.acquire(req(601, "own601")).kind, AcquireOutcome::Kind::kGranted);
  const auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(t.acquire(req(601, "hub")).kind, AcquireOutcome::Kind::kQueued);
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  EXPECT_LT(ms, 5.0) << "one lock request with 600 holders queued took " << ms << " ms under the commit lock";
}

}  // namespace
}  // namespace flowrt
