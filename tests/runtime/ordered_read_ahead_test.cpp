// OrderedReadAhead hands items over in index order whatever order its threads finish them
// in, never has more than `ahead` made and not taken, and stops cleanly when dropped early.
#include "runtime/ordered_read_ahead.h"

#include <gtest/gtest.h>

#include <atomic>
#include <stdexcept>
#include <string>

namespace flowrt {
namespace {

TEST(OrderedReadAheadTest, ItemsComeInIndexOrder_AndNeverMoreThanAheadAreWaiting) {
  constexpr size_t kCount = 500;
  constexpr size_t kAhead = 3;
  std::atomic<size_t> made{0};
  std::atomic<size_t> asked{0};  // next() calls begun: item i may be made only once i < asked + kAhead
  std::atomic<size_t> too_early{0};
  OrderedReadAhead<std::string> reader(kCount, 4, kAhead, [&](size_t i) {
    made.fetch_add(1);
    if (i >= asked.load() + kAhead) too_early.fetch_add(1);
    return std::to_string(i);
  });
  for (size_t i = 0; i < kCount; ++i) {
    asked.fetch_add(1);
    std::optional<std::string> item = reader.next();
    ASSERT_TRUE(item.has_value()) << i;
    EXPECT_EQ(*item, std::to_string(i));
  }
  EXPECT_FALSE(reader.next().has_value()) << "after the last";
  EXPECT_EQ(made.load(), kCount) << "each made once";
  EXPECT_EQ(too_early.load(), 0u) << "made more than kAhead items ahead of the consumer";
}

TEST(OrderedReadAheadTest, DroppedBeforeTheEnd_StopsItsThreads_AndMakesNoMore) {
  std::atomic<size_t> made{0};
  {
    OrderedReadAhead<size_t> reader(1000000, 2, 2, [&](size_t i) {
      made.fetch_add(1);
      return i;
    });
    ASSERT_EQ(reader.next(), std::optional<size_t>(0));
    ASSERT_EQ(reader.next(), std::optional<size_t>(1));
  }  // joins its threads: a hang here fails the test by its timeout
  EXPECT_LE(made.load(), 2u + 2u) << "the two taken and at most two ahead";
}

TEST(OrderedReadAheadTest, AnItemThatThrows_IsThrownByNextInItsPlace_AndTheOthersStillCome) {
  OrderedReadAhead<int> reader(5, 2, 2, [](size_t i) {
    if (i == 2) throw std::runtime_error("item 2 cannot be made");
    return static_cast<int>(i);
  });
  EXPECT_EQ(reader.next(), std::optional<int>(0));
  EXPECT_EQ(reader.next(), std::optional<int>(1));
  EXPECT_THROW(reader.next(), std::runtime_error);
  EXPECT_EQ(reader.next(), std::optional<int>(3));
  EXPECT_EQ(reader.next(), std::optional<int>(4));
  EXPECT_FALSE(reader.next().has_value());
}

TEST(OrderedReadAheadTest, NoItems_NextSaysSoAtOnce) {
  OrderedReadAhead<int> reader(0, 2, 2, [](size_t) { return 1; });
  EXPECT_FALSE(reader.next().has_value());
}

}  // namespace
}  // namespace flowrt
