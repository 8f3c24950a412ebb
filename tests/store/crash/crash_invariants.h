// The invariants the kill -9 crash test (tests/store/crash_test.cpp) checks on a data file
// after each kill and at the end, against the op model of the workload (crash_workload.h)
// and what the child acknowledged.
//
// Two sets:
//  - always: what the sqlite store promises today (docs/DURABILITY.md): acknowledged
//    operations are in the file and the op tables equal the model; each acknowledged
//    event, call and record trigger started exactly once; no record write repeated; no
//    lock held or waited for by a context that does not exist or has ended; no fencing
//    token given twice; a custom action ran (at least once) for every step recorded done;
//    at the end nothing is left unfinished and no lock is held.
//  - resume (check_resume): what issue 14 asks beyond that: contexts that were waiting or
//    running when the process died resume and finish as they would have without the crash,
//    checked against a reference run of the same seed without kills (same contexts with the
//    same statuses, the same flow-written records but for fencing tokens, which a crash
//    may use up, each lock granted in the same order).
// Not thread-safe; one checker per seed (it remembers every fencing token it saw).
#pragma once

#include <map>
#include <set>
#include <string>
#include <vector>

#include "store/store.h"
#include "tests/store/crash/crash_workload.h"

namespace flowrt::crash {

// What the child printed, as the test read it.
struct Acks {
  int last = 0;                          // the highest op acknowledged (acks come in order)
  std::map<int, std::string> call_ids;   // kCallJob op -> the context id call_flow returned
};

class CrashChecker {
 public:
  CrashChecker(std::vector<Op> ops, std::string side_file) : ops_(std::move(ops)), side_file_(std::move(side_file)) {}

  // The state in the file after a kill: every acknowledged op is there, op acks.last + 1
  // may or may not be. Returns the violations, each a sentence.
  std::vector<std::string> after_kill(const StoredState& s, const Acks& acks);
  // The state once the child said "done".
  std::vector<std::string> at_end(const StoredState& s, const Acks& acks);
  // The resume checks: `s` (at the end) against `reference`, the end state of the same seed
  // run without kills.
  std::vector<std::string> as_without_crash(const StoredState& s, const StoredState& reference,
                                            const std::string& reference_side_file) const;

 private:
  void check_common(const StoredState& s, const Acks& acks, bool final, std::vector<std::string>& out);

  std::vector<Op> ops_;
  std::string side_file_;
  std::map<int64_t, std::string> token_owner_;  // every fencing token seen -> the request it was granted for
};

// A context's identity across runs: flow and what triggered it (a record's sys_id, an
// event's or call's op, a schedule's time).
std::string context_key(const StoredContext& c);

// Everything `store` holds, ended contexts too: load() leaves those in the store (they are
// history, read when asked), so they are listed page by page and merged in, by seq.
Result<StoredState> load_with_history(Store& store);

}  // namespace flowrt::crash
