// Model: the simulation's own reading of SPEC sections 3 and 9, following the run.
// Contract: every record write, event and call, from outside or from a context's step, is
// matched against the triggers of the active flows, and the starts it implies must be
// exactly the contexts and skipped entries (with their reasons) the engine made; nothing
// starts or is skipped that no operation explains (invariant a). Every record version a
// write returned is kept, and the tables must equal what those writes imply (e).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "tests/simulation/generator.h"
#include "tests/simulation/snapshot.h"

namespace flowrt::sim {

class Model {
 public:
  explicit Model(const Scenario& s);

  void set_active(const std::string& flow, bool active) { active_[flow] = active; }
  bool active(const std::string& flow) const;
  const std::map<std::string, bool>& active_map() const { return active_; }

  // A record write from outside; `previous` is the record before an update (null
  // otherwise); `record` what the engine returned (for a delete, the record removed).
  // Then the starts it made: the new contexts and skipped entries.
  void external_write(const std::string& table, const std::string& op, const Value& record, const Value& previous,
                      const std::vector<Value>& new_contexts, const std::vector<Value>& new_skipped, TimeMs now,
                      Violations* out);
  void external_event(const std::string& name, const std::vector<Value>& new_contexts,
                      const std::vector<Value>& new_skipped, TimeMs now, Violations* out);
  // call_flow: `started` is the context id when the call succeeded.
  void external_call(const std::string& flow, const std::optional<std::string>& started,
                     const std::vector<Value>& new_contexts, const std::vector<Value>& new_skipped, TimeMs now,
                     Violations* out);
  // An operation that must start nothing (a failed update, a cancel, ...).
  void external_nothing(const std::string& what, const std::vector<Value>& new_contexts,
                        const std::vector<Value>& new_skipped, Violations* out);

  // After settle/advance: reads the steps that ran since the last look, checks that the
  // starts they caused are exactly the new contexts and skipped entries, then checks the
  // tables against every version written, and the run options.
  void after_run(const Snapshot& s, Violations* out);

  uint64_t max_seq() const { return max_seq_; }
  size_t skipped_seen() const { return skipped_seen_; }
  // Live records of the data tables, as the model knows them (for the traffic).
  std::map<std::string, std::vector<std::string>> live_records() const;

 private:
  struct Expected {
    std::string key;  // flow|trigger
    enum class Kind { kStart, kSkip, kEither } kind = Kind::kStart;
    std::string reason;   // kSkip: the reason; kEither: the reason allowed
    std::string context;  // a start whose context id is known (start_flow)
    TimeMs at = 0;        // when the operation committed
    std::string why;      // for messages
  };
  struct Versions {
    std::map<int64_t, Value> by_mod_count;
    bool deleted = false;
  };

  // Expected starts of a record operation on `table` with the active flows.
  void record_starts(const std::string& table, const std::string& op, const Value& record, const Value& previous,
                     const Value* parent, TimeMs at, std::vector<Expected>* out);
  void event_starts(const std::string& name, const Value* parent, TimeMs at, std::vector<Expected>* out);
  // The rules of SPEC 9.2-9.4 for a start of `flow` caused by `parent` (null: outside).
  void rule_outcome(const FlowSpec& f, const Value* parent, const std::string& table, const std::string& sys_id,
                    Expected* e);
  void match(const std::vector<Expected>& expected, const std::vector<Value>& contexts,
             const std::vector<Value>& skipped, const std::string& what, const Value* parent, Violations* out);
  void add_version(const std::string& table, const Value& record, const std::string& where, Violations* out);
  void forget_record(const std::string& table, const std::string& sys_id);
  const Value* latest(const std::string& table, const std::string& sys_id) const;
  void note_started(const Value& ctx);
  void check_records(const Snapshot& s, Violations* out);
  void check_run_options(const Snapshot& s, Violations* out);

  const Scenario& s_;
  std::map<std::string, bool> active_;
  std::map<std::string, std::map<std::string, Versions>> history_;  // table -> sys_id -> versions
  std::map<std::string, size_t> steps_seen_;                          // context id -> steps read
  uint64_t max_seq_ = 0;
  size_t skipped_seen_ = 0;
  // Run options as the model tracks them between settles: contexts not yet ended (by the
  // last snapshot, or started since), and `once` flows that ran for a record.
  std::set<std::string> unfinished_;            // context ids
  std::map<std::string, std::string> ctx_run_;  // context id -> "flow|table|sys_id" for record starts
  std::set<std::string> once_ran_;              // "flow|table|sys_id"
  std::map<std::string, TimeMs> committed_at_;  // context id -> commit time (outside starts)
};

}  // namespace flowrt::sim
