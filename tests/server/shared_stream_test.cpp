// SharedStream (server/shared_stream.h) over a scripted leader: one upstream, asked for all
// the leader holds, gives each viewer what the leader's own feed would (from where it
// joined, a replay of what the ring holds, a reset where it cannot, a gap's reset alone);
// the last viewer leaving closes the upstream, and the upstream ending ends the stream.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "server/shared_stream.h"
#include "tests/support/scripted_upstream.h"
#include "tests/support/test_support.h"

namespace flowrt::server {
namespace {

using test_support::relay_io;
using test_support::ScriptedUpstream;
using test_support::WaitFor;
using namespace std::chrono_literals;

std::string event(uint64_t id, const std::string& type = "context") {
  return "id: " + std::to_string(id) + "\nevent: " + type + "\ndata: {\"n\":" + std::to_string(id) + "}\n\n";
}

// A relay opened as a follower opens its shared one, on a leader whose head says `after`
// and `now`.
std::shared_ptr<StreamRelay> shared_relay(ScriptedUpstream& leader, uint64_t after, uint64_t now,
                                          StreamRelay::Opened* opened_out = nullptr) {
  leader.accept_in_background();
  std::thread answer([&] {
    leader.join();
    leader.send("HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\nX-Flowrt-Stream-After: " +
                std::to_string(after) + "\r\nX-Flowrt-Stream-Now: " + std::to_string(now) + "\r\n\r\nretry: 1000\n\n");
  });
  StreamRelay::Upstream up;
  up.host = "127.0.0.1";
  up.port = leader.port();
  up.target = "/api/stream";
  up.authorization = "Bearer first-viewer";
  up.from_held = true;
  Result<StreamRelay::Opened> opened = StreamRelay::open(relay_io(), up, 5000ms, 60000ms);
  answer.join();
  EXPECT_TRUE(opened.is_ok()) << (opened ? "" : opened.message());
  if (!opened) return nullptr;
  if (opened_out) *opened_out = *opened;
  return opened->relay;
}

// The ids a viewer at `after` is given until it has `n` (or WaitFor's limit).
std::vector<uint64_t> ids_after(const SharedStream& s, uint64_t after, size_t n) {
  std::vector<uint64_t> got;
  WaitFor([&] {
    for (const FeedEvent& e : s.after(got.empty() ? after : got.back(), 1000)) got.push_back(e.id);
    return got.size() >= n;
  });
  return got;
}

// True once the stream has received event `id` (bounded by WaitFor's limit).
bool received(const SharedStream& s, uint64_t id) {
  return WaitFor([&] {
    const std::vector<FeedEvent> next = s.after(id - 1, 1);
    return !next.empty() && next[0].id == id;
  });
}

TEST(SharedStreamTest, ViewersShareOneUpstream_EachFollowsFromWhereItJoined_AsTheLeadersFeedWould) {
  ScriptedUpstream leader;  // accepts one connection: every viewer below shares it
  StreamRelay::Opened opened;
  std::shared_ptr<StreamRelay> relay = shared_relay(leader, 40, 42, &opened);
  ASSERT_TRUE(relay);
  EXPECT_NE(leader.request().find("X-Flowrt-Stream-From: held\r\n"), std::string::npos) << leader.request();
  EXPECT_NE(leader.request().find("Authorization: Bearer first-viewer\r\n"), std::string::npos);
  EXPECT_EQ(leader.request().find("Last-Event-ID"), std::string::npos) << "the upstream asks for all, not a viewer's";
  EXPECT_EQ(opened.after, 40u);
  EXPECT_EQ(opened.now, 42u);
  SharedStream stream(relay, opened.after, opened.now);

  // Before anything came: a fresh viewer follows from the leader's `now`; one at an id the
  // leader gave but this follower has not received yet waits for it.
  EXPECT_EQ(stream.subscribe(), 42u);
  EXPECT_TRUE(stream.after(41, 1000).empty()) << "41 and 42 are on their way: not a reset";
  leader.send(event(41) + event(42) + event(43));
  EXPECT_EQ(ids_after(stream, 42, 1), std::vector<uint64_t>({43})) << "not what was held before it came";

  EXPECT_EQ(stream.subscribe(), 43u) << "a later fresh viewer follows from the last id received";
  EXPECT_EQ(ids_after(stream, 40, 3), std::vector<uint64_t>({41, 42, 43})) << "resumed from what the ring holds";
  EXPECT_TRUE(stream.after(43, 1000).empty());
  for (uint64_t missed : {39ull, 44ull, 1000ull}) {
    const std::vector<FeedEvent> reset = stream.after(missed, 1000);
    ASSERT_EQ(reset.size(), 1u) << missed;
    EXPECT_EQ(reset[0].type, "reset") << missed << ": older than the ring, or never given";
    EXPECT_EQ(reset[0].id, 43u) << "carrying the last id known, to follow on from";
    EXPECT_EQ(reset[0].data, "{\"reason\":\"events missed\"}");
  }
  stream.unsubscribe();
  stream.unsubscribe();
  leader.close();
}

TEST(SharedStreamTest, AGapsResetInTheRing_IsGivenAlone_AndARingTooShortForAViewer_IsAReset) {
  ScriptedUpstream leader;
  std::shared_ptr<StreamRelay> relay = shared_relay(leader, 0, 0);
  ASSERT_TRUE(relay);
  SharedStream stream(relay, 0, 0, /*capacity=*/6);
  stream.subscribe();
  leader.send(event(1) + event(2) + event(3) + event(4, "reset") + event(5));
  ASSERT_TRUE(received(stream, 5));
  std::vector<FeedEvent> gap = stream.after(1, 1000);
  ASSERT_EQ(gap.size(), 1u) << "the events before the reset are not sent with it, as by the leader's feed";
  EXPECT_EQ(gap[0].id, 4u);
  EXPECT_EQ(gap[0].type, "reset");
  EXPECT_EQ(ids_after(stream, 4, 1), std::vector<uint64_t>({5}));

  // Six held: 5..10 after four more; a viewer at 3 missed 4, which is gone.
  leader.send(event(6) + event(7) + event(8) + event(9) + event(10));
  ASSERT_TRUE(received(stream, 10));
  EXPECT_EQ(stream.after(3, 1000).front().type, "reset");
  EXPECT_EQ(ids_after(stream, 4, 6), std::vector<uint64_t>({5, 6, 7, 8, 9, 10})) << "the oldest still held";

  // An id that is not the next one: what was held no longer runs up to it.
  leader.send(event(20) + event(21));
  ASSERT_TRUE(received(stream, 21));
  std::vector<FeedEvent> jumped = stream.after(10, 1000);
  ASSERT_EQ(jumped.size(), 1u);
  EXPECT_EQ(jumped[0].type, "reset");
  EXPECT_EQ(jumped[0].id, 21u);
  EXPECT_EQ(ids_after(stream, 19, 2), std::vector<uint64_t>({20, 21}));
  stream.unsubscribe();
  leader.close();
}

TEST(SharedStreamTest, TheLastViewerLeaving_ClosesTheUpstream_AndNoViewerJoinsItAfter) {
  ScriptedUpstream leader;
  std::shared_ptr<StreamRelay> relay = shared_relay(leader, 0, 0);
  ASSERT_TRUE(relay);
  SharedStream stream(relay, 0, 0);
  EXPECT_TRUE(stream.open_to_viewers()) << "open to the viewer that opened it, before it subscribes";
  stream.subscribe();
  stream.subscribe();
  stream.unsubscribe();
  EXPECT_TRUE(stream.open_to_viewers()) << "one viewer is still here";
  EXPECT_FALSE(leader.peer_closed());
  stream.unsubscribe();
  EXPECT_FALSE(stream.open_to_viewers());
  EXPECT_TRUE(WaitFor([&] { return leader.peer_closed(); })) << "the follower closed its connection to the leader";
}

TEST(SharedStreamTest, TheUpstreamEnding_EndsTheStream_WhatCameStillGiven) {
  ScriptedUpstream leader;
  std::shared_ptr<StreamRelay> relay = shared_relay(leader, 0, 0);
  ASSERT_TRUE(relay);
  SharedStream stream(relay, 0, 0);
  stream.subscribe();
  leader.send(event(1) + event(2));
  leader.close();  // the leader went
  ASSERT_TRUE(WaitFor([&] { return stream.ended(); }));
  EXPECT_FALSE(stream.open_to_viewers()) << "a viewer coming now gets a new upstream, to whoever leads";
  EXPECT_EQ(ids_after(stream, 0, 2), std::vector<uint64_t>({1, 2})) << "a viewer behind still gets what came";
  stream.unsubscribe();
}

}  // namespace
}  // namespace flowrt::server
