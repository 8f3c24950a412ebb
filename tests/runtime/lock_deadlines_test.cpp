// LockDeadlines: time order with ties first added first out, and cancels that are
// harmless for spent handles.
#include "runtime/lock_deadlines.h"

#include <gtest/gtest.h>

#include <map>
#include <random>
#include <string>
#include <vector>

namespace flowrt {
namespace {

LockDeadline give_up(std::string name, int64_t id) {
  return LockDeadline{LockDeadline::Kind::kGiveUp, nullptr, std::move(name), id};
}

std::vector<int64_t> ids(const std::vector<LockDeadline>& due) {
  std::vector<int64_t> out;
  for (const LockDeadline& d : due) out.push_back(d.id);
  return out;
}

TEST(LockDeadlinesTest, DueOnesComeEarliestFirst_TiesInTheOrderAdded) {
  LockDeadlines d;
  d.add(30, give_up("a", 1));
  d.add(10, give_up("a", 2));
  d.add(20, give_up("a", 3));
  d.add(10, give_up("a", 4));
  d.add(10, give_up("a", 5));
  EXPECT_EQ(d.earliest(), 10);
  EXPECT_EQ(ids(d.take_due(9)), std::vector<int64_t>{});
  EXPECT_EQ(ids(d.take_due(20)), (std::vector<int64_t>{2, 4, 5, 3}));
  EXPECT_EQ(d.earliest(), 30);
  EXPECT_EQ(d.size(), 1u);
  EXPECT_EQ(ids(d.take_due(1000)), std::vector<int64_t>{1});
  EXPECT_EQ(d.earliest(), std::nullopt);
}

TEST(LockDeadlinesTest, ACancelledDeadlineIsNeverDue_AndTheEarliestMovesPastIt) {
  LockDeadlines d;
  const TimerHandle first = d.add(10, give_up("a", 1));
  d.add(20, give_up("a", 2));
  const TimerHandle third = d.add(15, give_up("a", 3));
  d.cancel(first);
  EXPECT_EQ(d.earliest(), 15);
  d.cancel(third);
  EXPECT_EQ(d.earliest(), 20);
  EXPECT_EQ(d.size(), 1u);
  EXPECT_EQ(ids(d.take_due(100)), std::vector<int64_t>{2});
}

TEST(LockDeadlinesTest, ASpentHandle_CancelsNothing) {
  LockDeadlines d;
  const TimerHandle taken = d.add(10, give_up("a", 1));
  const TimerHandle cancelled = d.add(12, give_up("a", 2));
  d.add(50, give_up("keep", 9));
  EXPECT_EQ(ids(d.take_due(10)), std::vector<int64_t>{1});
  d.cancel(cancelled);
  d.add(20, give_up("b", 3));
  d.add(30, give_up("b", 4));
  d.cancel(taken);
  d.cancel(cancelled);
  d.cancel(cancelled);
  d.cancel(TimerHandle{});  // never valid
  EXPECT_EQ(d.size(), 3u);
  EXPECT_EQ(ids(d.take_due(100)), (std::vector<int64_t>{3, 4, 9}));
}

TEST(LockDeadlinesTest, HandlesOfDeadlinesAllCancelled_CancelNothingAddedAfter) {
  LockDeadlines d;
  std::vector<TimerHandle> old;
  for (int i = 0; i < 200; ++i) old.push_back(d.add(10 + i, give_up("a", i)));
  for (const TimerHandle& h : old) d.cancel(h);
  EXPECT_EQ(d.size(), 0u);
  const TimerHandle fresh = d.add(5, give_up("b", 1000));
  for (const TimerHandle& h : old) d.cancel(h);
  EXPECT_EQ(d.size(), 1u);
  d.cancel(fresh);
  EXPECT_EQ(d.size(), 0u);
}

// Many requests queued, nearly all granted (their give-ups cancelled) out of time order:
// what is due comes out as a sorted model gives it.
TEST(LockDeadlinesTest, ManyCancelledOutOfOrder_TheRestComeOutInOrder) {
  std::mt19937_64 rng(7);
  LockDeadlines d;
  std::map<std::pair<TimeMs, int64_t>, TimerHandle> model;  // (time, order added) -> handle
  int64_t added = 0;
  for (int round = 0; round < 20000; ++round) {
    const TimeMs at = static_cast<TimeMs>(rng() % 1000);
    model.emplace(std::make_pair(at, added), d.add(at, give_up("k", added)));
    ++added;
    if (rng() % 10 < 8 && !model.empty()) {  // cancel a random one of those queued
      auto it = model.begin();
      std::advance(it, static_cast<long>(rng() % model.size()));
      d.cancel(it->second);
      model.erase(it);
    }
    ASSERT_EQ(d.size(), model.size());
    if (!model.empty()) {
      ASSERT_EQ(d.earliest(), model.begin()->first.first);
    }
  }
  std::vector<int64_t> expected;
  for (const auto& [key, handle] : model) expected.push_back(key.second);
  EXPECT_EQ(ids(d.take_due(1000)), expected);
  EXPECT_EQ(d.size(), 0u);
}

// Nodes are reused: the slab grows to the most deadlines pending at once, not to the
// number ever added; a small slab is kept when none is pending.
TEST(LockDeadlinesTest, NodesAreReused_TheSlabIsTheMostPendingAtOnce) {
  LockDeadlines d;
  std::vector<TimerHandle> pending;
  for (int i = 0; i < 100; ++i) pending.push_back(d.add(10 + i % 7, give_up("a", i)));
  for (int round = 0; round < 10000; ++round) {
    d.cancel(pending[static_cast<size_t>(round % 100)]);
    pending[static_cast<size_t>(round % 100)] = d.add(10 + round % 13, give_up("a", round));
  }
  EXPECT_EQ(d.size(), 100u);
  EXPECT_EQ(d.capacity(), 100u);
  EXPECT_FALSE(d.take_due(15).empty());
  ASSERT_GT(d.size(), 0u);
  EXPECT_EQ(d.capacity(), 100u);
  d.take_due(1000);
  EXPECT_EQ(d.size(), 0u);
  EXPECT_EQ(d.capacity(), 100u);  // none pending, but small: kept for the next lock
}

// A slab larger than kKeptNodes is given back once none is pending; a handle from before
// cancels nothing added after, though the new deadline sits in a node of the same index.
TEST(LockDeadlinesTest, ABurstsSlabIsGivenBack_AHandleFromItCancelsNothingAddedAfter) {
  LockDeadlines d;
  std::vector<TimerHandle> old;
  for (size_t i = 0; i <= LockDeadlines::kKeptNodes; ++i) old.push_back(d.add(10, give_up("a", 0)));
  d.cancel(old.back());
  EXPECT_EQ(d.capacity(), LockDeadlines::kKeptNodes + 1) << "some pending still: kept";
  d.take_due(10);
  EXPECT_EQ(d.capacity(), 0u);
  for (int i = 0; i < 3; ++i) d.add(10, give_up("b", 10 + i));
  for (const TimerHandle& h : old) d.cancel(h);
  EXPECT_EQ(d.size(), 3u);
  EXPECT_EQ(ids(d.take_due(10)), (std::vector<int64_t>{10, 11, 12}));
}

// A spent handle whose node now holds another deadline (even at the same millisecond)
// cancels nothing.
TEST(LockDeadlinesTest, AHandleToAReusedNode_CancelsNothing) {
  LockDeadlines d;
  const TimerHandle cancelled = d.add(10, give_up("a", 1));
  d.cancel(cancelled);
  const TimerHandle reused = d.add(10, give_up("a", 2));  // the same node, a new generation
  d.cancel(cancelled);
  EXPECT_EQ(d.size(), 1u);
  const TimerHandle taken = reused;
  EXPECT_EQ(ids(d.take_due(10)), std::vector<int64_t>{2});
  d.add(10, give_up("a", 3));
  d.cancel(taken);
  EXPECT_EQ(d.size(), 1u);
  EXPECT_EQ(ids(d.take_due(10)), std::vector<int64_t>{3});
}

// A handle cancels only its own deadline, also once its millisecond holds newer ones.
TEST(LockDeadlinesTest, AHandleFromAnEmptiedMillisecond_CancelsNothingAddedThereLater) {
  LockDeadlines d;
  const TimerHandle old = d.add(10, give_up("a", 1));
  d.cancel(old);
  d.add(10, give_up("a", 2));
  d.cancel(old);
  EXPECT_EQ(d.size(), 1u);
  EXPECT_EQ(ids(d.take_due(10)), std::vector<int64_t>{2});
}

}  // namespace
}  // namespace flowrt
