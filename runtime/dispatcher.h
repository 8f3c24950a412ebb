// Dispatcher: the commit path. Every record operation, named event and flow start goes
// through here, and each one, in a single critical section under the commit lock:
//   applies the operation to the RecordStore,
//   finds the active flows whose trigger it matches (TriggerIndex: by table and operation),
//   applies the runtime rules that may skip a start (recorded in the skipped list),
//   creates each started context with the next seq and pushes it to the EventQueue,
//   and wakes contexts waiting for a condition on the record written.
// So the queue order is the commit order, and seq numbers follow it. Owner of the record
// store, the trigger index snapshot and the record waiters; all guarded by mu_.
// Lock order: mu_ before any Context's lock; never called with a Context's lock held.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "actions/action.h"
#include "runtime/context.h"
#include "runtime/record_store.h"
#include "runtime/thread_annotations.h"
#include "triggers/trigger_index.h"

namespace flowrt {

class EngineCore;

// Who asked for an operation: a running context, or nobody (outside).
struct Origin {
  Context* context = nullptr;
};

class Dispatcher {
 public:
  explicit Dispatcher(EngineCore& core, uint64_t seed);

  Result<Value> insert(std::string_view table, const Value& values, Origin origin) EXCLUDES(mu_);
  Result<Value> update(std::string_view table, std::string_view sys_id, const Value& values, Origin origin)
      EXCLUDES(mu_);
  Result<Value> remove(std::string_view table, std::string_view sys_id, Origin origin) EXCLUDES(mu_);
  // Each record matching `where` (in insertion order), as one operation each.
  Result<size_t> update_where(std::string_view table, const Condition& where, const Value& values, Origin origin)
      EXCLUDES(mu_);
  Result<size_t> remove_where(std::string_view table, const Condition& where, Origin origin) EXCLUDES(mu_);
  Status fire_event(const Value& name, const Value& payload, Origin origin) EXCLUDES(mu_);
  // Starts `flow` on request: call_flow, start_flow, a schedule tick, test_flow. With
  // `plan`, the context runs that plan instead of the cached one (test_flow).
  Result<StartedFlow> start_flow(FlowSlot& flow, TriggerData trigger, Value inputs, Origin origin,
                                 std::shared_ptr<const Plan> plan = nullptr) EXCLUDES(mu_);

  Value get(std::string_view table, std::string_view sys_id) EXCLUDES(mu_);
  Result<Value> find(const RecordQuery& query) EXCLUDES(mu_);
  std::vector<std::string> table_names() EXCLUDES(mu_);
  std::vector<Value> records(std::string_view table) EXCLUDES(mu_);

  // Parks `ctx` (wait `wait_id`) until the record meets `condition`. False when the record
  // no longer exists.
  bool add_waiter(const Value& table, const Value& sys_id, std::shared_ptr<Context> ctx, uint64_t wait_id,
                  std::shared_ptr<const Condition> condition) EXCLUDES(mu_);
  void remove_waiter(const Value& table, const Value& sys_id, const Context* ctx) EXCLUDES(mu_);
  size_t waiter_count() EXCLUDES(mu_);

  void set_index(std::shared_ptr<const TriggerIndex> index) EXCLUDES(mu_);

 private:
  struct Waiter {
    std::shared_ptr<Context> context;
    uint64_t wait_id;
    std::shared_ptr<const Condition> condition;
  };
  // Contexts created by one commit, to hand to the workers after the lock is released.
  struct Commit {
    size_t started = 0;
  };

  void emit_record(std::string_view table, RecordOperation op, const Value& record, const Value* previous,
                   bool changed, Origin origin, Commit* commit) REQUIRES(mu_);
  Result<StartedFlow> admit(FlowSlot& flow, TriggerData trigger, Value inputs, Origin origin,
                            std::shared_ptr<const Plan> plan, Commit* commit) REQUIRES(mu_);
  void skip(FlowSlot& flow, const TriggerData& trigger, Origin origin, std::string_view reason) REQUIRES(mu_);
  void wake_waiters(std::string_view table, const Value& record, const Value* previous, bool deleted)
      REQUIRES(mu_);
  void after_commit(const Commit& commit) EXCLUDES(mu_);
  TriggerData record_trigger(std::string_view table, RecordOperation op, const Value& record, const Value* previous);
  static std::string waiter_key(std::string_view table, std::string_view sys_id);

  EngineCore& core_;
  Mutex mu_;  // the commit lock
  RecordStore store_ GUARDED_BY(mu_);
  std::shared_ptr<const TriggerIndex> index_ GUARDED_BY(mu_);
  uint64_t next_seq_ GUARDED_BY(mu_) = 1;
  std::unordered_map<std::string, std::vector<Waiter>> waiters_ GUARDED_BY(mu_);
  size_t waiter_count_ GUARDED_BY(mu_) = 0;
};

}  // namespace flowrt
