// The HTTP API of `flowrt serve` (docs/API.md, docs/api/openapi.yaml): every route, added
// to a Router. Handlers call the Engine's public API only, each on the I/O thread that read
// the request; none holds an engine lock across a call. ApiContext is what they share.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>

#include "server/router.h"

namespace flowrt {
class Engine;
}

namespace flowrt::server {

class EventFeed;

// What the handlers share; owned by the serve command, outliving the server.
struct ApiContext {
  ApiContext(Engine& e, std::shared_ptr<EventFeed> f) : engine(e), feed(std::move(f)) {}

  Engine& engine;
  std::shared_ptr<EventFeed> feed;
  // Whether the engine recovered and accepts operations (/readyz).
  std::atomic<bool> ready{false};
  std::chrono::steady_clock::time_point started = std::chrono::steady_clock::now();
  // Open connections (from the server, for /api/stats); may be empty.
  std::function<size_t()> connections;
};

void add_record_routes(Router& router, ApiContext& api);
void add_flow_routes(Router& router, ApiContext& api);
void add_context_routes(Router& router, ApiContext& api);
void add_status_routes(Router& router, ApiContext& api);
void add_viewer_routes(Router& router);

// Every route above.
void add_api_routes(Router& router, ApiContext& api);

}  // namespace flowrt::server
