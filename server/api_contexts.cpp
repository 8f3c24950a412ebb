// Routes over context records: the list (newest first, paged), one record, cancel, and
// the skipped starts.
#include <chrono>

#include "plans/time.h"
#include "runtime/engine.h"
#include "server/api.h"
#include "server/api_common.h"
#include "server/context_summary.h"
#include "server/event_feed.h"

namespace flowrt::server {
namespace {

// GET /api/contexts?flow=F&status=S&since=T&limit=N&cursor=C. The cursor is the seq the
// next page starts below; `since` (ISO 8601) keeps contexts started at or after it, and
// ends the list at the first one started before (seqs follow start order).
Reply list_contexts(Engine& engine, const ApiRequest& req) {
  Response error;
  const std::optional<int64_t> limit = int_param(req, "limit", 50, 1, 1000, &error);
  const std::optional<int64_t> cursor = int_param(req, "cursor", INT64_MAX, 1, INT64_MAX, &error);
  if (!limit || !cursor) return error;
  std::string since;
  if (const std::string* s = req.query_value("since")) {
    Result<TimeMs> t = parse_time(*s);
    if (!t) return error_response(http::status::bad_request, "query parameter since must be an ISO 8601 time: " + t.message());
    since = format_time(*t);
  }
  const std::string* flow = req.query_value("flow");
  const std::string* status = req.query_value("status");
  if (status && *status == "queued") {
    // A context has no record until it starts: queued ones are counted, not listed.
    return error_response(http::status::bad_request,
                          "queued contexts are not listed: a context has no record until it starts; "
                          "GET /api/stats counts them (queue_depth)");
  }
  if (status && *status != "in_progress" && *status != "waiting" && !is_final_status(*status)) {
    return error_response(http::status::bad_request,
                          "query parameter status must be in_progress, waiting, completed, cancelled or error, got '" +
                              utf8_prefix(*status, 100) + "'");
  }
  // One more than the page: whether a next page exists.
  std::vector<ContextRecord> page = engine.context_page(flow ? *flow : "", status ? *status : "",
                                                        static_cast<uint64_t>(*cursor), static_cast<size_t>(*limit) + 1);
  bool more = page.size() > static_cast<size_t>(*limit);
  if (more) page.pop_back();
  std::vector<Value> out;
  for (const ContextRecord& r : page) {
    const Value& started = r.value()["started_at"];
    if (!since.empty() && started.is_string() && started.as_string() < since) {
      more = false;
      break;
    }
    out.push_back(context_summary(r.value()));
  }
  Value next = more && !out.empty() ? Value(std::to_string(out.back()["seq"].as_int())) : Value();
  return json_response(http::status::ok, Value::object({{"contexts", Value::array(std::move(out))}, {"next", next}}));
}

// POST /api/contexts/{id}/cancel: asks the context to stop and waits up to 2 s for it to
// end: 200 {"id", "status"} once ended, 202 while it still runs (it ends at its next step).
Reply cancel_context(Engine& engine, const ApiRequest& req) {
  const std::string& id = req.param("id");
  std::optional<ContextRecord> r = engine.context(id);
  if (!r) return error_response(http::status::not_found, "no context '" + id + "'");
  if (is_final_status(r->status())) {
    return json_response(http::status::conflict, Value::object({{"error", Value("context " + id + " already ended: " + r->status())},
                                                                {"status", Value(r->status())}}));
  }
  Status s = engine.cancel(id);
  if (!s) return engine_error(s.message());
  return reply_when_ended(engine, id, std::chrono::seconds(2), [&engine, id](PollTurn turn) -> std::optional<Response> {
    std::optional<ContextRecord> now = engine.context(id);
    const std::string status = now ? now->status() : "cancelled";
    if (is_final_status(status)) return json_response(http::status::ok, Value::object({{"id", Value(id)}, {"status", Value(status)}}));
    if (turn == PollTurn::kWaiting) return std::nullopt;
    return json_response(http::status::accepted, Value::object({{"id", Value(id)}, {"status", Value(status)}}));
  });
}

}  // namespace

void add_context_routes(Router& router, ApiContext& api) {
  Engine& engine = api.engine;
  router.add(http::verb::get, "/api/contexts", Permission::kRead,
             [&engine](const ApiRequest& req) { return list_contexts(engine, req); });
  router.add(http::verb::get, "/api/contexts/{id}", Permission::kRead, [&engine](const ApiRequest& req) -> Reply {
    std::optional<ContextRecord> r = engine.context(req.param("id"));
    if (!r) return error_response(http::status::not_found, "no context '" + req.param("id") + "'");
    return json_response(http::status::ok, r->value());
  });
  router.add(http::verb::post, "/api/contexts/{id}/cancel", Permission::kOperate,
             [&engine](const ApiRequest& req) { return cancel_context(engine, req); });
  router.add(http::verb::get, "/api/skipped", Permission::kRead, [&engine](const ApiRequest& req) -> Reply {
    Response error;
    const std::optional<int64_t> limit = int_param(req, "limit", 100, 1, 10000, &error);
    if (!limit) return error;
    std::vector<Value> all = engine.skipped();
    std::vector<Value> out;
    for (size_t i = all.size(); i > 0 && out.size() < static_cast<size_t>(*limit); --i) out.push_back(all[i - 1]);
    return json_response(http::status::ok, Value::object({{"skipped", Value::array(std::move(out))}}));
  });
  std::shared_ptr<EventFeed> feed = api.feed;
  router.add(http::verb::get, "/api/stream", Permission::kRead, [feed](const ApiRequest& req) -> Reply {
    Reply reply;
    reply.stream = feed;
    // A cluster follower's shared stream (server/shared_stream.h) asks for all that is
    // held, so that it can resume its own viewers as this feed would.
    if (auto from = req.http.find("X-Flowrt-Stream-From"); from != req.http.end() && from->value() == "held") {
      reply.stream_after = feed->held_after();
      return reply;
    }
    Response error;
    if (!last_event_id(req, &reply.stream_after, &error)) return error;
    return reply;
  });
}

}  // namespace flowrt::server
