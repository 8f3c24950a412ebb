#include "runtime/dispatcher.h"

#include <algorithm>
#include <chrono>
#include <utility>

#include "plans/value_json.h"
#include "runtime/engine_core.h"
#include "runtime/flow_registry.h"
#include "runtime/flow_slot.h"
#include "runtime/keyed_writes.h"
#include "runtime/perturb.h"
#include "runtime/record_json.h"

namespace flowrt {

int64_t steady_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

namespace {
std::atomic<uint64_t> next_instance{1};
}  // namespace

Dispatcher::Dispatcher(EngineCore& core, uint64_t seed)
    : core_(core), store_(seed), instance_(next_instance.fetch_add(1, std::memory_order_relaxed)) {}

void Dispatcher::set_index(std::shared_ptr<const TriggerIndex> index) {
  MutexLock lock(index_mu_);
  index_ = std::move(index);
  index_version_.fetch_add(1, std::memory_order_acq_rel);
}

const TriggerIndex* Dispatcher::current_index() {
  struct Cached {
    uint64_t instance = 0;
    uint64_t version = 0;
    std::shared_ptr<const TriggerIndex> index;
  };
  // Each thread keeps the snapshot it last saw; it looks at the shared one only when the
  // version moved, so commits share no reference count.
  thread_local Cached cached;
  const uint64_t version = index_version_.load(std::memory_order_acquire);
  if (cached.instance != instance_ || cached.version != version) {
    MutexLock lock(index_mu_);
    cached.index = index_;
    cached.version = index_version_.load(std::memory_order_acquire);
    cached.instance = instance_;
  }
  return cached.index.get();
}

TriggerData Dispatcher::record_trigger(std::string_view table, RecordOperation op, const Value& record,
                                       const Value* previous) {
  TriggerData t;
  t.type = TriggerType::kRecord;
  t.operation = op;
  t.time = core_.clock.now();
  t.table = Value(table);
  t.sys_id = record["sys_id"];
  t.record = record;
  if (previous) {
    t.previous = *previous;
    t.has_previous = true;
  }
  return t;
}

void Dispatcher::skip(FlowSlot& flow, const TriggerData& trigger, Origin origin, std::string_view reason) {
  SkippedStart s;
  s.flow = flow.id_value;
  s.reason = Value(reason);
  s.event = trigger_to_value(trigger, core_.props().record_value_limit);
  if (origin.context) {
    s.cause = Value::object({{"context", origin.context->id}, {"flow", origin.context->flow->id_value}});
  }
  core_.contexts.add_skipped(std::move(s));
}

Result<StartedFlow> Dispatcher::admit(Prepared& p, Origin origin, CommitEntry* entry, Batch* batch) {
  FlowSlot& flow = *p.flow;
  const TriggerData& trigger = p.context->trigger;
  std::unique_ptr<Cause> cause;
  if (Context* parent = origin.context) {
    // Direct recursion: a context's own operation that would start its own flow again.
    if (parent->flow == &flow) {
      skip(flow, trigger, origin, "direct_recursion");
      return StartedFlow{Value(), true, Value("direct_recursion")};
    }
    cause = std::make_unique<Cause>(Cause{parent->id, parent->flow->id_value, parent->child_chain()});
    // Indirect recursion: at most `limit` runs of a flow in one causal chain.
    const int64_t limit = std::clamp<int64_t>(core_.props().indirect_recursion_limit, 1, kMaxIndirectRecursionLimit);
    const auto runs = std::count(cause->chain->begin(), cause->chain->end(), flow.id_value);
    if (runs >= limit) {
      skip(flow, trigger, origin, "indirect_recursion_limit");
      return StartedFlow{Value(), true, Value("indirect_recursion_limit")};
    }
  }
  Value run_key;
  if (p.spec) {
    const std::string_view reason = run_option_skip(flow, trigger, *p.spec, &run_key);
    if (!reason.empty()) {
      skip(flow, trigger, origin, reason);
      return StartedFlow{Value(), true, Value(reason)};
    }
  }
  std::shared_ptr<Context> ctx = std::move(p.context);
  ctx->publish(next_seq_++, entry->seq, std::move(cause));
  // Started while the engine shuts down (by a context still running): it ends cancelled
  // when taken, so that shutdown() leaves nothing behind.
  if (core_.shutting_down()) ctx->set_cancel_flag();
  ctx->run_key = std::move(run_key);
  Context* raw = ctx.get();
  const uint64_t seq = ctx->seq;
  if (journal_) {
    // Queued once the commit is durable (the watermark): the journal pushes it then.
    building_.queued.push_back(ctx);
    building_.pushes.push_back(raw);
    core_.contexts.add(std::move(ctx));
  } else {
    core_.contexts.add(std::move(ctx));
  }
  // Counted as started once it can be read: a reader that sees seq N started (the event
  // feed, reading each new seq once) finds ctx-N.
  seqs_.store(seq, std::memory_order_release);
  if (!journal_) core_.events.push(raw);  // counted as work before the lock (Batch::reserve)
  batch->started();
  if (core_.options.on_commit) entry->started.push_back(raw);
  return StartedFlow{raw->id, false, Value()};
}

std::shared_ptr<Context> Dispatcher::new_context(FlowSlot* flow, TriggerData trigger, Value inputs) {
  auto ctx = std::make_shared<Context>(flow, std::move(trigger), std::move(inputs));
  // Stamped as it is built, just before its commit: no clock read under the commit lock.
  if (core_.options.measure_latency) ctx->committed_ns = steady_ns();
  return ctx;
}

void Dispatcher::prepare_record(std::string_view table, RecordOperation op, const Value& record,
                                const Value* previous, bool changed, const Value& caller,
                                std::vector<Prepared>* out) {
  const TriggerIndex* index = current_index();
  if (!index) return;
  std::span<const TriggerEntry> entries = index->on_record(table, op);
  if (entries.empty()) return;
  const Value* before = op == RecordOperation::kUpdate ? previous : nullptr;
  for (const TriggerEntry& e : entries) {
    auto* flow = static_cast<FlowSlot*>(e.handle);
    if (!flow->active.load(std::memory_order_acquire)) continue;
    if (!record_trigger_matches(*e.spec, op, record, before, changed)) continue;
    TriggerData t = record_trigger(table, op, record, before);
    t.caller = caller;
    out->push_back(Prepared{flow, e.spec.get(), new_context(flow, std::move(t), Value())});
  }
}

void Dispatcher::note_row(std::vector<Prepared>& prepared, uint32_t row) {
  // Under the commit lock, before commit_prepared publishes the contexts: no one else sees
  // them yet.
  for (Prepared& p : prepared) p.context->trigger_row = row;
}

CommitEntry Dispatcher::begin_commit(CommitEntry::Kind kind, Origin origin) {
  CommitEntry entry;
  entry.seq = ++last_commit_;
  entry.kind = kind;
  entry.origin = origin.context;
  return entry;
}

namespace {
thread_local OperationTag* t_tag = nullptr;  // the calling thread's live OperationTag
}  // namespace

OperationTag::OperationTag(uint64_t operation, std::function<void()> on_first_commit)
    : operation_(operation), on_first_commit_(std::move(on_first_commit)), previous_(t_tag) {
  t_tag = this;
}
OperationTag::~OperationTag() { t_tag = previous_; }
uint64_t OperationTag::current() { return t_tag ? t_tag->operation_ : 0; }
void OperationTag::note_starts_context() {
  if (t_tag) t_tag->starts_context_ = true;
}
uint64_t OperationTag::note_commit(std::string_view first_queued, std::string* started) {
  if (!t_tag) return 0;
  if (t_tag->on_first_commit_) std::exchange(t_tag->on_first_commit_, nullptr)();
  if (!std::exchange(t_tag->committed_, true) && t_tag->starts_context_ && started && !first_queued.empty()) {
    *started = first_queued;
  }
  return t_tag->operation_;
}

void Dispatcher::end_commit(const CommitEntry& entry, Origin origin) {
  commits_.store(entry.seq, std::memory_order_release);
  if (core_.options.on_commit) core_.options.on_commit(entry);
  if (!one_entry_) journal_locked(origin.context);
}

void Dispatcher::set_journal(Journal* journal) {
  SpinMutexLock lock(mu_);
  journal_ = journal;
  locks_.track_changes(journal != nullptr);
}

void Dispatcher::wake_locked(const std::shared_ptr<Context>& ctx, uint64_t wait_id, WakeUp wake) {
  if (!journal_) {
    core_.wake(ctx, wait_id, std::move(wake));
    return;
  }
  building_.wakes.push_back(DeferredWake{ctx, wait_id, std::move(wake)});
}

void Dispatcher::journal_locked(Context* committer) {
  if (!journal_) {
    KeyedWrites::note_commit(nullptr);
    return;
  }
  for (const std::string& name : locks_.take_changed()) {
    std::optional<LockState> state = locks_.state(name);
    building_.changes.push_back(LockPut{name, state ? lock_state_value(*state) : Value()});
  }
  if (building_.empty()) return;
  building_.has_counters = true;
  building_.counters.commit_seq = last_commit_;
  building_.counters.context_seq = next_seq_ - 1;
  building_.counters.fencing_token = locks_.last_token();
  building_.counters.sys_id_seed = store_.sys_id_seed();
  building_.counters.sys_id_count = store_.sys_ids_generated();
  // The committer is running on this thread (its step made the commit): its fields are
  // this thread's to write.
  const bool hold = committer && committer->checkpoint_step;
  building_.held = hold;
  // A tagged operation's and a keyed write's first commit name the context they queued
  // when they start one (runtime/commit.h, runtime/keyed_writes.h).
  const std::string_view first_queued =
      building_.queued.empty() ? std::string_view() : building_.queued.front()->id.as_string();
  building_.operation = OperationTag::note_commit(first_queued, &building_.operation_started);
  // A keyed write's first commit carries its key's mark.
  KeyedWrites::note_commit(&building_.changes, first_queued);
  const uint64_t position = journal_->append(std::move(building_));
  if (hold) committer->held_commits.push_back(position);
  building_ = JournalEntry{};
}

void Dispatcher::restore(const StoredState& state, const FlowRegistry& flows) {
  SpinMutexLock lock(mu_);
  next_seq_ = state.counters.context_seq + 1;
  last_commit_ = state.counters.commit_seq;
  seqs_.store(state.counters.context_seq, std::memory_order_release);
  commits_.store(state.counters.commit_seq, std::memory_order_release);
  locks_.restore_last_token(state.counters.fencing_token);
  std::vector<RecordStore::RestoredTable> tables;
  tables.reserve(state.tables.size());
  for (const StoredState::Table& t : state.tables) tables.push_back({t.name, t.records, t.positions});
  store_.restore(state.counters.sys_id_seed, state.counters.sys_id_count, std::move(tables));
  for (const RunOncePut& r : state.run_once) {
    FlowSlot* flow = flows.slot(r.flow);
    if (!flow || !r.ran) continue;
    run_state(record_key(r.table, r.sys_id), flow->index).ran = true;
  }
}

void Dispatcher::restore_running(const Context& ctx) {
  if (ctx.run_key.is_null()) return;
  SpinMutexLock lock(mu_);
  ++run_state(std::string(ctx.run_key.as_string()), ctx.flow->index).running;
}

void Dispatcher::forget_stored_lock(std::string_view name) {
  SpinMutexLock lock(mu_);
  if (!journal_) return;
  building_.changes.push_back(LockPut{std::string(name), Value()});
  journal_locked();
}

void Dispatcher::commit_prepared(std::vector<Prepared>& prepared, Origin origin, CommitEntry* entry, Batch* batch) {
  // A rule's skip is the outcome of the start, not a failure of the commit: it is in the
  // skipped list.
  for (Prepared& p : prepared) (void)admit(p, origin, entry, batch);
}

void Dispatcher::wake_waiters(std::string_view table, const Value& record, const Value* previous, bool deleted) {
  if (waiters_.empty()) return;
  auto it = waiters_.find(record_key(table, record["sys_id"].as_string()));
  if (it == waiters_.end()) return;
  std::vector<Waiter>& list = it->second;
  Scope scope;
  scope.record = &record;
  scope.previous = previous;
  const int64_t version = deleted ? 0 : record["sys_mod_count"].as_int();
  for (size_t i = 0; i < list.size();) {
    Waiter& w = list[i];
    if (!deleted && version <= w.seen_version) {
      ++i;  // registered after this write: it saw this version or a later one
      continue;
    }
    bool met = false;
    if (!deleted) {
      Result<bool> r = evaluate(*w.condition, scope);
      met = r.is_ok() && *r;
    }
    if (met || deleted) {
      WakeUp wake;
      wake.kind = deleted ? WakeUp::Kind::kRecordDeleted : WakeUp::Kind::kRecord;
      wake.at = core_.clock.now();
      wake.record = record;
      wake_locked(w.context, w.wait_id, std::move(wake));
      list[i] = std::move(list.back());
      list.pop_back();
      waiter_count_.fetch_sub(1, std::memory_order_acq_rel);
    } else {
      ++i;
    }
  }
  if (list.empty()) waiters_.erase(it);
}

void Dispatcher::Batch::reserve(size_t n) {
  if (n == 0) return;
  core_.work_added(static_cast<int64_t>(n));
  reserved_ += n;
}

Dispatcher::Batch::~Batch() {
  for (size_t i = started_; i < reserved_; ++i) core_.work_done();  // skipped, refused or built again
  // With a journal, the contexts are queued once durable, and the journal tells the workers.
  if (!core_.journal) core_.workers.notify_events(started_);
}

Status Dispatcher::check_queue_room(size_t starts) {
  if (starts == 0) return Status::ok();
  // Pops run concurrently, so the count can only be lower than read here.
  const size_t queued = core_.events.size_approx() + (journal_ ? journal_->undelivered() : 0);
  const size_t max = core_.props().max_queued_events;
  if (queued + starts <= max) return Status::ok();
  return Error{"the event queue is full: " + std::to_string(queued) + " trigger events wait to start and this would add " +
               std::to_string(starts) + ", past the limit of " + std::to_string(max) +
               " (max_queued_events); refused, nothing was written"};
}

Result<Value> Dispatcher::insert(std::string_view table, const Value& values, Origin origin,
                                 const Value& while_holding) {
  // Build the record and the contexts it starts before taking the commit lock; only the
  // install, the rules and the queue push run under it.
  // A generated sys_id is numbered in commit order: if another insert committed an id
  // first, the record and its starts are built again with the next number.
  FLOWRT_RETURN_IF_ERROR(RecordStore::check_value_sizes(values, core_.props().max_record_value_bytes));
  // A name the stores keep as text (a PostgreSQL server refuses any other): JSON text is
  // UTF-8 already; a C++ caller's bytes may not be.
  if (!is_well_formed_utf8(table)) return Error{"a table name must be UTF-8"};
  while (true) {
    uint64_t id_number = 0;
    Result<Value> record = store_.build_insert(values, core_.clock.now(), &id_number, origin.caller);
    if (!record) return record;
    std::vector<Prepared> prepared;
    prepare_record(table, RecordOperation::kInsert, *record, nullptr, true, origin.caller, &prepared);
    Batch batch(core_);
    batch.reserve(prepared.size());
    perturb(PerturbPoint::kBeforeCommitLock);
    {
      SpinMutexLock lock(mu_);
      FLOWRT_RETURN_IF_ERROR(check_holding(origin, while_holding));
      FLOWRT_RETURN_IF_ERROR(check_queue_room(prepared.size()));
      // Its position is the commit seq begin_commit gives it next (the commit lock is held).
      uint32_t row = UINT32_MAX;
      Result<bool> installed = store_.commit_insert(table, *record, id_number, last_commit_ + 1, &row);
      if (!installed) return installed.error();
      if (!*installed) continue;  // its id was numbered before another commit: build again
      note_row(prepared, row);
      CommitEntry entry = begin_commit(CommitEntry::Kind::kInsert, origin);
      entry.table = table;
      entry.record = &*record;
      if (journal_) building_.changes.push_back(RecordPut{std::string(table), *record, entry.seq});
      commit_prepared(prepared, origin, &entry, &batch);
      end_commit(entry, origin);
    }
    return record;
  }
}

Result<Value> Dispatcher::update(std::string_view table, std::string_view sys_id, const Value& values, Origin origin,
                                 const Value& while_holding, RowHint hint) {
  // Optimistic: build the new version and its starts from the current one without the
  // commit lock; under it, install them only if no other write came first (otherwise
  // build again from the newer version).
  FLOWRT_RETURN_IF_ERROR(RecordStore::check_value_sizes(values, core_.props().max_record_value_bytes));
  while (true) {
    uint32_t row = 0;
    Value current = store_.get(table, sys_id, &row, hint);  // the store's own read lock; no commit lock
    if (current.is_null()) return Error{"no record in " + std::string(table) + " with sys_id " + std::string(sys_id)};
    Result<RecordChange> change = RecordStore::build_update(current, sys_id, values, core_.clock.now(), origin.caller);
    if (!change) return change.error();
    change->row_hint = row;
    std::vector<Prepared> prepared;
    prepare_record(table, RecordOperation::kUpdate, change->record, &change->previous, change->changed, origin.caller,
                   &prepared);
    Batch batch(core_);
    batch.reserve(prepared.size());
    perturb(PerturbPoint::kBeforeCommitLock);
    {
      SpinMutexLock lock(mu_);
      FLOWRT_RETURN_IF_ERROR(check_holding(origin, while_holding));
      FLOWRT_RETURN_IF_ERROR(check_queue_room(prepared.size()));
      uint64_t position = 0;
      if (!store_.commit_update(table, sys_id, *change, &position, &row)) continue;  // another write came first
      commit_update_locked(table, *change, position, row, prepared, origin, &batch);
    }
    return change->record;
  }
}

void Dispatcher::commit_update_locked(std::string_view table, const RecordChange& change, uint64_t position,
                                      uint32_t row, std::vector<Prepared>& prepared, Origin origin, Batch* batch) {
  note_row(prepared, row);
  CommitEntry entry = begin_commit(CommitEntry::Kind::kUpdate, origin);
  entry.table = table;
  entry.record = &change.record;
  entry.previous = &change.previous;
  if (journal_) building_.changes.push_back(RecordPut{std::string(table), change.record, position});
  commit_prepared(prepared, origin, &entry, batch);
  wake_waiters(table, change.record, &change.previous, false);
  end_commit(entry, origin);
}

Status Dispatcher::commit_remove_locked(std::string_view table, std::string_view sys_id,
                                        std::vector<Prepared>& prepared, Origin origin, Batch* batch,
                                        Value* removed_record) {
  uint64_t position = 0;
  Result<Value> removed = store_.remove(table, sys_id, &position);
  if (!removed) return removed.error();
  CommitEntry entry = begin_commit(CommitEntry::Kind::kDelete, origin);
  entry.table = table;
  entry.record = &*removed;
  if (journal_) building_.changes.push_back(RecordRemove{std::string(table), std::string(sys_id), position});
  commit_prepared(prepared, origin, &entry, batch);
  wake_waiters(table, *removed, nullptr, true);
  record_deleted(table, sys_id);
  end_commit(entry, origin);
  *removed_record = std::move(removed).value();
  return Status::ok();
}

Result<Value> Dispatcher::remove(std::string_view table, std::string_view sys_id, Origin origin,
                                 const Value& while_holding, bool missing_ok) {
  Batch batch(core_);
  Value record;
  perturb(PerturbPoint::kBeforeCommitLock);
  {
    SpinMutexLock lock(mu_);
    FLOWRT_RETURN_IF_ERROR(check_holding(origin, while_holding));
    // Every write commits under the commit lock: the record read here is the one removed.
    std::vector<Prepared> prepared;
    if (Value existing = store_.get(table, sys_id); !existing.is_null()) {
      prepare_record(table, RecordOperation::kDelete, existing, nullptr, true, origin.caller, &prepared);
      FLOWRT_RETURN_IF_ERROR(check_queue_room(prepared.size()));
      batch.reserve(prepared.size());
    } else if (missing_ok) {
      return Value();  // nothing to remove, nothing written
    }
    FLOWRT_RETURN_IF_ERROR(commit_remove_locked(table, sys_id, prepared, origin, &batch, &record));
  }
  return record;
}

Status Dispatcher::fire_event(const Value& name, const Value& payload, Origin origin) {
  if (!name.is_string() || name.as_string().empty()) return Error{"an event needs a name"};
  std::vector<Prepared> prepared;
  if (const TriggerIndex* index = current_index()) {
    for (const TriggerEntry& e : index->on_event(name.as_string())) {
      auto* flow = static_cast<FlowSlot*>(e.handle);
      if (!flow->active.load(std::memory_order_acquire)) continue;
      TriggerData t;
      t.type = TriggerType::kEvent;
      t.time = core_.clock.now();
      t.event_name = name;
      t.payload = payload;
      t.caller = origin.caller;
      prepared.push_back(Prepared{flow, nullptr, new_context(flow, std::move(t), Value())});
    }
  }
  Batch batch(core_);
  batch.reserve(prepared.size());
  perturb(PerturbPoint::kBeforeCommitLock);
  {
    SpinMutexLock lock(mu_);
    FLOWRT_RETURN_IF_ERROR(check_queue_room(prepared.size()));
    CommitEntry entry = begin_commit(CommitEntry::Kind::kEvent, origin);
    entry.event = &name;
    commit_prepared(prepared, origin, &entry, &batch);
    end_commit(entry, origin);
  }
  return Status::ok();
}

Result<StartedFlow> Dispatcher::start_flow(FlowSlot& flow, TriggerData trigger, Value inputs, Origin origin,
                                           TestRun* test) {
  // test_flow gives the plan to run (or its compile error), and runs any flow, active or
  // not; every other start (a call, a tick) runs the flow's own plan while it is active.
  const bool tested = test != nullptr;
  Prepared p{&flow, nullptr, new_context(&flow, std::move(trigger), std::move(inputs))};
  if (test) {
    p.context->plan = std::move(test->plan);
    if (!p.context->plan) p.context->compile_error = std::make_unique<const std::string>(std::move(test->compile_error));
    p.context->test_definition = std::move(test->definition);
  }
  Batch batch(core_);
  batch.reserve(1);
  Result<StartedFlow> started = Error{""};
  perturb(PerturbPoint::kBeforeCommitLock);
  const bool tick = !tested && p.context->trigger.type == TriggerType::kSchedule;
  {
    SpinMutexLock lock(mu_);
    // The caller checked the flow active before it came here; a deactivate that returned
    // meanwhile has stopped new starts: none now. Deactivate clears the flag, then passes
    // through this lock (wait_for_commits) before it returns: so a start that found the
    // flag set here is admitted before deactivate returns, and one that comes later finds
    // it cleared.
    if (!tested && !flow.active.load(std::memory_order_acquire)) {
      if (tick) return StartedFlow{Value(), true, Value("inactive")};  // no caller to tell
      return Error{"flow '" + flow.id + "' is not active"};
    }
    if (!tested) perturb(PerturbPoint::kStartAdmitting);
    // A schedule occurrence is written in the entry of the start it makes: a file never
    // counts an occurrence fired without the context it started (or its skip).
    if (tick && journal_) building_.changes.push_back(ScheduleTick{flow.id, p.context->trigger.time});
    if (Status room = check_queue_room(1); !room) {
      // A schedule tick has no caller to tell: it is listed as skipped, never lost unseen.
      if (!tick) return room.error();
      skip(flow, p.context->trigger, origin, "max_queued_events");
      journal_locked();
      return StartedFlow{Value(), true, Value("max_queued_events")};
    }
    CommitEntry entry = begin_commit(CommitEntry::Kind::kStart, origin);
    started = admit(p, origin, &entry, &batch);
    end_commit(entry, origin);
  }
  return started;
}

void Dispatcher::wait_for_commits() { SpinMutexLock lock(mu_); }

// Reads take the store's table locks only: they never wait for the commit lock.
Value Dispatcher::get(std::string_view table, std::string_view sys_id, RowHint hint) {
  return store_.get(table, sys_id, nullptr, hint);
}

Result<Value> Dispatcher::find(const RecordQuery& query) { return store_.find(query); }

std::vector<std::string> Dispatcher::table_names() { return store_.table_names(); }

std::vector<Value> Dispatcher::records(std::string_view table) { return store_.records(table); }

Dispatcher::WaiterAdded Dispatcher::add_waiter(const Value& table, const Value& sys_id, std::shared_ptr<Context> ctx,
                                               uint64_t wait_id, std::shared_ptr<const Condition> condition,
                                               const Value& seen) {
  SpinMutexLock lock(mu_);
  // Registered under the commit lock, which every write holds: a write either came
  // before (and the record read here shows it) or comes after and sees this waiter.
  waiter_count_.fetch_add(1, std::memory_order_acq_rel);
  Value current = store_.get(table.as_string(), sys_id.as_string());
  if (current.is_null()) {
    waiter_count_.fetch_sub(1, std::memory_order_acq_rel);
    return {WaiterAdded::Kind::kGone, Value()};
  }
  if (!seen.is_null() && !current.same_storage(seen)) {
    // Written since the step looked: that write is the change the wait is for.
    Scope scope;
    scope.record = &current;
    scope.previous = &seen;
    if (Result<bool> met = evaluate(*condition, scope); met.is_ok() && *met) {
      waiter_count_.fetch_sub(1, std::memory_order_acq_rel);
      return {WaiterAdded::Kind::kMet, std::move(current)};
    }
  }
  const int64_t version = current["sys_mod_count"].as_int();
  waiters_[record_key(table.as_string(), sys_id.as_string())].push_back(
      Waiter{std::move(ctx), wait_id, std::move(condition), version});
  return {WaiterAdded::Kind::kRegistered, Value()};
}

void Dispatcher::remove_waiter(const Value& table, const Value& sys_id, const Context* ctx) {
  SpinMutexLock lock(mu_);
  auto it = waiters_.find(record_key(table.as_string(), sys_id.as_string()));
  if (it == waiters_.end()) return;
  auto& list = it->second;
  const size_t before = list.size();
  list.erase(std::remove_if(list.begin(), list.end(), [&](const Waiter& w) { return w.context.get() == ctx; }),
             list.end());
  waiter_count_.fetch_sub(before - list.size(), std::memory_order_acq_rel);
  if (list.empty()) waiters_.erase(it);
}

size_t Dispatcher::waiter_count() { return waiter_count_.load(std::memory_order_acquire); }

void Dispatcher::context_ended(Context& ctx) {
  if (!ctx.claim_end()) return;  // once per context, even if its end is retried after a failure
  // Most contexts never touched a lock or a run option, or released every lock they took:
  // nothing to do, no lock to take. (A virtual clock's deferred request is not counted in
  // locks_in_use, and the invariant check wants to look: those always go on.)
  if (ctx.run_key.is_null()) {
    if (!ctx.used_locks.load(std::memory_order_acquire)) return;
    if (!core_.clock.is_virtual() && !core_.options.check_invariants &&
        ctx.locks_in_use.load(std::memory_order_acquire) == 0) {
      return;
    }
  }
  SpinMutexLock lock(mu_);
  if (!ctx.run_key.is_null()) {
    auto it = run_states_.find(std::string(ctx.run_key.as_string()));
    if (it != run_states_.end()) {
      for (auto& [flow, st] : it->second) {
        if (flow == ctx.flow->index && st.running > 0) --st.running;
      }
      forget_idle_runs(it);
    }
  }
  for (size_t i = 0; i < pending_.size(); ++i) {
    if (pending_[i].context.get() == &ctx) {
      pending_.erase(pending_.begin() + static_cast<std::ptrdiff_t>(i));
      pending_count_.fetch_sub(1, std::memory_order_acq_rel);
      break;
    }
  }
  std::vector<std::string> released;
  std::vector<TimerHandle> timers;
  std::vector<LockGrant> grants;
  const TimeMs now = core_.clock.now();
  locks_.release_all(ctx.seq, now, &released, &timers, &grants);
  ctx.locks_in_use.store(0, std::memory_order_release);
  for (const TimerHandle& t : timers) lock_deadlines_.cancel(t);
  for (const std::string& name : released) {
    ctx.add_log(LogLevel::kInfo, Value(), now, Value(std::string_view("lock '" + name + "': released as the context ended")));
  }
  apply_grants(grants);
  locks_changed(&ctx);
}

}  // namespace flowrt
