#include "runtime/dispatcher.h"

#include <algorithm>
#include <chrono>
#include <utility>

#include "runtime/engine_core.h"
#include "runtime/flow_slot.h"
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

std::string Dispatcher::waiter_key(std::string_view table, std::string_view sys_id) {
  std::string key;
  key.reserve(table.size() + sys_id.size() + 1);
  key.append(table);
  key.push_back('\0');
  key.append(sys_id);
  return key;
}

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
  s.event = trigger_to_value(trigger);
  if (origin.context) {
    s.cause = Value::object({{"context", origin.context->id}, {"flow", origin.context->flow->id_value}});
  }
  core_.contexts.add_skipped(std::move(s));
}

std::string Dispatcher::record_key(std::string_view table, std::string_view sys_id) {
  std::string key;
  key.reserve(table.size() + sys_id.size() + 1);
  key.append(table);
  key.push_back('\0');
  key.append(sys_id);
  return key;
}

Dispatcher::RunState& Dispatcher::run_state(const std::string& key, uint32_t flow) {
  auto& flows = run_states_[key];
  for (auto& [f, st] : flows) {
    if (f == flow) return st;
  }
  flows.emplace_back(flow, RunState{});
  return flows.back().second;
}

void Dispatcher::forget_idle_runs(RunStates::iterator it) {
  auto& flows = it->second;
  flows.erase(std::remove_if(flows.begin(), flows.end(),
                             [](const auto& f) { return f.second.running == 0 && !f.second.ran; }),
              flows.end());
  if (flows.empty()) run_states_.erase(it);
}

std::string_view Dispatcher::run_option_skip(FlowSlot& flow, const TriggerData& trigger, const TriggerSpec& spec,
                                             Value* run_key) {
  if (trigger.type != TriggerType::kRecord) return "";
  if (spec.when != RecordWhen::kUpdated && spec.when != RecordWhen::kCreatedOrUpdated) return "";
  if (spec.run != RunOption::kOnce && spec.run != RunOption::kAlways) return "";
  std::string key = record_key(trigger.table.as_string(), trigger.sys_id.as_string());
  RunState& st = run_state(key, flow.index);
  // A start already queued counts as running and as having run.
  if (spec.run == RunOption::kOnce && st.ran) return "run_once";
  if (spec.run == RunOption::kAlways && st.running > 0) return "already_running";
  if (spec.run == RunOption::kOnce) st.ran = true;
  ++st.running;
  *run_key = Value(std::string_view(key));
  return "";
}

Result<StartedFlow> Dispatcher::admit(Prepared& p, Origin origin, Commit* commit) {
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
    const int64_t limit = std::max<int64_t>(1, core_.props().indirect_recursion_limit);
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
  ctx->publish(next_seq_++, std::move(cause));
  ctx->run_key = std::move(run_key);
  if (core_.options.measure_latency) ctx->committed_ns = steady_ns();
  Context* raw = ctx.get();
  core_.contexts.add(std::move(ctx));
  core_.work_added();
  core_.events.push(raw);
  ++commit->started;
  return StartedFlow{raw->id, false, Value()};
}

void Dispatcher::prepare_record(std::string_view table, RecordOperation op, const Value& record,
                                const Value* previous, bool changed, std::vector<Prepared>* out) {
  const TriggerIndex* index = current_index();
  if (!index) return;
  std::span<const TriggerEntry> entries = index->on_record(table, op);
  if (entries.empty()) return;
  const Value* before = op == RecordOperation::kUpdate ? previous : nullptr;
  for (const TriggerEntry& e : entries) {
    auto* flow = static_cast<FlowSlot*>(e.handle);
    if (!flow->active.load(std::memory_order_acquire)) continue;
    if (!record_trigger_matches(*e.spec, op, record, before, changed)) continue;
    out->push_back(Prepared{flow, e.spec.get(),
                            std::make_shared<Context>(flow, record_trigger(table, op, record, before), Value())});
  }
}

void Dispatcher::commit_prepared(std::vector<Prepared>& prepared, Origin origin, Commit* commit) {
  for (Prepared& p : prepared) (void)admit(p, origin, commit);
}

void Dispatcher::wake_waiters(std::string_view table, const Value& record, const Value* previous, bool deleted) {
  if (waiters_.empty()) return;
  auto it = waiters_.find(waiter_key(table, record["sys_id"].as_string()));
  if (it == waiters_.end()) return;
  std::vector<Waiter>& list = it->second;
  Scope scope;
  scope.record = &record;
  scope.previous = previous;
  for (size_t i = 0; i < list.size();) {
    Waiter& w = list[i];
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
      core_.wake(w.context, w.wait_id, std::move(wake));
      list[i] = std::move(list.back());
      list.pop_back();
      --waiter_count_;
    } else {
      ++i;
    }
  }
  if (list.empty()) waiters_.erase(it);
}

void Dispatcher::after_commit(const Commit& commit) { core_.workers.notify_events(commit.started); }

Status Dispatcher::check_queue_room(size_t starts) {
  if (starts == 0) return Status::ok();
  // Pops run concurrently, so the count can only be lower than read here.
  const size_t queued = core_.events.size();
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
  FLOWRT_RETURN_IF_ERROR(RecordStore::check_value_sizes(values, core_.props().max_record_value_bytes));
  Result<Value> record = store_.build_insert(values, core_.clock.now());
  if (!record) return record;
  std::vector<Prepared> prepared;
  prepare_record(table, RecordOperation::kInsert, *record, nullptr, true, &prepared);
  Commit commit;
  {
    MutexLock lock(mu_);
    FLOWRT_RETURN_IF_ERROR(check_holding(origin, while_holding));
    FLOWRT_RETURN_IF_ERROR(check_queue_room(prepared.size()));
    FLOWRT_RETURN_IF_ERROR(store_.commit_insert(table, *record));
    commit_prepared(prepared, origin, &commit);
  }
  after_commit(commit);
  return record;
}

Result<Value> Dispatcher::update(std::string_view table, std::string_view sys_id, const Value& values, Origin origin,
                                 const Value& while_holding) {
  // Optimistic: build the new version from the current one without the lock, and install
  // it only if no other update came first (then build again).
  FLOWRT_RETURN_IF_ERROR(RecordStore::check_value_sizes(values, core_.props().max_record_value_bytes));
  while (true) {
    Value current = store_.get(table, sys_id);  // the store's own read lock; no commit lock
    if (current.is_null()) return Error{"no record in " + std::string(table) + " with sys_id " + std::string(sys_id)};
    Result<RecordChange> change = RecordStore::build_update(current, sys_id, values, core_.clock.now());
    if (!change) return change.error();
    std::vector<Prepared> prepared;
    prepare_record(table, RecordOperation::kUpdate, change->record, &change->previous, change->changed, &prepared);
    Commit commit;
    {
      MutexLock lock(mu_);
      FLOWRT_RETURN_IF_ERROR(check_holding(origin, while_holding));
      FLOWRT_RETURN_IF_ERROR(check_queue_room(prepared.size()));
      if (!store_.commit_update(table, sys_id, *change)) continue;
      commit_prepared(prepared, origin, &commit);
      wake_waiters(table, change->record, &change->previous, false);
    }
    after_commit(commit);
    return change->record;
  }
}

Result<Value> Dispatcher::remove(std::string_view table, std::string_view sys_id, Origin origin,
                                 const Value& while_holding) {
  Commit commit;
  Value record;
  {
    MutexLock lock(mu_);
    FLOWRT_RETURN_IF_ERROR(check_holding(origin, while_holding));
    // Writes are all under the commit lock: the record read here is the one removed.
    std::vector<Prepared> prepared;
    if (Value existing = store_.get(table, sys_id); !existing.is_null()) {
      prepare_record(table, RecordOperation::kDelete, existing, nullptr, true, &prepared);
      FLOWRT_RETURN_IF_ERROR(check_queue_room(prepared.size()));
    }
    Result<Value> removed = store_.remove(table, sys_id);
    if (!removed) return removed;
    commit_prepared(prepared, origin, &commit);
    wake_waiters(table, *removed, nullptr, true);
    record_deleted(table, sys_id);
    record = *removed;
  }
  after_commit(commit);
  return record;
}

Result<size_t> Dispatcher::update_where(std::string_view table, const Condition& where, const Value& values,
                                        Origin origin) {
  FLOWRT_RETURN_IF_ERROR(RecordStore::check_value_sizes(values, core_.props().max_record_value_bytes));
  Commit commit;
  size_t n = 0;
  {
    MutexLock lock(mu_);
    RecordQuery q;
    q.table = table;
    q.condition = &where;
    Result<Value> found = store_.find(q);
    if (!found) return found.error();
    // Every change and start first, so that a full queue refuses them all: under the
    // commit lock nothing else writes meanwhile.
    struct Planned {
      RecordChange change;
      std::vector<Prepared> prepared;
    };
    std::vector<Planned> planned;
    size_t starts = 0;
    for (const Value& r : found->items()) {
      Result<RecordChange> change = RecordStore::build_update(r, r["sys_id"].as_string(), values, core_.clock.now());
      if (!change) return change.error();
      Planned& p = planned.emplace_back(Planned{std::move(change).value(), {}});
      prepare_record(table, RecordOperation::kUpdate, p.change.record, &p.change.previous, p.change.changed, &p.prepared);
      starts += p.prepared.size();
    }
    FLOWRT_RETURN_IF_ERROR(check_queue_room(starts));
    for (Planned& p : planned) {
      (void)store_.commit_update(table, p.change.record["sys_id"].as_string(), p.change);  // still current
      commit_prepared(p.prepared, origin, &commit);
      wake_waiters(table, p.change.record, &p.change.previous, false);
      ++n;
    }
  }
  after_commit(commit);
  return n;
}

Result<size_t> Dispatcher::remove_where(std::string_view table, const Condition& where, Origin origin) {
  Commit commit;
  size_t n = 0;
  {
    MutexLock lock(mu_);
    RecordQuery q;
    q.table = table;
    q.condition = &where;
    Result<Value> found = store_.find(q);
    if (!found) return found.error();
    // Every start first, so that a full queue refuses the whole delete.
    std::vector<std::vector<Prepared>> prepared(found->size());
    size_t starts = 0;
    for (size_t i = 0; i < found->size(); ++i) {
      prepare_record(table, RecordOperation::kDelete, found->at(i), nullptr, true, &prepared[i]);
      starts += prepared[i].size();
    }
    FLOWRT_RETURN_IF_ERROR(check_queue_room(starts));
    for (size_t i = 0; i < found->size(); ++i) {
      const std::string_view sys_id = found->at(i)["sys_id"].as_string();
      Result<Value> removed = store_.remove(table, sys_id);
      if (!removed) return removed.error();
      commit_prepared(prepared[i], origin, &commit);
      wake_waiters(table, *removed, nullptr, true);
      record_deleted(table, sys_id);
      ++n;
    }
  }
  after_commit(commit);
  return n;
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
      prepared.push_back(Prepared{flow, nullptr, std::make_shared<Context>(flow, std::move(t), Value())});
    }
  }
  Commit commit;
  {
    MutexLock lock(mu_);
    FLOWRT_RETURN_IF_ERROR(check_queue_room(prepared.size()));
    commit_prepared(prepared, origin, &commit);
  }
  after_commit(commit);
  return Status::ok();
}

Result<StartedFlow> Dispatcher::start_flow(FlowSlot& flow, TriggerData trigger, Value inputs, Origin origin,
                                           std::shared_ptr<const Plan> plan) {
  Prepared p{&flow, nullptr, std::make_shared<Context>(&flow, std::move(trigger), std::move(inputs))};
  p.context->plan = std::move(plan);
  Commit commit;
  Result<StartedFlow> started = Error{""};
  {
    MutexLock lock(mu_);
    if (Status room = check_queue_room(1); !room) {
      // A schedule tick has no caller to tell: it is listed as skipped, never lost unseen.
      if (p.context->trigger.type != TriggerType::kSchedule) return room.error();
      skip(flow, p.context->trigger, origin, "max_queued_events");
      return StartedFlow{Value(), true, Value("max_queued_events")};
    }
    started = admit(p, origin, &commit);
  }
  after_commit(commit);
  return started;
}

// Reads take the store's table locks only: they never wait for the commit lock.
Value Dispatcher::get(std::string_view table, std::string_view sys_id) { return store_.get(table, sys_id); }

Result<Value> Dispatcher::find(const RecordQuery& query) { return store_.find(query); }

std::vector<std::string> Dispatcher::table_names() { return store_.table_names(); }

std::vector<Value> Dispatcher::records(std::string_view table) { return store_.records(table); }

bool Dispatcher::add_waiter(const Value& table, const Value& sys_id, std::shared_ptr<Context> ctx, uint64_t wait_id,
                            std::shared_ptr<const Condition> condition) {
  MutexLock lock(mu_);
  if (store_.get(table.as_string(), sys_id.as_string()).is_null()) return false;
  waiters_[waiter_key(table.as_string(), sys_id.as_string())].push_back(
      Waiter{std::move(ctx), wait_id, std::move(condition)});
  ++waiter_count_;
  return true;
}

void Dispatcher::remove_waiter(const Value& table, const Value& sys_id, const Context* ctx) {
  MutexLock lock(mu_);
  auto it = waiters_.find(waiter_key(table.as_string(), sys_id.as_string()));
  if (it == waiters_.end()) return;
  auto& list = it->second;
  const size_t before = list.size();
  list.erase(std::remove_if(list.begin(), list.end(), [&](const Waiter& w) { return w.context.get() == ctx; }),
             list.end());
  waiter_count_ -= before - list.size();
  if (list.empty()) waiters_.erase(it);
}

size_t Dispatcher::waiter_count() {
  MutexLock lock(mu_);
  return waiter_count_;
}

// ---- locks ----

namespace {

Value lock_outputs(std::string_view result, std::string_view state, const Value& token, int64_t attempts,
                   int64_t waited_ms) {
  return Value::object({{"result", Value(result)},
                        {"state", Value(state)},
                        {"token", token},
                        {"attempts", Value(static_cast<long long>(attempts))},
                        {"waited_ms", Value(static_cast<long long>(waited_ms))}});
}

// Attempts a poller would have made to see the grant: one at once, then one every `delay`.
int64_t attempts_for(DurationMs waited, DurationMs delay, int64_t max_attempts) {
  if (waited <= 0 || delay <= 0) return 1;
  return std::min<int64_t>(max_attempts, 1 + (waited + delay - 1) / delay);
}

}  // namespace

Status Dispatcher::check_holding(Origin origin, const Value& while_holding) {
  if (while_holding.is_null()) return Status::ok();
  if (!while_holding.is_string() || while_holding.as_string().empty()) {
    return Error{"input 'while_holding' must be a lock name"};
  }
  if (origin.context && locks_.holds(origin.context->seq, while_holding.as_string())) return Status::ok();
  return Error{"lock_lost: this context does not hold lock '" + std::string(while_holding.as_string()) +
               "'; nothing was written"};
}

void Dispatcher::set_lock_limit(std::string_view name, int64_t limit) {
  MutexLock lock(mu_);
  locks_.set_limit(name, limit);
}

void Dispatcher::request_lock(const std::shared_ptr<Context>& ctx, LockRequest request) {
  ctx->used_locks.store(true, std::memory_order_release);
  MutexLock lock(mu_);
  if (core_.clock.is_virtual()) {
    pending_.push_back(PendingLock{ctx, std::move(request)});
    pending_count_.fetch_add(1, std::memory_order_acq_rel);
    return;
  }
  request.now = core_.clock.now();
  decide_lock(ctx, request);
  verify_locks(nullptr);
}

size_t Dispatcher::resolve_pending_locks() {
  MutexLock lock(mu_);
  std::vector<PendingLock> pending = std::move(pending_);
  pending_.clear();
  std::stable_sort(pending.begin(), pending.end(), [](const PendingLock& a, const PendingLock& b) {
    return a.request.now != b.request.now ? a.request.now < b.request.now : a.request.who < b.request.who;
  });
  for (const PendingLock& p : pending) decide_lock(p.context, p.request);
  verify_locks(nullptr);
  // Only now, after the decisions woke their contexts (which count as work), do these
  // requests stop counting as pending: settle never sees a moment with neither.
  pending_count_.fetch_sub(pending.size(), std::memory_order_acq_rel);
  return pending.size();
}

void Dispatcher::lock_failed(const std::shared_ptr<Context>& ctx, const LockRequest& r, std::string_view state,
                             std::string message, int64_t attempts) {
  const TimeMs now = core_.clock.now();
  WakeUp w;
  w.kind = WakeUp::Kind::kLock;
  w.at = now;
  w.outputs = lock_outputs("failure", state, Value(), attempts, now - r.now);
  w.error = std::move(message);
  ctx->add_log(LogLevel::kWarn, r.step, now, Value(std::string_view(w.error)));
  core_.wake(ctx, r.wait_id, std::move(w));
}

void Dispatcher::decide_lock(const std::shared_ptr<Context>& ctx, const LockRequest& r) {
  AcquireOutcome o = locks_.acquire(r);
  switch (o.kind) {
    case AcquireOutcome::Kind::kGranted:
    case AcquireOutcome::Kind::kReentered: {
      std::vector<LockGrant> grants{o.grant};
      if (o.kind == AcquireOutcome::Kind::kReentered) {
        // Already held: granted at once with the token it holds; the lease is unchanged.
        WakeUp w;
        w.kind = WakeUp::Kind::kLock;
        w.at = r.now;
        w.outputs = lock_outputs("success", "finished", Value(static_cast<long long>(o.grant.token)), 1, 0);
        ctx->add_log(LogLevel::kInfo, r.step, r.now,
                     Value(std::string_view("lock '" + r.name + "': already held (token " +
                                            std::to_string(o.grant.token) + ")")));
        core_.wake(ctx, r.wait_id, std::move(w));
        return;
      }
      apply_grants(grants);
      return;
    }
    case AcquireOutcome::Kind::kQueued: {
      std::string held_by;
      for (uint64_t who : o.holders) held_by += (held_by.empty() ? "" : ", ") + ("ctx-" + std::to_string(who));
      ctx->add_log(LogLevel::kInfo, r.step, r.now,
                   Value(std::string_view("lock '" + r.name + "': waiting; held by " + held_by + ", " +
                                          std::to_string(o.ahead) + " ahead in the queue")));
      std::shared_ptr<Context> self = ctx;
      const std::string name = r.name;
      const uint64_t wait_id = r.wait_id;
      TimerHandle t = core_.timers.add(r.give_up_at, true, [this, self, name, wait_id] { give_up_lock(self, name, wait_id); });
      locks_.set_give_up_timer(r.who, r.name, t);
      return;
    }
    case AcquireOutcome::Kind::kTimedOut:
      lock_failed(ctx, r, "timeout",
                  "lock '" + r.name + "' not granted: timed out after " + std::to_string(r.max_attempts) +
                      (r.max_attempts == 1 ? " attempt" : " attempts"),
                  r.max_attempts);
      return;
    case AcquireOutcome::Kind::kDeadlock:
      lock_failed(ctx, r, "deadlock", "lock '" + r.name + "' refused: " + o.message, 1);
      return;
    case AcquireOutcome::Kind::kTooHeavy:
      lock_failed(ctx, r, "error", "lock '" + r.name + "' refused: " + o.message, 1);
      return;
  }
}

void Dispatcher::verify_locks(const Context* ended) {
  if (!core_.options.check_invariants || !violation_.empty()) return;
  violation_ = locks_.check_invariants();
  if (violation_.empty() && ended && (locks_.holds_any(ended->seq) || locks_.waiting(ended->seq))) {
    violation_ = std::string(ended->id.as_string()) + " ended but still holds or waits for a lock";
  }
}

std::string Dispatcher::lock_violation() {
  MutexLock lock(mu_);
  return violation_;
}

Value Dispatcher::record_grant(Context& ctx, const LockGrant& g) {
  lock_grants_.fetch_add(1, std::memory_order_relaxed);
  if (g.was_queued) lock_handoffs_.fetch_add(1, std::memory_order_relaxed);
  std::shared_ptr<Context> self = ctx.shared_from_this();
  core_.timers.cancel(g.give_up_timer);
  const std::string name = g.name;
  const int64_t token = g.token;
  TimerHandle lease = core_.timers.add(g.expires_at, true, [this, self, name, token] { expire_lease(self, name, token); });
  locks_.set_lease_timer(g.who, g.name, lease);
  const DurationMs waited = g.granted_at - g.requested_at;
  std::string text = "lock '" + g.name + "': granted, token " + std::to_string(g.token);
  if (g.was_queued) text += ", after waiting " + std::to_string(waited) + "ms";
  ctx.add_log(LogLevel::kInfo, g.step, g.granted_at, Value(std::string_view(text)));
  return lock_outputs("success", "finished", Value(static_cast<long long>(g.token)),
                      attempts_for(waited, g.delay, g.max_attempts), waited);
}

void Dispatcher::apply_grants(std::vector<LockGrant>& grants) {
  for (LockGrant& g : grants) {
    auto* ctx = static_cast<Context*>(g.owner);
    WakeUp w;
    w.kind = WakeUp::Kind::kLock;
    w.at = g.granted_at;
    w.outputs = record_grant(*ctx, g);
    core_.wake(ctx->shared_from_this(), g.wait_id, std::move(w));
  }
}

Value Dispatcher::try_lock(Context& ctx, LockRequest request) {
  ctx.used_locks.store(true, std::memory_order_release);
  if (core_.clock.is_virtual()) return Value();  // decided at the next quiescent moment
  MutexLock lock(mu_);
  request.now = core_.clock.now();
  AcquireOutcome o;
  if (!locks_.try_acquire(request, &o)) return Value();
  if (o.kind == AcquireOutcome::Kind::kReentered) {
    ctx.add_log(LogLevel::kInfo, request.step, request.now,
                Value(std::string_view("lock '" + request.name + "': already held (token " +
                                       std::to_string(o.grant.token) + ")")));
    return lock_outputs("success", "finished", Value(static_cast<long long>(o.grant.token)), 1, 0);
  }
  Value outputs = record_grant(ctx, o.grant);
  verify_locks(nullptr);
  return outputs;
}

void Dispatcher::give_up_lock(const std::shared_ptr<Context>& ctx, const std::string& name, uint64_t wait_id) {
  MutexLock lock(mu_);
  std::vector<LockGrant> grants;
  LockRequest r;
  if (!locks_.give_up(ctx->seq, name, wait_id, core_.clock.now(), &grants, &r)) return;
  lock_failed(ctx, r, "timeout",
              "lock '" + name + "' not granted: gave up after " + std::to_string(r.max_attempts) + " attempts (" +
                  std::to_string(core_.clock.now() - r.now) + "ms)",
              r.max_attempts);
  apply_grants(grants);
  verify_locks(nullptr);
}

void Dispatcher::expire_lease(const std::shared_ptr<Context>& ctx, const std::string& name, int64_t token) {
  MutexLock lock(mu_);
  std::vector<LockGrant> grants;
  const TimeMs now = core_.clock.now();
  if (!locks_.expire(ctx->seq, name, token, now, &grants)) return;
  ctx->add_log(LogLevel::kWarn, Value(), now,
               Value(std::string_view("lock '" + name + "' (token " + std::to_string(token) +
                                      "): held for its max_duration; released as if unlocked")));
  apply_grants(grants);
  verify_locks(nullptr);
}

bool Dispatcher::release_lock(Context& ctx, std::string_view name) {
  MutexLock lock(mu_);
  core_.timers.cancel(locks_.lease_timer(ctx.seq, name));
  std::vector<LockGrant> grants;
  if (!locks_.release(ctx.seq, name, core_.clock.now(), &grants)) return false;
  apply_grants(grants);
  verify_locks(nullptr);
  return true;
}

void Dispatcher::record_deleted(std::string_view table, std::string_view sys_id) {
  auto it = run_states_.find(record_key(table, sys_id));
  if (it == run_states_.end()) return;
  for (auto& [flow, st] : it->second) st.ran = false;
  forget_idle_runs(it);
}

void Dispatcher::context_ended(Context& ctx) {
  // Most contexts never touched a lock or a run option: nothing to do, no lock to take.
  if (ctx.run_key.is_null() && !ctx.used_locks.load(std::memory_order_acquire)) return;
  MutexLock lock(mu_);
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
  for (const TimerHandle& t : timers) core_.timers.cancel(t);
  for (const std::string& name : released) {
    ctx.add_log(LogLevel::kInfo, Value(), now, Value(std::string_view("lock '" + name + "': released as the context ended")));
  }
  apply_grants(grants);
  verify_locks(&ctx);
}

bool Dispatcher::holds_lock(const Context& ctx, std::string_view name) {
  MutexLock lock(mu_);
  return locks_.holds(ctx.seq, name);
}

std::vector<LockState> Dispatcher::lock_states() {
  MutexLock lock(mu_);
  return locks_.snapshot();
}

std::string Dispatcher::check_lock_invariants() {
  MutexLock lock(mu_);
  return locks_.check_invariants();
}

}  // namespace flowrt
