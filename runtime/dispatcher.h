// Dispatcher: the commit path. Every record operation, named event, flow start and lock
// operation goes through here. The one commit path for a write:
//   before the commit lock: the new record version is built from the current one, and
//   the active flows whose trigger it matches (TriggerIndex: by table and operation, an
//   immutable snapshot) are found, each with its context built;
//   under the commit lock, in one critical section: the budgets and `while_holding` are
//   checked, the write is installed in the RecordStore if the record is still the version
//   it was built from (otherwise the lock is let go and the write is built again), it
//   takes the next commit sequence number, the runtime rules decide each start (a skip is
//   recorded in the skipped list), each started context gets the next seq and is pushed
//   to the EventQueue, and contexts waiting for a condition on the record are woken.
// Every write takes this path, from outside or from a context, by id or for each record
// of a `where`: no write commits without the commit lock, so the commit order is one
// order (CommitEntry), the queue order follows it and seq numbers follow both.
// Budgets: a record write whose field value is past max_record_value_bytes, and an
// operation that would queue more than max_queued_events trigger events, are refused with
// an error before anything is written (a schedule tick refused so is listed as skipped).
// Owner of the record store, the record waiters, the run states and the lock table; all
// written under mu_. Because the lock table and the records share that lock, a write
// `while_holding` a lock is checked and committed in one step: a holder whose lease ran
// out cannot write. Reads of records (get, find) take only the store's table locks, so
// lookups never queue behind commits. The trigger index has its own lock (index_mu_), held
// only to copy the snapshot pointer. Lock order: mu_, then a table's lock (inside the
// store), then any Context's lock; never called with a Context's lock held.
#pragma once

#include <atomic>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "actions/action.h"
#include "runtime/commit.h"
#include "runtime/context.h"
#include "runtime/journal.h"
#include "runtime/lock_deadlines.h"
#include "runtime/lock_table.h"
#include "store/record_store.h"
#include "base/thread_annotations.h"
#include "triggers/trigger_index.h"

namespace flowrt {

class EngineCore;
class FlowRegistry;

// Nanoseconds on the steady clock (latency stamps).
int64_t steady_ns();

// Who asked for an operation: a running context, or nobody (outside).
struct Origin {
  Context* context = nullptr;
  // An operation from outside made by a named caller (an API token's name): written into
  // the records as sys_created_by / sys_updated_by, and into the trigger of what it starts.
  Value caller;
};

class Dispatcher {
 public:
  explicit Dispatcher(EngineCore& core, uint64_t seed);

  // `while_holding` (a lock name, or null): the write commits only if the origin context
  // holds that lock at that moment; otherwise it fails with lock_lost and writes nothing.
  Result<Value> insert(std::string_view table, const Value& values, Origin origin,
                       const Value& while_holding = Value()) EXCLUDES(mu_);
  // `hint` (RowHint) may spare the lookup of the record by sys_id; it never changes what is read.
  Result<Value> update(std::string_view table, std::string_view sys_id, const Value& values, Origin origin,
                       const Value& while_holding = Value(), RowHint hint = {}) EXCLUDES(mu_);
  // The record removed; with `missing_ok`, null when there was none (nothing is written),
  // else an error naming it.
  Result<Value> remove(std::string_view table, std::string_view sys_id, Origin origin,
                       const Value& while_holding = Value(), bool missing_ok = false) EXCLUDES(mu_);
  // Each record matching `where` (in insertion order), a commit each; the commits go to the
  // journal as one entry, so they are durable (one store transaction) all or none.
  Result<size_t> update_where(std::string_view table, const Condition& where, const Value& values, Origin origin)
      EXCLUDES(mu_);
  Result<size_t> remove_where(std::string_view table, const Condition& where, Origin origin) EXCLUDES(mu_);
  Status fire_event(const Value& name, const Value& payload, Origin origin) EXCLUDES(mu_);
  // Starts `flow` on request: call_flow, start_flow, a schedule tick, test_flow. With
  // `test`, the context is a test run (test_flow): it runs the version given, active or
  // not, or ends in error when that version does not compile.
  struct TestRun {
    std::shared_ptr<const Plan> plan;  // the version to run; null when it does not compile
    std::string compile_error;         // why not, when plan is null
    Value definition;                  // that version's definition, as written (stored with the context)
  };
  Result<StartedFlow> start_flow(FlowSlot& flow, TriggerData trigger, Value inputs, Origin origin,
                                 TestRun* test = nullptr) EXCLUDES(mu_);

  // Returns once every commit that holds the commit lock now has ended (takes the lock and
  // lets it go): what a caller changed before is seen by every later commit, and no commit
  // that began before it is still under way.
  void wait_for_commits() EXCLUDES(mu_);

  Value get(std::string_view table, std::string_view sys_id, RowHint hint = {}) EXCLUDES(mu_);
  Result<Value> find(const RecordQuery& query) EXCLUDES(mu_);
  std::vector<std::string> table_names() EXCLUDES(mu_);
  std::vector<Value> records(std::string_view table) EXCLUDES(mu_);
  size_t record_count() const { return store_.record_count(); }

  // Parks `ctx` (wait `wait_id`) until the record meets `condition`. `seen` is the record
  // as the step saw it (or null): if it has changed since, the condition is evaluated on
  // the current record (previous: `seen`) and, when it holds, nothing is registered.
  struct WaiterAdded {
    enum class Kind : uint8_t { kRegistered, kMet, kGone } kind;
    Value record;  // kMet: the record that meets the condition
  };
  WaiterAdded add_waiter(const Value& table, const Value& sys_id, std::shared_ptr<Context> ctx, uint64_t wait_id,
                         std::shared_ptr<const Condition> condition, const Value& seen) EXCLUDES(mu_);
  void remove_waiter(const Value& table, const Value& sys_id, const Context* ctx) EXCLUDES(mu_);
  size_t waiter_count() EXCLUDES(mu_);
  // Whether `ctx` is registered as waiting for a condition on the record (table, sys_id).
  // Read-only, for liveness checks (runtime/liveness.h); in dispatcher_introspection.cpp.
  bool has_record_waiter(std::string_view table, std::string_view sys_id, const Context& ctx) EXCLUDES(mu_);
  // The commit sequence number of the last commit (0: none yet).
  uint64_t last_commit() const { return commits_.load(std::memory_order_acquire); }
  // The seq of the last context started (0: none yet).
  uint64_t last_seq() const { return seqs_.load(std::memory_order_acquire); }

  void set_index(std::shared_ptr<const TriggerIndex> index) EXCLUDES(mu_);

  // ---- a durable store (runtime/journal.h) ----
  // From now on every change under the commit lock is appended to `journal`, and what a
  // change sets going (contexts queued, contexts woken) waits there until it is durable.
  // Before the engine starts.
  void set_journal(Journal* journal) EXCLUDES(mu_);
  // Before the engine starts: the counters, records and run-once marks of a store.
  void restore(const StoredState& state, const FlowRegistry& flows) EXCLUDES(mu_);
  // A context restored from a store that counted as running under its run options.
  void restore_running(const Context& ctx) EXCLUDES(mu_);
  // Appends a stored lock's end (its holders and waiters did not come back) to the journal.
  void forget_stored_lock(std::string_view name) EXCLUDES(mu_);
  // Recovery: `ctx` (resumed from a store) holds `name` again as it did, with its lease
  // timer; an expired lease ends at the next timer firing, as if unlocked. False when the
  // lock table refused it (it would not fit).
  bool restore_holder(const std::shared_ptr<Context>& ctx, std::string_view name, int64_t weight, int64_t token,
                      TimeMs acquired_at, TimeMs expires_at) EXCLUDES(mu_);
  // Recovery: `ctx` resumes parked on its lock step for `name`, which it was granted before
  // the stop (restore_holder put it back): the wake-up that grant made, with the outputs
  // and log line it made (its token, how long it waited), as if it had been delivered.
  // Null outputs when `ctx` does not hold `name`.
  WakeUp restored_grant(Context& ctx, std::string_view name) EXCLUDES(mu_);

  // ---- locks (SPEC section 8) ----
  void set_lock_limit(std::string_view name, int64_t limit) EXCLUDES(mu_);
  // A context parking on a lock step asks for the lock. With a real clock it is decided
  // now; with a virtual clock, requests wait for the next moment no context can run and
  // are then decided in (time, seq) order, so that contexts asking at the same instant are
  // served in trigger order whatever the worker interleaving.
  void request_lock(const std::shared_ptr<Context>& ctx, LockRequest request) EXCLUDES(mu_);
  // Real clock: grants `request` at once if that needs no waiting, and returns the lock
  // step's outputs; null otherwise (the step then parks and calls request_lock). A request
  // that would wait takes its place in the queue now (*took_place set), so that no later
  // request passes it before its park asks again (LockTable::try_acquire); a step that
  // does not park for it gives the place up with drop_lock_place.
  Value try_lock(Context& ctx, LockRequest request, bool* took_place) EXCLUDES(mu_);
  // The place `ctx` took in `name`'s queue with try_lock leaves it (no-op when none).
  void drop_lock_place(Context& ctx, std::string_view name) EXCLUDES(mu_);
  // Decides the deferred requests (virtual clock). Returns how many it decided.
  size_t resolve_pending_locks() EXCLUDES(mu_);
  size_t pending_locks() const { return pending_count_.load(std::memory_order_acquire); }
  // unlock: false when the context does not hold `name`.
  bool release_lock(Context& ctx, std::string_view name) EXCLUDES(mu_);
  // A context ended: everything it holds is released and it leaves every queue (also a
  // request still waiting to be decided), and it stops counting as running for its
  // flow's run options.
  void context_ended(Context& ctx) EXCLUDES(mu_);
  bool holds_lock(const Context& ctx, std::string_view name) EXCLUDES(mu_);
  std::vector<LockState> lock_states() EXCLUDES(mu_);
  // "" when the lock table's invariants hold.
  std::string check_lock_invariants() EXCLUDES(mu_);
  // With EngineOptions::check_invariants, the first invariant seen broken ("" if none).
  std::string lock_violation() EXCLUDES(mu_);
  // Grants so far, and of those the hand-offs: grants to a context that waited in a queue.
  uint64_t lock_grants() const { return lock_grants_.load(std::memory_order_relaxed); }
  uint64_t lock_handoffs() const { return lock_handoffs_.load(std::memory_order_relaxed); }

  // The key of a record's run-option state (a context's run_key): its table's length in
  // decimal digits, ':', the table and the sys_id. Recovery makes it again from a resumed context's trigger, so a
  // key stored by an older flowrt (which joined the two with a NUL byte) is not used.
  static std::string record_key(std::string_view table, std::string_view sys_id);

 private:
  // Run options: per record (table, sys_id) and flow, contexts queued or running and
  // whether a `once` flow ran. Entries go when nothing is left to remember.
  struct RunState {
    uint32_t running = 0;
    bool ran = false;
  };
  using RunStates = std::unordered_map<std::string, std::vector<std::pair<uint32_t, RunState>>>;
  struct Waiter {
    std::shared_ptr<Context> context;
    uint64_t wait_id;
    std::shared_ptr<const Condition> condition;
    // The record's sys_mod_count when the wait was registered (-1: unknown). A write whose
    // wake-up comes late (an update committed without the commit lock wakes after it) is
    // not news to a waiter that had already seen its version.
    int64_t seen_version;
  };
  // The contexts one operation's commits start. Their work is counted (reserve) before
  // the commit lock, not with a contended atomic inside it; when the Batch goes out of
  // scope, after the lock is let go, what was reserved and not started is given back and
  // the workers are told of what started.
  class Batch {
   public:
    explicit Batch(EngineCore& core) : core_(core) {}
    ~Batch();
    Batch(const Batch&) = delete;
    Batch& operator=(const Batch&) = delete;
    // Counts `n` more contexts this operation may start as work.
    void reserve(size_t n);
    void started() { ++started_; }
    size_t count() const { return started_; }

   private:
    EngineCore& core_;
    size_t reserved_ = 0;
    size_t started_ = 0;
  };
  // A start prepared before the commit lock: the trigger matched, the context is built;
  // the commit decides (rules) and publishes it.
  struct Prepared {
    FlowSlot* flow;
    const TriggerSpec* spec;  // the matched record trigger (run options), or null
    std::shared_ptr<Context> context;
  };

  // A context of `flow`, built before its commit.
  std::shared_ptr<Context> new_context(FlowSlot* flow, TriggerData trigger, Value inputs);
  // Which active flows a record operation starts, each with its context built. Takes no
  // lock of the dispatcher's (the trigger index is an immutable snapshot).
  void prepare_record(std::string_view table, RecordOperation op, const Value& record, const Value* previous,
                      bool changed, const Value& caller, std::vector<Prepared>* out);
  // Takes the next commit sequence number for a commit of `kind`.
  CommitEntry begin_commit(CommitEntry::Kind kind, Origin origin) REQUIRES(mu_);
  // The commit is complete: the observer (if any) sees it, in commit order.
  // `origin`: a context whose built-in step made the commit gets its journal entry held
  // until the step's checkpoint joins it (JournalEntry::held, Context::held_commits).
  void end_commit(const CommitEntry& entry, Origin origin) REQUIRES(mu_);
  void commit_prepared(std::vector<Prepared>& prepared, Origin origin, CommitEntry* entry, Batch* batch) REQUIRES(mu_);
  // Publishes the prepared context unless a runtime rule skips it.
  Result<StartedFlow> admit(Prepared& p, Origin origin, CommitEntry* entry, Batch* batch) REQUIRES(mu_);
  // The trigger index as of now, cached per thread until it changes. Valid until this
  // thread calls it again.
  const TriggerIndex* current_index();
  // Run options (SPEC section 3): the reason to skip this start, or "" to start it (and
  // then the start counts as running and as having run).
  std::string_view run_option_skip(FlowSlot& flow, const TriggerData& trigger, const TriggerSpec& spec,
                                   Value* run_key) REQUIRES(mu_);
  // The key of one record (table, sys_id) in run_states_ and waiters_.
  RunState& run_state(const std::string& key, uint32_t flow) REQUIRES(mu_);
  void forget_idle_runs(RunStates::iterator it) REQUIRES(mu_);
  void record_deleted(std::string_view table, std::string_view sys_id) REQUIRES(mu_);
  void skip(FlowSlot& flow, const TriggerData& trigger, Origin origin, std::string_view reason) REQUIRES(mu_);
  void wake_waiters(std::string_view table, const Value& record, const Value* previous, bool deleted)
      REQUIRES(mu_);
  // The commit of an update already installed in the store (at `position`: the record's
  // RecordPut::position; at `row` of its table): its starts, waiters, entry.
  void commit_update_locked(std::string_view table, const RecordChange& change, uint64_t position, uint32_t row,
                            std::vector<Prepared>& prepared, Origin origin, Batch* batch) REQUIRES(mu_);
  // The row the starts' record was installed at, into their contexts (Context::trigger_row).
  void note_row(std::vector<Prepared>& prepared, uint32_t row) REQUIRES(mu_);
  // Removes a record and commits it: its starts, waiters, run states, entry.
  Status commit_remove_locked(std::string_view table, std::string_view sys_id, std::vector<Prepared>& prepared,
                              Origin origin, Batch* batch, Value* removed) REQUIRES(mu_);
  Result<size_t> update_where_locked(std::string_view table, const Condition& where, const Value& values,
                                     Origin origin, Batch* batch) REQUIRES(mu_);
  Result<size_t> remove_where_locked(std::string_view table, const Condition& where, Origin origin, Batch* batch)
      REQUIRES(mu_);
  // The commits of one operation made while one_entry_ was set (end_commit left them in
  // building_; the last commit number before them: `commits_before`) go to the journal as
  // one entry, also when the operation failed part way.
  void end_one_entry(Origin origin, uint64_t commits_before) REQUIRES(mu_);
  Status check_holding(Origin origin, const Value& while_holding) REQUIRES(mu_);
  // max_queued_events: an error when `starts` more events would not fit in the queue.
  Status check_queue_room(size_t starts) REQUIRES(mu_);
  void decide_lock(const std::shared_ptr<Context>& ctx, const LockRequest& request) REQUIRES(mu_);
  void apply_grants(std::vector<LockGrant>& grants) REQUIRES(mu_);
  // A grant's lease timer and log line; returns the lock step's outputs.
  Value record_grant(Context& ctx, const LockGrant& g) REQUIRES(mu_);
  // After a change of the lock table: re-arms the lock timer, checks the invariants.
  void locks_changed(const Context* ended) REQUIRES(mu_);
  void verify_locks(const Context* ended) REQUIRES(mu_);
  // Keeps the engine timer at the earliest lock deadline (none when there is none).
  void arm_lock_timer() REQUIRES(mu_);
  // The lock timer fired: ends the leases and requests whose time has come.
  void fire_lock_deadlines(uint64_t generation) EXCLUDES(mu_);
  void give_up_lock(const LockDeadline& d) REQUIRES(mu_);
  void expire_lease(const LockDeadline& d) REQUIRES(mu_);
  void lock_failed(const std::shared_ptr<Context>& ctx, const LockRequest& request, std::string_view state,
                   std::string message, int64_t attempts) REQUIRES(mu_);
  TriggerData record_trigger(std::string_view table, RecordOperation op, const Value& record, const Value* previous);
  // Wakes `ctx` now, or, with a journal, once what this critical section changed is durable.
  void wake_locked(const std::shared_ptr<Context>& ctx, uint64_t wait_id, WakeUp wake) REQUIRES(mu_);
  // With a journal: appends what this critical section changed (with the locks whose state
  // changed and the counters). Called at the end of every critical section that changes
  // durable state: end_commit, locks_changed.
  void journal_locked(Context* committer = nullptr) REQUIRES(mu_);

  // Cache lines: the commit lock's word and the counters every commit writes each sit on
  // a line of their own, so that what every operation reads before the lock (the trigger
  // index's version, the store's table map) is not invalidated by each commit.
  static constexpr size_t kCacheLine = 64;
  EngineCore& core_;
  alignas(kCacheLine) SpinMutex mu_;  // the commit lock
  // Written only under mu_ (so that a commit and the contexts it starts are one step);
  // read at any time: the store locks its own tables for readers.
  alignas(kCacheLine) RecordStore store_;
  Mutex index_mu_;
  std::shared_ptr<const TriggerIndex> index_ GUARDED_BY(index_mu_);
  alignas(kCacheLine) std::atomic<uint64_t> index_version_{1};
  const uint64_t instance_;  // tells this dispatcher's snapshots apart in per-thread caches
  alignas(kCacheLine) uint64_t next_seq_ GUARDED_BY(mu_) = 1;
  uint64_t last_commit_ GUARDED_BY(mu_) = 0;  // the commit sequence number last taken
  std::atomic<uint64_t> commits_{0};           // last_commit_, readable without the lock
  std::atomic<uint64_t> seqs_{0};              // next_seq_ - 1, readable without the lock
  std::unordered_map<std::string, std::vector<Waiter>> waiters_ GUARDED_BY(mu_);
  // Written under mu_; read without it (waiter_count()).
  std::atomic<size_t> waiter_count_{0};
  LockTable locks_ GUARDED_BY(mu_);
  // Lease and give-up times of locks_, and the one engine timer armed at the earliest:
  // lock_timer_at_ is its time (kNoLockTimer: none armed); lock_timer_generation_ tells the
  // armed timer from one replaced while it was already firing.
  static constexpr TimeMs kNoLockTimer = -1;
  LockDeadlines lock_deadlines_ GUARDED_BY(mu_);
  TimerHandle lock_timer_ GUARDED_BY(mu_);
  TimeMs lock_timer_at_ GUARDED_BY(mu_) = kNoLockTimer;
  uint64_t lock_timer_generation_ GUARDED_BY(mu_) = 0;
  struct PendingLock {
    std::shared_ptr<Context> context;
    LockRequest request;
  };
  std::vector<PendingLock> pending_ GUARDED_BY(mu_);
  // Requests waiting to be decided or being decided; readable without the lock. Drops only
  // after a decision has woken its context.
  std::atomic<size_t> pending_count_{0};
  std::string violation_ GUARDED_BY(mu_);
  RunStates run_states_ GUARDED_BY(mu_);
  std::atomic<uint64_t> lock_grants_{0};
  std::atomic<uint64_t> lock_handoffs_{0};
  Journal* journal_ = nullptr;                 // set before the engine starts; then constant
  JournalEntry building_ GUARDED_BY(mu_);      // this critical section's changes (journal_ only)
  bool one_entry_ GUARDED_BY(mu_) = false;     // end_commit leaves building_ open (end_one_entry)
};

}  // namespace flowrt
