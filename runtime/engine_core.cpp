// EngineCore, the running half: starting and stopping, properties, work accounting,
// contexts run, parked, woken and rested, API starts, and the clock (advance, settle). How
// contexts end is in engine_endings.cpp; the store, recovery and schedules have files of
// their own.
#include "runtime/engine_core.h"

#include "compiler/input_checks.h"

#include <chrono>
#include <exception>
#include <string>

#include "plans/time.h"
#include "runtime/checkpoint.h"
#include "runtime/engine_log.h"
#include "runtime/interpreter.h"
#include "runtime/flow_slot.h"
#include "runtime/perturb.h"
#include "runtime/record_json.h"

namespace flowrt {

EngineCore::EngineCore(EngineOptions opts)
    : options(std::move(opts)),
      clock(options.virtual_clock, options.virtual_clock ? clamp_time(options.start_time) : 0),
      flows(&actions),
      dispatcher(*this, options.seed),
      workers(events, [this](Context* ctx) { run(ctx); }),
      watchdog([this] { return run_clock_ms(); }, [this](Watchdog::Call& call, Watchdog::Reason why) { abandon(call, why); },
               1000, options.watchdog_period_ms) {
  props_versions_.push_back(std::make_unique<const EngineProperties>(options.properties));
  props_.store(props_versions_.back().get(), std::memory_order_release);
  contexts.set_retention(options.properties.context_retention);
  if (!options.log_level.empty()) set_engine_log_level(options.log_level);
  for (const auto& [name, limit] : options.lock_limits) dispatcher.set_lock_limit(name, limit);
}

EngineCore::~EngineCore() { stop(); }

void EngineCore::start() {
  if (started_) return;
  started_ = true;
  if (journal) journal->start();
  if (options.simulation_seed) {
    MutexLock drive(drive_mu_);
    sim_rng_.seed(*options.simulation_seed);
    engine_log().info("simulating workers on the driving thread, seed {}", *options.simulation_seed);
    return;
  }
  unsigned n = properties().worker_threads;
  if (n == 0) n = std::max(1u, std::thread::hardware_concurrency());
  workers.start(n);
  watchdog.start();
  engine_log().info("started {} workers, {} clock", n, clock.is_virtual() ? "virtual" : "real");
  if (!clock.is_virtual()) {
    timer_thread_ = std::thread([this] {
      while (true) {
        std::vector<TimerQueue::Fire> due = timers.wait_due(clock);
        if (due.empty()) return;  // stopped
        for (TimerQueue::Fire& f : due) {
          // A timer that throws (an allocation failed) must not end the process, nor be
          // lost: it is tried again a second later.
          try {
            f();
          } catch (const std::exception& e) {
            engine_log().error("a timer failed ({}); trying it again in 1s", e.what());
            retry_timer(std::move(f));
          } catch (...) {
            engine_log().error("a timer failed (an unknown exception); trying it again in 1s");
            retry_timer(std::move(f));
          }
        }
        timers.fired(due.size());
      }
    });
  }
}

void EngineCore::retry_timer(TimerQueue::Fire fire) {
  try {
    timers.add(add_duration(clock.now(), 1000), true, std::move(fire));
  } catch (const std::exception& e) {
    engine_log().critical("a failed timer could not be set again: {}", e.what());
  }
}

void EngineCore::stop() {
  if (!started_) return;
  started_ = false;
  timers.stop();
  if (timer_thread_.joinable()) timer_thread_.join();
  // Workers end once their slice ends (a running context yields at its next step). The
  // watchdog keeps watching meanwhile: a custom action running now or starting before
  // its worker ends is given up on once the grace (1s of real time) has passed, and its
  // worker retired, so this waits at most that long, never for user code.
  workers.request_stop();
  watchdog.begin_stopping();
  workers.join();
  watchdog.stop();
  if (journal) {
    journal_unfinished();
    journal->stop();
  }
  engine_log().info("stopped");
}

Status EngineCore::set_property(std::string_view name, const Value& value) {
  size_t retention;
  {
    MutexLock lock(props_mu_);
    EngineProperties next = props();
    FLOWRT_RETURN_IF_ERROR(flowrt::set_property(&next, name, value));
    props_versions_.push_back(std::make_unique<const EngineProperties>(next));
    props_.store(props_versions_.back().get(), std::memory_order_release);
    retention = next.context_retention;
  }
  contexts.set_retention(retention);
  return Status::ok();
}

FlowRegistry::PlanResult EngineCore::plan_of(FlowSlot& slot) {
  if (std::shared_ptr<const Plan> plan = flows.current_plan(slot)) return FlowRegistry::PlanResult{std::move(plan), {}};
  return flows.plan_for(slot, compile_options());
}

CompileOptions EngineCore::compile_options() const {
  const EngineProperties& p = props();
  CompileOptions o;
  o.max_actions = p.max_actions;
  o.max_action_steps = p.max_action_steps;
  o.max_template_bytes = p.max_template_bytes;
  o.min_schedule_interval = p.min_schedule_interval;
  o.lock_limits = options.lock_limits;
  return o;
}

double EngineCore::run_clock_ms() const {
  if (options.run_clock) return options.run_clock();
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

void EngineCore::work_done() {
  if (work_.fetch_sub(1, std::memory_order_acq_rel) == 1) on_quiescent();
}

void EngineCore::on_quiescent() {
  // No context can run: the moment to decide lock requests deferred by a virtual clock.
  if (dispatcher.pending_locks() > 0) dispatcher.resolve_pending_locks();
  MutexLock lock(idle_mu_);
  idle_cv_.notify_all();
}

void EngineCore::wait_idle() {
  if (options.simulation_seed) {
    // Called by advance and settle, which hold drive_mu_.
    drive_mu_.assert_held();
    simulate();
    return;
  }
  while (true) {
    {
      MutexLock lock(idle_mu_);
      while (work_.load(std::memory_order_acquire) != 0) idle_cv_.wait(idle_mu_);
    }
    if (dispatcher.pending_locks() > 0) {
      dispatcher.resolve_pending_locks();
      continue;
    }
    // A resolution on a worker wakes contexts before it stops counting as pending, so a
    // second look at the work tells whether it was really idle.
    if (work_.load(std::memory_order_acquire) == 0) return;
  }
}

Interpreter::Outcome EngineCore::run_slice(Context& ctx, uint32_t max_steps, uint64_t* parked_wait) {
  try {
    Interpreter interpreter(*this, ctx);
    const Interpreter::Outcome outcome = interpreter.run(max_steps);
    if (outcome == Interpreter::Outcome::kParked) *parked_wait = park(&ctx);
    return outcome;
  } catch (const std::exception& e) {
    end_after_exception(ctx, e.what());
  } catch (...) {
    end_after_exception(ctx, "an unknown exception");
  }
  return Interpreter::Outcome::kFinished;
}

void EngineCore::run(Context* ctx) {
  if (options.measure_latency && ctx->taken_ns == 0) ctx->taken_ns = steady_ns();
  try {
    // Hold the context for the whole slice: once it finishes, the store may drop it. Let
    // go before the work is counted done: whoever sees the engine idle (settle) must not
    // find this thread still holding a context the store has dropped.
    const std::shared_ptr<Context> hold = ctx->shared_from_this();
    if (ctx->begin_run()) {
      journal_start(hold);
      switch (run_context(*ctx, 0)) {
        case Interpreter::Outcome::kAbandoned: return;  // the engine may be gone: touch nothing
        case Interpreter::Outcome::kYielded:
          // The workers are stopping (it stays queued, and counted as work, as it is), or a
          // caller that helped came to user code (a worker runs it on).
          workers.push_ready(ctx);
          return;
        case Interpreter::Outcome::kParked: break;
        case Interpreter::Outcome::kFinished: let_go_of_finished(*ctx); break;
      }
    }
  } catch (...) {
    // Past every handling of its own (the worker logs it): its work still counts done, or
    // settle, and so `flowrt run` and a stop, would wait for it for ever.
    work_done();
    throw;
  }
  work_done();
}

size_t EngineCore::run_queued_until(std::chrono::steady_clock::time_point until) {
  // Simulated workers are the driving thread's alone (a helper would make the run depend
  // on timing); on a worker (an action calling in) it would run contexts inside a step.
  if (options.simulation_seed || stop_requested() || WorkerPool::on_worker_thread()) return 0;
  WorkerPool::HelperScope helping;
  size_t taken = 0;
  while (std::chrono::steady_clock::now() < until) {
    Context* ctx = workers.take_start_for_helper();
    if (!ctx) break;
    ++taken;
    run(ctx);  // as a worker runs it; handed back to the workers before any user code
  }
  return taken;
}

Interpreter::Outcome EngineCore::run_context(Context& ctx, uint32_t max_steps) {
  if (ctx.resting() && !rehydrate(ctx)) return Interpreter::Outcome::kFinished;
  uint64_t parked_wait = 0;
  const Interpreter::Outcome outcome = run_slice(ctx, max_steps, &parked_wait);
  // This thread lets go of the context it parked (it may be running elsewhere already: only
  // the wait's id is used); it rests once its checkpoint is durable.
  if (outcome == Interpreter::Outcome::kParked && parked_wait != 0) {
    rest_when(ctx, Context::RestCondition::kLetGo, parked_wait);
  }
  return outcome;
}

bool EngineCore::may_rest(Context& ctx) const {
  if (!journal || !ctx.state) return false;
  const WaitRequest::Kind kind = ctx.state->wait.kind;
  return (kind == WaitRequest::Kind::kTimer || kind == WaitRequest::Kind::kRecord) &&
         ctx.locks_in_use.load(std::memory_order_acquire) == 0;
}

void EngineCore::rest_when(Context& ctx, Context::RestCondition met, uint64_t wait_id) {
  if (ctx.rest_when(met, wait_id)) resting_.fetch_add(1, std::memory_order_acq_rel);
}

bool EngineCore::rehydrate(Context& ctx) {
  Status read = [&]() -> Status {
    Result<std::optional<StoredContext>> row = store->load_context(ctx.seq);
    if (!row) return row.error();
    if (!*row || (*row)->checkpoint.is_null()) return Error{"its row holds no checkpoint"};
    return rehydrate_checkpoint(ctx, (*row)->checkpoint);
  }();
  ctx.end_rest();
  resting_.fetch_sub(1, std::memory_order_acq_rel);
  if (read) return true;
  // Woken (its wait no longer counted), but with nothing to go on from: it ends in error.
  const std::string message = "its state could not be read back from the " + store->describe() + ": " + read.message();
  engine_log().error("{}: {}", ctx.id.as_string(), message);
  clear_wait(ctx);
  ctx.state->parked = false;
  const Value reason(std::string_view{message});
  ctx.end_open_steps(clock.now(), reason);
  finish_context(ctx, ContextStatus::kError, Value::object({{"message", reason}, {"step", Value()}}));
  return false;
}

void EngineCore::journal_start(const std::shared_ptr<Context>& ctx) {
  if (!journal || ctx->state) return;
  // Its first step: no longer queued. Appended before anything it does, so a store that
  // holds any of its effects knows it started (and a restart never starts it again).
  JournalEntry started;
  started.started.push_back(ctx);
  journal->append(std::move(started));
}

bool EngineCore::run_steps(Context* ctx, uint32_t max_steps) {
  const std::shared_ptr<Context> hold = ctx->shared_from_this();
  if (ctx->begin_run()) {
    journal_start(hold);
    switch (run_context(*ctx, max_steps)) {
      case Interpreter::Outcome::kYielded: return true;  // still in flight: not done yet
      case Interpreter::Outcome::kAbandoned: return false;  // never in simulation
      case Interpreter::Outcome::kParked: break;
      case Interpreter::Outcome::kFinished: let_go_of_finished(*ctx); break;
    }
  }
  work_done();
  return false;
}

void EngineCore::simulate() {
  const unsigned workers_wanted = props().worker_threads == 0 ? 4 : props().worker_threads;
  while (true) {
    // With a durable store, what the last step (or an operation from outside) set going is
    // delivered before the next pick, so that a seed replays exactly.
    if (journal) journal->wait_delivered(journal->appended());
    const bool can_take = sim_in_flight_.size() < workers_wanted && workers.has_queued();
    const size_t choices = sim_in_flight_.size() + (can_take ? 1 : 0);
    if (choices == 0) {
      // Nothing can run: decide the lock requests that waited for this moment.
      if (dispatcher.pending_locks() > 0) {
        dispatcher.resolve_pending_locks();
        continue;
      }
      return;
    }
    const size_t pick = static_cast<size_t>(sim_rng_() % choices);
    if (pick == sim_in_flight_.size()) {
      if (Context* next = workers.take_queued()) sim_in_flight_.push_back(next->shared_from_this());
      continue;
    }
    Context* stepped = sim_in_flight_[pick].get();
    const bool in_flight = run_steps(stepped, 1);
    if (options.after_simulated_step) options.after_simulated_step(stepped->id.as_string());
    if (!in_flight) sim_in_flight_.erase(sim_in_flight_.begin() + static_cast<long>(pick));
  }
}

bool EngineCore::try_reserve_wait(size_t max) {
  size_t n = waiting_.load(std::memory_order_acquire);
  do {
    if (n >= max) return false;
  } while (!waiting_.compare_exchange_weak(n, n + 1, std::memory_order_acq_rel));
  return true;
}

void EngineCore::make_ready(Context* ctx) {
  waiting_.fetch_sub(1, std::memory_order_acq_rel);
  work_added();
  if (holding_ready_.load(std::memory_order_acquire)) {
    MutexLock lock(held_mu_);
    if (holding_ready_.load(std::memory_order_relaxed)) {
      held_ready_.push_back(ctx);
      return;
    }
  }
  workers.push_ready(ctx);
}

void EngineCore::release_held_ready() {
  std::vector<Context*> held;
  {
    MutexLock lock(held_mu_);
    holding_ready_.store(false, std::memory_order_release);
    held.swap(held_ready_);
  }
  for (Context* ctx : held) workers.push_ready(ctx);
}

void EngineCore::wake(const std::shared_ptr<Context>& ctx, uint64_t wait_id, WakeUp w) {
  perturb(PerturbPoint::kWake);
  if (ctx->wake(wait_id, std::move(w))) make_ready(ctx.get());
}

uint64_t EngineCore::park(Context* ctx, bool checkpoint) {
  std::shared_ptr<Context> self = ctx->shared_from_this();
  const uint64_t id = ctx->begin_park();
  // Decided while this thread still owns the context: once its wait is registered, another
  // thread may wake and run it.
  const bool restable = may_rest(*ctx);
  if (journal && checkpoint) {
    // Written before the wait is registered: whatever wakes it comes later in the journal.
    // Once it is durable the context may rest (the row then holds all it needs).
    JournalEntry e;
    e.changes.push_back(checkpoint_update(*ctx, props().record_value_limit, true));
    if (restable) e.rests.push_back(RestCandidate{self, id});
    journal->append(std::move(e));
  }
  perturb(PerturbPoint::kBetweenParkAndWait);
  const WaitRequest& w = ctx->exec().wait;
  switch (w.kind) {
    case WaitRequest::Kind::kTimer:
      ctx->exec().timer = timers.add(w.deadline, true, [this, self, id] { wake(self, id, wake_up_now(WakeUp::Kind::kTimer)); });
      break;
    case WaitRequest::Kind::kRecord: park_for_record(self, id); break;
    case WaitRequest::Kind::kLock: {
      LockRequest r;
      r.who = ctx->seq;
      r.owner = ctx;
      r.name = std::string(w.lock_name.as_string());
      r.weight = w.weight;
      r.now = w.requested_at;
      r.give_up_at = w.deadline;
      r.max_duration = w.max_duration;
      r.wait_id = id;
      r.step = ctx->exec().parked_path;
      r.max_attempts = w.max_attempts;
      r.delay = w.delay;
      dispatcher.request_lock(self, std::move(r));
      break;
    }
    default: break;
  }
  if (ctx->end_park()) make_ready(ctx);
  return restable ? id : 0;
}

void EngineCore::park_for_record(const std::shared_ptr<Context>& self, uint64_t id) {
  const WaitRequest& w = self->exec().wait;
  Dispatcher::WaiterAdded added = dispatcher.add_waiter(w.table, w.sys_id, self, id, w.condition, w.seen);
  switch (added.kind) {
    case Dispatcher::WaiterAdded::Kind::kRegistered:
      if (w.deadline >= 0) {
        self->exec().timer = timers.add(w.deadline, true,
                                        [this, self, id] { wake(self, id, wake_up_now(WakeUp::Kind::kTimeout)); });
      }
      return;
    case Dispatcher::WaiterAdded::Kind::kMet: {  // kept for end_park
      WakeUp met = wake_up_now(WakeUp::Kind::kRecord);
      met.record = std::move(added.record);
      self->wake(id, std::move(met));
      return;
    }
    case Dispatcher::WaiterAdded::Kind::kGone:  // kept for end_park
      self->wake(id, wake_up_now(WakeUp::Kind::kRecordDeleted));
      return;
  }
}

WakeUp EngineCore::wake_up_now(WakeUp::Kind kind) const {
  WakeUp w;
  w.kind = kind;
  w.at = clock.now();
  return w;
}

void EngineCore::clear_wait(Context& ctx) {
  ExecState& e = ctx.exec();
  timers.cancel(e.timer);
  e.timer = TimerHandle{};
  if (e.wait.kind == WaitRequest::Kind::kRecord) dispatcher.remove_waiter(e.wait.table, e.wait.sys_id, &ctx);
  e.wait = WaitRequest{};
}

Result<StartedFlow> EngineCore::start_api_flow(std::string_view flow, const Value& inputs, Origin origin) {
  FlowSlot* slot = flows.slot(flow);
  if (!slot) return Error{"no flow '" + std::string(flow) + "'"};
  if (!slot->active.load(std::memory_order_acquire)) return Error{"flow '" + std::string(flow) + "' is not active"};
  if (std::shared_ptr<const TriggerSpec> trigger = slot->trigger_spec(); trigger && trigger->type != TriggerType::kApi) {
    return Error{"flow '" + std::string(flow) + "' has a " + std::string(trigger_type_name(trigger->type)) +
                 " trigger; only API flows start on request (test_flow runs any flow now)"};
  }
  if (!inputs.is_null() && !inputs.is_object()) return Error{"inputs must be an object, got " + shown_value(inputs)};
  // The flow's declared inputs (when it declares them) are enforced before it starts. A
  // flow that no longer compiles starts anyway and ends in error with the compile error.
  FlowRegistry::PlanResult plan = plan_of(*slot);
  if (plan.plan) FLOWRT_RETURN_IF_ERROR(check_api_inputs(plan.plan->root(), inputs));
  TriggerData t;
  t.type = TriggerType::kApi;
  t.time = clock.now();
  t.payload = inputs.is_null() ? Value::empty_object() : inputs;  // shown in the record's trigger
  t.caller = origin.caller;
  Value given = t.payload;
  return dispatcher.start_flow(*slot, std::move(t), std::move(given), origin);
}

Status check_api_inputs(const PlanUnit& flow, const Value& inputs) {
  if (!flow.declares_inputs) return Status::ok();
  const std::string label = "flow '" + flow.id + "'";
  std::string declared;
  for (const Param& p : flow.inputs) declared += (declared.empty() ? "" : ", ") + p.name;
  for (const auto& m : inputs.members()) {
    const std::string_view name = m.key.as_string();
    bool known = false;
    for (const Param& p : flow.inputs) known = known || p.name == name;
    if (!known) {
      return Error{label + " has no input '" + std::string(name) + "' (inputs: " +
                   (declared.empty() ? std::string("none") : declared) + "); the start is refused"};
    }
  }
  for (const Param& p : flow.inputs) {
    const Value& v = inputs[p.name];
    if (p.required && v.is_null()) return Error{label + " needs input '" + p.name + "'; the start is refused"};
    if (!value_fits(v, p.type)) {
      return Error{"input '" + p.name + "' of " + label + " must be " + std::string(wanted_type(p.type)) + ", got " +
                   shown_value(v) + "; the start is refused"};
    }
  }
  return Status::ok();
}

TimerQueue::Due EngineCore::fire_due(TimeMs t, size_t max_schedules) {
  // The timers of one moment fire as one piece of work: no quiescent moment (when lock
  // requests deferred by the virtual clock are decided) falls between two of them, so
  // requests made at the same virtual time are decided together, in seq order, whichever
  // worker got to its request first.
  work_added();
  TimerQueue::Due due = timers.take_due_within(t, max_schedules);
  for (TimerQueue::Fire& f : due.fires) f();
  due.fires.clear();
  work_done();
  return due;
}

Status EngineCore::advance(DurationMs d) {
  if (d < 0) return Error{"advance of " + std::to_string(d) + "ms: a duration cannot be negative"};
  if (d > kMaxDuration) {
    return Error{"advance of " + std::to_string(d) + "ms is too large: the maximum is " + format_duration(kMaxDuration)};
  }
  if (WorkerPool::on_worker_thread()) {
    // A custom action or an on_context_end callback: advancing waits until no context can
    // run, its caller's own included, which never comes.
    return Error{"advance cannot be called on a worker thread (from a custom action or an on_context_end "
                 "callback): it waits for every context, its caller's own too"};
  }
  MutexLock drive(drive_mu_);
  const TimeMs target = add_duration(clock.now(), d);
  if (!clock.is_virtual()) return advance_real_clock(target);
  const size_t budget = props().max_schedule_fires_per_advance;
  size_t fires_left = budget;
  while (true) {
    wait_idle();
    if (stop_requested()) return Status::ok();
    std::optional<TimeMs> next = timers.next_deadline(false);
    if (!next || *next > target) break;
    clock.set(*next);
    // One deadline at a time, also when the clock is already past it (ticks that fell due
    // during a settle): a tick re-armed as one fires (the flow's next occurrence) then
    // comes before a later tick of another flow, so occurrences fire in time order.
    const TimerQueue::Due due = fire_due(*next, fires_left);
    fires_left -= due.schedules;
    if (due.schedules_left) {
      // Nothing is dropped: the schedule timers not fired stay due, and the next advance
      // fires them first, with their own scheduled times.
      wait_idle();
      const TimeMs at = clock.now();
      const std::string why = ": one more schedule trigger would pass the limit of " + std::to_string(budget) +
                              " fires in one advance (max_schedule_fires_per_advance); it and the rest fire at the "
                              "next advance";
      // The first trigger not fired fell due before the clock's time when a settle moved
      // the clock past it: named by its own time, not as the clock's stop.
      if (const std::optional<TimeMs> first = timers.next_deadline(false); first && *first < at) {
        return Error{"advance stopped at " + format_time(at) + " with schedule triggers due since " +
                     format_time(*first) + " not fired" + why};
      }
      return Error{"advance stopped at " + format_time(at) + ", " + format_duration(target - at) + " short of " +
                   format_time(target) + why};
    }
  }
  clock.set(target);
  wait_idle();
  if (journal) journal->append(JournalEntry{});  // the clock moved: the store follows
  return Status::ok();
}

Status EngineCore::advance_real_clock(TimeMs target) {
  // A real clock cannot be moved: sleep until real time reaches the target, in short steps
  // so that a stop is seen at once, and leave the timers to the timer thread.
  constexpr TimeMs kStepMs = 10;
  for (TimeMs now = clock.now(); now < target; now = clock.now()) {
    if (stop_requested()) return Status::ok();
    std::this_thread::sleep_for(std::chrono::milliseconds(std::min(target - now, kStepMs)));
  }
  // Then, as settle does, wait until every timer due by the target has fired and taken
  // effect (the timer thread may still be at it) and no context can run.
  while (true) {
    wait_idle();
    if (stop_requested()) return Status::ok();
    const TimerQueue::Pending pending = timers.pending(false);
    if (!pending.firing && (!pending.next || *pending.next > target)) return Status::ok();
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

void EngineCore::quiesce() {
  MutexLock drive(drive_mu_);
  wait_idle();
}

void EngineCore::settle(DurationMs until) {
  // On a worker thread (a custom action, an on_context_end callback) there is nothing to
  // wait for that would ever come: the caller's own context cannot end while it waits.
  if (WorkerPool::on_worker_thread()) return;
  MutexLock drive(drive_mu_);
  const TimeMs limit = add_duration(clock.now(), until);
  while (true) {
    wait_idle();
    if (stop_requested()) return;
    perturb(PerturbPoint::kSettleIdle);
    const TimerQueue::Pending pending = timers.pending(true);
    if (pending.firing) {
      // (Real clock only.) A due timer is between the queue and its effect: a context
      // woken, a lease ended. Its effect counts as work before it is reported fired.
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
      continue;
    }
    // (Real clock only.) A timer may have fired between the idle check and the look at
    // the timers: taken, its effect counted as work, reported fired. Its effect is seen
    // here (it counted before it was reported), so look at the work again.
    if (work_.load(std::memory_order_acquire) != 0 || dispatcher.pending_locks() > 0) continue;
    const std::optional<TimeMs> next = pending.next;
    if (!next || *next > limit) break;
    if (clock.is_virtual()) {
      clock.set(*next);
      (void)fire_due(clock.now(), 0);  // context timers only: settle never fires schedules
    } else {
      // A real clock cannot be moved: wait for the timer thread to fire it.
      const TimeMs wait = std::min<TimeMs>(std::max<TimeMs>(*next - clock.now(), 1), 10);
      std::this_thread::sleep_for(std::chrono::milliseconds(wait));
    }
  }
  if (journal) journal->append(JournalEntry{});  // the clock moved: the store follows
}

}  // namespace flowrt
