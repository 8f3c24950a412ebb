// ClusterForwarder: how a cluster node that does not lead answers the API. Every request
// no local route takes (all but /api/cluster, /healthz, /readyz) goes into the cluster's
// inbox (store/postgres_cluster.h) for the leader to apply in inbox order; the client gets
// the leader's answer, with an X-Flowrt-Operation header naming the inbox entry. The
// leader has one too, for writes with an Idempotency-Key: those go through the inbox on
// every node, which keeps the key (a repeat gets the entry the key names and its answer;
// the key with another request is 422).
//
// No thread waits for an answer: forward() queues the request and returns a deferred Reply
// (Reply::poll) that the HTTP server polls when the answer thread wakes it (Reply::waker),
// and every second as a fallback. One thread appends what is queued, many
// requests per transaction; another LISTENs for answers (a bounded poll of the database
// every kPollMs as the fallback) and reads them.
//
// What a client gets when there is no answer: 503 when the request was not appended (the
// database could not be reached, or the deadline came while it was still queued: it was
// not accepted, so it may be sent again); 504 at the deadline, and 503 when the node
// stops, once it was appended: it is accepted and will be applied, and
// GET /api/cluster/operations/N says how it went. When the connection is lost during an
// append (perhaps at its commit), the append is read back on a new connection once the old
// session has ended (PostgresCluster::appended_batch), so "not accepted" is said only when
// it is so. What cannot be said exactly (the deadline comes while the append is in flight,
// or the read-back fails too) is answered as not known, 504 or 503, never as "not accepted".
//
// Thread-safety: forward() from any thread; start and stop from the node's. Owns its two
// threads and their connections.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "server/router.h"
#include "store/postgres_cluster.h"

namespace flowrt::server {

class ClusterForwarder {
 public:
  // The bounded poll of answers when no notification comes, ms.
  static constexpr int kPollMs = 200;
  // How long the read-back of an append whose connection was lost waits for the old
  // session to end, ms.
  static constexpr int kReadBackMs = 5000;

  ClusterForwarder(std::string url, int64_t incarnation, std::chrono::milliseconds timeout);
  ~ClusterForwarder();
  ClusterForwarder(const ClusterForwarder&) = delete;
  ClusterForwarder& operator=(const ClusterForwarder&) = delete;

  void start();
  // Answers every request still waiting (503, naming its entry) and ends the threads.
  void stop();
  // Waits until every request forwarded so far has its answer (or its client went away),
  // at most `limit`: a node that takes the lead lets its own applier answer what its
  // follower forwarded before it stops forwarding. True when none is left waiting.
  bool wait_answered(std::chrono::milliseconds limit);
  // The deferred reply to `req` from `caller`.
  Reply forward(const Request& req, const Caller& caller);

 private:
  // One forwarded request; shared by its Reply's poll and the threads. Guarded by mu_.
  struct Pending {
    InboxRequest request;
    uint64_t seq = 0;                 // 0 until appended
    bool appending = false;           // taken by the append thread: no longer only queued
    std::optional<Response> answer;   // set once
    bool abandoned = false;           // its client stopped waiting (the reply was dropped)
    std::shared_ptr<ReplyWaker> waker = std::make_shared<ReplyWaker>();  // woken when answered
  };
  // Held by a Reply's poll: when the reply is dropped (answered, past its deadline, or its
  // connection closed), marks the request abandoned so the answer thread forgets it.
  struct ClientWait {
    ClientWait(ClusterForwarder* f, std::shared_ptr<Pending> p) : forwarder(f), pending(std::move(p)) {}
    ClientWait(const ClientWait&) = delete;
    ClientWait& operator=(const ClientWait&) = delete;
    ~ClientWait();
    ClusterForwarder* const forwarder;
    const std::shared_ptr<Pending> pending;
  };
  void append_loop();
  void answer_loop();
  // Under mu_: `p` answered with `res` (the first answer wins).
  static void settle(Pending& p, Response res);

  const std::string url_;
  const int64_t incarnation_;
  const std::chrono::milliseconds timeout_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stopping_ = false;                              // guarded by mu_
  std::deque<std::shared_ptr<Pending>> queued_;        // guarded by mu_: not yet appended
  std::vector<std::shared_ptr<Pending>> appended_;     // guarded by mu_: appended, no answer yet
  std::thread appender_;
  std::thread answerer_;
};

}  // namespace flowrt::server
