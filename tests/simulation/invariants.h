// The simulation's stateless invariants: each reads one Snapshot and appends what is
// broken. They hold at any moment the harness can look (after every operation, advance
// and settle); `Moment` says which, because a few only hold once nothing can run.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "tests/simulation/snapshot.h"

namespace flowrt::sim {

enum class Moment {
  kAfterOperation,  // right after an outside operation: contexts may be queued or woken, not yet run
  kQuiescent,       // after advance/settle: no context can run
  kEnd,             // after the final long settle: every context has ended
  kBetweenSteps,    // between two steps inside advance/settle: contexts may be running or
                    // woken; only what holds at every instant is checked
};

// (b) Every context has ended (completed, error, cancelled) with no step left open, or
// waits on something that exists: a timer in the future, a record that exists and (when
// quiescent) does not yet meet its condition, a place in a lock's queue. When quiescent
// nothing is in_progress; at the end nothing waits. After an operation a context may be
// queued (in_progress, started_at null).
void check_contexts(const Snapshot& s, Moment m, Violations* out);

// (c) Locks: no holder or waiter is an ended or unknown context, and every waiter waits on
// a lock step for that name; held == the holders' weights <= the limit; the head waiter
// does not fit (else it would have been granted); fencing tokens are unique and grow with
// grant time; at the end nothing is held or waited for.
void check_locks(const Snapshot& s, const std::map<std::string, int64_t>& declared_limits, Moment m,
                 Violations* out);

// (d) seq numbers are 1..N in id order, and contexts are taken from the queue in seq
// order: on a virtual clock started_at never decreases along seq (so events start FIFO);
// ended_at >= started_at. (On a real clock two workers stamp started_at in either order;
// the model checks FIFO by commit sequence there.)
void check_fifo(const Snapshot& s, Violations* out, bool virtual_clock = true);

// (e) Counters (records of kCounterTable named by `keys`): n equals the number of "inc K"
// log lines and the number of update_record steps that completed on it (each a lock-guarded
// n + 1); those updates wrote exactly 1..n (no two holders read the same n: mutual
// exclusion); each context logged "inc K" once per update it made.
void check_counters(const Snapshot& s, const std::vector<std::string>& keys, Violations* out);

}  // namespace flowrt::sim
