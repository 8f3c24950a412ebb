#include "runtime/context_store.h"

#include <gtest/gtest.h>

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
  EXPECT_EQ(store.find("ctx-2")->seq, 2u);
  EXPECT_EQ(store.find(uint64_t{3})->id, Value("ctx-3"));
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
    store.on_finished();
  }
  EXPECT_EQ(store.dropped(), 2u);
  EXPECT_TRUE(store.find("ctx-1")) << "ctx-1 has not finished";
  EXPECT_FALSE(store.find("ctx-2"));
  EXPECT_FALSE(store.find("ctx-3"));
  EXPECT_TRUE(store.find("ctx-4"));
  EXPECT_TRUE(store.find("ctx-5"));
  EXPECT_EQ(store.all().size(), 3u);
}

}  // namespace
}  // namespace flowrt
