// Engine: flowrt's library API. Everything the events file can do, a C++ program (or a
// GoogleTest) can do here: load definitions, write records, fire events, call and test
// flows, drive the clock, and read context records and tables.
//
// Thread-safety: every method may be called from any thread. Operations do not wait for
// the flows they trigger (they race as real traffic would); settle() is the barrier.
// Records returned are snapshots (immutable Values), consistent at the time of the call.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "flowrt/actions/custom_action.h"
#include "flowrt/compiler/diagnostics.h"
#include "flowrt/plans/result.h"
#include "flowrt/plans/time.h"
#include "flowrt/plans/value.h"
#include "flowrt/runtime/context_record_view.h"
#include "flowrt/runtime/engine_options.h"
#include "flowrt/runtime/engine_stats.h"
#include "flowrt/runtime/properties.h"

namespace flowrt {

class EngineCore;        // runtime/engine_core.h: the internals (not installed)
struct LoadOptions;      // compiler/loader.h (not installed)

class ContextEndWatch;

// A watch of one context's end (Engine::on_context_end): dropping it ends the watch.
// Thread-safety: destroyed on any thread, also after the engine.
class ContextEndWatcher {
 public:
  ContextEndWatcher(std::shared_ptr<ContextEndWatch> watch, uint64_t token);
  ~ContextEndWatcher();
  ContextEndWatcher(const ContextEndWatcher&) = delete;
  ContextEndWatcher& operator=(const ContextEndWatcher&) = delete;

 private:
  std::shared_ptr<ContextEndWatch> watch_;
  uint64_t token_;
};

// DurabilityDeferral: while one lives on a thread, the Engine's operations from outside
// (insert ... test_flow, definition changes) called on that thread return once their
// changes are committed, without waiting until they are durable in the store; position()
// is then what to wait for (Engine::durable_state, when_durable, wait_durable) before
// telling anyone that the operation happened. A server answers this way from its I/O
// threads, so that no thread blocks on the disk per request. With the memory store
// nothing is deferred (position() stays 0). Scoped to the thread that made it; the inner
// one wins while deferrals nest.
class DurabilityDeferral {
 public:
  DurabilityDeferral();
  ~DurabilityDeferral();
  DurabilityDeferral(const DurabilityDeferral&) = delete;
  DurabilityDeferral& operator=(const DurabilityDeferral&) = delete;
  // The journal position the operations so far must reach before they are durable; 0:
  // nothing to wait for.
  uint64_t position() const { return position_; }
 private:
  friend class EngineCore;  // its wait for durability defers to the thread's live deferral
  // The calling thread's live deferral, null when none.
  static DurabilityDeferral* current();
  void defer(uint64_t position) { position_ = position > position_ ? position : position_; }

  uint64_t position_ = 0;
  DurabilityDeferral* previous_;
};

class Engine {
 public:
  // Builds an engine and opens its store (EngineOptions::store). When the store cannot be
  // opened (a file in use, damaged or of a newer flowrt), every operation of this engine
  // fails with that error: build one with open() to get the error instead.
  explicit Engine(EngineOptions options = {});
  // Builds an engine and opens its store, or says why the store cannot be opened. A store
  // that holds state is taken in (docs/DURABILITY.md); call recover() once the
  // definitions are loaded and custom actions registered.
  static Result<std::unique_ptr<Engine>> open(EngineOptions options);
  ~Engine();
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  // ---- definitions and lifecycle (SPEC sections 2, 9.6, 11) ----
  // Loads definition files or directories. All or nothing: when anything is wrong, nothing
  // is added and the diagnostics say what (file: /json/pointer: message): every error at
  // once, up to Diagnostics::kMaxListed (a file that does not parse, or a definition of the
  // wrong shape, does not hide the compile errors of the others).
  Diagnostics load(const std::vector<std::string>& paths);
  // Loads definitions from JSON text (one object or an array), named `file` in errors.
  Diagnostics load_text(std::string_view text, const std::string& file = "<text>");
  Status save(const Value& definition);       // as a draft
  // save, only if the definition's revision (definition_info's "revision") is still
  // `revision` ("0": it must not exist yet). Refused, nothing saved, when it is not:
  // someone else saved, published or (de)activated it meanwhile.
  struct SaveOutcome {
    Status status;          // ok, or why not
    bool stale = false;     // refused because the revision moved on
    std::string revision;   // the revision now
  };
  SaveOutcome save_if_revision(const Value& definition, std::string_view revision);
  // What the engine holds of definition `id` of `type`, or without a type of the first
  // that has one (flows first, then subflows, then actions; ids are unique per type only):
  // {"id", "type", "state": "draft"|"inactive"|"active" (flows) or "draft"|"published",
  //  "revision", "definition": the draft when there is one, else the published version,
  //  "has_draft", "published": the published version or null}; null when there is none.
  Value definition_info(std::string_view id, std::optional<UnitType> type = std::nullopt) const;
  // The same for every definition, in (type, id) order.
  std::vector<Value> definition_infos() const;
  // The compiled plan of flow `id` as `flowrt plan` prints it (the draft's when there is
  // one, as test_flow runs it), or why it does not compile.
  Result<Value> plan(std::string_view id) const;
  // Publishes the draft of `id` of `type`, or without a type of the first that has a draft.
  Status publish(std::string_view id, std::optional<UnitType> type = std::nullopt);
  Status activate(std::string_view id);
  Status deactivate(std::string_view id);
  // Compiles every loaded definition; the diagnostics of all that do not compile.
  Diagnostics validate() const;
  Status register_action(CustomActionType type);
  // The load budgets from the current properties (file size, JSON depth and strings,
  // definition count). For this project's tools (compiler/loader.h is not installed).
  LoadOptions load_options() const;
  Status set_property(std::string_view name, const Value& value);
  EngineProperties properties() const;

  // ---- operations ----
  // `caller` names who makes the operation (flowrt serve passes the API token's name; ""
  // for none): a record written gets it as sys_created_by / sys_updated_by, and the
  // trigger of each context it starts as "caller". Without one, a record has no
  // sys_created_by, and an update drops sys_updated_by.
  Result<Value> insert(std::string_view table, const Value& values, std::string_view caller = {});
  Result<Value> update(std::string_view table, std::string_view sys_id, const Value& values,
                       std::string_view caller = {});
  // Updates every record matching `where` (a condition object); returns how many.
  Result<size_t> update_where(std::string_view table, const Value& where, const Value& values,
                              std::string_view caller = {});
  Result<Value> remove(std::string_view table, std::string_view sys_id, std::string_view caller = {});
  Result<size_t> remove_where(std::string_view table, const Value& where, std::string_view caller = {});
  Status fire_event(std::string_view name, const Value& payload = Value(), std::string_view caller = {});
  // Starts an active API flow; returns the new context's id. Inputs that do not match the
  // flow's declared inputs (unknown, required and missing, wrong type) refuse the start.
  Result<std::string> call_flow(std::string_view flow, const Value& inputs = Value::empty_object(),
                                std::string_view caller = {});
  // Runs a flow now, trigger condition bypassed, drafts included: with a record
  // ({"table", "sys_id"}) for record-triggered flows, or with inputs, checked as call_flow
  // checks them against the version that runs. `caller` as for call_flow.
  Result<std::string> test_flow(std::string_view flow, const Value& record, const Value& inputs,
                                std::string_view caller = {});
  Status cancel(std::string_view context_id);
  // Calls `fn` once, on the thread that ends it, when context `id` ends, for as long as
  // the returned watcher is held (for a caller that waits for it: look at the context
  // after this, as it may have ended before). The watcher may outlive the engine.
  std::unique_ptr<ContextEndWatcher> on_context_end(std::string_view id, std::function<void()> fn);
  // A deferred operation's durability (DurabilityDeferral::position()): OK once it is
  // durable, an error when it never will be (the store was given up, or the engine
  // stopped first: the operation's changes are in memory only), nothing while it may
  // still be. Position 0 is durable.
  std::optional<Status> durable_state(uint64_t position) const;
  // Calls `fn` once when durable_state(position) has an answer: at once on the calling
  // thread when it has one already, else on the store's writer thread. `fn` must be quick
  // (it wakes the waiter) and must not call the engine.
  void when_durable(uint64_t position, std::function<void()> fn);
  // Blocks until durable_state(position) has an answer, and returns it.
  Status wait_durable(uint64_t position);
  // As wait_durable, for at most `limit`: nothing when durable_state has no answer by then.
  std::optional<Status> wait_durable_for(uint64_t position, std::chrono::milliseconds limit);

  // ---- the store (docs/DURABILITY.md) ----
  // After opening a store that holds state, once definitions are loaded and custom actions
  // registered: flows that were active are active again, contexts that were running or
  // waiting when the last engine stopped resume from their checkpoints (or end in error,
  // saying why, when they cannot, and what they held is released), and trigger events that
  // were queued start, in their order; a schedule that missed occurrences while no engine
  // ran fires once for the last of them. The contexts are read from the store a range at a
  // time. Returns the report of what it did ({"at", "store", "resumed", "restarted",
  // "expired", "started", "failed", "locks_released", "activated", "schedules_missed",
  // "problems"}), which the store keeps and `flowrt inspect` shows; null when there was
  // nothing to recover.
  // open_project calls it.
  Value recover();

  // ---- stopping ----
  // Asks the engine to stop: advance and settle return early, new outside operations
  // (insert ... test_flow) are refused with an error, schedules stop firing. Safe to call
  // from a signal handler (one atomic store).
  void request_stop() noexcept;
  bool stop_requested() const noexcept;
  // Stops for good: requests a stop, cancels every context that has not ended (waiting,
  // running, or still queued: each ends "cancelled"), and returns once all have ended and
  // so released every lock. Returns how many contexts it cancelled. Records stay readable.
  // On a worker thread (a custom action, an on_context_end callback) it cancels them and
  // returns without waiting: they include its caller's own.
  size_t shutdown();

  // ---- the clock ----
  // Moves a virtual clock on by `d` (at most 36500d), running everything that falls due
  // on the way; past max_schedule_fires_per_advance schedule fires it stops there with an
  // error (the rest fire at the next advance). On a real clock, sleeps until real time has
  // moved on by `d`, then waits like settle. Deadlines past 9999-12-31T23:59:59.999Z stop
  // there. On a worker thread (a custom action, an on_context_end callback) it is an
  // error: it would wait for its caller's own context.
  Status advance(DurationMs d);
  // Waits until no context can run, moving a virtual clock to each timer a context waits
  // on, up to `until` from now. On a worker thread (a custom action, an on_context_end
  // callback) it returns at once: what it would wait for includes its caller's context.
  void settle(DurationMs until = 24 * 3600 * 1000);
  // Runs contexts waiting to start on the calling thread, one after another, while any
  // waits and `until` has not passed; returns how many it took. For a thread that makes
  // events and would otherwise sleep (a paced producer, a harness between its events):
  // no worker needs waking for what it runs (docs/PERFORMANCE.md, "The p99 tail at half
  // the peak"). Contexts start in the same order as without it. A context is handed to
  // the workers before a step that calls a registered (C++) action, so the caller is
  // never held by user code; contexts made ready again (woken, granted a lock) are the
  // workers'. Returns 0 at once when stopping, when simulating workers, or on a worker
  // thread (an action calling in).
  size_t run_queued_until(std::chrono::steady_clock::time_point until);
  TimeMs now() const;

  // ---- reading ----
  // A context's record, and every context's record (of `flow`, or all) in seq order. With a
  // durable store, a finished context is read from the store once it left memory (and is
  // gone once history_retention deleted it): docs/DURABILITY.md, "Memory and history".
  std::optional<ContextRecord> context(std::string_view id) const;
  std::vector<ContextRecord> contexts(std::string_view flow = {}) const;
  // One page of context records, newest first: those of `flow` and with `status` ("":
  // any) whose seq is below `before_seq` (UINT64_MAX: from the newest), at most `limit`.
  // The next page is before the last one's seq. For lists that must not read them all.
  std::vector<ContextRecord> context_page(std::string_view flow, std::string_view status, uint64_t before_seq,
                                          size_t limit) const;
  // The records of the contexts not ended (running, ready to run, waiting), newest first,
  // with a seq below `before_seq`, at most `limit`; read in one pass, so a context moving
  // between in_progress and waiting meanwhile is not missed, as it can be between two
  // pages of one status each.
  std::vector<ContextRecord> unfinished_contexts(uint64_t before_seq, size_t limit) const;
  std::vector<Value> skipped() const;  // {"flow", "reason", "event", "cause"}
  // Finished context records dropped, oldest first, to keep within context_retention.
  uint64_t dropped_contexts() const;
  // Skipped starts dropped, oldest first, to keep within context_retention.
  uint64_t dropped_skipped() const;
  // The engine's counters now (queue, waiting contexts, abandoned threads, ...).
  EngineStats stats() const;
  Value record(std::string_view table, std::string_view sys_id) const;
  std::vector<Value> records(std::string_view table) const;
  // The records of `table` that match `where` (a condition object as update_where takes;
  // null: every record), in insertion order, at most `limit` (0: all).
  Result<std::vector<Value>> find_records(std::string_view table, const Value& where, size_t limit = 0) const;
  std::vector<std::string> tables() const;
  // The lock table: every lock held or waited for, as
  // {"name", "limit", "held", "last_token", "holders": [{"context", "weight", "token",
  //  "acquired_at", "expires_at"}], "waiters": [{"context", "weight", "requested_at",
  //  "gives_up_at"}]}, waiters in queue order.
  Value locks() const;
  // {"contexts", "skipped", "records", "locks", "errors", "dropped_contexts",
  // "dropped_skipped"}: the `flowrt run` document.
  Value document(const std::vector<std::string>& errors = {}) const;

  // Internals, for tools in this project (benchmarks, the CLI, tests): EngineCore is
  // declared in runtime/engine_core.h, which is not installed.
  EngineCore& core() { return *core_; }

 private:
  std::unique_ptr<EngineCore> core_;
};

}  // namespace flowrt
