// ContextPlaces (store/postgres_context_places.h): what the PostgreSQL store's writer knows
// of where a context's row is. The store's own test of the rows:
// PostgresStoreTest.ContextRows_EndInTheRightTable_WhereverTheWriterKnowsThemToBe.
#include <gtest/gtest.h>

#include "store/postgres_context_places.h"

namespace flowrt {
namespace {

using Place = ContextPlaces::Place;

TEST(ContextPlacesTest, SeqsFromBeforeTheOpen_AreUnknown_NewOnesInNeitherTable) {
  ContextPlaces places(10);
  EXPECT_EQ(places.place(1), Place::kUnknown);
  EXPECT_EQ(places.place(10), Place::kUnknown);
  EXPECT_EQ(places.place(11), Place::kNotLive);
}

TEST(ContextPlacesTest, NotesHoldOnceTheBatchIsWritten_AndAreDroppedWhenItFails) {
  ContextPlaces places(10);
  places.note(11, Place::kLive);
  places.note(5, Place::kLive);
  EXPECT_EQ(places.place(11), Place::kLive) << "the batch's own notes count within it";
  places.discard();
  EXPECT_EQ(places.place(11), Place::kNotLive);
  EXPECT_EQ(places.place(5), Place::kUnknown);
  places.note(11, Place::kLive);
  places.note(5, Place::kLive);
  places.commit();
  EXPECT_EQ(places.place(11), Place::kLive);
  EXPECT_EQ(places.place(5), Place::kLive);
  EXPECT_EQ(places.live(), 2u);
  // Moved to history: a new seq is known not live; one from before the open is unknown
  // again (nothing can say "not live" there).
  places.note(11, Place::kNotLive);
  places.note(5, Place::kNotLive);
  places.commit();
  EXPECT_EQ(places.place(11), Place::kNotLive);
  EXPECT_EQ(places.place(5), Place::kUnknown);
  EXPECT_EQ(places.live(), 0u);
  // An outcome the writer cannot tell.
  places.note(12, Place::kUnknown);
  places.commit();
  EXPECT_EQ(places.place(12), Place::kUnknown);
  places.note(12, Place::kNotLive);
  places.commit();
  EXPECT_EQ(places.place(12), Place::kNotLive);
}

// A live row's ended trigger is kept with it until the row moves, only once its batch is
// written, and within the cap; past the cap rows are noted without one.
TEST(ContextPlacesTest, ALiveRowsEndedTrigger_IsKeptUntilItMoves_WithinTheCap) {
  ContextPlaces places(10);
  places.note(11, Place::kLive, R"({"type":"api"})");
  ASSERT_NE(places.ended_trigger(11), nullptr) << "the batch's own notes count within it";
  EXPECT_EQ(*places.ended_trigger(11), R"({"type":"api"})");
  places.discard();
  EXPECT_EQ(places.ended_trigger(11), nullptr);
  EXPECT_EQ(places.trigger_bytes(), 0u);
  places.note(11, Place::kLive, "abc");
  places.note(12, Place::kLive);  // none given
  places.commit();
  ASSERT_NE(places.ended_trigger(11), nullptr);
  EXPECT_EQ(*places.ended_trigger(11), "abc");
  EXPECT_EQ(places.ended_trigger(12), nullptr);
  EXPECT_EQ(places.trigger_bytes(), 3u);
  // Noted live again without one (a row put again): the old one is not kept.
  places.note(11, Place::kLive);
  EXPECT_EQ(places.ended_trigger(11), nullptr);
  places.commit();
  EXPECT_EQ(places.ended_trigger(11), nullptr);
  EXPECT_EQ(places.trigger_bytes(), 0u);
  places.note(11, Place::kLive, "abcd");
  places.commit();
  places.note(11, Place::kNotLive);  // moved
  places.commit();
  EXPECT_EQ(places.ended_trigger(11), nullptr);
  EXPECT_EQ(places.trigger_bytes(), 0u);
  EXPECT_EQ(places.live(), 1u);  // 12

  // The cap counts the committed and the pending triggers.
  const std::string half(ContextPlaces::kMaxTriggerBytes / 2, 'x');
  EXPECT_FALSE(places.full());
  places.note(20, Place::kLive, half);
  places.commit();
  places.note(21, Place::kLive, half);
  places.note(22, Place::kLive, "y");  // past the cap
  EXPECT_NE(places.ended_trigger(21), nullptr);
  EXPECT_EQ(places.ended_trigger(22), nullptr);
  EXPECT_EQ(places.place(22), Place::kLive) << "noted live all the same";
  EXPECT_TRUE(places.full()) << "the pending ones count";
  places.commit();
  EXPECT_EQ(places.trigger_bytes(), ContextPlaces::kMaxTriggerBytes);
  EXPECT_TRUE(places.full());
  places.note(20, Place::kNotLive);
  places.commit();
  EXPECT_FALSE(places.full());
  places.note(22, Place::kLive, "y");  // room again
  places.commit();
  ASSERT_NE(places.ended_trigger(22), nullptr);
  EXPECT_EQ(places.trigger_bytes(), half.size() + 1);
}

}  // namespace
}  // namespace flowrt
