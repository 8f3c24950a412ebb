// Routes that tell how the engine is: locks, stats, Prometheus metrics, health and
// readiness, and who the caller is.
#include <algorithm>
#include <chrono>

#include "plans/time.h"
#include "runtime/engine.h"
#include "server/api.h"
#include "server/api_common.h"
#include "server/context_summary.h"
#include "server/event_feed.h"

namespace flowrt::server {
namespace {

// The engine's counters and the server's figures; `with_runtimes`: also runtime_ms, which
// reads the newest kFiguresWindow context records.
Value stats_value(ApiContext& api, bool with_runtimes) {
  const EngineStats s = api.engine.stats();
  const EventFeed::Figures f = api.feed ? api.feed->figures() : EventFeed::Figures{};
  const double up = std::chrono::duration<double>(std::chrono::steady_clock::now() - api.started).count();
  Value out = s.to_value()
      .with("queue_depth", Value(static_cast<long long>(s.queued_events)))
      .with("running_contexts", Value(static_cast<long long>(
                                    s.runnable_contexts > s.queued_events ? s.runnable_contexts - s.queued_events : 0)))
      .with("contexts_per_s", Value(f.contexts_per_s))
      .with("connections", Value(api.connections ? api.connections() : 0))
      .with("uptime_s", Value(up));
  return with_runtimes ? out.with("runtime_ms", recent_figures(api.engine).runtime_ms) : out;
}

// The Prometheus text format (version 0.0.4): one gauge or counter per figure.
std::string metrics_text(ApiContext& api) {
  const Value stats = stats_value(api, /*with_runtimes=*/false);
  std::string out;
  // Whole numbers as integers ("3", not "3.0"), others as JSON writes them.
  auto number = [](double v) {
    return v == static_cast<double>(static_cast<long long>(v)) ? std::to_string(static_cast<long long>(v)) : Value(v).to_json();
  };
  auto metric = [&](std::string_view name, std::string_view type, std::string_view help, double value) {
    out += "# HELP flowrt_" + std::string(name) + " " + std::string(help) + "\n# TYPE flowrt_" + std::string(name) +
           " " + std::string(type) + "\nflowrt_" + std::string(name) + " " + number(value) + "\n";
  };
  metric("contexts_started_total", "counter", "Contexts started.", stats["contexts_started"].as_double());
  metric("commits_total", "counter", "Commits (record writes, events, calls).", stats["commits"].as_double());
  metric("queued_events", "gauge", "Trigger events queued, not started yet.", stats["queued_events"].as_double());
  metric("running_contexts", "gauge", "Contexts running now.", stats["running_contexts"].as_double());
  metric("waiting_contexts", "gauge", "Contexts waiting (a timer, a record, a lock).", stats["waiting_contexts"].as_double());
  metric("contexts_kept", "gauge", "Context records in memory.", stats["contexts_kept"].as_double());
  metric("lock_grants_total", "counter", "Locks granted.", stats["lock_grants"].as_double());
  metric("lock_handoffs_total", "counter", "Locks granted to a context that waited.", stats["lock_handoffs"].as_double());
  metric("store_checkpoints_total", "counter", "The store's background checkpoints (sqlite).",
         stats["store_checkpoints"].as_double());
  metric("store_checkpoint_failures_total", "counter",
         "The store's checkpoints that failed (the WAL grows until one succeeds; the log says why).",
         stats["store_checkpoint_failures"].as_double());
  metric("abandoned_calls_total", "counter", "Custom action calls given up on.", stats["abandoned_calls"].as_double());
  metric("contexts_per_second", "gauge", "Contexts started per second, the last seconds.", stats["contexts_per_s"].as_double());
  metric("http_connections", "gauge", "HTTP connections open.", stats["connections"].as_double());
  metric("uptime_seconds", "gauge", "Seconds since the server started.", stats["uptime_s"].as_double());
  return out;
}

}  // namespace

void add_status_routes(Router& router, ApiContext& api) {
  Engine& engine = api.engine;
  router.add(http::verb::get, "/api/locks", Permission::kRead, [&engine](const ApiRequest&) -> Reply {
    return json_response(http::status::ok,
                         Value::object({{"now", Value(format_time(engine.now()))}, {"locks", engine.locks()}}));
  });
  router.add(http::verb::get, "/api/stats", Permission::kRead,
             [&api](const ApiRequest&) -> Reply { return json_response(http::status::ok, stats_value(api, /*with_runtimes=*/true)); });
  router.add(http::verb::get, "/metrics", Permission::kRead, [&api](const ApiRequest&) -> Reply {
    return text_response(http::status::ok, "text/plain; version=0.0.4", metrics_text(api));
  });
  router.add(http::verb::get, "/healthz", Permission::kPublic,
             [](const ApiRequest&) -> Reply { return json_response(http::status::ok, Value::object({{"status", Value("ok")}})); });
  router.add(http::verb::get, "/readyz", Permission::kPublic, [&api](const ApiRequest&) -> Reply {
    if (!api.ready.load() || api.engine.stop_requested()) {
      return json_response(http::status::service_unavailable, Value::object({{"status", Value("not ready")}}));
    }
    return json_response(http::status::ok, Value::object({{"status", Value("ready")}}));
  });
  router.add(http::verb::get, "/api/whoami", Permission::kRead, [](const ApiRequest& req) -> Reply {
    return json_response(http::status::ok,
                         Value::object({{"name", Value(req.caller.name)}, {"role", Value(role_name(req.caller.role))}}));
  });
}

void add_api_routes(Router& router, ApiContext& api) {
  add_record_routes(router, api);
  add_flow_routes(router, api);
  add_context_routes(router, api);
  add_status_routes(router, api);
  add_viewer_routes(router);
}

}  // namespace flowrt::server
