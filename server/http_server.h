// HttpServer: HTTP/1.1 with keep-alive on Boost.Beast and Boost.Asio, for `flowrt serve`.
//
// Its own I/O threads run every connection (each thread its own I/O context; a connection
// stays on one, given round robin). A request's handler runs on the I/O thread that read
// it; handlers never wait for the disk (with a durable store a write's answer is deferred
// until its commit is durable, server/durable_reply.h; only during the drain does a
// write's last poll wait for it). A
// response to wait for (a write until it is durable, a call with ?wait=) is polled when
// woken or on a timer, an event stream is written from a timer. While a response is
// deferred the socket is watched: a client that closes meanwhile has its connection closed
// and its deferred reply dropped unanswered at once.
// Limits (ServerLimits) are enforced here, each with a clear JSON error: a header or body
// too large (431, 413), a request that does not arrive whole in time (408), a connection
// idle too long (closed), too many connections (503). Malformed HTTP gets 400, and so
// does a Transfer-Encoding other than `chunked` alone (its body's length is unknown), an
// HTTP/1.1 request without Host and any request with more than one; the connection is
// then closed, and the server goes on.
//
// Thread-safety: start() and stop() from one controlling thread; the rest runs on the I/O
// threads. The Router, Authenticator and EventFeed outlive the server.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "plans/result.h"
#include "server/auth.h"
#include "server/router.h"
#include "server/server_config.h"

namespace flowrt::server {

// A listening socket handed from one server to the next on the same port: a cluster node
// that takes the lead hands its follower's port to its leader's service, so that the port
// never refuses a connection meanwhile. Owns its descriptor, closed unless a server took it.
// Thread-safety: none (one owner at a time).
class ListeningSocket {
 public:
  explicit ListeningSocket(int fd) : fd_(fd) {}
  ~ListeningSocket();
  ListeningSocket(const ListeningSocket&) = delete;
  ListeningSocket& operator=(const ListeningSocket&) = delete;
  // The descriptor, now the caller's; -1 when it was taken already.
  int take();

 private:
  int fd_;
};

struct HttpServerOptions {
  std::string host = "127.0.0.1";
  uint16_t port = 8480;  // 0: any free port (port() says which)
  ServerLimits limits;
  int io_threads = 2;
  // When set: the server accepts on this socket (taken by start()) instead of binding
  // host:port.
  std::shared_ptr<ListeningSocket> listener;
};

class HttpServer {
 public:
  HttpServer(HttpServerOptions options, const Router& router, const Authenticator& auth);
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // Binds and starts accepting on the I/O threads. Fails when the address cannot be bound.
  Status start();
  // The port it listens on (after start).
  uint16_t port() const { return port_; }
  // A second descriptor of the socket it listens on (after start, before stop): the socket
  // goes on listening after this server stops, for the next server to accept on
  // (HttpServerOptions::listener); while both run, each new connection goes to one of
  // them. An error when it cannot be duplicated.
  Result<std::shared_ptr<ListeningSocket>> share_listener() const;
  // Stops accepting, closes idle connections, event streams and connections whose request
  // is still arriving (handed to no route), lets requests in flight finish (their
  // connections close after the response), and returns once every connection has closed
  // or `grace_ms` has passed; then stops the I/O threads.
  void stop(int64_t grace_ms = 10000);

  // Connections open now (for /api/stats and tests).
  size_t connections() const;

 // The state the connections share (http_server.cpp).
  struct State;

 private:
  HttpServerOptions options_;
  std::shared_ptr<State> state_;
  std::vector<std::thread> threads_;
  uint16_t port_ = 0;
};

}  // namespace flowrt::server
