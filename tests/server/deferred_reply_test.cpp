// HttpServer's deferred replies woken by another thread (Reply::waker): the reply is polled
// when woken, not at its next timer tick, also when the wake comes before the server waits
// for it; and a server that stops answers a woken-less deferred reply at once with its last
// poll rather than at its deadline.
#include <gtest/gtest.h>

#include <poll.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <future>
#include <memory>
#include <thread>

#include "server/http_server.h"
#include "tests/server/http_client.h"

namespace flowrt::testing_http {
namespace {

// A route whose reply is deferred for an hour, polled at most once an hour by its timer:
// only a wake can answer it within a test. `polled` counts the polls that found no answer.
struct HourLongReply {
  std::shared_ptr<server::ReplyWaker> waker = std::make_shared<server::ReplyWaker>();
  std::atomic<bool> ready{false};
  std::atomic<int> polled{0};
  std::promise<void> first_poll;
  // What the last reply made holds: expired once the server has dropped that reply.
  std::weak_ptr<int> held;

  server::Reply make() {
    server::Reply r;
    r.deadline = std::chrono::steady_clock::now() + std::chrono::hours(1);
    r.max_poll_interval = std::chrono::hours(1);
    r.waker = waker;
    auto holds = std::make_shared<int>(0);
    held = holds;
    r.poll = [this, holds](server::PollTurn turn) -> std::optional<server::Response> {
      if (ready.load() || turn != server::PollTurn::kWaiting) {
        return server::json_response(ready.load() ? http::status::ok : http::status::accepted,
                                     Value::object({{"ready", Value(ready.load())}}));
      }
      if (polled.fetch_add(1) == 0) first_poll.set_value();
      return std::nullopt;
    };
    return r;
  }
};

// The reply arrives within 30 s, or the test fails (without the wake it would take an hour).
std::optional<HttpReply> read_within_30s(HttpClient& c) {
  pollfd readable{c.socket().native_handle(), POLLIN, 0};
  if (poll(&readable, 1, 30000) != 1) return std::nullopt;
  return c.read_reply();
}

// Whether `done` holds within 30 s (a wait for a condition, looked at every millisecond).
bool within_30s(const std::function<bool()>& done) {
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (!done()) {
    if (std::chrono::steady_clock::now() > give_up) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return true;
}

class DeferredReplyTest : public ::testing::Test {
 protected:
  void start(HourLongReply& reply, size_t connections = 512) {
    router_.add(http::verb::get, "/deferred", server::Permission::kRead,
                [&reply](const server::ApiRequest&) { return reply.make(); });
    router_.add(http::verb::get, "/now", server::Permission::kRead, [](const server::ApiRequest&) -> server::Reply {
      return server::json_response(http::status::ok, Value::object({{"now", Value(true)}}));
    });
    server::HttpServerOptions options;
    options.port = 0;
    options.io_threads = 1;
    options.limits.connections = connections;
    server_ = std::make_unique<server::HttpServer>(options, router_, auth_);
    ASSERT_TRUE(server_->start().is_ok());
  }
  server::Router router_;
  server::Authenticator auth_{{}};
  std::unique_ptr<server::HttpServer> server_;
};

TEST_F(DeferredReplyTest, AWokenReply_IsPolledAtOnce) {
  HourLongReply reply;
  start(reply);
  HttpClient c(server_->port());
  c.write_raw("GET /deferred HTTP/1.1\r\nHost: x\r\n\r\n");
  reply.first_poll.get_future().wait();  // it waits on its timer now
  reply.ready = true;
  reply.waker->wake();
  std::optional<HttpReply> answered = read_within_30s(c);
  ASSERT_TRUE(answered) << "no answer within 30 s of the wake";
  EXPECT_EQ(answered->status, 200);
  EXPECT_EQ(reply.polled.load(), 1) << "one poll before the wake, the answer right after it";
  server_->stop(1000);
}

TEST_F(DeferredReplyTest, AWakeBeforeTheServerWaits_IsNotLost) {
  HourLongReply reply;
  reply.waker->wake();  // as if the answer came while the handler was still returning
  start(reply);
  HttpClient c(server_->port());
  c.write_raw("GET /deferred HTTP/1.1\r\nHost: x\r\n\r\n");
  reply.first_poll.get_future().wait();
  reply.ready = true;
  reply.waker->wake();
  std::optional<HttpReply> answered = read_within_30s(c);
  ASSERT_TRUE(answered);
  EXPECT_EQ(answered->status, 200);
  server_->stop(1000);
}

// A stop wakes a waiting deferred reply so that its last poll answers at once, instead of
// when its hour-long timer runs out (without the drain's wake in HttpServer, no answer
// comes within 30 s and this fails).
TEST_F(DeferredReplyTest, AStoppingServer_AnswersAWaitingReplyWithItsLastPoll) {
  HourLongReply reply;
  start(reply);
  HttpClient c(server_->port());
  c.write_raw("GET /deferred HTTP/1.1\r\nHost: x\r\n\r\n");
  reply.first_poll.get_future().wait();
  std::jthread stopper([&] { server_->stop(30000); });
  std::optional<HttpReply> answered = read_within_30s(c);
  ASSERT_TRUE(answered) << "the stop did not make the reply answer";
  EXPECT_EQ(answered->status, 202) << "its last poll's answer";
}

// A client that goes away while its reply waits does not keep its connection (one of
// `connections`) until the wait ends: the server sees the close, drops the reply (what it
// holds goes with it: a keyed write's claim, a call's watch of its context) and closes.
TEST_F(DeferredReplyTest, AClientGoneWhileItsReplyWaits_FreesItsConnection_AndTheReplyIsDropped) {
  HourLongReply reply;
  start(reply, /*connections=*/1);
  {
    HttpClient c(server_->port());
    c.write_raw("GET /deferred HTTP/1.1\r\nHost: x\r\n\r\n");
    reply.first_poll.get_future().wait();
  }  // closed: the reply waits for another hour
  EXPECT_TRUE(within_30s([&] { return server_->connections() == 0; })) << "the connection is still held";
  EXPECT_TRUE(within_30s([&] { return reply.held.expired(); })) << "the reply is still held";
  HttpClient next(server_->port());
  EXPECT_EQ(next.get("/now").status, 200) << "the one connection allowed is free again";
  server_->stop(1000);
}

// Requests pipelined behind a waiting reply, sent with it or while it waits, are read and
// answered after it, in order: the server's look for a close while the reply waits keeps
// what it reads for the next request.
TEST_F(DeferredReplyTest, RequestsPipelinedBehindAWaitingReply_AreAnsweredAfterIt) {
  HourLongReply reply;
  start(reply);
  HttpClient c(server_->port());
  c.write_raw("GET /deferred HTTP/1.1\r\nHost: x\r\n\r\nGET /now HTTP/1.1\r\nHost: x\r\n\r\n");
  reply.first_poll.get_future().wait();
  c.write_raw("GET /now HTTP/1.1\r\nHost: x\r\n\r\n");
  reply.ready = true;
  reply.waker->wake();
  std::optional<HttpReply> answered = read_within_30s(c);
  ASSERT_TRUE(answered);
  EXPECT_EQ(answered->status, 200);
  EXPECT_EQ(answered->json()["ready"], Value(true));
  for (int i = 0; i < 2; ++i) {
    std::optional<HttpReply> next = c.read_reply();
    ASSERT_TRUE(next) << i;
    EXPECT_EQ(next->json()["now"], Value(true)) << i;
  }
  server_->stop(1000);
}

}  // namespace
}  // namespace flowrt::testing_http
