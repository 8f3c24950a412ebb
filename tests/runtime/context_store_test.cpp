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


std::shared_ptr<Context> make_finished(FlowSlot* flow, uint64_t seq) {
  std::shared_ptr<Context> c = make(flow, seq);
  c->finish(ContextStatus::kCompleted, 0, Value(), 0);
  return c;
}

// A slot owns one reference: a copy takes one more, a move none, and each drops its own
// once (a leak or a double release shows in the counts; ASan sees them too).
TEST(ContextStoreTest, Slot_CopiesMovesAndDrops_ExactlyTheReferencesItOwns) {
  static_assert(sizeof(ContextSlot) == sizeof(void*));
  FlowSlot flow(0, "f");
  std::shared_ptr<Context> c = make_finished(&flow, 7);
  const boost::intrusive_ptr<const FrozenContext> f = FrozenContext::freeze(*c);
  ASSERT_TRUE(f);
  {
    ContextSlot frozen{f};
    ContextSlot live{c};
    EXPECT_EQ(f->use_count(), 2u);
    EXPECT_EQ(c.use_count(), 2);
    EXPECT_EQ(frozen.seq(), 7u);
    EXPECT_EQ(live.seq(), 7u);
    EXPECT_EQ(live.live(), c.get());
    EXPECT_EQ(frozen.live(), nullptr);
    EXPECT_TRUE(frozen.finished());
    {
      const KeptContext k = frozen.kept();
      EXPECT_EQ(k.frozen(), f.get());
      EXPECT_EQ(f->use_count(), 3u);
      const KeptContext l = live.kept();
      EXPECT_EQ(l.live(), c);
      EXPECT_EQ(c.use_count(), 3);
    }
    EXPECT_EQ(f->use_count(), 2u);
    EXPECT_EQ(c.use_count(), 2);
    ContextSlot frozen2 = frozen;
    ContextSlot live2 = live;
    EXPECT_EQ(f->use_count(), 3u);
    EXPECT_EQ(c.use_count(), 3);
    ContextSlot moved = std::move(frozen2);
    EXPECT_FALSE(frozen2);  // NOLINT(bugprone-use-after-move): a moved-from slot is a hole
    EXPECT_EQ(f->use_count(), 3u);
    live2 = moved;  // drops the live reference, takes a frozen one
    EXPECT_EQ(c.use_count(), 2);
    EXPECT_EQ(f->use_count(), 4u);
    live2 = std::move(live);  // drops the frozen reference, takes the live one over
    EXPECT_EQ(f->use_count(), 3u);
    EXPECT_EQ(c.use_count(), 2);
    auto& self = live2;
    live2 = self;
    live2 = std::move(self);
    EXPECT_EQ(c.use_count(), 2);
    EXPECT_EQ(live2.live(), c.get());
    moved.reset();
    EXPECT_FALSE(moved);
    EXPECT_EQ(f->use_count(), 2u);
  }
  EXPECT_EQ(f->use_count(), 1u);
  EXPECT_EQ(c.use_count(), 1);
  EXPECT_FALSE(ContextSlot(std::shared_ptr<Context>()));
  EXPECT_FALSE(ContextSlot(boost::intrusive_ptr<const FrozenContext>()));
}

// The store lets go of exactly what it kept: a frozen record dropped by retention (from the
// window or the stragglers), released, or left when the store goes, keeps only the test's
// reference; a live form replaced by its frozen one is freed.
TEST(ContextStoreTest, Slots_DroppedByRetentionReleaseOrTheStore_LetGoOfTheirReferences) {
  FlowSlot flow(0, "f");
  const size_t retention = 100;
  const uint64_t n = 3000;
  std::vector<boost::intrusive_ptr<const FrozenContext>> frozen(n + 1);
  std::vector<std::weak_ptr<Context>> live(n + 1);
  std::shared_ptr<Context> pinned = make(&flow, 1);
  {
    ContextStore store;
    store.set_retention(retention);
    store.add(pinned);
    EXPECT_EQ(pinned.use_count(), 2);
    for (uint64_t seq = 2; seq <= n; ++seq) {
      std::shared_ptr<Context> c = make(&flow, seq);
      live[seq] = c;
      store.add(c);
      c->finish(ContextStatus::kCompleted, 0, Value(), 0);
      store.on_finished(*c);
      frozen[seq] = FrozenContext::freeze(*c);
      store.freeze(*c, frozen[seq]);
    }
    EXPECT_GE(store.footprint().stragglers, 1u) << "the pinned context moved to the stragglers";
    // Listing and finding copy references and give them back.
    size_t listed = 0;
    store.for_each([&](const KeptContext&) { ++listed; });
    store.for_each_newest_first(UINT64_MAX, [&](const KeptContext&) { return true; });
    EXPECT_EQ(listed, retention + 1);
    EXPECT_TRUE(store.find(n));
    for (uint64_t seq = 2; seq <= n; ++seq) {
      EXPECT_TRUE(live[seq].expired()) << seq << ": the live form was let go once frozen";
      EXPECT_EQ(frozen[seq]->use_count(), seq > n - retention ? 2u : 1u) << seq;
    }
    EXPECT_EQ(pinned.use_count(), 2);
    // The pinned one finishes in the stragglers: frozen there, then dropped by retention.
    pinned->finish(ContextStatus::kCompleted, 0, Value(), 0);
    frozen[1] = FrozenContext::freeze(*pinned);
    store.freeze(*pinned, frozen[1]);
    EXPECT_EQ(pinned.use_count(), 1) << "its live form's box was freed";
    EXPECT_EQ(frozen[1]->use_count(), 2u);
    store.on_finished(*pinned);
    EXPECT_FALSE(store.find(uint64_t{1}));
    EXPECT_EQ(frozen[1]->use_count(), 1u);
    EXPECT_EQ(frozen[n - retention + 1]->use_count(), 2u) << "the retained ones stay";
  }
  for (uint64_t seq = 1; seq <= n; ++seq) EXPECT_EQ(frozen[seq]->use_count(), 1u) << seq;

  // A durable store: release lets go of a live context and of a frozen one.
  ContextStore store;
  store.set_finished_elsewhere();
  std::shared_ptr<Context> a = make_finished(&flow, 1);
  std::shared_ptr<Context> b = make_finished(&flow, 2);
  store.add(a);
  store.add(b);
  const boost::intrusive_ptr<const FrozenContext> fb = FrozenContext::freeze(*b);
  store.freeze(*b, fb);
  EXPECT_EQ(a.use_count(), 2);
  EXPECT_EQ(b.use_count(), 1);
  EXPECT_EQ(fb->use_count(), 2u);
  store.release(1);
  store.release(2);
  EXPECT_EQ(a.use_count(), 1);
  EXPECT_EQ(fb->use_count(), 1u);
  EXPECT_EQ(store.size(), 0u);
}

}  // namespace
}  // namespace flowrt
