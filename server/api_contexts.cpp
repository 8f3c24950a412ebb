// Routes over context records: the list (newest first, paged), one record, cancel, and
// the skipped starts.
#include <chrono>
#include <vector>

#include "runtime/engine.h"
#include "server/api.h"
#include "server/api_common.h"
#include "server/context_list.h"
#include "server/context_summary.h"
#include "server/event_feed.h"

namespace flowrt::server {
namespace {

// GET /api/contexts (server/context_list.h): the page from the engine, memory and store.
Reply list_contexts(Engine& engine, const ApiRequest& req) {
  Response error;
  const std::optional<ContextListQuery> q = parse_context_list(req, &error);
  if (!q) return error;
  // One more than the page: whether a next page exists.
  std::vector<ContextRecord> records = engine.context_page(q->flow, q->status, q->before_seq, q->limit + 1);
  std::vector<Value> page;
  page.reserve(records.size());
  for (const ContextRecord& r : records) page.push_back(r.value());
  return context_list_response(*q, page);
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
