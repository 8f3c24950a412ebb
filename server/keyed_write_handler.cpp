#include "server/keyed_write_handler.h"

#include <algorithm>
#include <chrono>
#include <iterator>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "plans/value_json.h"
#include "runtime/engine_core.h"
#include "runtime/keyed_writes.h"
#include "server/http_message.h"
#include "server/reply_waker.h"

namespace flowrt::server {
namespace {

// The answer's headers a replay gives back.
constexpr http::field kKeptFields[] = {http::field::content_type, http::field::location, http::field::etag};

// What names a request: its method, target and body.
std::string request_digest(const Request& req) {
  std::string text(req.method_string());
  text += ' ';
  text += req.target();
  text += '\n';
  text += req.body();
  return to_hex(sha256(text));
}

KeyedWrites::Answer answer_of(const Response& res) {
  std::vector<Member> headers;
  for (http::field f : kKeptFields) {
    if (auto it = res.find(f); it != res.end()) {
      headers.push_back(Member{Value(std::string(http::to_string(f))), Value(std::string(it->value()))});
    }
  }
  std::string text;
  write_json(Value::object(std::move(headers)), text);
  return KeyedWrites::Answer{static_cast<int>(res.result_int()), std::move(text), res.body()};
}

Response replay(const KeyedWrites::Answer& a) {
  Response res{static_cast<http::status>(a.status), 11};
  if (Result<Value> headers = parse_json(a.headers); headers && headers->is_object()) {
    for (const MemberRef m : headers->members()) {
      // Only the fields an answer keeps, and no value that could end its line: an answer
      // kept before Location was percent-encoded (fe31933) may hold CR LF from a sys_id.
      if (!m.key.is_string() || !m.value.is_string()) continue;
      const std::string_view name = m.key.as_string(), value = m.value.as_string();
      const bool kept = std::any_of(std::begin(kKeptFields), std::end(kKeptFields),
                                    [&](http::field f) { return boost::beast::iequals(http::to_string(f), name); });
      const bool one_line = std::none_of(value.begin(), value.end(), [](char c) {
        return c == '\r' || c == '\n' || c == '\0';
      });
      if (kept && one_line) res.set(name, value);
    }
  }
  res.set(http::field::cache_control, "no-store");
  res.set(kReplayedHeader, "true");
  res.body() = a.body;
  res.prepare_payload();
  return res;
}

// The answer to a write applied whose answer was not kept: {"applied": true, "note"}, and
// what it is known to have started (`started`, the JSON of an object: a call's
// "context_id"), when the server knew it.
Response applied_unanswered(const std::string& started) {
  std::vector<Member> members{
      {Value("applied"), Value(true)},
      {Value("note"), Value("applied, but its answer was not kept (the server stopped, the client left before it was "
                            "answered, or its outcome was not known then); look at what it changed to learn more")}};
  if (Result<Value> known = parse_json(started); known && known->is_object()) {
    for (const MemberRef m : known->members()) {
      if (m.key.as_string() != "applied" && m.key.as_string() != "note") members.push_back(Member{m.key, m.value});
    }
  }
  Response res = json_response(http::status::ok, Value::object(std::move(members)));
  res.set(kReplayedHeader, "true");
  return res;
}

// A claimed key until its write is answered: ends the claim once, with the answer, or as
// "not known" when the reply is dropped unanswered.
class OpenClaim {
 public:
  OpenClaim(KeyedWrites& writes, std::string caller, std::string key)
      : writes_(writes), caller_(std::move(caller)), key_(std::move(key)) {}
  ~OpenClaim() {
    if (!finished_) writes_.finish(caller_, key_, std::nullopt, committed, started_text());
  }
  OpenClaim(const OpenClaim&) = delete;
  OpenClaim& operator=(const OpenClaim&) = delete;

  // Keeps the answer the client is to get (none when its outcome is not known: 503, 504);
  // returns the journal position to wait for before giving it (0: none).
  uint64_t answered(const Response& res) {
    if (finished_) return 0;
    finished_ = true;
    const int status = res.result_int();
    const bool unknown = status == 503 || status == 504;
    if (unknown) return writes_.finish(caller_, key_, std::nullopt, committed, started_text());
    return writes_.finish(caller_, key_, answer_of(res), committed);
  }

  bool committed = false;  // set once the write's handler returned
  Value started;           // what the write started (Reply::started), once its handler returned

 private:
  std::string started_text() const { return started.is_object() ? started.to_json() : std::string(); }

  KeyedWrites& writes_;
  const std::string caller_;
  const std::string key_;
  bool finished_ = false;
};

// `reply`, its response given only once the kept answer is durable too, so that the same
// request sent again after any crash gets it again. The write itself is durable by then
// (the routes answer so); if the answer is not durable by the reply's deadline, or the
// server drains, the response is given all the same: sent again after a crash, the request
// is then told it was applied.
Reply answer_once_kept(Engine& engine, Reply reply, std::shared_ptr<OpenClaim> open,
                      std::chrono::milliseconds answer_within) {
  struct State {
    std::optional<Response> ready;  // the answer, kept, waiting for its durability
    uint64_t position = 0;
  };
  auto state = std::make_shared<State>();
  std::function<std::optional<Response>(PollTurn)> inner = std::move(reply.poll);
  if (!inner) {
    state->position = open->answered(reply.response);
    if (state->position == 0 || engine.durable_state(state->position)) return reply;
    state->ready = std::move(reply.response);
    reply.deadline = std::chrono::steady_clock::now() + answer_within;
  }
  if (!reply.waker) reply.waker = std::make_shared<ReplyWaker>();
  if (state->position != 0) engine.when_durable(state->position, [w = reply.waker] { w->wake(); });
  reply.poll = [&engine, inner = std::move(inner), open, state, waker = reply.waker](PollTurn turn) -> std::optional<Response> {
    if (!state->ready) {
      std::optional<Response> res = inner(turn);
      if (!res) return std::nullopt;
      state->position = open->answered(*res);
      if (state->position == 0 || turn != PollTurn::kWaiting || engine.durable_state(state->position)) return res;
      state->ready = std::move(*res);
      engine.when_durable(state->position, [waker] { waker->wake(); });
      return std::nullopt;
    }
    if (turn == PollTurn::kWaiting && !engine.durable_state(state->position)) return std::nullopt;
    return std::move(*state->ready);
  };
  return reply;
}

}  // namespace

Reply answer_keyed_write(Engine& engine, const Router& router, const Request& req, const Caller& caller,
                         std::chrono::milliseconds answer_within) {
  KeyedWrites& writes = engine.core().keyed_writes;
  const std::string key(req[kIdempotencyKeyHeader]);
  const std::string digest = request_digest(req);
  const KeyedWrites::Claim claim = writes.claim(caller.name, key, digest);
  switch (claim.found) {
    case KeyedWrites::Found::kAnswered:
      return replay(claim.answer);
    case KeyedWrites::Found::kAppliedUnanswered:
      return applied_unanswered(claim.answer.body);
    case KeyedWrites::Found::kOtherRequest:
      return error_response(http::status::unprocessable_entity,
                            "Idempotency-Key '" + key +
                                "' was sent before with another request (method, target or body); a key names one "
                                "request: use a new key for a new one");
    case KeyedWrites::Found::kInFlight:
      return error_response(http::status::conflict, "a request with Idempotency-Key '" + key +
                                                        "' is being answered now; send it again once it is");
    case KeyedWrites::Found::kFull: {
      Response res = error_response(
          http::status::too_many_requests,
          "the server keeps at most " + std::to_string(writes.limit_bytes()) +
              " bytes of idempotency keys and their answers (the limit idempotency_key_bytes), and they are full; "
              "a key is forgotten a day after its write: send this again later, or without the key");
      res.set(http::field::retry_after, "60");
      return res;
    }
    case KeyedWrites::Found::kNew:
      break;
  }
  auto open = std::make_shared<OpenClaim>(writes, caller.name, key);
  // The request as the routes take it: without the key, which this layer answers for.
  Request plain = req;
  plain.erase(kIdempotencyKeyHeader);
  Reply reply;
  {
    KeyedWrites::Scope scope(writes, caller.name, key, digest);
    try {
      reply = router.dispatch(plain, caller);
    } catch (...) {
      open->committed = scope.committed();
      throw;
    }
    open->committed = scope.committed();
  }
  open->started = reply.started;
  if (reply.stream) return reply;  // no write answers with a stream
  return answer_once_kept(engine, std::move(reply), std::move(open), answer_within);
}

}  // namespace flowrt::server
