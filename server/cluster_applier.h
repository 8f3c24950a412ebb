// ClusterApplier: the leader's side of the inbox (store/postgres_cluster.h). One thread
// takes the entries other nodes appended, in inbox order, and answers each as this node's
// own API would (authentication already done by the node that accepted it: the entry
// carries the caller; an anonymous one reaches public routes only). Each entry runs under
// an OperationTag with its number, so the store batch that makes its effects durable also
// records it as applied (cluster_lead.applied_op): a leader that takes over applies the
// entries after that number again and answers those up to it without applying them
// ("applied by the last leader"): each operation is applied exactly once. Reads (GET, HEAD)
// are always answered again. An entry that waits (?wait=) hands its wait to a list polled
// between entries, so the entries behind it are not held up. An event stream is not
// forwarded through the inbox (a follower passes the leader's on, server/shared_stream.h);
// one that reaches it is answered 503 naming the leader's address. Its answers are fenced by its epoch, as its
// store batches are: a leader that lost the lead without knowing it yet (paused, cut off)
// may have refused an entry that the next leader applies, and must not be the one to
// answer it.
//
// Order with overlap: each entry runs on one of kHandlerThreads (a write waits for its
// commit to be durable there), and the next entry starts once this one has made its first
// commit (OperationTag's on_first_commit) or has finished without one. So entries commit
// in inbox order, and many share one durable store batch. A write that finished without
// a commit (refused, or with nothing to change) has its answer recorded before the next
// entry starts: applied_op only grows, so once a later entry's batch is durable a next
// leader would take it for applied.
//
// A clean stop records the answers of the entries that have finished, and answers the
// waits (?wait=) as a draining server does, before it returns: the next leader answers
// only what was still unfinished, "applied by the node that led before".
//
// Thread-safety: start and stop from one thread; owns its thread, its handler threads and
// its connection. The applier thread alone uses the connection, waits_ and unrecorded_
// (stop, once it has joined that thread, too); handler threads hand their answers back
// through done_ (guarded by mu_).
#pragma once

#include <boost/asio/thread_pool.hpp>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "server/router.h"
#include "store/postgres_cluster.h"

namespace flowrt::server {

class ClusterApplier {
 public:
  // The bounded poll of the inbox when no notification comes, ms.
  static constexpr int kPollMs = 200;
  // Answered entries are deleted after this long, seconds.
  static constexpr int64_t kKeepAnsweredSeconds = 600;
  // Answered entries with an Idempotency-Key are deleted after this long, seconds: a
  // client may send such a request again for a day and get its first answer.
  static constexpr int64_t kKeepKeyedSeconds = 86400;

  // `epoch` and `applied` are the lead's epoch and applied_op when this node took the
  // lead; `address` is where this node listens (named to clients of an event stream).
  // Answers are fenced by `epoch` (PostgresCluster::answer_all): once another node has
  // taken the lead, none is recorded, the applier stops taking entries, and `on_fenced`
  // is called once, on the applier's thread (or, at the stop's last answers, stop's),
  // saying why.
  ClusterApplier(std::string url, const Router& router, int64_t epoch, uint64_t applied, std::string address,
                 std::function<void(const std::string&)> on_fenced);
  ~ClusterApplier();
  ClusterApplier(const ClusterApplier&) = delete;
  ClusterApplier& operator=(const ClusterApplier&) = delete;

  void start();
  void stop();
  // Entries answered so far (for tests and /api/cluster).
  uint64_t answered() const { return answered_.load(std::memory_order_relaxed); }

 private:
  static constexpr int kHandlerThreads = 32;
  struct Waiting {
    uint64_t seq;
    std::function<std::optional<Response>(PollTurn)> poll;
    std::chrono::steady_clock::time_point deadline;
  };
  // One entry handed to a handler thread.
  struct InFlight {
    uint64_t seq = 0;
    bool committed = false;  // guarded by the applier's mu_
    bool done = false;       // guarded by mu_
    Reply reply;             // set before done
  };
  void run();
  // Starts entry `e` and returns once it has made its first commit or finished; its answer
  // comes back through done_ (or right away, when it needs no handler). True when it was
  // a write that finished without a commit (its answer is then recorded before the next
  // entry starts).
  bool start_entry(const InboxEntry& e);
  // Runs one entry on a handler thread: the router's reply.
  Reply dispatch(const InboxEntry& e, const std::shared_ptr<InFlight>& flight);
  // Records the answers of finished entries, and of their waits that have answered
  // (`turn`: kWaiting, or kDraining at the stop, when every wait answers now).
  Status answer_finished(PostgresCluster& link, PollTurn turn = PollTurn::kWaiting);
  // At the stop, once the handler threads are joined: the answers not recorded yet, on a
  // new connection (one try; those it cannot record, the next leader answers).
  void answer_last();
  // The answer to record for `seq` (into *out), or its wait kept for later.
  void record(std::vector<std::pair<uint64_t, InboxReply>>* out, uint64_t seq, Reply reply);

  const std::string url_;
  const Router& router_;
  const int64_t epoch_;
  const uint64_t applied_;
  const std::string address_;
  const std::function<void(const std::string&)> on_fenced_;
  std::atomic<bool> stopping_{false};
  bool fenced_ = false;  // the applier thread's: another node leads; nothing more is taken
  std::atomic<uint64_t> answered_{0};
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<std::shared_ptr<InFlight>> done_;  // guarded by mu_: finished, not yet answered
  size_t in_flight_ = 0;                          // guarded by mu_
  std::vector<Waiting> waits_;                    // the applier thread's
  std::vector<std::pair<uint64_t, InboxReply>> unrecorded_;  // the applier thread's: to record again
  std::unique_ptr<boost::asio::thread_pool> handlers_;
  std::thread thread_;
};

}  // namespace flowrt::server
