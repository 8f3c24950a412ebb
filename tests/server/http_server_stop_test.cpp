// HttpServer::stop: with a request's handler still running, the answer it gives once stop
// has begun is still written (the I/O threads run until stop lets them go); and
// the port is free the moment stop returns, while the stopped server still lives (a
// cluster node that takes the lead listens on its port again at once); and a port handed
// over from one server to the next (share_listener) refuses no connection meanwhile.
#include <gtest/gtest.h>

#include <poll.h>

#include <future>
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
