#include "server/api_common.h"

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <vector>

#include "plans/value_json.h"
#include "runtime/engine.h"
#include "server/context_summary.h"

namespace flowrt::server {

namespace {

constexpr uint32_t kReplacement = 0xFFFD;

// The JSON string whose opening quote is at text[*i], read up to its closing quote or
// `end` (a string the error falls in is cut there), escapes decoded. Whatever a client
// wrote, the result is well-formed UTF-8, because it goes back to the client inside a
// JSON answer: bytes that are not UTF-8 and unpaired surrogates become U+FFFD. Leaves *i
// on the closing quote (or at `end`).
std::string read_key(std::string_view text, size_t* i, size_t end) {
  std::string s;
  size_t k = *i + 1;
  while (k < end && text[k] != '"') {
    const char c = text[k];
    if (c == '\\') {
      if (k + 1 >= end) break;
      const char e = text[k + 1];
      k += 2;
      switch (e) {
        case 'b': s += '\b'; break;
        case 'f': s += '\f'; break;
        case 'n': s += '\n'; break;
        case 'r': s += '\r'; break;
        case 't': s += '\t'; break;
        case 'u': {
          const char* at = text.data() + k;
          const char* stop = text.data() + end;
          uint32_t cp = 0, low = 0;
          if (!parse_hex4(at, stop, &cp)) {
            append_utf8(kReplacement, s);
            break;
          }
          k += 4;
          if (cp >= 0xD800 && cp <= 0xDBFF) {
            if (stop - at >= 10 && at[4] == '\\' && at[5] == 'u' && parse_hex4(at + 6, stop, &low) && low >= 0xDC00 &&
                low <= 0xDFFF) {
              cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
              k += 6;
            } else {
              cp = kReplacement;
            }
          } else if (cp >= 0xDC00 && cp <= 0xDFFF) {
            cp = kReplacement;
          }
          append_utf8(cp, s);
          break;
        }
        default:  // \" \\ \/, and anything else a parser refuses
          if (static_cast<unsigned char>(e) < 0x80) s += e;
          else --k;  // a byte past ASCII is read below, as any other
          break;
      }
      continue;
    }
    if (static_cast<unsigned char>(c) < 0x80) {
      s += c;
      ++k;
      continue;
    }
    const size_t n = utf8_sequence_length(text.data() + k, text.data() + end);
    if (n == 0) {
      append_utf8(kReplacement, s);
      ++k;
    } else {
      s.append(text.substr(k, n));
      k += n;
    }
  }
  *i = k;
  return s;
}

}  // namespace

std::string pointer_at(std::string_view text, size_t offset) {
  struct Level {
    bool object;
    std::string key;   // objects: the last key read
    size_t index = 0;  // arrays: the item's position
    bool key_next = true;
  };
  std::vector<Level> stack;
  const size_t end = std::min(offset, text.size());
  for (size_t i = 0; i < end; ++i) {
    const char c = text[i];
    if (c == '"') {
      std::string s = read_key(text, &i, end);
      if (!stack.empty() && stack.back().object && stack.back().key_next) {
        stack.back().key = std::move(s);
        stack.back().key_next = false;
      }
    } else if (c == '{') {
      stack.push_back(Level{true, "", 0, true});
    } else if (c == '[') {
      stack.push_back(Level{false, "", 0, false});
    } else if (c == '}' || c == ']') {
      if (!stack.empty()) stack.pop_back();
    } else if (c == ',' && !stack.empty()) {
      if (stack.back().object) {
        stack.back().key_next = true;
        stack.back().key.clear();
      } else {
        ++stack.back().index;
      }
    }
  }
  std::string pointer;
  for (const Level& l : stack) {
    if (l.object && l.key.empty()) break;
    pointer += '/';
    if (!l.object) {
      pointer += std::to_string(l.index);
      continue;
    }
    for (char ch : l.key) {
      if (ch == '~') pointer += "~0";
      else if (ch == '/') pointer += "~1";
      else pointer += ch;
    }
  }
  return pointer;
}

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
                            pointer_at(body, e.offset));
    return std::nullopt;
  }
  return v;
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
