// IdIndex (store/id_index.h): sys_id -> row, checked against std::unordered_map through
// seeded runs of inserts, erases and look-ups, across many segment growths; and
// insert_unique, which looks up and inserts in one probe.
#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <string>
#include <unordered_map>
#include <vector>

#include "store/id_index.h"

namespace flowrt {
namespace {

// Rows hold their keys, as a table's rows hold their sys_ids.
class IdIndexTest : public ::testing::Test {
 protected:
  IdIndex index_{[this](uint32_t row) -> std::string_view { return keys_.at(row); }};
  std::vector<std::string> keys_;  // by row
};

TEST_F(IdIndexTest, InsertUnique_InsertsOnce_AndAfterwardsNamesTheRowThatHasTheKey) {
  keys_ = {"a", "a"};
  EXPECT_EQ(index_.find("a"), IdIndex::kNone);
  EXPECT_EQ(index_.insert_unique("a", 0), IdIndex::kNone);
  EXPECT_EQ(index_.find("a"), 0u);
  EXPECT_EQ(index_.insert_unique("a", 1), 0u) << "a second row with the same key is not indexed";
  EXPECT_EQ(index_.find("a"), 0u);
  EXPECT_EQ(index_.size(), 1u);
  index_.erase("a");
  EXPECT_EQ(index_.find("a"), IdIndex::kNone);
  EXPECT_EQ(index_.insert_unique("a", 1), IdIndex::kNone) << "once erased, the key can be indexed again";
  EXPECT_EQ(index_.find("a"), 1u);
  EXPECT_EQ(index_.size(), 1u);
}

TEST_F(IdIndexTest, SeededInsertsErasesAndLookUps_AgreeWithAMap) {
  for (uint32_t seed : {1u, 2u, 3u}) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    std::mt19937 rng(seed);
    keys_.clear();
    index_.clear();
    std::unordered_map<std::string, uint32_t> expected;
    // Keys drawn from a pool larger than what is live at once, so that erased slots are
    // reused, keys come back after their erase, and some inserts find their key there.
    const uint32_t pool = 60000;
    auto key = [&] { return "k" + std::to_string(rng() % pool); };
    for (int op = 0; op < 300000; ++op) {
      const std::string k = key();
      switch (rng() % 4) {
        case 0:
        case 1: {
          const auto row = static_cast<uint32_t>(keys_.size());
          keys_.push_back(k);
          const uint32_t had = index_.insert_unique(k, row);
          auto it = expected.find(k);
          if (it == expected.end()) {
            ASSERT_EQ(had, IdIndex::kNone) << k;
            expected.emplace(k, row);
          } else {
            ASSERT_EQ(had, it->second) << k;
          }
          break;
        }
        case 2:
          index_.erase(k);
          expected.erase(k);
          break;
        default: {
          auto it = expected.find(k);
          ASSERT_EQ(index_.find(k), it == expected.end() ? IdIndex::kNone : it->second) << k;
        }
      }
      ASSERT_EQ(index_.size(), expected.size());
    }
    for (const auto& [k, row] : expected) ASSERT_EQ(index_.find(k), row) << k;
  }
}

TEST_F(IdIndexTest, AMillionGeneratedLikeKeys_AreEachFound_AndAbsentOnesAreNot) {
  const uint32_t n = 1000000;
  keys_.reserve(n);
  for (uint32_t i = 0; i < n; ++i) {
    char buf[33];
    std::snprintf(buf, sizeof buf, "%016x%016x", i * 2654435761u, i);
    keys_.emplace_back(buf, 32);
    ASSERT_EQ(index_.insert_unique(keys_.back(), i), IdIndex::kNone);
  }
  EXPECT_EQ(index_.size(), n);
  for (uint32_t i = 0; i < n; i += 7) ASSERT_EQ(index_.find(keys_[i]), i);
  EXPECT_EQ(index_.find("not a key"), IdIndex::kNone);
  EXPECT_EQ(index_.find(std::string(32, 'g')), IdIndex::kNone);  // no key has a g
}

}  // namespace
}  // namespace flowrt
