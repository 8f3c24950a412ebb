// HttpServer::stop: with a request's handler still running, the answer it gives once stop
// has begun is still written (the I/O threads run until stop lets them go); and
// the port is free the moment stop returns, while the stopped server still lives (a
// cluster node that takes the lead listens on its port again at once); and a port handed
// over from one server to the next (share_listener) refuses no connection meanwhile.
#include <gtest/gtest.h>

#include <poll.h>

#include <atomic>
#include <chrono>
#include <fstream>
#include <future>
#include <string>
#include <thread>

#include "server/http_server.h"
#include "tests/server/http_client.h"

namespace flowrt::testing_http {
namespace {

// True when a new connection to `port` on loopback is refused: the acceptor has closed.
bool refused(uint16_t port) {
  asio::io_context io;
  tcp::socket s(io);
  beast::error_code ec;
  s.connect(tcp::endpoint(asio::ip::make_address("127.0.0.1"), port), ec);
  return ec == asio::error::connection_refused;
}

TEST(HttpServerStopTest, AnswerOfAHandlerStillRunningWhenStopBegins_IsWritten) {
  std::promise<void> entered;
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  server::Router router;
  router.add(http::verb::post, "/slow", server::Permission::kRead, [&](const server::ApiRequest&) {
    entered.set_value();
    released.wait();
    return server::Reply(server::json_response(http::status::ok, Value::object({{"done", Value(true)}})));
  });
  server::Authenticator auth({});
  server::HttpServerOptions options;
  options.port = 0;
  options.io_threads = 2;  // the handler holds one; the other closes the acceptor
  server::HttpServer server(options, router, auth);
  ASSERT_TRUE(server.start().is_ok());

  HttpClient c(server.port());
  c.write_raw("POST /slow HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n");
  entered.get_future().wait();

  // stop() begins while the handler runs: once the acceptor has closed, nothing of the
  // server's own is pending in the I/O context but this connection's answer to come.
  std::jthread stopper([&] { server.stop(15000); });  // joined however the test ends
  bool closed = false;
  for (int i = 0; i < 100000 && !closed; ++i) closed = refused(server.port());
  ASSERT_TRUE(closed);
  release.set_value();

  // A guard against a hang if the answer is lost: the test then fails, it does not wait
  // for ever (stop's grace is shorter than this).
  pollfd readable{c.socket().native_handle(), POLLIN, 0};
  ASSERT_EQ(poll(&readable, 1, 30000), 1) << "no answer, and the connection is still open";
  std::optional<HttpReply> answered = c.read_reply();
  stopper.join();
  ASSERT_TRUE(answered);
  EXPECT_EQ(answered->status, 200);
  EXPECT_EQ(answered->json()["done"], Value(true));
  EXPECT_TRUE(c.closed_by_server());  // and the connection closes after it
}

// What a loopback connection's kernel buffers can hold at most, the sender's and the
// receiver's together (the maxima of TCP's autotuning, tcp_wmem and tcp_rmem; 4 MiB and
// 6 MiB by default), so that a client whose write of more than this returned knows the
// server has read some of it.
size_t loopback_buffer_bytes() {
  auto max_of = [](const char* file) -> size_t {
    std::ifstream in(file);
    size_t low = 0, def = 0, max = 0;
    return in >> low >> def >> max ? max : size_t{32} << 20;
  };
  return max_of("/proc/sys/net/ipv4/tcp_wmem") + max_of("/proc/sys/net/ipv4/tcp_rmem");
}

// A client that sent a request's headers and part of its body, then stalled, does not hold
// a stop: the request was handed to no route (nothing of it was done), so its connection
// closes at once, and the stop returns without waiting for it. Until 2026-12-06 it held
// the stop for the whole grace (10 s for `flowrt serve`), or until request_timeout_ms.
// Deterministic: the client's write of more body than the connection's buffers hold
// returns only once the server has read the headers and is reading the body; the request
// timeout and the grace are an hour, so neither ends the wait, and the poll's 60 s are a
// guard against a hang, not what the test measures.
TEST(HttpServerStopTest, ARequestStillArrivingWhenStopBegins_IsClosedAtOnce_TheStopDoesNotWaitForIt) {
  std::atomic<int> handled{0};
  server::Router router;
  router.add(http::verb::post, "/upload", server::Permission::kRead, [&](const server::ApiRequest&) {
    ++handled;
    return server::Reply(server::json_response(http::status::ok, Value::object({{"done", Value(true)}})));
  });
  server::Authenticator auth({});
  server::HttpServerOptions options;
  options.port = 0;
  options.io_threads = 1;
  options.limits.body_bytes = size_t{1} << 30;
  options.limits.request_timeout_ms = 3600000;
  options.limits.idle_timeout_ms = 3600000;
  server::HttpServer server(options, router, auth);
  ASSERT_TRUE(server.start().is_ok());

  HttpClient c(server.port());
  const size_t sent = loopback_buffer_bytes() + (size_t{1} << 20);
  c.write_raw("POST /upload HTTP/1.1\r\nHost: x\r\nContent-Type: application/octet-stream\r\nContent-Length: " +
              std::to_string(2 * sent) + "\r\n\r\n");
  c.write_raw(std::string(sent, 'b'));  // half the body; the rest never comes

  std::promise<void> stopped;
  std::future<void> stop_returned = stopped.get_future();
  std::jthread stopper([&] {
    server.stop(3600000);
    stopped.set_value();
  });
  pollfd readable{c.socket().native_handle(), POLLIN, 0};
  if (poll(&readable, 1, 60000) != 1) {
    c.socket().close();  // lets the stop end, so that the test fails rather than hangs
    FAIL() << "the connection of the request still arriving was not closed by the stop";
  }
  EXPECT_TRUE(c.closed_by_server()) << c.last_error_;
  if (stop_returned.wait_for(std::chrono::seconds(60)) != std::future_status::ready) {
    c.socket().close();
    FAIL() << "the stop did not return once the connection closed";
  }
  EXPECT_EQ(handled.load(), 0) << "a request that never arrived whole was handled";
  EXPECT_EQ(server.connections(), 0u);
}

TEST(HttpServerStopTest, ThePortIsFreeAtOnceAfterStop) {
  server::Router router;
  router.add(http::verb::get, "/ping", server::Permission::kRead, [](const server::ApiRequest&) {
    return server::Reply(server::json_response(http::status::ok, Value::object({{"pong", Value(true)}})));
  });
  server::Authenticator auth({});
  server::HttpServerOptions options;
  options.port = 0;
  options.io_threads = 2;
  // Stopped at once, the I/O context often stops before the acceptor's close posted to it
  // runs: each round is a chance for the port to stay taken.
  std::unique_ptr<server::HttpServer> last;
  for (int round = 0; round < 50; ++round) {
    auto next = std::make_unique<server::HttpServer>(options, router, auth);
    ASSERT_TRUE(next->start().is_ok()) << "round " << round << ": port " << options.port << " still taken";
    options.port = next->port();
    if (round % 10 == 0) {
      HttpClient c(next->port());
      EXPECT_EQ(c.get("/ping").status, 200);
    }
    next->stop(0);
    last = std::move(next);  // the stopped server lives on while the next one listens
  }
}

// A port handed over (a cluster node taking the lead): a second descriptor of the first
// server's socket keeps it listening once that server has stopped, so a client that
// connects between the two is not refused; its request waits in the backlog and the next
// server, which accepts on that socket, answers it, on the same port.
TEST(HttpServerStopTest, APortHandedOver_RefusesNoConnection_TheNextServerAnswersOnIt) {
  auto router_saying = [](const char* who) {
    auto r = std::make_unique<server::Router>();
    r->add(http::verb::get, "/who", server::Permission::kRead, [who](const server::ApiRequest&) {
      return server::Reply(server::json_response(http::status::ok, Value::object({{"who", Value(who)}})));
    });
    return r;
  };
  std::unique_ptr<server::Router> first_routes = router_saying("first"), next_routes = router_saying("next");
  server::Authenticator auth({});
  server::HttpServerOptions options;
  options.port = 0;
  server::HttpServer first(options, *first_routes, auth);
  ASSERT_TRUE(first.start().is_ok());
  const uint16_t port = first.port();
  EXPECT_EQ(HttpClient(port).get("/who").json()["who"], Value("first"));
  Result<std::shared_ptr<server::ListeningSocket>> handed = first.share_listener();
  ASSERT_TRUE(handed.is_ok()) << handed.message();
  first.stop(0);

  EXPECT_FALSE(refused(port)) << "the socket goes on listening between the two servers";
  HttpClient waiting(port);  // connected, not yet accepted by any server
  waiting.write_raw("GET /who HTTP/1.1\r\nHost: x\r\n\r\n");
  options.listener = *handed;
  server::HttpServer next(options, *next_routes, auth);
  ASSERT_TRUE(next.start().is_ok());
  EXPECT_EQ(next.port(), port);
  pollfd readable{waiting.socket().native_handle(), POLLIN, 0};
  ASSERT_EQ(poll(&readable, 1, 30000), 1) << "the request waiting in the backlog was not answered";
  std::optional<HttpReply> answered = waiting.read_reply();
  ASSERT_TRUE(answered);
  EXPECT_EQ(answered->json()["who"], Value("next"));
  EXPECT_EQ(handed.value()->take(), -1) << "the next server took the descriptor";
  next.stop(0);
  EXPECT_TRUE(refused(port)) << "closed with the last server";
}

}  // namespace
}  // namespace flowrt::testing_http
