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

}  // namespace
}  // namespace flowrt
