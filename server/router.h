// Router: the API's routes, each a method, a path pattern ("/api/tables/{table}/records")
// and the permission it needs, to a handler. Dispatch splits the target into its path
// segments (percent-decoded) and query parameters, finds the route, checks the caller's
// role, and calls the handler; a path no route has is 404, a path some route has under
// another method 405 with an Allow header.
//
// Built once before the server starts, then read by every I/O thread: immutable after
// that, so needs no lock. Handlers must be thread-safe.
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "server/auth.h"
#include "server/http_message.h"
#include "server/reply_waker.h"

namespace flowrt::server {

class StreamSource;

// One request as a handler sees it.
struct ApiRequest {
  const Request& http;
  Caller caller;
  std::map<std::string, std::string, std::less<>> params;  // {table} -> "incident"
  std::map<std::string, std::string, std::less<>> query;   // ?limit=5 -> limit: "5"

  const std::string* query_value(std::string_view name) const {
    auto it = query.find(name);
    return it == query.end() ? nullptr : &it->second;
  }
  const std::string& param(std::string_view name) const { return params.find(name)->second; }
};

// Why a deferred reply is polled: it may go on waiting (kWaiting), or must answer now,
// because its deadline has passed (kDeadline) or the server drains (kDraining).
enum class PollTurn : uint8_t { kWaiting, kDeadline, kDraining };

// What a handler gives back: a response now, or one to wait for (polled until it comes or
// the deadline passes, on a timer: no I/O thread waits, except a poll at the drain that
// must, server/durable_reply.h), or an event stream.
struct Reply {
  Reply(Response r) : response(std::move(r)) {}  // NOLINT(google-explicit-constructor)
  Reply() = default;

  Response response;
  // Deferred: called every few milliseconds with kWaiting until it returns a response, and
  // once with kDeadline at `deadline`, or kDraining when the server stops first (it must
  // answer then).
  std::function<std::optional<Response>(PollTurn)> poll;
  std::chrono::steady_clock::time_point deadline;
  // How far apart the polls may grow (they start 1 ms apart and double): a reply that
  // comes from elsewhere soon (a cluster leader's answer) polls more often.
  std::chrono::milliseconds max_poll_interval{20};
  // Set when another thread knows the moment the answer comes (it wakes the reply): the
  // server then polls at once, and otherwise every max_poll_interval (a fallback).
  std::shared_ptr<ReplyWaker> waker;
  // What a deferred reply's write started, as an object ({"context_id"} for a call):
  // kept with an Idempotency-Key when the reply goes unanswered (its client left, or its
  // outcome is not known), and given to the same request sent again
  // (server/keyed_write_handler.h). Null: nothing to tell.
  Value started;
  // An event stream: the server writes the source's events after `stream_after` (none:
  // from where StreamSource::subscribe says, for the server's own feed after its last).
  std::shared_ptr<StreamSource> stream;
  std::optional<uint64_t> stream_after;
};

using Handler = std::function<Reply(const ApiRequest&)>;

// The header a client names a write with, so that sending it again is safe
// (Router::keyed_writes); its value is 1 to kMaxIdempotencyKey visible ASCII characters.
inline constexpr std::string_view kIdempotencyKeyHeader = "Idempotency-Key";
inline constexpr size_t kMaxIdempotencyKey = 200;

// Splits "/a/b%20c?x=1&y" into decoded path segments and query parameters. Returns false
// when the target is not a valid origin-form target (no leading '/', a bad % escape).
bool split_target(std::string_view target, std::vector<std::string>* segments,
                  std::map<std::string, std::string, std::less<>>* query);

// `segment` percent-encoded for a path: every byte but ALPHA, DIGIT, '-', '.', '_' and '~'
// as %XX. What a response puts in a header (Location) from a table name or sys_id: those
// may hold CR, LF and NUL, which would otherwise make headers of their own.
std::string encode_path_segment(std::string_view segment);

class Router {
 public:
  void add(http::verb method, std::string_view pattern, Permission permission, Handler handler);

  // What answers a request no route matches (by path or method) instead of a 404 or 405:
  // a cluster node that does not lead forwards it (server/cluster_node.h). Such requests
  // count as public: the handler gets the caller as authenticated, or the anonymous one.
  using Fallback = std::function<Reply(const Request&, const Caller&)>;
  void otherwise(Fallback fallback) { fallback_ = std::move(fallback); }

  // What answers a write (POST, PUT, PATCH, DELETE) that carries an Idempotency-Key, before
  // any route: a single server's engine remembers the key (server/keyed_write_handler.h),
  // a cluster node puts the write in the inbox, which does (server/cluster_forwarder.h).
  // A router without one refuses such a write (400): it could not remember the key, and a
  // client that relies on it would resend unsafely. A malformed key is refused either way,
  // and so is a caller without a valid token (401).
  void keyed_writes(Fallback keyed) { keyed_ = std::move(keyed); }

  // Wraps the handler call of every write route (POST, PUT, PATCH, DELETE) in dispatch:
  // with a durable store, the service answers a write once its changes are durable
  // without a thread waiting for that (server/durable_reply.h).
  using WriteWrap = std::function<Reply(const std::function<Reply()>& handler)>;
  void wrap_writes(WriteWrap wrap) { wrap_writes_ = std::move(wrap); }

  // The response to `req` from `caller` (already authenticated). `wrapped`: false calls
  // a write's handler without the wrap_writes wrap (a cluster's applier, whose handler
  // threads wait for durability themselves).
  Reply dispatch(const Request& req, const Caller& caller, bool wrapped = true) const;
  // Whether `req` is for a kPublic route (answered without a token).
  bool is_public(const Request& req) const;

 private:
  struct Route {
    http::verb method;
    std::vector<std::string> segments;  // "{name}" is a parameter
    Permission permission;
    Handler handler;
  };
  static bool match(const Route& r, const std::vector<std::string>& segments,
                    std::map<std::string, std::string, std::less<>>* params);
  std::vector<Route> routes_;
  Fallback fallback_;
  Fallback keyed_;
  WriteWrap wrap_writes_;
};

}  // namespace flowrt::server
