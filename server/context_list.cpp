#include "server/context_list.h"

#include <utility>
#include <vector>

#include "plans/time.h"
#include "runtime/context_record.h"
#include "server/api_common.h"
#include "server/context_summary.h"

namespace flowrt::server {

std::optional<ContextListQuery> parse_context_list(const ApiRequest& req, Response* error) {
  const std::optional<int64_t> limit = int_param(req, "limit", 50, 1, 1000, error);
  const std::optional<int64_t> cursor = int_param(req, "cursor", INT64_MAX, 1, INT64_MAX, error);
  if (!limit || !cursor) return std::nullopt;
  ContextListQuery q;
  q.limit = static_cast<size_t>(*limit);
  q.before_seq = static_cast<uint64_t>(*cursor);
  if (const std::string* s = req.query_value("since")) {
    Result<TimeMs> t = parse_time(*s);
    if (!t) {
      *error = error_response(http::status::bad_request, "query parameter since must be an ISO 8601 time: " + t.message());
      return std::nullopt;
    }
    q.since = format_time(*t);
  }
  if (const std::string* flow = req.query_value("flow")) q.flow = *flow;
  if (const std::string* status = req.query_value("status")) {
    if (*status == "queued") {
      // A context has no record until it starts: queued ones are counted, not listed.
      *error = error_response(http::status::bad_request,
                              "queued contexts are not listed: a context has no record until it starts; "
                              "GET /api/stats counts them (queue_depth)");
      return std::nullopt;
    }
    if (!context_status_named(*status)) {
      *error = error_response(http::status::bad_request, "query parameter status must be " +
                                                             std::string(kContextStatusNames) + ", got '" +
                                                             utf8_prefix(*status, 100) + "'");
      return std::nullopt;
    }
    q.status = *status;
  }
  return q;
}

Response context_list_response(const ContextListQuery& query, std::span<const Value> page) {
  bool more = page.size() > query.limit;
  if (more) page = page.first(query.limit);
  PageBody body("contexts");
  int64_t last_seq = 0;
  for (const Value& r : page) {
    // `since` ends the list at the first context started before it (seqs follow start order).
    const Value& started = r["started_at"];
    if (!query.since.empty() && started.is_string() && started.as_string() < query.since) {
      more = false;
      break;
    }
    const Value summary = context_summary(r);
    // The body's budget (kPageBodyBytes) is reached: this one, which matches, begins the
    // next page.
    if (!body.add(summary)) {
      more = true;
      break;
    }
    last_seq = summary["seq"].as_int();
  }
  Value next = more && body.items() > 0 ? Value(std::to_string(last_seq)) : Value();
  return std::move(body).finish(next);
}

}  // namespace flowrt::server
