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
// forwarded (503 naming the leader's address).
//
// Entries are applied one at a time: a forwarded write costs a durable commit before the
// next starts (docs/SCALING.md has the rate).
//
// Thread-safety: start and stop from one thread; owns its thread and its connection.
#pragma once

#include <atomic>
#include <chrono>
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

  // `applied` is the lead's applied_op when this node took the lead; `address` is where
  // this node listens (named to clients of an event stream).
  ClusterApplier(std::string url, const Router& router, uint64_t applied, std::string address);
  ~ClusterApplier();
  ClusterApplier(const ClusterApplier&) = delete;
  ClusterApplier& operator=(const ClusterApplier&) = delete;

  void start();
  void stop();
  // Entries answered so far (for tests and /api/cluster).
  uint64_t answered() const { return answered_.load(std::memory_order_relaxed); }

 private:
  struct Waiting {
    uint64_t seq;
    std::function<std::optional<Response>(bool)> poll;
    std::chrono::steady_clock::time_point deadline;
  };
  void run();
  // The answer to one entry now, or a wait to poll.
  std::optional<Response> apply(const InboxEntry& e, std::vector<Waiting>* waits);
  void poll_waits(PostgresCluster& link, std::vector<Waiting>* waits);

  const std::string url_;
  const Router& router_;
  const uint64_t applied_;
  const std::string address_;
  std::atomic<bool> stopping_{false};
  std::atomic<uint64_t> answered_{0};
  std::thread thread_;
};

}  // namespace flowrt::server
