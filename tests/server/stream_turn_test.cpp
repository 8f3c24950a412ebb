// next_stream_turn (server/stream_source.h): the turn of a stream that the HTTP server
// takes every 100 ms ends the stream only once its source has ended and has given all it
// had, also when the source's last changes come in between its two calls (a follower's
// relay reading the leader's last bytes and then its close); and a client that named an id
// never given is given one reset, and then what comes after it.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <string>
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
std::vector<uint64_t> written(const StreamSource& source, size_t max, size_t turns, bool* ended, uint64_t from = 0) {
  std::vector<uint64_t> ids;
  uint64_t after = from;
  *ended = false;
  for (size_t i = 0; i < turns && !*ended; ++i) {
    const StreamTurn turn = next_stream_turn(source, after, max);
    EXPECT_FALSE(turn.last && !turn.events.empty()) << "a last turn writes nothing more";
    for (const FeedEvent& e : turn.events) ids.push_back(e.id);
    after = turn.next_after;
    *ended = turn.last;
  }
  return ids;
}

// A source that holds changes 1..last and goes on, as a server's own feed: after an id it
// never gave it gives a `reset` carrying the last id given (docs/API.md).
class Holds final : public StreamSource {
 public:
  uint64_t subscribe() override { return last; }
  void unsubscribe() override {}
  std::vector<FeedEvent> after(uint64_t after, size_t max) const override {
    if (after > last) return {missed_reset(last)};
    std::vector<FeedEvent> out;
    for (uint64_t id = after + 1; id <= last && out.size() < max; ++id) out.push_back(change(id));
    return out;
  }
  bool ended() const override { return false; }
  uint64_t last = 0;
};

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

TEST(StreamTurnTest, AClientThatNamedAnIdNeverGiven_GetsOneReset_ThenWhatComesAfterIt) {
  bool ended = false;
  Holds source;
  source.last = 5;
  EXPECT_EQ(written(source, 1000, 5, &ended, /*from=*/UINT64_MAX), std::vector<uint64_t>({5}))
      << "one reset, not one at every turn";
  EXPECT_FALSE(ended);
  // Turn by turn, as the server goes on after the reset: the next change follows it.
  StreamTurn turn = next_stream_turn(source, UINT64_MAX, 1000);
  ASSERT_EQ(turn.events.size(), 1u);
  EXPECT_EQ(turn.events[0].type, "reset");
  EXPECT_EQ(turn.next_after, 5u);
  source.last = 6;
  turn = next_stream_turn(source, turn.next_after, 1000);
  ASSERT_EQ(turn.events.size(), 1u);
  EXPECT_EQ(turn.events[0].id, 6u);
  EXPECT_EQ(turn.events[0].type, "context");
}

// A stream holds at most kStreamTurnBytes and one event more in hand after a turn, however
// large its events and however many are waiting: a client that does not read pins no more
// than that (with 1000 events of 16 KB a turn, it was 16 MB). The turns that follow give the
// rest, in order, none lost nor given twice; a turn always gives at least one event.
TEST(StreamTurnTest, ATurnsBytes_AreBounded_AndTheTurnsAfterGiveTheRest) {
  class Big final : public StreamSource {
   public:
    uint64_t subscribe() override { return 0; }
    void unsubscribe() override {}
    std::vector<FeedEvent> after(uint64_t after, size_t max) const override {
      std::vector<FeedEvent> out;
      for (uint64_t id = after + 1; id <= 2000 && out.size() < max; ++id) {
        out.push_back(FeedEvent{id, "context", std::string(id == 7 ? 1u << 20 : 16u << 10, 'x')});
      }
      return out;
    }
    bool ended() const override { return true; }
  } source;
  std::vector<uint64_t> ids;
  uint64_t after = 0;
  size_t turns = 0;
  for (StreamTurn turn = next_stream_turn(source, after, 1000, kStreamTurnBytes); !turn.last;
       turn = next_stream_turn(source, after, 1000, kStreamTurnBytes)) {
    ASSERT_FALSE(turn.events.empty());
    std::string out;
    size_t largest = 0;
    for (const FeedEvent& e : turn.events) {
      const size_t before = out.size();
      append_sse_event(out, e);
      largest = std::max(largest, out.size() - before);
      ids.push_back(e.id);
    }
    EXPECT_LE(out.size(), kStreamTurnBytes + largest) << "turn " << turns;
    after = turn.next_after;
    ASSERT_LT(++turns, 1000u);
  }
  ASSERT_EQ(ids.size(), 2000u);
  for (size_t i = 0; i < ids.size(); ++i) ASSERT_EQ(ids[i], i + 1);
  EXPECT_GT(turns, 2000u * (16u << 10) / kStreamTurnBytes) << "the bytes, not the count, ended the turns";
}

TEST(StreamTurnTest, ASourceThatGoesOn_NeverEndsTheStream) {
  bool ended = false;
  GoesOn source;
  EXPECT_TRUE(written(source, 1000, 5, &ended).empty());
  EXPECT_FALSE(ended);
}

}  // namespace
}  // namespace flowrt::server
