// GET /api/stream: Server-Sent Events of context and lock changes, resumable with
// Last-Event-ID.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <thread>

#include "tests/server/server_fixture.h"
#include "tests/server/sse_reader.h"

namespace flowrt::testing_http {
namespace {

using ::testing::HasSubstr;

// What the feed holds, copied (FeedEvent is the feed's own type).
struct FeedEventCopy {
  uint64_t id;
  std::string type;
};
std::vector<FeedEventCopy> copy(const std::vector<server::FeedEvent>& events) {
  std::vector<FeedEventCopy> out;
  for (const server::FeedEvent& e : events) out.push_back({e.id, e.type});
  return out;
}

class StreamTest : public ServerFixture {
 protected:
  void SetUp() override { serve(config_with_tokens()); }
  std::string stream_request(const std::string& extra = "") {
    return "GET /api/stream?access_token=" + token("viewer") + " HTTP/1.1\r\nHost: x\r\n" + extra + "\r\n";
  }
  // A closed gate and a hold_desk context called to wait at it: {gate's sys_id, context id}.
  std::pair<std::string, std::string> call_hold_desk() {
    const std::string op = token("operator");
    std::string gate(
        client().request(http::verb::post, "/api/tables/gate/records", R"({"open": false})", op).json()["sys_id"].as_string());
    std::string id(client()
                       .request(http::verb::post, "/api/flows/hold_desk/call", R"({"gate": ")" + gate + R"("})", op)
                       .json()["context_id"]
                       .as_string());
    return {gate, id};
  }
};

TEST_F(StreamTest, ContextsStartWaitAndEnd) {
  StreamReader stream(service_->port(), stream_request());
  ASSERT_TRUE(stream.opened()) << "subscribed before the call, so its events are the stream's";
  const std::string op = token("operator");
  const auto held = call_hold_desk();  // not a structured binding: the lambdas capture them
  const std::string gate = held.first;
  const std::string id = held.second;
  auto about = [&](const char* change) {
    return [&, change](const SseEvent& e) {
      return e.type == "context" && e.data["context"]["id"].as_string() == id && e.data["change"].as_string() == change;
    };
  };
  std::optional<SseEvent> started = stream.until(about("started"));
  ASSERT_TRUE(started) << stream.head() << stream.seen();
  EXPECT_THAT(stream.head(), HasSubstr("Content-Type: text/event-stream"));
  EXPECT_EQ(started->data["context"]["flow"], Value("hold_desk"));
  // It takes the lock: a lock event; then it waits at the gate (started may already be waiting).
  ASSERT_TRUE(stream.until([](const SseEvent& e) { return e.type == "lock" && e.data["name"].as_string() == "desk"; }))
      << stream.seen();
  client().request(http::verb::post, "/api/contexts/" + id + "/cancel", "", op);
  std::optional<SseEvent> ended = stream.until(about("ended"));
  ASSERT_TRUE(ended) << stream.seen();
  EXPECT_EQ(ended->data["context"]["status"], Value("cancelled"));
  EXPECT_GT(ended->id, started->id);
}

TEST_F(StreamTest, LastEventIdResumesAfterIt) {
  const std::string op = token("operator");
  std::vector<SseEvent> seen;
  {
    StreamReader stream(service_->port(), stream_request());
    ASSERT_TRUE(stream.opened()) << "subscribed before the calls, so their events are the stream's";
    client().request(http::verb::post, "/api/flows/greet/call", R"({"name": "a"})", op);
    client().request(http::verb::post, "/api/flows/greet/call", R"({"name": "b"})", op);
    // Both contexts started and ended: four events.
    while (seen.size() < 4) {
      std::optional<SseEvent> e = stream.next();
      ASSERT_TRUE(e);
      if (e->type == "context") seen.push_back(*e);
    }
  }
  // A client that resumes after the first gets the rest, in order, the first not again.
  StreamReader resumed(service_->port(), stream_request("Last-Event-ID: " + std::to_string(seen[0].id) + "\r\n"));
  for (size_t i = 1; i < seen.size(); ++i) {
    std::optional<SseEvent> e = resumed.next();
    ASSERT_TRUE(e);
    EXPECT_EQ(e->id, seen[i].id);
    EXPECT_EQ(e->data, seen[i].data);
  }
}

TEST_F(StreamTest, AnIdItNeverGaveOrNoLongerHoldsIsAReset) {
  // An id from another process (ids start from the wall clock: 5 is long gone).
  StreamReader old(service_->port(), stream_request("Last-Event-ID: 5\r\n"));
  std::optional<SseEvent> e = old.next();
  ASSERT_TRUE(e);
  EXPECT_EQ(e->type, "reset");
  StreamReader future(service_->port(), stream_request("Last-Event-ID: 18446744073709551000\r\n"));
  e = future.next();
  ASSERT_TRUE(e);
  EXPECT_EQ(e->type, "reset");
}

// While no client watches, the feed reads nothing; so every such gap ends with a reset of
// its own when a client comes, also when nothing started in it (a context ended).
TEST_F(StreamTest, EveryGapWithNoClientEndsWithAReset) {
  server::EventFeed& feed = service_->feed();
  const std::string op = token("operator");
  feed.subscribe();  // a client watches
  const auto held = call_hold_desk();  // not a structured binding: the lambdas capture them
  const std::string gate = held.first;
  const std::string id = held.second;
  settle();
  ASSERT_EQ(engine().context(id)->status(), "waiting");
  feed.poll();
  const uint64_t seen = feed.last_id();  // the client saw it waiting, and goes away
  feed.unsubscribe();

  // It ends while no one watches, and nothing starts.
  client().request(http::verb::patch, "/api/tables/gate/records/" + gate, R"({"open": true})", op);
  settle();
  ASSERT_EQ(engine().context(id)->status(), "completed");
  feed.poll();

  // The client resumes from what it saw: a reset tells it to reload.
  const uint64_t from = feed.subscribe();
  std::vector<FeedEventCopy> missed = copy(feed.after(seen));
  ASSERT_EQ(missed.size(), 1u);
  EXPECT_EQ(missed[0].type, "reset");
  EXPECT_EQ(missed[0].id, from);  // a new client follows from after it
  // Nothing after it: what changed in the gap (the context ended, the lock let go) is the
  // reset's to tell, also when the feed's own poll runs meanwhile.
  for (const server::FeedEvent& e : feed.after(from)) ADD_FAILURE() << "after the reset: " << e.type << " " << e.data;

  // Away again, back again: the second gap has its own reset.
  feed.unsubscribe();
  const uint64_t again = feed.subscribe();
  missed = copy(feed.after(from));
  ASSERT_EQ(missed.size(), 1u);
  EXPECT_EQ(missed[0].type, "reset");
  EXPECT_EQ(missed[0].id, again);
  feed.unsubscribe();
}

// The first gap too: a client that watched while nothing changed holds the id the feed
// began with; a context that ended after it went away is a change it did not see.
TEST_F(StreamTest, TheFirstGapEndsWithAReset_EvenWhenNothingWasSentBeforeIt) {
  server::EventFeed& feed = service_->feed();
  const auto held = call_hold_desk();  // waiting before any client came
  const std::string gate = held.first;
  const std::string id = held.second;
  settle();
  ASSERT_EQ(engine().context(id)->status(), "waiting");
  const uint64_t seen = feed.subscribe();
  feed.poll();
  for (const server::FeedEvent& e : feed.after(seen)) ADD_FAILURE() << "nothing changed: " << e.type << " " << e.data;
  feed.unsubscribe();
  client().request(http::verb::patch, "/api/tables/gate/records/" + gate, R"({"open": true})", token("operator"));
  settle();
  ASSERT_EQ(engine().context(id)->status(), "completed");
  const uint64_t from = feed.subscribe();
  std::vector<FeedEventCopy> missed = copy(feed.after(seen));
  ASSERT_EQ(missed.size(), 1u) << "the client that saw it waiting is told it ended, or to reload";
  EXPECT_EQ(missed[0].type, "reset");
  EXPECT_EQ(missed[0].id, from);
  feed.unsubscribe();
}

// Every context not ended when a client comes is followed, whatever its status: its next
// change is sent.
TEST_F(StreamTest, ContextsNotEndedWhenAClientComes_AreFollowed_TheirEndsSent) {
  server::EventFeed& feed = service_->feed();
  const auto first = call_hold_desk();   // holds the lock, waits for its gate
  settle();  // the lock is first's before second asks (else they race for it)
  const auto second = call_hold_desk();  // waits for the lock
  client().request(http::verb::post, "/api/flows/greet/call?wait=10s", R"({"name": "a"})", token("operator"));
  settle();
  const uint64_t from = feed.subscribe();
  ASSERT_EQ(engine().context(second.second)->status(), "waiting");
  auto ended = [&] {
    std::vector<std::string> out;
    for (const server::FeedEvent& e : feed.after(from)) {
      const Value data = test_support::json(e.data);
      if (e.type == "context" && data["change"] == Value("ended")) out.emplace_back(data["context"]["id"].as_string());
    }
    return out;
  };
  client().request(http::verb::patch, "/api/tables/gate/records/" + first.first, R"({"open": true})",
                   token("operator"));
  settle();
  feed.poll();
  EXPECT_EQ(ended(), std::vector<std::string>{first.second}) << "the one that ended, once; the other waits for its gate";
  client().request(http::verb::patch, "/api/tables/gate/records/" + second.first, R"({"open": true})",
                   token("operator"));
  settle();
  feed.poll();
  EXPECT_EQ(ended(), (std::vector<std::string>{first.second, second.second}));
  feed.unsubscribe();
}

// A client that opens the stream afresh (no Last-Event-ID) has just loaded what it shows:
// the reset that begins the feed's watching is not sent to it.
TEST_F(StreamTest, AFreshClientIsNotSentTheResetItsArrivalMade) {
  server::EventFeed& feed = service_->feed();
  feed.subscribe();  // something in the feed, then a gap
  client().request(http::verb::post, "/api/flows/greet/call?wait=10s", R"({"name": "a"})", token("operator"));
  feed.poll();
  feed.unsubscribe();
  ASSERT_FALSE(feed.after(0).empty());
  StreamReader fresh(service_->port(), stream_request());
  ASSERT_TRUE(fresh.opened());
  client().request(http::verb::post, "/api/flows/greet/call?wait=10s", R"({"name": "b"})", token("operator"));
  // Its first event is the context that started after it came (a reset would come first).
  std::optional<SseEvent> first = fresh.next();
  ASSERT_TRUE(first) << fresh.head();
  EXPECT_EQ(first->type, "context");
  EXPECT_EQ(first->data["change"], Value("started"));
}

// One look announces at most the 500 newest contexts that started. When more started
// between two looks, the older ones get no event, and a reset before the newest ones'
// events tells the client so: it reloads (until 2026-12-06 nothing did, and the viewer's
// list silently lacked them). 500 exactly are all announced, with no reset.
TEST_F(StreamTest, MoreContextsStartedBetweenTwoLooksThanOneAnnounces_AResetComesFirst) {
  // A feed of its own, never started: only this test's polls look, so what starts between
  // two of them is known.
  server::EventFeed feed(engine());
  uint64_t at = feed.subscribe();
  auto fire = [&](int n) {
    for (int i = 0; i < n; ++i) ASSERT_TRUE(engine().fire_event("ping", Value::object({{"n", Value(i)}})).is_ok());
    settle();
  };
  // Turn by turn, as a stream gives them (a reset comes alone): the reset reasons and the
  // seqs announced as started.
  auto look = [&] {
    feed.poll();
    std::pair<std::vector<std::string>, std::vector<int64_t>> seen;
    for (std::vector<server::FeedEvent> turn = feed.after(at); !turn.empty(); turn = feed.after(at)) {
      for (const server::FeedEvent& e : turn) {
        const Value data = test_support::json(e.data);
        if (e.type == "reset") {
          EXPECT_TRUE(seen.second.empty()) << "the reset comes before the starts of its look";
          seen.first.emplace_back(data["reason"].as_string());
        }
        if (e.type == "context" && data["change"] == Value("started")) seen.second.push_back(data["context"]["seq"].as_int());
      }
      at = turn.back().id;
    }
    return seen;
  };
  auto newest = [](int64_t last, int64_t n) {
    std::vector<int64_t> out;
    for (int64_t seq = last - n + 1; seq <= last; ++seq) out.push_back(seq);
    return out;
  };

  fire(500);
  auto seen = look();
  EXPECT_THAT(seen.first, ::testing::IsEmpty()) << "500 started: every one announced";
  int64_t started = static_cast<int64_t>(engine().stats().contexts_started);
  EXPECT_EQ(seen.second, newest(started, 500));

  fire(501);
  seen = look();
  EXPECT_EQ(seen.first, std::vector<std::string>{"contexts started and not announced"})
      << "501 started: the oldest is left out, and the client is told";
  started = static_cast<int64_t>(engine().stats().contexts_started);
  EXPECT_EQ(seen.second, newest(started, 500)) << "the 500 newest, in order";
  feed.unsubscribe();
}

// A cluster follower shares one stream among its viewers (server/shared_stream.h): it asks
// for every event the feed holds (X-Flowrt-Stream-From: held, whatever Last-Event-ID says),
// and every stream's head says where it follows from and the last id given when it opened.
TEST_F(StreamTest, AStreamFromWhatIsHeld_BeginsAtTheOldestEventHeld_AndEveryHeadSaysWhereItStands) {
  server::EventFeed& feed = service_->feed();
  feed.subscribe();
  client().request(http::verb::post, "/api/flows/greet/call?wait=10s", R"({"name": "a"})", token("operator"));
  feed.poll();
  std::vector<server::FeedEvent> held;  // turn by turn, as a stream gives them: a reset comes alone
  for (uint64_t at = feed.held_after();;) {
    const std::vector<server::FeedEvent> turn = feed.after(at);
    if (turn.empty()) break;
    held.insert(held.end(), turn.begin(), turn.end());
    at = turn.back().id;
  }
  ASSERT_GE(held.size(), 3u) << "the gap's reset, then the context's start and end";
  EXPECT_EQ(held.front().type, "reset");
  const uint64_t oldest = held.front().id;
  EXPECT_EQ(feed.held_after(), oldest - 1);

  StreamReader all(service_->port(), stream_request("X-Flowrt-Stream-From: held\r\nLast-Event-ID: " +
                                                    std::to_string(held.back().id) + "\r\n"));
  ASSERT_TRUE(all.opened()) << all.head();
  EXPECT_THAT(all.head(), HasSubstr("X-Flowrt-Stream-After: " + std::to_string(oldest - 1) + "\n"));
  EXPECT_THAT(all.head(), HasSubstr("X-Flowrt-Stream-Now: " + std::to_string(feed.last_id()) + "\n"));
  for (const server::FeedEvent& e : held) {
    std::optional<SseEvent> got = all.next();
    ASSERT_TRUE(got) << "event " << e.id;
    EXPECT_EQ(got->id, e.id) << "every event held, the oldest first";
    EXPECT_EQ(got->type, e.type);
  }

  StreamReader plain(service_->port(), stream_request());
  ASSERT_TRUE(plain.opened()) << plain.head();
  const std::string now = std::to_string(feed.last_id());
  EXPECT_THAT(plain.head(), HasSubstr("X-Flowrt-Stream-After: " + now + "\n")) << "a fresh client follows from now";
  EXPECT_THAT(plain.head(), HasSubstr("X-Flowrt-Stream-Now: " + now + "\n"));
  feed.unsubscribe();
}

TEST_F(StreamTest, NeedsATokenAndAnIdThatIsANumber) {
  std::optional<HttpReply> bad = client().raw(stream_request("Last-Event-ID: 12abc\r\n"));
  ASSERT_TRUE(bad);
  EXPECT_EQ(bad->status, 400);
  HttpReply r = client().get("/api/stream");
  EXPECT_EQ(r.status, 401);
  EXPECT_EQ(client().get("/api/stream?access_token=wrong").status, 401);
}

// HEAD answers the stream's headers with no body, and the connection closes: no stream is
// kept open for it (API.md, every GET route answers HEAD).
TEST_F(StreamTest, HeadGivesTheStreamsHeaders_NoBody_AndCloses) {
  client().write_raw("HEAD /api/stream?access_token=" + token("viewer") + " HTTP/1.1\r\nHost: x\r\n\r\n");
  std::optional<HttpReply> head = client().read_reply(/*head=*/true);
  ASSERT_TRUE(head);
  EXPECT_EQ(head->status, 200);
  EXPECT_EQ(head->header("Content-Type"), "text/event-stream");
  EXPECT_NE(head->header("X-Flowrt-Stream-Now"), "");
  EXPECT_TRUE(client().closed_by_server()) << "a body came after the headers: " << client().last_error_;
}

// A stream client that stops reading cannot hold its connection: each write of the stream
// must end within request_timeout_ms, or the connection is closed (API.md, limits).
class StreamLimitTest : public ServerFixture {
 protected:
  void SetUp() override {
    serve(R"({"store": "memory", "properties": {"context_retention": 1000},
              "server": {"limits": {"request_timeout_ms": 300}}})");
  }
  int64_t connections() { return client().get("/api/stats").json()["connections"].as_int(); }
};

TEST_F(StreamLimitTest, AClientThatStopsReadingTheStream_IsDisconnected) {
  // A small receive buffer (set before connecting, so that the window is small from the
  // start): the server's writes block soon after the client stops reading.
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  const int small = 2048;
  ::setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &small, sizeof small);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(service_->port());
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::connect(fd, reinterpret_cast<const sockaddr*>(&address), sizeof address), 0);
  const std::string request = "GET /api/stream HTTP/1.1\r\nHost: x\r\n\r\n";
  ASSERT_EQ(::send(fd, request.data(), request.size(), 0), static_cast<ssize_t>(request.size()));
  while (connections() < 2) std::this_thread::yield();  // this client's and the stream

  // Contexts start and end until the stream's writes block and the server lets it go
  // (bounded: a server that never does fails the test after a minute instead of hanging
  // it). The feed's own thread publishes them, every 100 ms, as in a server: stepping the
  // feed from here after each round would publish faster than the stream looks (it looks
  // every 100 ms when it found nothing), so the stream would fall behind the feed's ring
  // and be sent a small "reset" instead of the changes, and its buffers would fill slowly.
  bool let_go = false;
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::minutes(1);
  for (int round = 0; !let_go && std::chrono::steady_clock::now() < give_up; ++round) {
    for (int i = 0; i < 200; ++i) {
      ASSERT_TRUE(engine().fire_event("ping", Value::object({{"n", Value(round * 200 + i)}})).is_ok());
    }
    settle();
    let_go = connections() == 1;
  }
  ::close(fd);
  EXPECT_TRUE(let_go) << "the stream's connection is still open with its client not reading";
  EXPECT_EQ(client().get("/healthz").status, 200);  // and the server goes on
}

}  // namespace
}  // namespace flowrt::testing_http
