// Helpers the API's handlers share: reading a JSON body (a syntax error answered with its
// JSON pointer), query parameters, durations, and the HTTP status for an engine's error.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "plans/result.h"
#include "plans/value.h"
#include "server/router.h"

namespace flowrt {
class Engine;
}

namespace flowrt::server {

// The request's body as JSON, or the 400 to answer (the error's line, column and the
// JSON pointer of the value it was in). An empty body reads as `empty` when given.
std::optional<Value> json_body(const ApiRequest& req, Response* error, std::optional<Value> empty = std::nullopt);

// The byte budget of one list page's body (GET /api/tables/{table}/records, GET
// /api/contexts): a page takes no more items once its body would pass it, so that a
// client that does not read its answer holds about this much of the server's memory,
// not `limit` items' worth, until the write's deadline (request_timeout_ms) lets it go.
inline constexpr size_t kPageBodyBytes = size_t{1} << 20;

// The body of a list page, {"KEY":[ITEM,...],"next":NEXT}, written as its items are added
// and bounded in bytes: an item is taken only while the body stays within the budget with
// it, except the first, which always is (a page holds at least one item, however large).
// The caller's `next` must continue right after the last item taken, so that a client
// paging through gets every item once.
class PageBody {
 public:
  explicit PageBody(std::string_view key, size_t budget = kPageBodyBytes);
  // Adds `item`; false, adding nothing, when the body would pass the budget with it.
  bool add(const Value& item);
  // How many items it holds.
  size_t items() const { return items_; }
  // The 200 answer, with `next` (a cursor, or null).
  Response finish(const Value& next) &&;

 private:
  std::string text_;
  size_t budget_;
  size_t items_ = 0;
};

// ?name=N as an integer in [min, max]; `fallback` when absent; the 400 when bad.
std::optional<int64_t> int_param(const ApiRequest& req, std::string_view name, int64_t fallback, int64_t min,
                                 int64_t max, Response* error);

// The request's Last-Event-ID (an event stream's, API.md "The event stream"): nullopt
// when absent, false with the 400 to answer when it is not digits below 2^64.
bool last_event_id(const ApiRequest& req, std::optional<uint64_t>* id, Response* error);

// {"p50", "p95", "p99", "count"} of `ms` (nearest rank); null when empty.
Value percentiles(std::vector<double> ms);

// How many of the newest contexts the recent figures are taken over.
inline constexpr size_t kFiguresWindow = 2000;

// Figures over the newest kFiguresWindow contexts (of `flow`, or of all when empty): per
// flow, counts by status and the percentiles of runtime_ms of those that ended, and the
// same percentiles over all of them. /api/stats and /api/flows both read these.
struct RecentFigures {
  std::map<std::string, Value> per_flow;  // flow -> {"counts": {status: n}, "runtime_ms"}
  Value runtime_ms;                       // percentiles over every flow; null when none ended
};
RecentFigures recent_figures(Engine& engine, std::string_view flow = {});

// The status for an error of the engine: 404 for what does not exist, 503 when the engine
// stops or cannot write its state, 400 for the rest.
Response engine_error(const std::string& message);

// A deferred reply that waits up to `wait` for context `id` to end: the engine wakes it the
// moment the context ends (Engine::on_context_end), so `poll` (as Reply::poll) answers
// then; the timer's polls, a second apart, are only a fallback.
Reply reply_when_ended(Engine& engine, const std::string& id, std::chrono::milliseconds wait,
                       std::function<std::optional<Response>(PollTurn)> poll);

}  // namespace flowrt::server
