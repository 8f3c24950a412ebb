// Two defects of the lock table's deadlock check that the seeded simulation found
// (tests/simulation), reproduced on the lock table alone; both are fixed, and these tests
// keep them so (tests/simulation/README.md, "Engine defects found").
#include <gtest/gtest.h>

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
TEST(LockTableEdgesTest, WithWeights_TheNamedCycleGoesThroughTheRequester) {
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
// lock. It used to cost about the cube of the contexts waiting (a greatest fixpoint of up
// to one round per waiter over every waiter, each scanning the queue ahead): 600 holders
// queued for a hub took seconds, every commit waiting meanwhile (found by threads seed
// 877). It now propagates: each context is looked at a bounded number of times. The test
// counts that work (LockTable::last_deadlock_check_work), not time.
TEST(LockTableEdgesTest, ARequestWhileManyHoldersWait_CostsWorkLinearInThem) {
  for (uint64_t n : {100u, 600u}) {
    LockTable t;
    ASSERT_EQ(t.acquire(req(1, "hub")).kind, AcquireOutcome::Kind::kGranted);
    for (uint64_t who = 2; who <= n; ++who) {
      ASSERT_EQ(t.acquire(req(who, "own" + std::to_string(who))).kind, AcquireOutcome::Kind::kGranted);
      ASSERT_EQ(t.acquire(req(who, "hub")).kind, AcquireOutcome::Kind::kQueued);
    }
    ASSERT_EQ(t.acquire(req(n + 1, "own" + std::to_string(n + 1))).kind, AcquireOutcome::Kind::kGranted);
    EXPECT_EQ(t.acquire(req(n + 1, "hub")).kind, AcquireOutcome::Kind::kQueued);
    EXPECT_LE(t.last_deadlock_check_work(), 8 * n) << n << " holders queued";
  }
}

// A real cycle among many waiters is still found and named through the requester.
TEST(LockTableEdgesTest, ACycleBehindManyWaiters_IsRefusedAndNamed) {
  LockTable t;
  ASSERT_EQ(t.acquire(req(1, "a")).kind, AcquireOutcome::Kind::kGranted);
  ASSERT_EQ(t.acquire(req(2, "b")).kind, AcquireOutcome::Kind::kGranted);
  for (uint64_t who = 3; who <= 300; ++who) ASSERT_EQ(t.acquire(req(who, "a")).kind, AcquireOutcome::Kind::kQueued);
  ASSERT_EQ(t.acquire(req(1, "b")).kind, AcquireOutcome::Kind::kQueued);
  const AcquireOutcome refused = t.acquire(req(2, "a"));
  ASSERT_EQ(refused.kind, AcquireOutcome::Kind::kDeadlock);
  EXPECT_EQ(refused.message,
            "deadlock: ctx-2 waits for lock 'a' held by ctx-1, which waits for lock 'b' held by ctx-2");
}

// Hand over hand: each context holds its own lock and then asks for the next one's. No
// cycle, and nothing outside the chain ahead of a requester decides whether it proceeds;
// the check looked at every waiter of the table, so 10,000 such contexts took 38 s.
TEST(LockTableEdgesTest, AHandOverHandChain_EachRequestLooksOnlyAtTheChainAheadOfIt) {
  constexpr uint64_t n = 2000;
  LockTable t;
  for (uint64_t who = 1; who <= n; ++who) {
    ASSERT_EQ(t.acquire(req(who, "k" + std::to_string(who))).kind, AcquireOutcome::Kind::kGranted);
  }
  for (uint64_t who = 1; who < n; ++who) {
    ASSERT_EQ(t.acquire(req(who, "k" + std::to_string(who + 1))).kind, AcquireOutcome::Kind::kQueued);
    ASSERT_LE(t.last_deadlock_check_work(), 8u) << "ctx-" << who << ", with " << who - 1 << " waiting behind it";
  }
  // The last closes the chain into a cycle through all of them: refused, and named short.
  const AcquireOutcome refused = t.acquire(req(n, "k1"));
  ASSERT_EQ(refused.kind, AcquireOutcome::Kind::kDeadlock);
  EXPECT_EQ(refused.message,
            "deadlock: ctx-2000 waits for lock 'k1' held by ctx-1, which waits for lock 'k2' held by ctx-2, which "
            "waits for lock 'k3' held by ctx-3, which waits for lock 'k4' held by ctx-4, which waits for lock 'k5' "
            "held by ctx-5, which waits for lock 'k6' held by ctx-6, which waits for lock 'k7' held by ctx-7, which "
            "waits for lock 'k8' held by ctx-8, which ... (1990 more waits), which waits for lock 'k1999' held by "
            "ctx-1999, which waits for lock 'k2000' held by ctx-2000");
  EXPECT_EQ(t.check_invariants(), "");
}

}  // namespace
}  // namespace flowrt
