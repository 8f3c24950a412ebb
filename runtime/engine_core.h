// EngineCore: the runtime's internals behind the Engine facade, and the one place that
// owns them all.
//
// Components and their owners: the clock and timers, the action registry, the flow
// registry (definitions, plan cache), the context store, the event queue, the dispatcher
// (records, triggers, commit path), the worker pool (threads), and the Store with, when it
// is durable, the Journal that writes to it (docs/DURABILITY.md). Work accounting: `work_`
// counts contexts that are queued, ready or running; it reaches zero only when no context
// can run, which is what settle waits for. Shutdown order (destructor): stop the timer
// thread, stop the workers (wake and join), write what the journal holds and stop it (with
// a snapshot of every context not ended), then free contexts and everything else.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <thread>

#include "actions/action_registry.h"
#include "actions/custom_action.h"
#include "compiler/compiler.h"
#include "runtime/clock.h"
#include "runtime/context_archive.h"
#include "runtime/context_store.h"
#include "runtime/dispatcher.h"
#include "runtime/engine_options.h"
#include "runtime/event_queue.h"
#include "runtime/flow_registry.h"
#include "runtime/interpreter.h"
#include "runtime/journal.h"
#include "runtime/keyed_writes.h"
#include "runtime/latency_histogram.h"
#include "runtime/properties.h"
#include "base/thread_annotations.h"
#include "runtime/context_end_watch.h"
#include "runtime/watchdog.h"
#include "runtime/worker_pool.h"
#include "store/store.h"

namespace flowrt {

// The inputs a start of API flow `flow` gives, checked against those it declares (none
// when it declares none): no unknown input, every required one there, each of its type.
// The error names the input and the value.
Status check_api_inputs(const PlanUnit& flow, const Value& inputs);

class EngineCore {
 public:
  explicit EngineCore(EngineOptions options);
  ~EngineCore();
  EngineCore(const EngineCore&) = delete;
  EngineCore& operator=(const EngineCore&) = delete;

  // Starts the workers (and the timer thread of a real clock).
  void start();
  void stop();

  // ---- properties ----
  EngineProperties properties() const { return props(); }
  // The current properties, without a copy or a lock: an immutable snapshot that stays
  // valid for the engine's life.
  const EngineProperties& props() const { return *props_.load(std::memory_order_acquire); }
  Status set_property(std::string_view name, const Value& value) EXCLUDES(props_mu_);
  CompileOptions compile_options() const;
  // The plan a new context of `slot` runs: the cached one when current, else plan_for's
  // (which checks, and compiles if it must, with compile_options()).
  FlowRegistry::PlanResult plan_of(FlowSlot& slot);
  // Now, in milliseconds, on the running-time clock.
  double run_clock_ms() const;

  // ---- work accounting ----
  void work_added(int64_t n = 1) { work_.fetch_add(n, std::memory_order_acq_rel); }
  // Contexts queued, ready or running now (work_), for the engine's counters.
  uint64_t runnable() const {
    const int64_t w = work_.load(std::memory_order_acquire);
    return w > 0 ? static_cast<uint64_t>(w) : 0;
  }
  void work_done();
  // Blocks until no context is queued, ready or running, and no lock request waits to be
  // decided.
  void wait_idle() EXCLUDES(idle_mu_);

  // ---- running contexts ----
  // Worker entry: runs a queued or ready context until it ends or parks.
  void run(Context* ctx);
  // Engine::run_queued_until: new contexts run on the calling thread while any wait and
  // `until` has not passed. Returns how many it took.
  size_t run_queued_until(std::chrono::steady_clock::time_point until);
  // Runs at most `max_steps` steps of a context (0: no limit); true when it yielded and
  // is still in flight (run it again), false when it ended or parked.
  bool run_steps(Context* ctx, uint32_t max_steps);
  // Hands a context to the workers. Every caller hands over a context that was parked (or
  // parking), so this also ends the wait that try_reserve_wait counted.
  void make_ready(Context* ctx);
  // max_waiting_contexts: counts one more waiting context and returns true, or returns
  // false (counting nothing) when `max` already wait. A step reserves before it parks.
  bool try_reserve_wait(size_t max);
  // Contexts parked or parking now.
  size_t waiting() const { return waiting_.load(std::memory_order_acquire); }
  void wake(const std::shared_ptr<Context>& ctx, uint64_t wait_id, WakeUp wake);
  // Resting (Context::rest_when): one of its two conditions met for `ctx`'s wait `wait_id`;
  // counts the context as resting when it rested now.
  void rest_when(Context& ctx, Context::RestCondition met, uint64_t wait_id);
  // Contexts woken while recover() runs, held until it ends (for tests).
  size_t held_ready() EXCLUDES(held_mu_) {
    MutexLock lock(held_mu_);
    return held_ready_.size();
  }
  // Contexts resting now (their state in the store, not in memory).
  size_t resting() const { return resting_.load(std::memory_order_acquire); }
  // Drops a parked context's wait registrations (timer, record waiter).
  void clear_wait(Context& ctx);
  // Ends a context: releases what it holds, finishes its record.
  void finish_context(Context& ctx, ContextStatus status, Value error);
  // The thread that ran a context to its end lets go of its execution state; with the
  // memory store the context is then kept frozen (ContextStore::freeze).
  void let_go_of_finished(Context& ctx);
  Status cancel(std::string_view context_id);
  // Starts an active API flow on request (call_flow, start_flow); checks that it is one,
  // and that the inputs are those it declares (check_api_inputs), or refuses the start.
  Result<StartedFlow> start_api_flow(std::string_view flow, const Value& inputs, Origin origin);

  // ---- clock ----
  // Both return early once a stop is requested. advance refuses a negative duration or
  // one past kMaxDuration; on a virtual clock it fires at most
  // max_schedule_fires_per_advance schedule triggers and, past that, stops at the moment
  // of the first one it did not fire, with an error. On a real clock it sleeps until real
  // time reaches the target (the timer thread fires what falls due) and waits for idle.
  // Deadlines saturate at kMaxTime.
  Status advance(DurationMs d);
  void settle(DurationMs until);
  // Waits until no context can run at the current instant, without moving the clock or
  // firing a timer (the events file's lines with worker_threads 1, see runtime/harness.h).
  void quiesce();

  // ---- stopping ----
  // Asks the engine to stop: advance and settle return early, the Engine refuses new
  // outside operations, schedules stop firing. Async-signal-safe: one atomic store.
  void request_stop() noexcept { stop_requested_.store(true, std::memory_order_release); }
  bool stop_requested() const noexcept { return stop_requested_.load(std::memory_order_acquire); }
  // Requests a stop, cancels every context that has not ended (queued ones end
  // cancelled when they would have started; one started meanwhile by a running context
  // is cancelled at birth) and waits until all have ended, which releases every lock
  // they held or waited for: when it returns no context is queued, running or waiting
  // and no lock is held. Returns how many it cancelled.
  size_t shutdown();
  // Cancels every context not ended (once, without waiting); how many there were.
  size_t cancel_unfinished();
  // shutdown() has begun: a context admitted now is cancelled before it runs a step.
  bool shutting_down() const noexcept { return shutting_down_.load(std::memory_order_acquire); }
  // (Re)arms the schedule timers of every active schedule-triggered flow.
  void arm_schedules();

  // ---- the store (docs/DURABILITY.md) ----
  // Opens options.store and takes in what it holds: counters, records, definitions (none
  // activated yet), run-once marks (ended contexts stay in the store, read when asked:
  // runtime/context_reads.h); a virtual clock goes on
  // from the stored time. Keeps the queued and unfinished contexts and the stored locks for
  // recover(). Before start(); the engine refuses every operation when it failed.
  Status open_store();
  const Status& store_status() const { return store_status_; }
  // Once definitions are loaded and custom actions registered: flows active in the store
  // are active again, contexts that were running or waiting end in error (they cannot be
  // resumed yet) and their locks are released, queued trigger events start in seq order.
  // Returns the recovery report (also in the store and the log); null when there was
  // nothing to recover. Runs once; later calls return null.
  Value recover() EXCLUDES(recovery_mu_);
  // The definition ids of a load: recover() leaves their lifecycle to the load.
  void note_loaded(const std::vector<Definition>& defs) EXCLUDES(recovery_mu_);
  // Appends a change to the journal (a durable store only).
  void journal_append(JournalEntry entry);
  // The stored form of a definition changed (saved, published, activated, ...).
  void journal_definition(UnitType type, std::string_view id);
  // With the durability `off`, how many journal entries an operation from outside may leave
  // unwritten behind it before it waits for the writer.
  static constexpr uint64_t kOffBacklog = 8192;
  // Operations from outside: waits until what they changed is durable; with durability off,
  // only while more than kOffBacklog entries wait to be written. An error when it can no
  // longer be written.
  Status wait_durable();
  // Rebuilds the trigger index from the active flows and arms schedules.
  void refresh_triggers();

  // ---- components (constant after construction) ----
  const EngineOptions options;
  EngineClock clock;
  TimerQueue timers;
  ActionRegistry actions;
  FlowRegistry flows;
  ContextStore contexts;
  EventQueue events;
  Dispatcher dispatcher;
  WorkerPool workers;
  // Gives up on custom actions that do not return in time (not in simulation).
  Watchdog watchdog;
  // The writes sent with an idempotency key (a single server's), restored by open_store.
  KeyedWrites keyed_writes{clock};
  // Callbacks for contexts' ends (Engine::on_context_end); finish_context calls them.
  // Shared with the watchers, which may outlive the engine.
  const std::shared_ptr<ContextEndWatch> end_watch = std::make_shared<ContextEndWatch>();
  // Set by open_store, constant afterwards: where the state outlives the engine, and (for a
  // durable store) its one writer. Records of contexts that recovery ended, until durable.
  std::unique_ptr<Store> store;
  std::unique_ptr<Journal> journal;
  ContextArchive archive;
  // With options.measure_latency: the latencies (commit to end) of the contexts whose live
  // form left memory, and of the same contexts the part spent waiting to be taken by a
  // thread (commit to first run); flowrt bench reads them with those still in memory.
  LatencyHistogram released_latencies;
  LatencyHistogram released_waits;
  // Adds `ctx`'s two figures, when it has them: at its release (durable store) or its
  // end (memory store), whichever lets go of its live form.
  void sample_latency(const Context& ctx);

 private:
  // Runs a slice of `ctx` (parking it if it parks); a slice that throws ends the context
  // in error (kFinished), never the process.
  // A slice that parks sets `*parked_wait` to park's result.
  Interpreter::Outcome run_slice(Context& ctx, uint32_t max_steps, uint64_t* parked_wait);
  // `checkpoint`: with a journal, the context's checkpoint is written first (not when
  // recovery parks a context again from the checkpoint it was read from). Returns the
  // wait's id (Context::begin_park) when the context may rest in it (may_rest), else 0.
  uint64_t park(Context* ctx, bool checkpoint = true);
  // Whether `ctx`, parking, may rest once its checkpoint is durable (asked by
  // the thread that parks it, before its wait is registered): a durable
  // store, a wait for a timer or a record, and no lock held or asked for (a lock's lease or
  // queue writes to its record while it waits).
  bool may_rest(Context& ctx) const;
  // Puts a resting context's state back from its row (its running thread, after
  // begin_run). False when it cannot be read back: the context then ended in error.
  bool rehydrate(Context& ctx);
  // The slice `run` and `run_steps` share: rehydrates a resting context, runs it, and
  // lets it rest (its thread's condition) when it parked.
  Interpreter::Outcome run_context(Context& ctx, uint32_t max_steps);
  // With a journal: `ctx` takes its first step (called before it runs).
  void journal_start(const std::shared_ptr<Context>& ctx);
  // A context's slice threw (outside any step): ends it in error, closing its open steps.
  void end_after_exception(Context& ctx, std::string_view what);
  // park, for a wait_for_condition step: registers the wait, or wakes `self` at once when
  // the record is gone or already meets the condition.
  void park_for_record(const std::shared_ptr<Context>& self, uint64_t id);
  // A wake-up of `kind` at the clock's now.
  WakeUp wake_up_now(WakeUp::Kind kind) const;
  void on_quiescent();
  // The watchdog gave up on `call`: ends its context and replaces its worker.
  void abandon(Watchdog::Call& call, Watchdog::Reason why);
  // Simulation: runs contexts on this thread, seeded, until no context can run.
  void simulate() REQUIRES(drive_mu_);
  // Fires the timers due at `t`: every context timer and at most `max_schedules` schedule
  // timers. Returns what it took (its `fires` already run).
  TimerQueue::Due fire_due(TimeMs t, size_t max_schedules);
  Status advance_real_clock(TimeMs target);
  // The timer thread: a timer that threw is set again a second later.
  void retry_timer(TimerQueue::Fire fire);
  void schedule_tick(FlowSlot* flow, uint64_t generation, TimeMs at);

  Mutex props_mu_;  // serialises set_property
  // Every snapshot ever published (few: one per set_property), so readers never see one freed.
  std::vector<std::unique_ptr<const EngineProperties>> props_versions_ GUARDED_BY(props_mu_);
  // Read by every operation; written rarely. The work counters below, written at every
  // start and finish by every thread, are on a line of their own so that they do not
  // invalidate these.
  alignas(64) std::atomic<const EngineProperties*> props_{nullptr};
  std::atomic<bool> stop_requested_{false};
  std::atomic<bool> shutting_down_{false};
  alignas(64) std::atomic<int64_t> work_{0};
  std::atomic<size_t> waiting_{0};
  std::atomic<size_t> resting_{0};
  alignas(64) Mutex idle_mu_;
  CondVar idle_cv_;
  Mutex drive_mu_;  // one advance/settle at a time
  // Simulation state: the contexts in flight on virtual workers, and the generator.
  std::vector<std::shared_ptr<Context>> sim_in_flight_ GUARDED_BY(drive_mu_);
  std::mt19937_64 sim_rng_ GUARDED_BY(drive_mu_);
  // A flow active in the store and again now goes on with its stored schedule. When
  // occurrences fell due while no engine ran (after `last_tick`, up to now), the last of
  // them fires once at once (the next arm_schedules): returns {"flow", "occurrences"
  // (how many were missed, counted up to kMaxMissedCounted), "fires_for" (its time)};
  // null when none was missed. On a virtual clock none is missed: what fell due by now
  // fell due during the last run, and fires one by one (FlowSlot::due_from), when
  // `same_version` (the published version is the one the stored schedule ran; a changed
  // one goes on from now, as a publish in one run does).
  Value restore_schedule(FlowSlot* slot, TimeMs activated_at, TimeMs last_tick, bool same_version);
  static constexpr int kMaxMissedCounted = 100000;
  // Ends a stored context that cannot be resumed: its record, in error with `reason`.
  void end_stored_context(const StoredContext& c, const std::string& reason, TimeMs now, JournalEntry* entry);
  // A context of the store, published with its seq, cause and run key (and a test run's
  // definition, Context::test_definition, and, when it has no checkpoint, its version:
  // restore_test_run); null (and why in *reason) when it cannot be made (its flow or
  // trigger is gone).
  std::shared_ptr<Context> context_from_store(const StoredContext& c, std::string* reason);
  // The plan of the definition a test run's row keeps (ctx.test_definition, not null),
  // compiled now as test_flow compiles a draft (FlowRegistry::plan_for_stored_test). Any
  // thread (recovery's readers).
  FlowRegistry::PlanResult test_run_plan(const Context& ctx);
  // When `ctx` is a test run (test_flow) from a row that has no checkpoint (it had not
  // started, or restarts from its trigger): it runs the definition the row keeps
  // (test_run_plan), or ends in error with its compile error. Before publish.
  void restore_test_run(Context& ctx);
  // Plan versions recovery compiled from the file, by version; shared by its reader threads.
  struct StoredPlans {
    Mutex mu;
    std::map<std::string, std::shared_ptr<const Plan>> by_version GUARDED_BY(mu);
  };
  // Puts a stored checkpoint back into `ctx`, on the plan version it names (compiled from
  // the versions the file keeps, or, for a test run, from the definition its row keeps when
  // that compiles to the version named): an error says why it cannot resume (the version is
  // gone, a custom action type is not registered, the row does not read). `resting`: a
  // wait on a timer or a record is restored resting (restore_checkpoint). Any thread
  // (recovery's readers).
  Status resume_from_checkpoint(Context& ctx, const Value& checkpoint, StoredPlans* old_plans, bool resting);
  // Compiles plan `version` of flow `flow_id` from the definition versions the store keeps
  // (`uses`: [[type, id, fingerprint], ...] from a checkpoint).
  Result<std::shared_ptr<const Plan>> compile_stored_version(const std::string& flow_id, const Value& uses,
                                                             const std::string& version);
  // With a journal: a snapshot of every context not ended (status and record), so that the
  // store shows where each stood when the engine stopped.
  void journal_unfinished();

  Mutex schedule_mu_;
  std::thread timer_thread_;
  Status store_status_;
  // What open_store found for recover().
  struct Recovery {
    bool done = false;
    // The contexts the store held when it opened have seqs up to this; recover() reads the
    // ones that had not ended from the store, a page at a time.
    uint64_t last_seq = 0;
    std::vector<StoredLock> locks;
    std::vector<StoredDefinition> active;  // flows active in the store
    std::vector<std::string> problems;     // what could not be read back
    std::vector<std::string> loaded;       // flow ids loaded since the store opened
  };
  Mutex recovery_mu_;
  Recovery recovery_ GUARDED_BY(recovery_mu_);
  // While recover() puts contexts back, a context woken (a record or timer wait registered
  // as its range was read, whose timer ran out) is held here, not run: it must not act
  // before recovery has put back the locks' holders and the lock queues. recover() lets
  // them go, in the order they were woken, when it ends. holding_ is set and cleared by
  // recover() under held_mu_; make_ready reads it without the lock first.
  std::atomic<bool> holding_ready_{false};
  Mutex held_mu_;
  std::vector<Context*> held_ready_ GUARDED_BY(held_mu_);
  // Ends the hold: the contexts woken meanwhile go to the workers.
  void release_held_ready() EXCLUDES(held_mu_);
  bool started_ = false;
};

}  // namespace flowrt
