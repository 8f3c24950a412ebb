// The cycle a deadlock refusal names, with weights: a defect the seeded simulation found
// (tests/simulation, simulated seed 54), reproduced on the lock table alone. DISABLED_
// until fixed; the simulation's model accepts the engine's naming meanwhile (see
// tests/simulation/README.md, "Engine defects found").
#include <gtest/gtest.h>

#include "runtime/lock_table.h"

namespace flowrt {
namespace {

LockRequest req(uint64_t who, const char* name) {
  LockRequest r;
  r.who = who;
  r.name = name;
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
TEST(LockDeadlockNamingTest, DISABLED_WithWeights_TheNamedCycleGoesThroughTheRequester) {
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

}  // namespace
}  // namespace flowrt
