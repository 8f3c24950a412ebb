// CommitLog: the simulation's copy of the engine's commit order (EngineOptions::on_commit,
// runtime/commit.h). Contract: observer() returns the function to install; it runs under
// the engine's commit lock, for every commit in commit order, copies what the model needs
// (kind, table, the record after and before, the event name, the origin context, the
// contexts started with their seq and commit_seq, the engine clock) and, for the run
// options, notes for each record-triggered context it started whether it had ended by the
// time of each later commit: "alive through" the last commit at which it certainly had
// not ended (not finished, and on real threads not running either, since a running context
// may be between releasing its run state and finishing), "ended by" the first commit at
// which it had. take() hands the new entries to the model (any thread, under a mutex).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "plans/time.h"
#include "plans/value.h"
#include "runtime/commit.h"

namespace flowrt {
class EngineClock;
class Context;
}  // namespace flowrt

namespace flowrt::sim {

struct CommitRecord {
  uint64_t seq = 0;
  CommitEntry::Kind kind = CommitEntry::Kind::kInsert;
  std::string table;
  Value record, previous, event;
  std::string origin;  // the context whose step made it; "" from outside
  TimeMs at = 0;       // the engine clock during the commit
  struct Started {
    std::string id;
    uint64_t seq = 0;
    uint64_t commit_seq = 0;
    std::string flow;
    Value trigger_record;  // the record its trigger holds (test_flow: as read when called)
  };
  std::vector<Started> started;
};

const char* kind_name(CommitEntry::Kind k);

class CommitLog {
 public:
  // `threads`: contexts run on real workers (a running context may be ending).
  explicit CommitLog(bool threads) : threads_(threads) {}
  CommitObserver observer();
  void set_clock(const EngineClock* clock) { clock_ = clock; }
  // The entries committed since the last take().
  std::vector<CommitRecord> take();
  uint64_t last() const;

  // For a context started by a record operation: the last commit at which it certainly
  // had not ended (0: none seen) and the first at which it had (UINT64_MAX: none yet).
  struct Ends {
    uint64_t alive_through = 0;
    uint64_t ended_by = UINT64_MAX;
  };
  Ends ends(const std::string& context_id) const;

 private:
  void on_commit(const CommitEntry& e);
  const bool threads_;
  const EngineClock* clock_ = nullptr;
  mutable std::mutex mu_;
  std::vector<CommitRecord> pending_;
  uint64_t last_ = 0;
  struct Tracked {
    std::shared_ptr<const Context> context;
    std::string id;
  };
  std::vector<Tracked> tracked_;  // record-triggered contexts not yet seen ended
  std::map<std::string, Ends> ends_;
};

}  // namespace flowrt::sim
