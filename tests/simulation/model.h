// Model: the simulation's own account of a run, computed from the definitions, the
// traffic and the engine's commit order, and compared with what the engine did.
//
// Contract. The driver tells the model each outside operation (begin_op / end_op, with the
// commit sequence numbers around it and what the engine answered) and, at checkpoints,
// hands it the commits made since (CommitLog) and a Snapshot. The model then, commit by
// commit in commit order:
//  - works out which operation or step made the commit: an outside operation, a schedule
//    tick of an advance, or the next write, event or start step of the origin context,
//    replaying that context's record against its definition (model_replay.cpp);
//  - computes the record the write must produce from the values written (rendered by the
//    model's own template reading), the previous record it holds and the commit time, and
//    compares it with the engine's (invariant e); the tables at every checkpoint and every
//    create/update step's output record are compared with the model's tables;
//  - computes the starts the commit implies (triggers of the flows active then, SPEC 3;
//    the rules of SPEC 9.2-9.4, with run options decided from the commit order and the
//    CommitLog's end information) and compares them with the contexts the engine started
//    (flow, seq in order, commit_seq, cause, chain, trigger) and the skipped entries
//    (invariant a); FIFO is checked by commit sequence (invariant d).
// Per context it checks the steps (model_replay.cpp: versions, branches, variables, loop
// limits, waits' end times, calls and recursion limits, custom actions) and the locks
// (model_locks.cpp: give-up times and lease expiries from the definitions, grants in FIFO
// order within weights, deadlocks refused exactly when a cycle exists).
// With real threads some outcomes depend on the moment an outside operation took effect;
// the model then accepts each outcome that a moment inside the operation gives.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "tests/simulation/commit_log.h"
#include "tests/simulation/generator.h"
#include "tests/simulation/snapshot.h"
#include "tests/simulation/template_model.h"
#include "tests/simulation/traffic.h"

namespace flowrt::sim {

// What the engine answered an outside operation.
struct OpOutcome {
  bool ok = true;
  std::string error;
  Value value;  // the record (insert/update/delete), the count (where), the context id (call/test)
};

class Model {
 public:
  explicit Model(const Scenario& s);

  // The setup: definitions loaded at `now` (schedules count from here).
  void loaded(TimeMs now);
  // An outside operation, around its call: the last commit before it and after it.
  void begin_op(const Op& op, uint64_t commit_before, TimeMs now);
  void end_op(const OpOutcome& outcome, uint64_t commit_after, TimeMs now);

  // Processes the commits made since the last checkpoint, then checks the contexts and
  // tables of `snap`. `quiescent`: no context can run (after advance/settle), so every
  // commit's step is in the records, and `snap` is the whole document; otherwise (after an
  // operation in simulation mode) only outside commits are expected, and `snap` may hold
  // just the contexts they started and the skipped list.
  void checkpoint(std::vector<CommitRecord> commits, const Snapshot& snap, const CommitLog& log, bool quiescent,
                  Violations* out);

  // FIFO by commit sequence, read back from the engine: each context the model saw start
  // carries (Context::commit_seq, from `commit_seq_of`) the commit that queued it.
  void check_commit_seqs(const std::function<uint64_t(const std::string&)>& commit_seq_of, Violations* out);

  TrafficView view() const;
  // How often the interesting things happened (coverage).
  const std::map<std::string, size_t>& counts() const { return counts_; }

  // ---- state the parts of the model share ----
  struct DriverState {
    std::map<std::string, bool> active;
    std::map<std::string, size_t> published;  // id -> version index
    std::map<std::string, size_t> drafts;
    int64_t recursion_limit = 3;
    int64_t max_iterations = 1000;
  };
  struct Frame {
    std::string unit;
    std::optional<size_t> version;  // known once its marker step is read
    Value vars = Value::empty_object();
    Value inputs = Value::empty_object();
    std::map<std::string, Value> steps;  // step id -> outputs
    Value outputs = Value::empty_object();
    std::vector<std::string> stack;  // units on the call stack, outermost first, this one last
  };
  // A write, event or start step read in a context's record, waiting for its commit.
  struct PendingWrite {
    size_t index = 0;   // in the record's steps
    std::string frame;  // the frame's key
    Value write;        // {"kind", "table", "sys_id", "values", "name", "payload", "flow", "inputs", "check_current"}
  };
  struct Ctx {
    std::string id, flow;
    uint64_t seq = 0;
    uint64_t start_commit = 0;
    uint64_t last_commit = 0;  // its own last commit (or the one that started it)
    bool test = false;        // started by test_flow
    Value trigger;            // the model's trigger data (record, previous, ...)
    bool has_previous = false;
    std::vector<std::string> chain;
    Value inputs = Value::empty_object();
    std::optional<size_t> first_run_state;  // states_ index when it was first seen running
    size_t cursor = 0;        // record steps read
    std::map<std::string, Frame> frames;  // by path prefix ("" is the flow)
    std::vector<PendingWrite> pending;    // in step order
    bool finished = false;    // its end was checked
    std::string must_error;   // a step that ends it in error whatever follows (its message)
    bool has_end = false;     // an `end` step ran
  };

 private:
  friend class ModelTestAccess;  // checker_test.cpp
  // One version of a record, with the commit that made it and its time (null: deleted).
  struct Version {
    uint64_t commit;
    TimeMs at;
    Value record;
  };
  struct Table {
    std::vector<std::string> order;         // sys_ids in insertion order (live ones)
    std::map<std::string, Value> rows;      // live
    std::map<std::string, std::vector<Version>> history;  // sys_id -> its versions
  };
  struct PendingOp {
    Op op;
    size_t index = 0;
    uint64_t before = 0, after = UINT64_MAX;
    TimeMs at = 0;
    OpOutcome outcome;
    bool done = false;
    size_t commits = 0;                // commits of it seen so far
    std::vector<std::string> targets;  // where: the sys_ids to write, in order
  };
  struct Expect {  // one start (or skip) a commit implies
    std::string flow;
    bool start = true;
    std::vector<std::string> reasons;  // skip: the reason; either way possible: several
    std::string why;
  };

  // model.cpp: commits, triggers, rules, tables
  void process(const CommitRecord& c, const Snapshot& snap, const CommitLog& log, Violations* out);
  void outside_commit(const CommitRecord& c, const Snapshot& snap, const CommitLog& log, Violations* out);
  void context_commit(const CommitRecord& c, const Snapshot& snap, const CommitLog& log, Violations* out);
  // The driver states commit `commit` may have seen: those around the operation it came
  // in, or with `since` > 0, at any moment after commit `since` (on real threads a step
  // looks at the active flows before it commits, any time after its context's last
  // commit).
  std::vector<DriverState> states_at(uint64_t commit, uint64_t since) const;
  size_t op_at(uint64_t commit) const;
  Value apply_write(const CommitRecord& c, const std::string& op, const std::string& sys_id, const Value& values,
                    const std::string& what, Violations* out);
  void record_starts(const CommitRecord& c, const std::string& op, const Value& record, const Value& previous,
                     const Ctx* parent, const CommitLog& log, std::vector<Expect>* out);
  void event_starts(const CommitRecord& c, const std::string& name, const Ctx* parent, const CommitLog& log,
                    std::vector<Expect>* out);
  void rules(const CommitRecord& c, const FlowSpec& f, const Ctx* parent, const std::string& table,
             const std::string& sys_id, const CommitLog& log, Expect* e);
  void match_starts(const CommitRecord& c, const std::vector<Expect>& expected, const Ctx* parent, const Value& trigger,
                    const Snapshot& snap, const std::string& what, Violations* out);
  void start_context(const CommitRecord::Started& s, const CommitRecord& c, const Ctx* parent, const Value& trigger,
                     bool has_previous, const Value& inputs, bool test);
  // The driver states an effect of `x` may have seen: on real threads every state from its
  // start to now; in simulation mode the one in force now (contexts run only in advance
  // and settle, which change none).
  std::vector<const DriverState*> states_for(const Ctx& x) const;
  void check_tables(const Snapshot& snap, Violations* out);
  const Value* current(const std::string& table, const std::string& sys_id) const;

  // model_replay.cpp: a context's steps against its definition
  // Reads `x`'s record from its cursor: to its next write, event or start step
  // (`until_commit`) or as far as its steps have ended.
  void replay(Ctx& x, const Snapshot& snap, bool until_commit, Violations* out);
  // Reads step `index`; true when it is a write, event or start that made a commit.
  bool replay_step(Ctx& x, const Value& ctx_record, size_t index, Violations* out);
  void replay_action(Ctx& x, Frame& f, const Value& node, const Value& step, const ModelScope& scope, size_t index,
                     const std::string& key, bool* commits, Violations* out);
  void finish_context(Ctx& x, const Value& ctx_record, Violations* out);
  ModelScope scope_for(const Ctx& x, const Frame& f, const Value& item, const std::string& item_name) const;
  // The definition node a step path names, with its frame (created by the call step),
  // loop item and `as` name; null (and a violation) when there is none.
  const Value* node_at(Ctx& x, const Value& step, std::string* frame_key, Value* item, std::string* item_name,
                       Violations* out);

  // model_locks.cpp
  void lock_checks(const Snapshot& snap, bool quiescent, Violations* out);
  const std::vector<Version>* history(const std::string& table, const std::string& sys_id) const;

  void count(const std::string& what, size_t n = 1) { counts_[what] += n; }

  const Scenario& s_;
  const bool threads_;     // contexts run on real threads (outcomes may depend on timing)
  const bool real_clock_;  // times are real: only bounds hold
  std::vector<DriverState> states_;  // states_[i]: before operation i (states_.back(): now)
  std::vector<PendingOp> ops_;
  std::map<std::string, Table> tables_;
  std::map<std::string, Ctx> ctxs_;
  std::vector<std::string> ctx_order_;  // by seq
  size_t commit_seqs_checked_ = 0;       // of ctx_order_
  uint64_t next_seq_ = 1;
  size_t skipped_seen_ = 0;   // entries of the engine's skipped list (commit skips) consumed
  size_t call_skips_seen_ = 0;
  uint64_t last_commit_ = 0;
  // Run options: per flow|table|sys_id, the contexts counted as running, and `once` flows
  // that ran for the record.
  std::map<std::string, std::vector<std::string>> running_;
  std::set<std::string> once_ran_;
  // Schedules: per flow, when it was activated and its next tick; the ticks an advance
  // must fire, in order.
  std::map<std::string, TimeMs> activated_at_;
  std::map<std::string, std::optional<TimeMs>> next_tick_;
  std::vector<std::pair<TimeMs, std::string>> due_ticks_;
  std::map<std::string, size_t> counts_;
};

}  // namespace flowrt::sim
