// Service: a running `flowrt serve` — the project's engine on a real clock with its state
// in the SQLite store (by default DIR/flowrt.db), recovered; the event feed; the API's
// routes; and the HTTP server. The command line and the tests build it the same way.
//
// Thread-safety: open and stop from one thread; the service runs on its own threads.
#pragma once

#include <boost/asio/ip/address.hpp>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "compiler/diagnostics.h"
#include "plans/result.h"
#include "server/api.h"
#include "server/auth.h"
#include "server/event_feed.h"
#include "server/http_server.h"
#include "server/router.h"
#include "runtime/project.h"
#include "server/server_config.h"

namespace flowrt::server {

struct ServeOptions {
  std::string dir;                       // the project
  std::string listen = "127.0.0.1:8480"; // HOST:PORT (port 0: any free one)
  std::string data;                      // the SQLite file; "" : config's store, else DIR/flowrt.db
  std::string log_level;                 // the engine's log on stderr
  int io_threads = 2;
  int64_t feed_period_ms = 100;
  // How long a drain waits for requests in flight (writes waiting for the disk among them:
  // server/durable_reply.h) before it stops the engine.
  int64_t drain_ms = 10000;
  // A cluster node that leads (server/cluster_node.h): its lead epoch, which fences the
  // store's writes (StoreOptions::lead_epoch); 0 outside a cluster.
  int64_t lead_epoch = 0;
  // The engine gives its store up once writes have failed this long, and calls
  // on_store_lost (EngineOptions::store_give_up_ms); 0: retries without end.
  int64_t store_give_up_ms = 0;
  std::function<void(const std::string& why)> on_store_lost;
  // Routes added next to the API's (the cluster's), before the server starts.
  std::function<void(Router&)> more_routes;
  // When set, the service accepts on this socket instead of binding `listen`'s address (a
  // cluster node that takes the lead: its follower's port, handed over).
  std::shared_ptr<ListeningSocket> listener;
};

// What `flowrt serve` reads before it opens anything: the listen address, the project, and
// its config's "server" section (and whether the config chose a store).
struct ServeSetup {
  std::string host;
  uint16_t port = 0;
  Project project;
  ServerConfig config;
  bool config_chose_store = false;
};
// Every problem at once, each as file: /pointer: message.
Result<ServeSetup, Diagnostics> read_serve_setup(const ServeOptions& options);

class Service {
 public:
  // Reads the project and its config (the "server" section too), opens and recovers the
  // store, and starts listening. Every problem at once, each as file: /pointer: message.
  static Result<std::unique_ptr<Service>, Diagnostics> open(const ServeOptions& options);
  ~Service();

  uint16_t port() const { return server_->port(); }
  Engine& engine() { return *engine_; }
  EventFeed& feed() { return *feed_; }
  const Router& router() const { return router_; }
  const Authenticator& auth() const { return *auth_; }
  // Drains: stops accepting, lets requests in flight finish (for at most
  // ServeOptions::drain_ms), then stops the engine, which checkpoints every context that
  // has not ended (they resume at the next start).
  void stop();

 private:
  Service() = default;
  std::unique_ptr<Engine> engine_;
  std::shared_ptr<EventFeed> feed_;
  std::unique_ptr<ApiContext> api_;
  std::unique_ptr<Authenticator> auth_;
  Router router_;
  std::unique_ptr<HttpServer> server_;
  int64_t drain_ms_ = 10000;
  bool stopped_ = false;
};

// "HOST:PORT" or "[IPv6]:PORT" -> host and port; false when it is not that. HOST is an IP
// address or a host name (not resolved here).
bool parse_listen(const std::string& listen, std::string* host, uint16_t* port);
// The address to listen on for HOST: an IP address as it is; a name resolved (its first
// IPv4 address in the resolver's order, else its first address); an error naming it when
// it resolves to none.
Result<std::string> listen_address(const std::string& host);
// Of a name's addresses (REQUIRES: at least one, in the resolver's order), the one to
// listen on: the first IPv4 address, else the first.
boost::asio::ip::address preferred_listen_address(const std::vector<boost::asio::ip::address>& addresses);

}  // namespace flowrt::server
