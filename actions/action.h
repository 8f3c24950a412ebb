// The action interface: how one step of a plan does its work.
//
// An Action is stateless and shared by every context (safe for concurrent use). Running a
// step returns an outcome instead of blocking: done with outputs, failed with a message,
// or park until something happens (a time, a record condition, a lock). A parked step is
// resumed later, possibly on another thread, with what woke it. Everything an action may
// do to the engine goes through StepHost, which the runtime implements per context.
#pragma once

#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "flowrt/plans/eval.h"
#include "flowrt/plans/plan.h"
#include "flowrt/plans/result.h"
#include "flowrt/plans/value.h"

namespace flowrt {

enum class LogLevel : uint8_t { kInfo, kWarn, kError };
std::string_view level_name(LogLevel level);
bool parse_level(std::string_view name, LogLevel* level);

// Result of starting a flow from a step (start_flow).
struct StartedFlow {
  Value context_id;   // null when skipped
  bool skipped = false;
  Value reason;       // skip reason, when skipped
};

// A query over one table's records. The condition is evaluated with `scope` (for its value
// templates) and each candidate as the record under test.
struct RecordQuery {
  std::string_view table;
  const Condition* condition = nullptr;  // nullptr: every record
  const Scope* scope = nullptr;
  std::string_view order_by;             // "field" or "-field"; empty: insertion order
  size_t limit = 0;                      // 0: no limit
};

// What a parked step waits for. Plain data.
struct WaitRequest {
  enum class Kind : uint8_t { kNone, kTimer, kRecord, kLock };
  Kind kind = Kind::kNone;
  TimeMs deadline = -1;          // kTimer: when; kRecord/kLock: the timeout (-1: none)
  Value table;                   // kRecord
  Value sys_id;                  // kRecord
  std::shared_ptr<const Condition> condition;  // kRecord: bound (no pills left)
  // kRecord: the record as the step saw it when the condition did not hold. A write that
  // lands before the wait is registered is then still seen (Dispatcher::add_waiter).
  Value seen;
  // kLock: what to ask of the lock table; `deadline` is when the attempts run out.
  Value lock_name;
  int64_t weight = 1;
  DurationMs max_duration = 3600000;
  int64_t max_attempts = 1;
  DurationMs delay = 1000;
  TimeMs requested_at = 0;
};

// What a step may ask of the engine. Implemented by the runtime for the context being run;
// used only by the thread running that context.
class StepHost {
 public:
  virtual ~StepHost() = default;
  // True once the engine gave up on this call (a custom action that did not return in
  // time): every other method is then inert (writes and reads fail, log does nothing).
  virtual bool given_up() const { return false; }
  virtual TimeMs now() const = 0;
  virtual const Value& context_id() const = 0;
  // "<context id>/<step path>" (the path carries loop iterations: "3.do.1#2"): the same
  // each time this step of this context runs, also after a restart. "" outside a step.
  virtual std::string idempotency_key() const { return ""; }
  virtual void log(LogLevel level, std::string_view message) = 0;
  virtual bool cancel_requested() const = 0;

  // Record writes are record operations: they may fire triggers. `while_holding` (a lock
  // name, or null) makes the write conditional on holding that lock.
  virtual Result<Value> create_record(const Value& table, const Value& values, const Value& while_holding) = 0;
  virtual Result<Value> update_record(const Value& table, const Value& sys_id, const Value& values,
                                      const Value& while_holding) = 0;
  virtual Result<bool> delete_record(const Value& table, const Value& sys_id, const Value& while_holding) = 0;
  virtual Result<Value> find_records(const RecordQuery& query) = 0;  // an array of records
  virtual Value read_record(std::string_view table, std::string_view sys_id) = 0;  // null when absent

  virtual Status fire_event(const Value& name, const Value& payload) = 0;
  virtual Result<StartedFlow> start_flow(const Value& flow, const Value& inputs) = 0;
  // Releases the lock `name` if this context holds it (unlock); false when it does not.
  virtual bool release_lock(std::string_view name) = 0;
  // Grants a lock step's request now if it can be granted without waiting (free, queue
  // empty; or already held), returning the step's outputs; null when the step must park
  // with the request (a taken lock, or an engine that decides lock requests later).
  virtual Value try_lock(const WaitRequest& request) = 0;
};

// Why a parked step was woken.
struct WakeUp {
  enum class Kind : uint8_t { kTimer, kRecord, kTimeout, kRecordDeleted, kLock };
  Kind kind = Kind::kTimer;
  TimeMs at = 0;
  Value record;                  // kRecord: the record that met the condition
  Value outputs;                 // kLock: the lock step's outputs
  std::string error;             // kLock: why the lock was not granted ("" when it was)
};

struct StepOutcome {
  enum class Kind : uint8_t { kDone, kFailed, kPark };
  Kind kind = Kind::kDone;
  Value outputs;                 // kDone: an object in the step's output order (or null);
                                 // kFailed: outputs recorded along with the error (or null)
  std::string error;             // kFailed
  WaitRequest wait;              // kPark

  static StepOutcome done(Value outputs = Value()) { return StepOutcome{Kind::kDone, std::move(outputs), {}, {}}; }
  static StepOutcome failed(std::string message, Value outputs = Value()) {
    return StepOutcome{Kind::kFailed, std::move(outputs), std::move(message), {}};
  }
  static StepOutcome park(WaitRequest wait) { return StepOutcome{Kind::kPark, Value(), {}, std::move(wait)}; }
};

// One step being run: its plan, its rendered inputs and the engine.
struct StepCall {
  const ActionStep& step;
  std::span<const Value> inputs;  // rendered, in the order of step.input_names
  const Scope& scope;
  StepHost& host;

  // The rendered input `name` (null when absent).
  const Value& input(std::string_view name) const;
};

class Action {
 public:
  virtual ~Action() = default;
  virtual StepOutcome start(const StepCall& call) const = 0;
  // Called when the parked step is woken. The default completes it with no outputs.
  virtual StepOutcome resume(const StepCall& call, const WakeUp& wake) const;
};

// The built-in action for `kind`; nullptr for kinds the interpreter runs itself
// (set_variables, assign_outputs, call_subflow, calling an action definition, custom types).
const Action* builtin_action(ActionKind kind);

}  // namespace flowrt
