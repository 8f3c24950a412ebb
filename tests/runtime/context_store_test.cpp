#include "runtime/context_store.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "runtime/flow_slot.h"

namespace flowrt {
namespace {

std::shared_ptr<Context> make(FlowSlot* flow, uint64_t seq) {
  auto c = std::make_shared<Context>(flow, TriggerData{}, Value());
  c->publish(seq, seq, nullptr);
  return c;
}

TEST(ContextStoreTest, FindsBySeqAndId) {
  FlowSlot flow(0, "f");
  ContextStore store;
  for (uint64_t i = 1; i <= 3; ++i) store.add(make(&flow, i));
  EXPECT_EQ(store.find("ctx-2").seq(), 2u);
  EXPECT_EQ(store.find_live(uint64_t{3})->id, Value("ctx-3"));
  EXPECT_FALSE(store.find("ctx-4"));
  EXPECT_FALSE(store.find("ctx-x"));
  EXPECT_FALSE(store.find("2"));
}

TEST(ContextStoreTest, Retention_DropsOldestFinished_KeepsUnfinished) {
  FlowSlot flow(0, "f");
  ContextStore store;
  store.set_retention(2);
  std::vector<std::shared_ptr<Context>> all;
  for (uint64_t i = 1; i <= 5; ++i) {
    all.push_back(make(&flow, i));
    store.add(all.back());
  }
  for (uint64_t i : {2u, 3u, 4u, 5u}) {
    all[i - 1]->finish(ContextStatus::kCompleted, 0, Value(), 0);
    store.on_finished(*all[i - 1]);
  }
  EXPECT_EQ(store.dropped(), 2u);
  EXPECT_TRUE(store.find("ctx-1")) << "ctx-1 has not finished";
  EXPECT_FALSE(store.find("ctx-2"));
  EXPECT_FALSE(store.find("ctx-3"));
  EXPECT_TRUE(store.find("ctx-4"));
  EXPECT_TRUE(store.find("ctx-5"));
  EXPECT_EQ(store.all().size(), 3u);
}

// One context parked for ever at the front, a million others starting and finishing
// behind it: the store keeps the parked one, the retained ones and a bounded window, not a
// slot (or a scan) per context ever started.
TEST(ContextStoreTest, Retention_APinnedFrontContext_KeepsMemoryBoundedByRetention) {
  FlowSlot flow(0, "f");
  ContextStore store;
  store.set_retention(1000);
  auto pinned = make(&flow, 1);
  store.add(pinned);
  ContextStore::Footprint worst;
  const uint64_t n = 1'000'000;
  for (uint64_t seq = 2; seq <= n; ++seq) {
    auto c = make(&flow, seq);
    store.add(c);
    c->finish(ContextStatus::kCompleted, 0, Value(), 0);
    store.on_finished(*c);
    if (seq % 1024 == 0) {
      const ContextStore::Footprint f = store.footprint();
      worst.window_slots = std::max(worst.window_slots, f.window_slots);
      worst.stragglers = std::max(worst.stragglers, f.stragglers);
      worst.retained_finished = std::max(worst.retained_finished, f.retained_finished);
    }
  }
  EXPECT_EQ(store.dropped(), n - 1 - 1000);
  EXPECT_EQ(store.size(), 1001u);
  EXPECT_TRUE(store.find(uint64_t{1})) << "the unfinished context is kept";
  EXPECT_TRUE(store.find(n));
  EXPECT_FALSE(store.find(n - 1000));
  EXPECT_LE(worst.retained_finished, 1000u);
  EXPECT_LE(worst.window_slots, 4096u) << "holes behind the pinned context must not pile up";
  EXPECT_LE(worst.stragglers, 1001u);
  // Listing: in seq order, the pinned one first.
  std::vector<uint64_t> seqs;
  store.for_each([&](const KeptContext& c) { seqs.push_back(c.seq()); });
  ASSERT_EQ(seqs.size(), 1001u);
  EXPECT_EQ(seqs.front(), 1u);
  EXPECT_EQ(seqs[1], n - 999);
  EXPECT_TRUE(std::is_sorted(seqs.begin(), seqs.end()));
  // Newest first: the same contexts in the other order (the window, then the straggler);
  // below a seq; and stopping when told.
  std::vector<uint64_t> newest;
  store.for_each_newest_first(UINT64_MAX, [&](const KeptContext& c) { newest.push_back(c.seq()); return true; });
  EXPECT_EQ(newest, std::vector<uint64_t>(seqs.rbegin(), seqs.rend()));
  newest.clear();
  store.for_each_newest_first(n - 998, [&](const KeptContext& c) { newest.push_back(c.seq()); return true; });
  EXPECT_EQ(newest, (std::vector<uint64_t>{n - 999, 1}));
  newest.clear();
  store.for_each_newest_first(UINT64_MAX, [&](const KeptContext& c) { newest.push_back(c.seq()); return newest.size() < 3; });
  EXPECT_EQ(newest, (std::vector<uint64_t>{n, n - 1, n - 2}));
  // It ends at last and is dropped like the others (it is the lowest seq).
  pinned->finish(ContextStatus::kCompleted, 0, Value(), 0);
  store.on_finished(*pinned);
  EXPECT_FALSE(store.find(uint64_t{1}));
  EXPECT_EQ(store.size(), 1000u);
}

TEST(ContextStoreTest, Retention_DropsTheLowestSeqFirst_WhateverTheOrderOfFinishing) {
  FlowSlot flow(0, "f");
  ContextStore store;
  store.set_retention(2);
  std::vector<std::shared_ptr<Context>> all;
  for (uint64_t i = 1; i <= 4; ++i) {
    all.push_back(make(&flow, i));
    store.add(all.back());
  }
  for (uint64_t i : {4u, 2u, 3u}) {
    all[i - 1]->finish(ContextStatus::kCompleted, 0, Value(), 0);
    store.on_finished(*all[i - 1]);
  }
  EXPECT_EQ(store.dropped(), 1u);
  EXPECT_TRUE(store.find(uint64_t{1}));
  EXPECT_FALSE(store.find(uint64_t{2})) << "the lowest finished seq goes first";
  EXPECT_TRUE(store.find(uint64_t{3}));
  EXPECT_TRUE(store.find(uint64_t{4}));
}

TEST(ContextStoreTest, Retention_BoundsTheSkippedList) {
  ContextStore store;
  store.set_retention(3);
  for (int i = 0; i < 10; ++i) store.add_skipped(SkippedStart{Value("f"), Value(i), Value(), Value()});
  std::vector<SkippedStart> kept = store.skipped();
  ASSERT_EQ(kept.size(), 3u);
  EXPECT_EQ(kept.front().reason, Value(7));
  EXPECT_EQ(store.dropped_skipped(), 7u);
}

TEST(ContextStoreTest, Listing_CopiesInBatches_AndSeesEveryContextInOrder) {
  FlowSlot flow(0, "f");
  ContextStore store;
  for (uint64_t i = 1; i <= 3 * ContextStore::kBatch + 5; ++i) store.add(make(&flow, i));
  uint64_t expected = 1;
  store.for_each([&](const KeptContext& c) { EXPECT_EQ(c.seq(), expected++); });
  EXPECT_EQ(expected, 3 * ContextStore::kBatch + 6);
  store.for_each_newest_first(UINT64_MAX, [&](const KeptContext& c) {
    EXPECT_EQ(c.seq(), --expected);
    return true;
  });
  EXPECT_EQ(expected, 1u);
}

TEST(ContextStoreTest, AFinishedContextGivenFrozen_IsKeptFrozen_AndItsLiveFormLetGo) {
  FlowSlot flow(0, "f");
  ContextStore store;
  std::shared_ptr<Context> c = make(&flow, 1);
  store.add(c);
  std::weak_ptr<Context> live = c;
  c->finish(ContextStatus::kCancelled, 5, Value(), 0);
  store.on_finished(*c);
  store.freeze(*c, FrozenContext::freeze(*c));
  const KeptContext kept = store.find("ctx-1");
  ASSERT_TRUE(kept);
  ASSERT_NE(kept.frozen(), nullptr);
  EXPECT_EQ(kept.live(), nullptr);
  EXPECT_TRUE(kept.finished());
  EXPECT_EQ(kept.seq(), 1u);
  EXPECT_EQ(kept.commit_seq(), 1u);
  EXPECT_EQ(kept.frozen()->status(), ContextStatus::kCancelled);
  EXPECT_EQ(kept.frozen()->to_value()["status"], Value("cancelled"));
  EXPECT_EQ(store.unfinished().size(), 0u);
  c.reset();
  EXPECT_TRUE(live.expired()) << "the store holds the frozen form only";
}

}  // namespace
}  // namespace flowrt
