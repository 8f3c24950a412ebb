// StreamRelay (server/stream_relay.h) against a scripted upstream on a loopback socket:
// the events it passes on as Server-Sent Events frame them (CRLF, comments, a line split
// across reads, several data lines), the client's credentials and Last-Event-ID go up, a
// refusal comes back as the leader gave it, and the relay ends when the upstream closes,
// falls silent past `idle`, its client leaves too many events unread, or an event grows
// past a line's bound. Many relays are read on one thread, and a relay outliving its
// stopped RelayIo is let go without waiting.
#include <gtest/gtest.h>

#include <filesystem>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "server/stream_relay.h"
#include "tests/support/scripted_upstream.h"
#include "tests/support/test_support.h"

namespace flowrt::server {
namespace {

using test_support::kStreamHead;
using test_support::relay_io;
using test_support::ScriptedUpstream;
using test_support::WaitFor;
using namespace std::chrono_literals;

size_t threads_of_this_process() {
  size_t n = 0;
  for ([[maybe_unused]] const auto& task : std::filesystem::directory_iterator("/proc/self/task")) ++n;
  return n;
}

StreamRelay::Upstream upstream_at(uint16_t port) {
  StreamRelay::Upstream up;
  up.host = "127.0.0.1";
  up.port = port;
  up.target = "/api/stream?access_token=t0k";
  up.authorization = "Bearer abc";
  up.last_event_id = "41";
  return up;
}

// A relay on `leader`, which answers the stream's head and nothing more (yet).
std::shared_ptr<StreamRelay> relay_on_a_quiet_stream(ScriptedUpstream& leader, std::chrono::milliseconds idle,
                                                     const std::shared_ptr<RelayIo>& io = relay_io()) {
  leader.accept_in_background();
  std::thread answer([&] {
    leader.join();
    leader.send(kStreamHead);
  });
  Result<StreamRelay::Opened> opened = StreamRelay::open(io, upstream_at(leader.port()), 5000ms, idle);
  answer.join();
  EXPECT_TRUE(opened.is_ok()) << (opened ? "" : opened.message());
  return opened ? opened->relay : nullptr;
}

// Everything the relay gives until it has `n` events (bounded by WaitFor's limit).
std::vector<FeedEvent> take(StreamRelay& relay, size_t n) {
  std::vector<FeedEvent> got;
  EXPECT_TRUE(WaitFor([&] {
    for (FeedEvent& e : relay.after(got.empty() ? 0 : got.back().id, 1000)) got.push_back(std::move(e));
    return got.size() >= n;
  })) << "only " << got.size() << " of " << n << " events came";
  return got;
}

TEST(StreamRelayTest, PassesTheEventsOnAsServerSentEventsFrameThem_AndEndsWhenTheUpstreamCloses) {
  ScriptedUpstream leader;
  leader.accept_in_background();
  std::thread answer([&] {
    leader.join();
    leader.send(std::string(kStreamHead) + ": heartbeat\n\nid: 42\nevent: context\ndata: {\"a\":1}\n\nid: 43\r\nevent: lock\r\ndata: {\"b\":");
  });
  Result<StreamRelay::Opened> opened = StreamRelay::open(relay_io(), upstream_at(leader.port()), 5000ms, 20000ms);
  answer.join();
  ASSERT_TRUE(opened.is_ok()) << opened.message();
  ASSERT_TRUE(opened->relay);
  EXPECT_FALSE(opened->answer);
  StreamRelay& relay = *opened->relay;
  EXPECT_NE(leader.request().find("GET /api/stream?access_token=t0k HTTP/1.1\r\n"), std::string::npos) << leader.request();
  EXPECT_NE(leader.request().find("Authorization: Bearer abc\r\n"), std::string::npos) << leader.request();
  EXPECT_NE(leader.request().find("Last-Event-ID: 41\r\n"), std::string::npos) << leader.request();

  std::vector<FeedEvent> got = take(relay, 1);
  ASSERT_EQ(got.size(), 1u) << "the second event's lines are not all there yet";
  EXPECT_EQ(got[0].id, 42u);
  EXPECT_EQ(got[0].type, "context");
  EXPECT_EQ(got[0].data, "{\"a\":1}");
  EXPECT_FALSE(relay.ended());

  leader.send("2}\r\n\r\nid: 44\ndata: line one\ndata:line two\n\n");
  got = take(relay, 2);
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0].id, 43u);
  EXPECT_EQ(got[0].type, "lock");
  EXPECT_EQ(got[0].data, "{\"b\":2}") << "one line, split between two reads";
  EXPECT_EQ(got[1].id, 44u);
  EXPECT_EQ(got[1].type, "message") << "an event without a type is a message";
  EXPECT_EQ(got[1].data, "line one\nline two");

  leader.send("id: 45\nevent: context\ndata: {}\n\n");
  leader.close();
  EXPECT_TRUE(WaitFor([&] { return relay.upstream_ended(); }));
  EXPECT_FALSE(relay.ended()) << "not before the event still held is given out";
  got = take(relay, 1);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].id, 45u);
  EXPECT_TRUE(relay.ended()) << "the upstream closed and all it sent is given out";
}

TEST(StreamRelayTest, TheLeadersRefusal_IsPassedOnAsItGaveIt) {
  ScriptedUpstream leader;
  leader.accept_in_background();
  std::thread answer([&] {
    leader.join();
    const std::string body = "{\"error\":\"a valid token is needed\"}\n";
    leader.send("HTTP/1.1 401 Unauthorized\r\nContent-Type: application/json\r\nWWW-Authenticate: Bearer\r\n"
                "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body);
  });
  Result<StreamRelay::Opened> opened = StreamRelay::open(relay_io(), upstream_at(leader.port()), 5000ms, 20000ms);
  answer.join();
  ASSERT_TRUE(opened.is_ok()) << opened.message();
  EXPECT_FALSE(opened->relay);
  ASSERT_TRUE(opened->answer);
  EXPECT_EQ(opened->answer->result(), http::status::unauthorized);
  EXPECT_EQ(opened->answer->body(), "{\"error\":\"a valid token is needed\"}\n");
  EXPECT_EQ((*opened->answer)[http::field::www_authenticate], "Bearer");
}

TEST(StreamRelayTest, ALeaderThatCannotBeReachedOrDoesNotAnswer_IsAnError) {
  uint16_t closed_port = 0;
  {
    ScriptedUpstream gone;  // bound, then closed: nothing listens there any more
    closed_port = gone.port();
  }
  Result<StreamRelay::Opened> refused = StreamRelay::open(relay_io(), upstream_at(closed_port), 5000ms, 20000ms);
  ASSERT_FALSE(refused.is_ok());
  EXPECT_NE(refused.message().find("connect"), std::string::npos) << refused.message();

  ScriptedUpstream silent;  // accepts and reads, never answers
  silent.accept_in_background();
  Result<StreamRelay::Opened> no_answer = StreamRelay::open(relay_io(), upstream_at(silent.port()), 300ms, 20000ms);
  ASSERT_FALSE(no_answer.is_ok());
  EXPECT_NE(no_answer.message().find("read"), std::string::npos) << no_answer.message();
}

TEST(StreamRelayTest, AnUpstreamSilentPastIdle_EndsTheRelay) {
  ScriptedUpstream leader;
  std::shared_ptr<StreamRelay> relay = relay_on_a_quiet_stream(leader, 200ms);
  ASSERT_TRUE(relay);
  EXPECT_TRUE(WaitFor([&] { return relay->ended(); })) << "nothing came for longer than idle";
}

TEST(StreamRelayTest, AClientThatLeavesTooManyEventsUnread_EndsTheRelay_AfterTakingWhatIsHeld) {
  ScriptedUpstream leader;
  std::shared_ptr<StreamRelay> quiet = relay_on_a_quiet_stream(leader, 60000ms);
  ASSERT_TRUE(quiet);
  StreamRelay& relay = *quiet;
  std::string many;
  const size_t n = StreamRelay::kMaxHeld + 100;
  for (size_t i = 1; i <= n; ++i) many += "id: " + std::to_string(i) + "\nevent: context\ndata: {}\n\n";
  std::thread sender([&] {
    try {
      leader.send(many);  // the upstream stays open: only the client's lag ends the relay
    } catch (const std::exception&) {
      // the relay closed the connection while the rest was on its way
    }
  });
  std::vector<FeedEvent> got;
  ASSERT_TRUE(WaitFor([&] { return relay.upstream_ended(); })) << "more than kMaxHeld events unread end the relay";
  for (std::vector<FeedEvent> some; !(some = relay.after(0, 1000)).empty();) got.insert(got.end(), some.begin(), some.end());
  EXPECT_GT(got.size(), StreamRelay::kMaxHeld) << "what it held is still given out";
  for (size_t i = 0; i < got.size(); ++i) ASSERT_EQ(got[i].id, i + 1) << "in order, none lost before the end";
  EXPECT_TRUE(relay.ended());
  sender.join();
}

TEST(StreamRelayTest, AnEventWhoseDataGrowsPastALinesBound_EndsTheRelay_WhatCameBeforeStillGiven) {
  ScriptedUpstream leader;
  std::shared_ptr<StreamRelay> quiet = relay_on_a_quiet_stream(leader, 60000ms);
  ASSERT_TRUE(quiet);
  StreamRelay& relay = *quiet;
  // One whole event, then data lines (each well under a line's bound) with no empty line to
  // end their event: held, they would grow without end.
  std::string stream = "id: 1\nevent: context\ndata: {}\n\nid: 2\nevent: context\n";
  const std::string line = "data: " + std::string(1000, 'x') + "\n";
  while (stream.size() < StreamRelay::kMaxLine + 64 * 1024) stream += line;
  std::thread sender([&] {
    try {
      leader.send(stream);  // the upstream stays open: only the event's size ends the relay
    } catch (const std::exception&) {
      // the relay closed the connection while the rest was on its way
    }
  });
  const bool ended = WaitFor([&] { return relay.upstream_ended(); });
  sender.join();  // the relay reads all that is sent, ended or not
  ASSERT_TRUE(ended) << "an event's data past kMaxLine ends the relay";
  const std::vector<FeedEvent> got = relay.after(0, 1000);
  ASSERT_EQ(got.size(), 1u) << "the whole event before it, and not the one cut";
  EXPECT_EQ(got[0].id, 1u);
  EXPECT_TRUE(relay.ended());
}

TEST(StreamRelayTest, ManyRelays_AreReadOnOneThread_EachGivesItsOwnEvents) {
  constexpr size_t kRelays = 16;
  (void)relay_io();  // its thread is counted before
  std::vector<std::unique_ptr<ScriptedUpstream>> leaders;
  std::vector<std::shared_ptr<StreamRelay>> relays;
  const size_t threads_before = threads_of_this_process();
  for (size_t i = 0; i < kRelays; ++i) {
    leaders.push_back(std::make_unique<ScriptedUpstream>());
    relays.push_back(relay_on_a_quiet_stream(*leaders.back(), 60000ms));
    ASSERT_TRUE(relays.back());
  }
  EXPECT_EQ(threads_of_this_process(), threads_before) << "a relay takes no thread of its own";
  for (size_t i = 0; i < kRelays; ++i) {
    leaders[i]->send("id: " + std::to_string(100 + i) + "\nevent: context\ndata: {\"relay\":" + std::to_string(i) + "}\n\n");
  }
  for (size_t i = 0; i < kRelays; ++i) {
    std::vector<FeedEvent> got = take(*relays[i], 1);
    ASSERT_EQ(got.size(), 1u) << "relay " << i;
    EXPECT_EQ(got[0].id, 100 + i);
    EXPECT_EQ(got[0].data, "{\"relay\":" + std::to_string(i) + "}");
  }
  relays.clear();  // each closes its connection and waits for its read to end
  for (auto& leader : leaders) leader->close();
}

TEST(StreamRelayTest, ARelayOutlivingItsStoppedRelayIo_IsLetGoWithoutWaiting) {
  std::shared_ptr<RelayIo> io = RelayIo::start();
  ScriptedUpstream leader;
  std::shared_ptr<StreamRelay> relay = relay_on_a_quiet_stream(leader, 60000ms, io);
  ASSERT_TRUE(relay);
  leader.send("id: 7\nevent: context\ndata: {}\n\n");
  std::vector<FeedEvent> got = take(*relay, 1);
  ASSERT_EQ(got.size(), 1u);
  io->stop();  // as a node stops: its read stays pending, and no handler runs any more
  EXPECT_TRUE(io->stopped());
  io.reset();  // the relay keeps the stopped I/O context alive for its socket
  relay.reset();  // closes its socket itself; would wait forever for a read that cannot end
  leader.close();
}

}  // namespace
}  // namespace flowrt::server
