// HistoryReader: a cluster follower's reads of ended contexts, straight from the cluster's
// database, without the leader.
//
// A context's record, once the context has ended and its end is durable, never changes
// (history retention may delete it, on every node alike). So a follower that finds an
// ended context's record in the database answers GET /api/contexts/{id} exactly as the
// leader would at that moment or any later one, and as the same read sent through the
// inbox would be answered: the end was committed before the read began. Anything else (a
// context that has not ended, or whose end is not durable yet, or that is not there) is
// not the follower's to answer from the database: the caller forwards that read to the
// leader, as every other request.
//
// The store is a read-only PostgresStore (no writer's lock; its reads on one connection of
// its own, reconnected when lost), opened at the first read and, after an open that failed
// (no leader has made the tables yet, the database is away), again at the first read a
// second later; until it opens, every read is forwarded.
//
// Thread-safety: ended_record from any thread (the open under mu_; the store's reads one at
// a time under its own lock). Owns the store.
#pragma once

#include <chrono>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>

#include "plans/value.h"

namespace flowrt {
class PostgresStore;
}

namespace flowrt::server {

class HistoryReader {
 public:
  // How long after a failed open the next read tries again, ms.
  static constexpr int kRetryOpenMs = 1000;

  explicit HistoryReader(std::string url);
  ~HistoryReader();
  HistoryReader(const HistoryReader&) = delete;
  HistoryReader& operator=(const HistoryReader&) = delete;

  // The record of context `id` ("ctx-N") when the database holds it ended; nothing when it
  // does not (not ended, not there, `id` names no context) or cannot be read now.
  std::optional<Value> ended_record(std::string_view id);

 private:
  // The store, opened now if it is not yet and may be tried; null when it is not open.
  PostgresStore* store();

  const std::string url_;
  std::mutex mu_;                            // guards store_ and next_try_
  std::unique_ptr<PostgresStore> store_;     // once set, kept for the reader's life
  std::chrono::steady_clock::time_point next_try_;  // no open is tried before it
};

}  // namespace flowrt::server
