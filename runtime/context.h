// Context: one run of a flow, from its trigger event to its end.
//
// Ownership: the ContextStore owns every context (shared) until it ends (in the memory
// store it then keeps the record frozen: runtime/frozen_context.h); timers and waiters that
// must find a parked context hold shared references too. Four parts, four rules:
//  - identity (seq, id, flow, trigger, cause, chain): constant once published;
//  - execution (plan, state): touched only by the thread that runs the context; hand-over
//    between threads goes through the ready queue (a happens-before edge);
//  - schedule phase (and the wake-up it carries): guarded by mu_, which wake-ups (under
//    the commit lock), cancellation and the running thread take for a few instructions;
//  - execution record: guarded by record_mu_, a separate lock, so that a reader taking a
//    snapshot never holds up a wake-up; a snapshot copies the entries under it and builds
//    the JSON outside. The status is an atomic, read by both.
// A context runs on one thread at a time and holds no thread while parked. Lock order:
// mu_ and record_mu_ are never held together.
#pragma once

#include <atomic>
#include <cstdint>
#include <boost/container/small_vector.hpp>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "plans/eval.h"
#include "plans/plan.h"
#include "runtime/context_record.h"
#include "runtime/exec_state.h"
#include "base/thread_annotations.h"

namespace flowrt {

struct FlowSlot;

// What led to a context: the context whose write, event or call started it (none for
// operations from outside), and the causal chain of flows.
struct Cause {
  Value context_id;                    // null for outside operations
  Value flow_id;
  std::shared_ptr<const Chain> chain;  // of the new context; null = empty
};

class Context : public std::enable_shared_from_this<Context> {
 public:
  enum class Phase : uint8_t { kQueued, kReady, kRunning, kParking, kParked, kDone };

  // A context is built before its commit (outside the commit lock) and published by it.
  Context(FlowSlot* flow, TriggerData trigger, Value inputs);
  // Gives the context its seq, the commit that started it and its cause. Called once,
  // under the commit lock, before the context is visible to any other thread.
  void publish(uint64_t seq, uint64_t commit_seq, std::unique_ptr<const Cause> cause);

  // ---- identity: constant once published ----
  uint64_t seq = 0;
  uint64_t commit_seq = 0;    // the commit that queued it (CommitEntry::seq)
  Value id;                   // "ctx-<seq>"
  FlowSlot* const flow;
  // (A context that ended in the memory store is kept frozen, and its record shows the
  // trigger without the record versions, so they go with the live form.)
  const TriggerData trigger;
  // The row of its table where the store installed trigger.record, or UINT32_MAX: spares a
  // lookup when a step reads or updates that record by its sys_id (RowHint). Set by the
  // Dispatcher before the context is published; constant afterwards; never stored.
  uint32_t trigger_row = UINT32_MAX;
  std::unique_ptr<const Cause> cause;  // null for contexts outside operations started
  const Value inputs;         // API inputs (object) or null
  // The chain of the contexts this one causes: its own chain plus its flow, built on first
  // use and kept in the ExecState. Called by the Dispatcher under the commit lock when it
  // admits a start that this context's step made, so on the thread running this context.
  const std::shared_ptr<const Chain>& child_chain();

  // The (flow, record) whose run options counted this context as running; "" when none.
  // Set by the Dispatcher before the context is published; constant afterwards.
  Value run_key;
  // A test run's definition (test_flow: the version it runs, as written, whether it
  // compiled or not), which its stored row keeps so that a next engine runs the same
  // version; null for any other context. Set before it is published; constant afterwards.
  Value test_definition;
  // Set (by its running thread) once the context asks for a lock: only then does its end
  // have anything to release in the lock table.
  std::atomic<bool> used_locks{false};
  // The locks it holds plus the lock request it waits in a queue for, as the lock table
  // counts them: changed by the Dispatcher under its commit lock, read at the context's
  // end without it (real clock), so that an end with nothing to release takes no lock.
  std::atomic<int32_t> locks_in_use{0};
  // True for the first caller only: the Dispatcher releases what a context holds once.
  bool claim_end() { return !end_claimed_.exchange(true, std::memory_order_acq_rel); }
  // With EngineOptions::measure_latency: steady-clock ns when it was built (just before
  // its commit), when a thread first took it to run (written by that thread, read after
  // ended_ns), and when it ended.
  int64_t committed_ns = 0;
  int64_t taken_ns = 0;
  std::atomic<int64_t> ended_ns{0};

  // ---- execution: owned by the running thread; released when the context ends ----
  std::shared_ptr<const Plan> plan;
  // Why the version test_flow runs cannot be compiled (null: it compiled, or not a test):
  // the context ends in error with it when it starts. Set before it is published.
  std::unique_ptr<const std::string> compile_error;
  // Allocated when the context starts and freed when it ends, so a finished context keeps
  // only its record.
  std::unique_ptr<ExecState> state;
  ExecState& exec() { return *state; }
  // With a durable store: true while a built-in step runs (its commits are held until its
  // checkpoint joins them), and the journal positions of the commits it made so far.
  // Owned by the running thread (the Dispatcher writes them on that thread, in its commit).
  bool checkpoint_step = false;
  std::vector<uint64_t> held_commits;

  // ---- scheduling ----
  // Running -> parking. Returns the id that a wake-up for this wait must carry. The
  // running thread then registers the wait (timers, waiters) and calls end_park().
  uint64_t begin_park() EXCLUDES(mu_);
  // Parking -> parked; or -> ready when a wake-up or cancel arrived meanwhile, and then
  // returns true: the caller must hand the context to a worker.
  bool end_park() EXCLUDES(mu_);
  // Parked -> ready with `wake`, if `wait_id` is still the current wait. True when the
  // caller must hand the context to a worker. While parking, the wake-up is kept for
  // end_park().
  bool wake(uint64_t wait_id, WakeUp wake) EXCLUDES(mu_);
  // Queued/ready -> running. False when the context already ended.
  bool begin_run() EXCLUDES(mu_);
  // Records a cancel request. Returns true when the context was parked and is now ready:
  // the caller must hand it to a worker. A running or queued context sees the request at
  // its next step.
  bool request_cancel() EXCLUDES(mu_);
  bool cancel_requested() const { return cancel_.load(std::memory_order_acquire); }
  // Also set when the run-time quota passes during a long action.
  void set_cancel_flag() { cancel_.store(true, std::memory_order_release); }
  WakeUp take_wake() EXCLUDES(mu_);
  Phase phase() const EXCLUDES(mu_);

  // ---- resting (docs/DURABILITY.md, "Memory and history": waiting contexts rest) ----
  // With a durable store, a context parked in a wait whose checkpoint is durable rests: its
  // execution stack and parked step inputs, and its record's steps, logs and variables,
  // leave memory, since the store's row holds them exactly (readers read them there); the
  // wait stays registered with its fields, timer and wake-up. The thread that runs it next
  // puts them back from the row (EngineCore::rehydrate) before it goes on.
  // Two conditions, met on two threads, for one wait (the id begin_park gave): the thread
  // that parked it has let go (kLetGo), and the entry with its checkpoint is durable
  // (kDurable). The call that completes the pair rests it, under the context's lock, if it
  // is still parked in that wait.
  enum class RestCondition : uint8_t { kLetGo = 1, kDurable = 2 };
  // Returns true when it came to rest now (not when it was restored resting: then this
  // only drops its stack).
  bool rest_when(RestCondition met, uint64_t wait_id) EXCLUDES(mu_, record_mu_);
  // Recovery: the context is put back resting from its checkpoint (its record stays in its
  // row; `steps` is its number of steps); its stack, restored to bind its wait, leaves when
  // it parks (rest_when). Before the context is shared.
  void restore_resting(const Plan& for_plan, TimeMs started, size_t steps, ContextStatus status)
      EXCLUDES(mu_, record_mu_);
  bool resting() const { return resting_.load(std::memory_order_acquire); }
  // Called by the thread that runs a resting context once it has put its state back.
  void end_rest() EXCLUDES(mu_, record_mu_);

  // ---- execution record ----
  void record_start(const Plan& plan, TimeMs now) EXCLUDES(record_mu_);
  int64_t begin_step(Value path, const Node& node, TimeMs now, Value inputs) EXCLUDES(record_mu_);
  // Steps recorded so far, those before a rest included (they come back with it). Read
  // without the lock: REQUIRES its running thread, the only one that adds steps.
  size_t steps_recorded() const NO_THREAD_SAFETY_ANALYSIS { return steps_.size(); }
  void end_step(int64_t index, StepStatus status, TimeMs now, Value outputs, Value error) EXCLUDES(record_mu_);
  void set_step_status(int64_t index, StepStatus status) EXCLUDES(record_mu_);
  // Ends every step still in progress or waiting, in error with `reason` (after a failure
  // outside any step's own handling).
  void end_open_steps(TimeMs now, const Value& reason) EXCLUDES(record_mu_);
  void add_log(LogLevel level, Value step, TimeMs now, Value message) EXCLUDES(record_mu_);
  // Drops every step and log of the record, freeing their memory: the last resort of a
  // context that cannot be ended for want of memory (EngineCore::end_after_exception).
  void drop_steps_and_logs() EXCLUDES(record_mu_);
  void set_variables(Value variables) EXCLUDES(record_mu_);
  void set_status(ContextStatus status);
  // Ends the record: status, end time, error (null or {"message", "step"}). Phase -> done.
  void finish(ContextStatus status, TimeMs now, Value error, double run_ms) EXCLUDES(record_mu_, mu_);
  ContextStatus status() const;
  bool finished() const { return finished_.load(std::memory_order_acquire); }

  // A consistent snapshot of the record as JSON (SPEC section 10). `value_limit` caps the
  // size of each step input and output kept (0 = no cap). REQUIRES: not resting (its
  // running thread, or a context that never rests); other readers use to_value_unless_resting.
  Value to_value(size_t value_limit = 0) const EXCLUDES(record_mu_);
  // The same snapshot, or nullopt when the context rests (its record is the store's row).
  std::optional<Value> to_value_unless_resting(size_t value_limit = 0) const EXCLUDES(record_mu_);
  // The same snapshot as JSON text: write_json(to_value(value_limit)), written without the
  // Value (write_record_json). REQUIRES: as to_value.
  std::string record_json(size_t value_limit = 0) const EXCLUDES(record_mu_);
  // Summary for tables: status, run time, step count.
  struct Summary {
    ContextStatus status;
    double run_ms;
    size_t steps;
    TimeMs started;
    TimeMs ended;
    Value error;
  };
  Summary summary() const EXCLUDES(record_mu_);

  // ---- checkpoints (runtime/checkpoint.h) ----
  // The record as it stands, compact (steps name their nodes by ordinal): a live context's
  // part of a checkpoint. REQUIRES: it started.
  Value record_state() const EXCLUDES(record_mu_);
  // Puts back a record written by record_state() for `plan`, with `status`; before the
  // context runs again (its running thread, or before it is shared).
  Status restore_record_state(const Value& v, const Plan& for_plan, const std::vector<const Node*>& nodes,
                              ContextStatus status) EXCLUDES(record_mu_);

 private:
  friend class FrozenContext;  // reads the record under record_mu_ to pack it

  // Takes a snapshot of the record under record_mu_ and gives its fields to `use` outside
  // it; false (and `use` not called) when the context rests, unless `even_resting` (then
  // what is left).
  template <class Use>
  bool with_snapshot(size_t value_limit, bool even_resting, Use&& use) const EXCLUDES(record_mu_);

  std::atomic<bool> cancel_{false};
  std::atomic<bool> finished_{false};
  std::atomic<bool> end_claimed_{false};

  std::atomic<ContextStatus> status_{ContextStatus::kInProgress};
  mutable SpinLock mu_;
  Phase phase_ GUARDED_BY(mu_) = Phase::kQueued;
  uint64_t wait_id_ GUARDED_BY(mu_) = 0;
  // The wait the rest conditions met so far are for, and which (RestCondition bits).
  uint64_t rest_wait_id_ GUARDED_BY(mu_) = 0;
  uint8_t rest_met_ GUARDED_BY(mu_) = 0;
  // Written under mu_ and record_mu_ (both), read with either or without (atomic).
  std::atomic<bool> resting_{false};
  // record
  mutable SpinLock record_mu_;
  const Plan* recorded_plan_ GUARDED_BY(record_mu_) = nullptr;  // `plan`, once it started
  Value variables_ GUARDED_BY(record_mu_);       // array, by slot
  TimeMs started_at_ GUARDED_BY(record_mu_) = -1;
  TimeMs ended_at_ GUARDED_BY(record_mu_) = -1;
  double run_ms_ GUARDED_BY(record_mu_) = 0;
  std::vector<StepEntry> steps_ GUARDED_BY(record_mu_);
  size_t rested_steps_ GUARDED_BY(record_mu_) = 0;  // steps_.size() when it came to rest
  boost::container::small_vector<LogEntry, 1> logs_ GUARDED_BY(record_mu_);
  Value error_ GUARDED_BY(record_mu_);
};

}  // namespace flowrt
