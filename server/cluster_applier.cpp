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

ClusterApplier::ClusterApplier(std::string url, const Router& router, int64_t epoch, uint64_t applied,
                               std::string address, std::function<void(const std::string&)> on_fenced)
    : url_(std::move(url)),
      router_(router),
      epoch_(epoch),
      applied_(applied),
      address_(std::move(address)),
      on_fenced_(std::move(on_fenced)) {}

ClusterApplier::~ClusterApplier() { stop(); }

void ClusterApplier::start() {
  handlers_ = std::make_unique<boost::asio::thread_pool>(kHandlerThreads);
  thread_ = std::thread([this] { run(); });
}

void ClusterApplier::stop() {
  stopping_.store(true);
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
  if (handlers_) {
    handlers_->join();  // what runs finishes
    handlers_.reset();
    answer_last();
  }
}

void ClusterApplier::answer_last() {
  bool due = false;
  {
    std::lock_guard lock(mu_);
    due = !done_.empty();
  }
  if (fenced_ || (!due && waits_.empty() && unrecorded_.empty())) return;
  Result<std::unique_ptr<PostgresCluster>> link = PostgresCluster::connect(url_);
  Status recorded = link ? answer_finished(**link, PollTurn::kDraining) : Status(link.error());
  if (!recorded) {
    engine_log().warn("cluster: answers not recorded at the stop (the next leader answers them): {}",
                      recorded.message());
  }
}

Reply ClusterApplier::dispatch(const InboxEntry& e, const std::shared_ptr<InFlight>& flight) {
  const InboxRequest& q = e.request;
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
  try {
    const OperationTag tag(e.seq, [this, flight] {
      {
        std::lock_guard lock(mu_);
        flight->committed = true;
      }
      cv_.notify_all();
    });
    return router_.dispatch(req, caller, /*wrapped=*/false);
  } catch (const std::exception& ex) {
    engine_log().error("cluster: operation {} ({} {}): {}", e.seq, q.method, q.target, ex.what());
    return error_response(http::status::internal_server_error, "the leader failed to apply it (logged)");
  }
}

bool ClusterApplier::start_entry(const InboxEntry& e) {
  auto flight = std::make_shared<InFlight>();
  flight->seq = e.seq;
  if (e.seq <= applied_ && !is_read(e.request.method)) {
    // Its effects are durable (the last leader's store batch said so); its answer was lost
    // with that leader. Not applied again. A call or a test run names the context it
    // started, kept with the entry in the same batch.
    std::vector<Member> members{{Value("operation"), Value(static_cast<int64_t>(e.seq))},
                                {Value("applied"), Value(true)},
                                {Value("note"), Value("applied by the node that led before; its answer was lost "
                                                      "when that node stopped")}};
    if (!e.started.empty()) members.push_back(Member{Value("context_id"), Value(std::string_view(e.started))});
    flight->reply = json_response(http::status::ok, Value::object(std::move(members)));
    flight->done = true;
    std::lock_guard lock(mu_);
    done_.push_back(flight);
    return false;
  }
  {
    std::lock_guard lock(mu_);
    ++in_flight_;
  }
  boost::asio::post(*handlers_, [this, e, flight] {
    Reply reply = dispatch(e, flight);
    {
      std::lock_guard lock(mu_);
      flight->reply = std::move(reply);
      flight->done = true;
      done_.push_back(flight);
      --in_flight_;
    }
    cv_.notify_all();
  });
  // The next entry starts once this one committed (or finished without committing).
  std::unique_lock lock(mu_);
  cv_.wait(lock, [&] { return flight->committed || flight->done; });
  return !flight->committed && !is_read(e.request.method);
}

void ClusterApplier::record(std::vector<std::pair<uint64_t, InboxReply>>* out, uint64_t seq, Reply reply) {
  Response res;
  if (reply.stream) {
    res = error_response(http::status::service_unavailable,
                         "event streams are served by the cluster's leader only: it listens at " + address_);
  } else if (reply.poll) {
    waits_.push_back(Waiting{seq, std::move(reply.poll), reply.deadline});
    return;
  } else {
    res = std::move(reply.response);
  }
  out->emplace_back(seq, reply_of(res));
}

Status ClusterApplier::answer_finished(PostgresCluster& link, PollTurn turn) {
  std::vector<std::shared_ptr<InFlight>> finished;
  {
    std::lock_guard lock(mu_);
    finished.swap(done_);
  }
  std::vector<std::pair<uint64_t, InboxReply>> answers = std::move(unrecorded_);
  unrecorded_.clear();
  for (const auto& f : finished) record(&answers, f->seq, std::move(f->reply));
  const auto now = std::chrono::steady_clock::now();
  for (auto it = waits_.begin(); it != waits_.end();) {
    std::optional<Response> res =
        it->poll(turn == PollTurn::kDraining ? turn : now >= it->deadline ? PollTurn::kDeadline : PollTurn::kWaiting);
    if (!res) {
      ++it;
      continue;
    }
    const uint64_t seq = it->seq;
    it = waits_.erase(it);
    record(&answers, seq, Reply(std::move(*res)));
  }
  // One transaction for the round: one commit, one notification.
  Result<bool> recorded = link.answer_all(answers, epoch_);
  if (!recorded) {
    engine_log().warn("cluster: {} answers not recorded yet: {}", answers.size(), recorded.message());
    unrecorded_ = std::move(answers);  // again, on a new connection
    return recorded.status();
  }
  if (!*recorded) {
    // Another node took the lead: these answers may say "refused" of entries that it
    // applies. It answers them (again, from what is durable); this node takes no more.
    fenced_ = true;
    const std::string why = "its answers to the inbox were fenced: another node took the lead after epoch " +
                            std::to_string(epoch_) + " (" + std::to_string(answers.size()) + " answers not recorded)";
    engine_log().error("cluster: {}", why);
    if (on_fenced_) on_fenced_(why);
    return Status::ok();
  }
  answered_.fetch_add(answers.size(), std::memory_order_relaxed);
  return Status::ok();
}

void ClusterApplier::run() {
  std::unique_ptr<PostgresCluster> link;
  uint64_t cursor = 0;  // entries up to here are started
  auto last_prune = std::chrono::steady_clock::now();
  while (!stopping_.load() && !fenced_) {
    if (!link) {
      Result<std::unique_ptr<PostgresCluster>> c = PostgresCluster::connect(url_);
      if (!c || !(*c)->listen("flowrt_inbox")) {
        if (!c) engine_log().warn("cluster: the inbox cannot be read: {}", c.error().message);
        std::unique_lock lock(mu_);
        cv_.wait_for(lock, std::chrono::milliseconds(kPollMs), [&] { return stopping_.load(); });
        continue;
      }
      link = std::move(c).value();
    }
    Result<std::vector<InboxEntry>> entries = link->unanswered(cursor, 256);
    if (!entries) {
      engine_log().warn("cluster: the inbox cannot be read: {}", entries.error().message);
      link.reset();
      continue;
    }
    // Answers that could not be recorded go first: one may be of an entry that changed
    // nothing, which must be recorded before a later entry's effects can be durable.
    if (!unrecorded_.empty() && !answer_finished(*link)) {
      link.reset();
      continue;
    }
    for (const InboxEntry& e : *entries) {
      if (stopping_.load() || fenced_) break;
      const bool changed_nothing = start_entry(e);
      cursor = e.seq;
      // A next leader takes every unanswered entry up to the durable applied_op for one
      // that was applied: so an entry that finished without a commit (refused, or nothing
      // to change) has its answer recorded before the next entry can commit.
      if (changed_nothing && !answer_finished(*link)) {
        link.reset();  // the round ends: its answers are recorded first on a new link
        break;
      }
    }
    if (!link || fenced_) continue;
    if (!answer_finished(*link)) {
      link.reset();
      continue;
    }
    if (std::chrono::steady_clock::now() - last_prune > std::chrono::seconds(60)) {
      (void)link->prune(kKeepAnsweredSeconds, kKeepKeyedSeconds);
      last_prune = std::chrono::steady_clock::now();
    }
    if (!entries->empty()) continue;
    // Nothing new: wait for a notification (briefly while answers are due).
    bool busy = false;
    {
      std::lock_guard lock(mu_);
      busy = in_flight_ > 0 || !done_.empty() || !waits_.empty() || !unrecorded_.empty();
    }
    Result<bool> woke = link->wait(busy ? 2 : kPollMs);
    if (!woke) link.reset();
  }
}

}  // namespace flowrt::server
