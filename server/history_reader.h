// HistoryReader: a cluster follower's reads of ended contexts, straight from the cluster's
// database, without the leader.
//
// A context's record, once the context has ended and its end is durable, never changes
// (history retention may delete it, on every node alike). So a follower that finds an
// ended context's record in the database answers GET /api/contexts/{id} exactly as the
// leader would at that moment or any later one, and as the same read sent through the
// inbox would be answered: the end was committed before the read began. Likewise a page of
// the contexts that ended with a given status (GET /api/contexts?status=S): the one the
// leader listed about when the last durable batch was cut. Anything else (a context that
// has not ended, or whose end is not durable yet, or that is not there; a list that can
// hold contexts not ended) is not the follower's to answer from the database: the caller
// forwards that read to the leader, as every other request.
//
// The store is a read-only PostgresStore (no writer's lock; its reads on connections of
// its own, reconnected when lost), opened at the first read. These reads run on the HTTP
// server's I/O threads, so a database that cannot be reached must not hold them up: the
// store's connections give up after about kTimeoutSeconds (connect_timeout,
// tcp_user_timeout, keepalives), the server cancels a read that takes longer
// (statement_timeout), and after an open or a read that failed, every read is the
// leader's for kRetryMs, then one read at a time tries the database until one succeeds.
//
// Thread-safety: ended_record and ended_page from any thread (the open under mu_; the
// store's reads one per connection under its own locks). Owns the store.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "plans/value.h"

namespace flowrt {
class PostgresStore;
}

namespace flowrt::server {

class HistoryReader {
 public:
  // After a failed open or read, how long the reads go to the leader, ms.
  static constexpr int kRetryMs = 1000;
  // How long the database may take to be connected to, or to take a read's bytes, s.
  static constexpr int kTimeoutSeconds = 2;

  // `now_ms`: a steady clock in ms (tests give their own); the back-off is counted on it.
  explicit HistoryReader(const std::string& url, std::function<int64_t()> now_ms = steady_now_ms);
  ~HistoryReader();
  HistoryReader(const HistoryReader&) = delete;
  HistoryReader& operator=(const HistoryReader&) = delete;

  // The record of context `id` ("ctx-N") when the database holds it ended; nothing when it
  // does not (not ended, not there, `id` names no context), cannot be read now, or is not
  // tried now (after a failure, see above).
  std::optional<Value> ended_record(std::string_view id);
  // The records of up to `limit` contexts of `flow` ("": any) that ended with `status`
  // (completed, cancelled or error), of seqs below `before_seq`, newest first, as the
  // database holds them; nothing when it cannot be read now, or is not tried now. What the
  // leader would have listed about when the last durable batch was cut: ends are durable
  // in the order the contexts ended.
  std::optional<std::vector<Value>> ended_page(std::string_view flow, std::string_view status, uint64_t before_seq,
                                               size_t limit);

  // The connection URL the store is opened with: `url` with the timeouts above (for tests).
  static std::string with_timeouts(const std::string& url);
  // std::chrono::steady_clock's time, ms.
  static int64_t steady_now_ms();

 private:
  // The store, opened now if it is not yet; null when it is not open, or when an open
  // failed while this read (not the probe) waited for it.
  PostgresStore* store(bool probe);
  // Whether this read may go to the database; `probe` set when it is the one read that
  // tries it again after a failure.
  bool may_read(bool* probe);
  void failed(std::string_view what, const std::string& why);
  // `read(store)` when this read may go to the database (see above); nothing when it may
  // not, or the read failed (`what` names it in the log).
  template <class T, class Read>
  std::optional<T> from_database(const std::string& what, Read&& read);

  const std::string url_;
  const std::function<int64_t()> now_ms_;
  std::mutex mu_;                         // guards store_
  std::unique_ptr<PostgresStore> store_;  // once set, kept for the reader's life
  std::atomic<bool> failing_{false};      // the last open or read failed
  std::atomic<int64_t> retry_at_ms_{0};   // steady ms before which no read is tried
  std::atomic<bool> probing_{false};      // a read tries the database again now
};

}  // namespace flowrt::server
