// next_stream_turn (server/stream_source.h): the turn of a stream that the HTTP server
// takes every 100 ms ends the stream only once its source has ended and has given all it
// had, also when the source's last changes come in between its two calls (a follower's
// relay reading the leader's last bytes and then its close).
#include <gtest/gtest.h>

#include <cstdint>
#include <utility>
#include <vector>

#include "server/stream_source.h"

namespace flowrt::server {
namespace {

FeedEvent change(uint64_t id) { return FeedEvent{id, "context", "{}"}; }

// A source whose upstream ends with its last changes: they become its own at the moment
// ended() first says true, as a SharedStream takes the relay's last events in when asked.
class LastChangesComeWithTheEnd final : public StreamSource {
 public:
  LastChangesComeWithTheEnd(std::vector<FeedEvent> held, std::vector<FeedEvent> last)
      : held_(std::move(held)), last_(std::move(last)) {}
  uint64_t subscribe() override { return 0; }
  void unsubscribe() override {}
  std::vector<FeedEvent> after(uint64_t after, size_t max) const override {
    std::vector<FeedEvent> out;
    for (const FeedEvent& e : held_) {
      if (e.id > after && out.size() < max) out.push_back(e);
    }
    return out;
  }
  bool ended() const override {
    held_.insert(held_.end(), last_.begin(), last_.end());
    last_.clear();
    return true;
  }

 private:
  mutable std::vector<FeedEvent> held_;
  mutable std::vector<FeedEvent> last_;
};

// A source that goes on (a server's own feed): it never ends.
class GoesOn final : public StreamSource {
 public:
  uint64_t subscribe() override { return 0; }
  void unsubscribe() override {}
  std::vector<FeedEvent> after(uint64_t, size_t) const override { return {}; }
  bool ended() const override { return false; }
};

// The ids a client is written, turn by turn as the server takes them, until the last turn
// (or `turns` of them).
std::vector<uint64_t> written(const StreamSource& source, size_t max, size_t turns, bool* ended) {
  std::vector<uint64_t> ids;
  uint64_t after = 0;
  *ended = false;
  for (size_t i = 0; i < turns && !*ended; ++i) {
    const StreamTurn turn = next_stream_turn(source, after, max);
    EXPECT_FALSE(turn.last && !turn.events.empty()) << "a last turn writes nothing more";
    for (const FeedEvent& e : turn.events) {
      ids.push_back(e.id);
      after = e.id;
    }
    *ended = turn.last;
  }
  return ids;
}

TEST(StreamTurnTest, ChangesThatComeWithTheSourcesEnd_AreWritten_BeforeTheStreamEnds) {
  bool ended = false;
  LastChangesComeWithTheEnd source({change(1), change(2)}, {change(3), change(4), change(5)});
  EXPECT_EQ(written(source, 1000, 10, &ended), std::vector<uint64_t>({1, 2, 3, 4, 5}));
  EXPECT_TRUE(ended);

  LastChangesComeWithTheEnd none_held({}, {change(1), change(2)});
  EXPECT_EQ(written(none_held, 1000, 10, &ended), std::vector<uint64_t>({1, 2}))
      << "a viewer with nothing to write when the last changes came";
  EXPECT_TRUE(ended);
}

TEST(StreamTurnTest, AnEndedSourceWithMoreThanATurnHolds_EndsAfterItsLastTurn) {
  bool ended = false;
  LastChangesComeWithTheEnd source({change(1), change(2), change(3)}, {change(4), change(5)});
  EXPECT_EQ(written(source, 2, 10, &ended), std::vector<uint64_t>({1, 2, 3, 4, 5}));
  EXPECT_TRUE(ended);
}

TEST(StreamTurnTest, ASourceThatGoesOn_NeverEndsTheStream) {
  bool ended = false;
  GoesOn source;
  EXPECT_TRUE(written(source, 1000, 5, &ended).empty());
  EXPECT_FALSE(ended);
}

}  // namespace
}  // namespace flowrt::server
