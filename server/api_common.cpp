#include "server/api_common.h"

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <vector>

#include "plans/value_json.h"
#include "runtime/engine.h"
#include "server/context_summary.h"

namespace flowrt::server {

std::optional<Value> json_body(const ApiRequest& req, Response* error, std::optional<Value> empty) {
  const std::string& body = req.http.body();
  if (body.find_first_not_of(" \t\r\n") == std::string::npos) {
    if (empty) return empty;
    *error = error_response(http::status::bad_request, "the request needs a JSON body", "");
    return std::nullopt;
  }
  Value v;
  JsonParseError e;
  if (!parse_json(body, &v, &e)) {
    *error = error_response(http::status::bad_request, "the body is not valid JSON: " + e.describe(),
                            e.pointer);
    return std::nullopt;
  }
  return v;
}

bool last_event_id(const ApiRequest& req, std::optional<uint64_t>* id, Response* error) {
  id->reset();
  const auto last = req.http.find("Last-Event-ID");
  if (last == req.http.end()) return true;
  const std::string_view v = last->value();
  uint64_t n = 0;
  const auto r = std::from_chars(v.data(), v.data() + v.size(), n);
  if (r.ec != std::errc() || r.ptr != v.data() + v.size()) {
    *error = error_response(http::status::bad_request, "Last-Event-ID must be an event id (digits)");
    return false;
  }
  *id = n;
  return true;
}

std::optional<int64_t> int_param(const ApiRequest& req, std::string_view name, int64_t fallback, int64_t min,
                                 int64_t max, Response* error) {
  const std::string* text = req.query_value(name);
  if (!text) return fallback;
  int64_t v = 0;
  const auto r = std::from_chars(text->data(), text->data() + text->size(), v);
  if (r.ec != std::errc() || r.ptr != text->data() + text->size() || v < min || v > max) {
    *error = error_response(http::status::bad_request, "query parameter " + std::string(name) +
                                                           " must be an integer from " + std::to_string(min) + " to " +
                                                           std::to_string(max));
    return std::nullopt;
  }
  return v;
}

namespace {
// What finish() adds after the items, at most: `],"next":` and a quoted 20-digit cursor,
// `}` and the newline.
constexpr size_t kPageTailBytes = 40;
}  // namespace

PageBody::PageBody(std::string_view key, size_t budget) : budget_(budget) {
  text_ += '{';
  write_json_string(key, text_);
  text_ += ":[";
}

bool PageBody::add(const Value& item) {
  const size_t before = text_.size();
  if (items_ > 0) text_ += ',';
  write_json(item, text_);
  if (items_ > 0 && text_.size() + kPageTailBytes > budget_) {
    text_.resize(before);
    return false;
  }
  ++items_;
  return true;
}

Response PageBody::finish(const Value& next) && {
  text_ += "],\"next\":";
  write_json(next, text_);
  text_ += "}\n";
  return text_response(http::status::ok, "application/json", std::move(text_));
}

Value percentiles(std::vector<double> ms) {
  if (ms.empty()) return Value();
  std::sort(ms.begin(), ms.end());
  auto at = [&](double q) { return Value(ms[std::min(ms.size() - 1, static_cast<size_t>(q * static_cast<double>(ms.size())))]); };
  return Value::object({{"p50", at(0.50)}, {"p95", at(0.95)}, {"p99", at(0.99)}, {"count", Value(ms.size())}});
}

Response engine_error(const std::string& message) {
  auto has = [&](std::string_view s) { return message.find(s) != std::string::npos; };
  if (message.starts_with("no record in ") || message.starts_with("no flow ") || has("no such") ||
      message.starts_with("no context")) {
    return error_response(http::status::not_found, message);
  }
  if (has("the engine is stopping") || has("cannot write its state")) {
    return error_response(http::status::service_unavailable, message);
  }
  return error_response(http::status::bad_request, message);
}

RecentFigures recent_figures(Engine& engine, std::string_view flow) {
  std::map<std::string, std::map<std::string, int64_t>> counts;
  std::map<std::string, std::vector<double>> runtimes;
  std::vector<double> all;
  for (const ContextRecord& r : engine.context_page(flow, "", UINT64_MAX, kFiguresWindow)) {
    const std::string f = r.flow();
    ++counts[f][r.status()];
    if (is_final_status(r.status()) && r.value()["runtime_ms"].is_number()) {
      runtimes[f].push_back(r.value()["runtime_ms"].as_double());
      all.push_back(r.value()["runtime_ms"].as_double());
    }
  }
  RecentFigures out;
  for (auto& [f, by_status] : counts) {
    std::vector<Member> c;
    for (const auto& [status, n] : by_status) c.push_back(Member{Value(status), Value(static_cast<long long>(n))});
    out.per_flow[f] =
        Value::object({{"counts", Value::object(std::move(c))}, {"runtime_ms", percentiles(std::move(runtimes[f]))}});
  }
  out.runtime_ms = percentiles(std::move(all));
  return out;
}

Reply reply_when_ended(Engine& engine, const std::string& id, std::chrono::milliseconds wait,
                       std::function<std::optional<Response>(PollTurn)> poll) {
  Reply reply;
  reply.deadline = std::chrono::steady_clock::now() + wait;
  reply.waker = std::make_shared<ReplyWaker>();
  reply.max_poll_interval = std::chrono::milliseconds(1000);
  // Held by the poll: the watch ends when the reply goes (answered, or its client gone).
  std::shared_ptr<ContextEndWatcher> watcher = engine.on_context_end(id, [waker = reply.waker] { waker->wake(); });
  reply.poll = [watcher, poll = std::move(poll)](PollTurn turn) { return poll(turn); };
  return reply;
}

}  // namespace flowrt::server
