#include "server/cluster_applier.h"

#include <utility>

#include "runtime/commit.h"
#include "runtime/engine_log.h"
#include "server/auth.h"
#include "server/http_message.h"

namespace flowrt::server {

namespace {

InboxReply reply_of(const Response& res) {
  InboxReply a;
  a.status = static_cast<int>(res.result_int());
  if (auto ct = res.find(http::field::content_type); ct != res.end()) a.content_type = std::string(ct->value());
  a.body = res.body();
  return a;
}

bool is_read(const std::string& method) { return method == "GET" || method == "HEAD"; }

}  // namespace

ClusterApplier::ClusterApplier(std::string url, const Router& router, uint64_t applied, std::string address)
    : url_(std::move(url)), router_(router), applied_(applied), address_(std::move(address)) {}

ClusterApplier::~ClusterApplier() { stop(); }

void ClusterApplier::start() { thread_ = std::thread([this] { run(); }); }

void ClusterApplier::stop() {
  stopping_.store(true);
  if (thread_.joinable()) thread_.join();
}

std::optional<Response> ClusterApplier::apply(const InboxEntry& e, std::vector<Waiting>* waits) {
  const InboxRequest& q = e.request;
  if (e.seq <= applied_ && !is_read(q.method)) {
    // Its effects are durable (the last leader's store batch said so); its answer was lost
    // with that leader. Not applied again.
    return json_response(http::status::ok,
                         Value::object({{"operation", Value(static_cast<int64_t>(e.seq))},
                                        {"applied", Value(true)},
                                        {"note", Value("applied by the node that led before; its answer was lost when "
                                                       "that node stopped")}}));
  }
  Request req;
  const http::verb verb = http::string_to_verb(q.method);
  if (verb == http::verb::unknown) {
    return error_response(http::status::bad_request, "unknown method " + utf8_prefix(q.method, 40));
  }
  req.method(verb);
  req.target(q.target);
  req.version(11);
  if (!q.content_type.empty()) req.set(http::field::content_type, q.content_type);
  req.body() = q.body;
  req.prepare_payload();
  const std::optional<Role> role = role_from_name(q.role);
  if (!role) return error_response(http::status::bad_request, "unknown role " + utf8_prefix(q.role, 40));
  const Caller caller{q.caller, *role, q.authenticated};
  if (!caller.authenticated && !router_.is_public(req)) {
    return error_response(http::status::unauthorized, "a valid token is needed: Authorization: Bearer TOKEN");
  }
  Reply reply;
  try {
    const OperationTag tag(e.seq);
    reply = router_.dispatch(req, caller);
  } catch (const std::exception& ex) {
    engine_log().error("cluster: operation {} ({} {}): {}", e.seq, q.method, q.target, ex.what());
    return error_response(http::status::internal_server_error, "the leader failed to apply it (logged)");
  }
  if (reply.stream) {
    return error_response(http::status::service_unavailable,
                          "event streams are served by the cluster's leader only: it listens at " + address_);
  }
  if (reply.poll) {
    waits->push_back(Waiting{e.seq, std::move(reply.poll), reply.deadline});
    return std::nullopt;
  }
  return std::move(reply.response);
}

void ClusterApplier::poll_waits(PostgresCluster& link, std::vector<Waiting>* waits) {
  const auto now = std::chrono::steady_clock::now();
  for (auto it = waits->begin(); it != waits->end();) {
    std::optional<Response> res = it->poll(now >= it->deadline);
    if (!res) {
      ++it;
      continue;
    }
    if (link.answer(it->seq, reply_of(*res))) answered_.fetch_add(1, std::memory_order_relaxed);
    it = waits->erase(it);
  }
}

void ClusterApplier::run() {
  std::unique_ptr<PostgresCluster> link;
  std::vector<Waiting> waits;
  uint64_t cursor = 0;  // entries up to here are answered (or waiting in `waits`)
  auto last_prune = std::chrono::steady_clock::now();
  while (!stopping_.load()) {
    if (!link) {
      Result<std::unique_ptr<PostgresCluster>> c = PostgresCluster::connect(url_);
      if (!c || !(*c)->listen("flowrt_inbox")) {
        if (!c) engine_log().warn("cluster: the inbox cannot be read: {}", c.error().message);
        std::this_thread::sleep_for(std::chrono::milliseconds(kPollMs));
        continue;
      }
      link = std::move(c).value();
    }
    Result<std::vector<InboxEntry>> entries = link->unanswered(cursor, 100);
    if (!entries) {
      engine_log().warn("cluster: the inbox cannot be read: {}", entries.error().message);
      link.reset();
      continue;
    }
    for (const InboxEntry& e : *entries) {
      if (stopping_.load()) break;
      std::optional<Response> res = apply(e, &waits);
      cursor = e.seq;
      if (res) {
        if (Status s = link->answer(e.seq, reply_of(*res)); !s) {
          engine_log().warn("cluster: operation {} applied, its answer not recorded: {}", e.seq, s.message());
        } else {
          answered_.fetch_add(1, std::memory_order_relaxed);
        }
      }
      poll_waits(*link, &waits);
    }
    poll_waits(*link, &waits);
    if (std::chrono::steady_clock::now() - last_prune > std::chrono::seconds(60)) {
      (void)link->prune(kKeepAnsweredSeconds);
      last_prune = std::chrono::steady_clock::now();
    }
    if (!entries->empty()) continue;
    // Nothing new: wait for a notification (briefly while some entry waits).
    Result<bool> woke = link->wait(waits.empty() ? kPollMs : 5);
    if (!woke) link.reset();
  }
}

}  // namespace flowrt::server
