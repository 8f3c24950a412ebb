#include "server/cluster_forwarder.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <utility>

#include "runtime/engine_log.h"
#include "server/auth.h"
#include "server/http_message.h"

namespace flowrt::server {

namespace {

// What a stopping node answers (a follower that leaves or takes the lead, a leader that
// leaves), with not_appended when the request was not in the inbox yet.
constexpr const char* kStopped = "this node stopped taking requests for the inbox (it left, or took the lead)";

// 503 for a request this sending did not put into the inbox, `why`. Without a key that
// means it was not accepted. With one it says nothing of the key: an earlier sending with
// it may have been accepted (perhaps its append is still in flight elsewhere), so the
// client is told to send it again with the key, which then gets that one's answer.
Response not_appended(const InboxRequest& q, const std::string& why, const std::string& detail = "") {
  const std::string more = detail.empty() ? "" : " (" + detail + ")";
  if (q.idempotency_key.empty()) {
    return error_response(http::status::service_unavailable, why + ": the request was not accepted; send it again" + more);
  }
  return error_response(http::status::service_unavailable,
                        why + ": this sending was not put into the inbox, but an earlier one with the same "
                              "Idempotency-Key may have been; send it again with the key to learn what became of it" +
                            more);
}

// The response the leader gave, as a client of this node gets it.
Response response_of(uint64_t seq, const InboxReply& a) {
  Response res{static_cast<http::status>(a.status), 11};
  if (!a.content_type.empty()) res.set(http::field::content_type, a.content_type);
  res.set(http::field::cache_control, "no-store");
  res.set("X-Flowrt-Operation", std::to_string(seq));
  res.body() = a.body;
  res.prepare_payload();
  return res;
}

Response accepted_but_unanswered(http::status status, uint64_t seq, const std::string& why) {
  Response res = json_response(
      status, Value::object({{"error", Value(why + ": operation " + std::to_string(seq) +
                                             " is accepted and will be applied; GET /api/cluster/operations/" +
                                             std::to_string(seq) + " says how it went")},
                             {"operation", Value(static_cast<int64_t>(seq))}}));
  res.set("X-Flowrt-Operation", std::to_string(seq));
  return res;
}

}  // namespace

ClusterForwarder::ClusterForwarder(std::string url, int64_t incarnation, std::chrono::milliseconds timeout)
    : url_(std::move(url)), incarnation_(incarnation), timeout_(timeout) {}

ClusterForwarder::~ClusterForwarder() { stop(); }

void ClusterForwarder::start() {
  appender_ = std::thread([this] { append_loop(); });
  answerer_ = std::thread([this] { answer_loop(); });
}

void ClusterForwarder::stop() {
  {
    std::lock_guard lock(mu_);
    if (stopping_ && !appender_.joinable()) return;
    stopping_ = true;
    for (const auto& p : queued_) {
      settle(*p, not_appended(p->request, kStopped));
    }
    queued_.clear();
    for (const auto& p : appended_) {
      settle(*p, accepted_but_unanswered(http::status::service_unavailable, p->seq, kStopped));
    }
    appended_.clear();
  }
  cv_.notify_all();
  if (appender_.joinable()) appender_.join();
  if (answerer_.joinable()) answerer_.join();
}

bool ClusterForwarder::wait_answered(std::chrono::milliseconds limit) {
  std::unique_lock lock(mu_);
  return cv_.wait_for(lock, limit, [&] {
    return stopping_ || (queued_.empty() && std::all_of(appended_.begin(), appended_.end(), [](const auto& p) {
                           return p->answer.has_value() || p->abandoned;
                         }));
  });
}

ClusterForwarder::ClientWait::~ClientWait() {
  std::lock_guard lock(forwarder->mu_);
  pending->abandoned = true;
}

void ClusterForwarder::settle(Pending& p, Response res) {
  if (p.answer) return;
  p.answer = std::move(res);
  p.waker->wake();
}

Reply ClusterForwarder::forward(const Request& req, const Caller& caller) {
  auto p = std::make_shared<Pending>();
  InboxRequest& q = p->request;
  q.method = std::string(req.method_string());
  q.target = std::string(req.target());
  q.caller = caller.name;
  q.role = std::string(role_name(caller.role));
  q.authenticated = caller.authenticated;
  if (auto ct = req.find(http::field::content_type); ct != req.end()) q.content_type = std::string(ct->value());
  q.body = req.body();
  if (auto key = req.find(kIdempotencyKeyHeader); key != req.end()) q.idempotency_key = std::string(key->value());
  {
    std::lock_guard lock(mu_);
    if (stopping_) {
      return not_appended(q, kStopped);
    }
    queued_.push_back(p);
  }
  cv_.notify_all();
  Reply reply;
  reply.deadline = std::chrono::steady_clock::now() + timeout_;
  reply.waker = p->waker;
  reply.max_poll_interval = std::chrono::milliseconds(1000);
  const auto seconds = std::chrono::duration_cast<std::chrono::seconds>(timeout_).count();
  auto wait = std::make_shared<ClientWait>(this, p);
  reply.poll = [this, p, wait, seconds](PollTurn turn) -> std::optional<Response> {
    std::lock_guard lock(mu_);
    if (p->answer) return std::move(*p->answer);
    if (turn == PollTurn::kWaiting) return std::nullopt;
    if (stopping_ && p->seq != 0) {
      return accepted_but_unanswered(http::status::service_unavailable, p->seq, kStopped);
    }
    if (p->seq == 0 && !p->appending) {
      std::erase(queued_, p);  // never appended now
      return not_appended(p->request, "the cluster's database did not take the request in time");
    }
    if (p->seq == 0) {
      return error_response(http::status::gateway_timeout,
                            "the cluster's database has not confirmed the request within " + std::to_string(seconds) +
                                " s: it may still be accepted and applied; whether it was is not known here");
    }
    return accepted_but_unanswered(http::status::gateway_timeout, p->seq,
                                   "the leader has not answered within " + std::to_string(seconds) + " s");
  };
  return reply;
}

void ClusterForwarder::append_loop() {
  std::unique_ptr<PostgresCluster> link;
  while (true) {
    std::vector<std::shared_ptr<Pending>> batch;
    {
      std::unique_lock lock(mu_);
      cv_.wait(lock, [&] { return stopping_ || !queued_.empty(); });
      if (stopping_) return;
      batch.assign(queued_.begin(), queued_.end());
      queued_.clear();
      for (const auto& p : batch) p->appending = true;
    }
    std::vector<InboxRequest> requests;
    requests.reserve(batch.size());
    for (const auto& p : batch) requests.push_back(p->request);
    // Names this append: the incarnation and a count of the process's appends (a node has
    // two forwarders, its follower's and, leading, the keyed writes'; counted apart, their
    // names met, and a read-back by name took the other's entries for its own).
    static std::atomic<uint64_t> appends{0};
    const std::string name =
        std::to_string(incarnation_) + "." + std::to_string(appends.fetch_add(1, std::memory_order_relaxed) + 1);
    Result<std::vector<InboxAppended>> seqs = Error{""};
    if (!link) {
      Result<std::unique_ptr<PostgresCluster>> c = PostgresCluster::connect(url_);
      if (c) link = std::move(c).value();
      else seqs = c.error();
    }
    bool known = true;  // whether a failed append is known not to have committed
    if (link) {
      const int backend = link->backend_pid();
      seqs = link->append(incarnation_, requests, name);
      if (!seqs && !link->connected()) {
        // Lost during the append, perhaps at its commit: read back once that session ended.
        engine_log().warn("cluster: the connection was lost during append {}: reading it back", name);
        link.reset();
        Result<std::vector<InboxAppended>> back = Error{""};
        // Tried again on new connections for up to kReadBackMs (a database restarting is
        // back within it); the node's stop does not wait longer than that.
        const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(kReadBackMs);
        while (true) {
          if (Result<std::unique_ptr<PostgresCluster>> c = PostgresCluster::connect(url_)) {
            link = std::move(c).value();
            back = link->appended_batch(name, backend, kReadBackMs, requests);
          } else {
            back = c.error();
          }
          if (back || std::chrono::steady_clock::now() >= until) break;
          link.reset();
          std::unique_lock lock(mu_);
          if (cv_.wait_for(lock, std::chrono::milliseconds(100), [&] { return stopping_; })) break;
        }
        if (!back) {
          known = false;
          seqs = Error{seqs.error().message + "; read back: " + back.error().message};
        } else {
          seqs = std::move(back).value();  // what it did with each (kNone: not appended)
        }
      }
    }
    std::lock_guard lock(mu_);
    if (!seqs) {
      engine_log().warn("cluster: {} requests not forwarded: {}", batch.size(), seqs.error().message);
      link.reset();  // connected again for the next ones
      for (const auto& p : batch) {
        settle(*p, known ? not_appended(p->request, "the cluster's database cannot be reached", seqs.error().message)
                         : error_response(http::status::service_unavailable,
                                          "the connection to the cluster's database was lost while it took the "
                                          "request, and whether it was accepted cannot be read back now: it may be "
                                          "applied (" + seqs.error().message + ")"));
      }
      continue;
    }
    for (size_t i = 0; i < batch.size(); ++i) {
      const InboxAppended& done = (*seqs)[i];
      if (done.kind == InboxAppended::Kind::kNone) {
        settle(*batch[i], not_appended(batch[i]->request,
                                       "the connection to the cluster's database was lost while it took the request"));
        continue;
      }
      if (done.kind == InboxAppended::Kind::kKeyReused) {
        Response res = error_response(
            http::status::unprocessable_entity,
            "Idempotency-Key '" + batch[i]->request.idempotency_key + "' was sent before with another request (" +
                "operation " + std::to_string(done.seq) + "); a key names one request: use a new key for a new one");
        res.set("X-Flowrt-Operation", std::to_string(done.seq));
        settle(*batch[i], std::move(res));
        continue;
      }
      batch[i]->seq = done.seq;  // new, or the entry its key names (its answer is that entry's)
      if (stopping_) {
        settle(*batch[i], accepted_but_unanswered(http::status::service_unavailable, batch[i]->seq,
                                                  kStopped));
      } else {
        appended_.push_back(batch[i]);
      }
    }
    cv_.notify_all();
  }
}

void ClusterForwarder::answer_loop() {
  std::unique_ptr<PostgresCluster> link;
  while (true) {
    std::vector<uint64_t> seqs;
    {
      std::unique_lock lock(mu_);
      // Forget what is answered, and what a client no longer waits for.
      std::erase_if(appended_, [](const std::shared_ptr<Pending>& p) { return p->answer.has_value() || p->abandoned; });
      if (stopping_) return;
      for (const auto& p : appended_) seqs.push_back(p->seq);
    }
    if (!link) {
      Result<std::unique_ptr<PostgresCluster>> c = PostgresCluster::connect(url_);
      if (c && (*c)->listen("flowrt_answers")) {
        link = std::move(c).value();
      } else {
        std::unique_lock lock(mu_);
        cv_.wait_for(lock, std::chrono::milliseconds(kPollMs), [&] { return stopping_; });
        continue;
      }
    }
    if (!seqs.empty()) {
      Result<std::vector<std::pair<uint64_t, InboxReply>>> answers = link->answers(seqs);
      if (!answers) {
        link.reset();
        continue;
      }
      {
        std::lock_guard lock(mu_);
        for (const auto& [seq, a] : *answers) {
          for (const auto& p : appended_) {
            if (p->seq == seq) settle(*p, response_of(seq, a));
          }
        }
      }
      cv_.notify_all();  // wait_answered
    }
    // Until a notification, or the bounded poll; sooner when new requests were appended.
    {
      std::unique_lock lock(mu_);
      if (stopping_) return;
      bool news = false;
      for (const auto& p : appended_) {
        if (std::find(seqs.begin(), seqs.end(), p->seq) == seqs.end()) news = true;
      }
      if (news) continue;
    }
    Result<bool> woke = link->wait(kPollMs / 4);
    if (!woke) link.reset();
  }
}

}  // namespace flowrt::server
