#include "runtime/context.h"

#include "runtime/flow_slot.h"
#include "runtime/record_json.h"

namespace flowrt {

std::string_view status_name(ContextStatus s) {
  switch (s) {
    case ContextStatus::kInProgress: return "in_progress";
    case ContextStatus::kWaiting: return "waiting";
    case ContextStatus::kCompleted: return "completed";
    case ContextStatus::kCancelled: return "cancelled";
    case ContextStatus::kError: return "error";
  }
  return "?";
}

std::string_view status_name(StepStatus s) {
  switch (s) {
    case StepStatus::kInProgress: return "in_progress";
    case StepStatus::kWaiting: return "waiting";
    case StepStatus::kCompleted: return "completed";
    case StepStatus::kError: return "error";
    case StepStatus::kSkipped: return "skipped";
  }
  return "?";
}

std::optional<ContextStatus> context_status_named(std::string_view name) {
  for (ContextStatus s : {ContextStatus::kInProgress, ContextStatus::kWaiting, ContextStatus::kCompleted,
                          ContextStatus::kCancelled, ContextStatus::kError}) {
    if (status_name(s) == name) return s;
  }
  return std::nullopt;
}

bool is_terminal(ContextStatus s) {
  return s == ContextStatus::kCompleted || s == ContextStatus::kCancelled || s == ContextStatus::kError;
}

namespace {

Value make_id(uint64_t seq) { return Value(std::string_view("ctx-" + std::to_string(seq))); }

std::shared_ptr<const Chain> extend(const std::shared_ptr<const Chain>& chain, const Value& flow) {
  auto out = std::make_shared<Chain>();
  if (chain) {
    out->reserve(chain->size() + 1);
    *out = *chain;
  }
  out->push_back(flow);
  return out;
}

}  // namespace

Context::Context(FlowSlot* f, TriggerData t, Value in) : flow(f), trigger(std::move(t)), inputs(std::move(in)) {}

void Context::publish(uint64_t s, uint64_t commit, std::unique_ptr<const Cause> c) {
  seq = s;
  commit_seq = commit;
  id = make_id(s);
  cause = std::move(c);
}

const std::shared_ptr<const Chain>& Context::child_chain() {
  if (!state->child_chain) state->child_chain = extend(cause ? cause->chain : nullptr, flow->id_value);
  return state->child_chain;
}

uint64_t Context::begin_park() {
  SpinLockGuard lock(mu_);
  phase_ = Phase::kParking;
  status_.store(ContextStatus::kWaiting, std::memory_order_release);
  state->early_wake = false;
  return ++wait_id_;
}

bool Context::end_park() {
  SpinLockGuard lock(mu_);
  if (state->early_wake || cancel_.load(std::memory_order_acquire)) {
    state->early_wake = false;
    phase_ = Phase::kReady;
    ++wait_id_;  // later wake-ups for this wait are stale
    return true;
  }
  phase_ = Phase::kParked;
  return false;
}

bool Context::wake(uint64_t wait_id, WakeUp w) {
  SpinLockGuard lock(mu_);
  if (wait_id != wait_id_) return false;
  if (phase_ == Phase::kParking) {
    if (!state->early_wake) {
      state->early_wake = true;
      state->wake = std::move(w);
    }
    return false;
  }
  if (phase_ != Phase::kParked) return false;
  phase_ = Phase::kReady;
  state->wake = std::move(w);
  ++wait_id_;  // later wake-ups for this wait are stale
  return true;
}

bool Context::begin_run() {
  SpinLockGuard lock(mu_);
  if (phase_ == Phase::kDone) return false;
  phase_ = Phase::kRunning;
  ContextStatus waiting = ContextStatus::kWaiting;
  status_.compare_exchange_strong(waiting, ContextStatus::kInProgress, std::memory_order_acq_rel);
  return true;
}

bool Context::request_cancel() {
  SpinLockGuard lock(mu_);
  if (phase_ == Phase::kDone) return false;
  cancel_.store(true, std::memory_order_release);
  if (phase_ != Phase::kParked) return false;
  phase_ = Phase::kReady;
  ++wait_id_;
  return true;
}

WakeUp Context::take_wake() {
  SpinLockGuard lock(mu_);
  return std::move(state->wake);
}

Context::Phase Context::phase() const {
  SpinLockGuard lock(mu_);
  return phase_;
}

bool Context::rest_when(RestCondition met, uint64_t wait_id) {
  // What leaves memory, moved out under the locks and freed after them.
  std::vector<Activation> stack;
  std::vector<Value> parked_inputs;
  std::shared_ptr<const Chain> chain;
  std::vector<StepEntry> steps;
  boost::container::small_vector<LogEntry, 1> logs;
  Value variables;
  bool rested_now = false;
  {
    SpinLockGuard lock(mu_);
    if (rest_wait_id_ != wait_id) {
      rest_wait_id_ = wait_id;
      rest_met_ = 0;
    }
    rest_met_ |= static_cast<uint8_t>(met);
    constexpr uint8_t kBoth = static_cast<uint8_t>(RestCondition::kLetGo) | static_cast<uint8_t>(RestCondition::kDurable);
    if (rest_met_ != kBoth || phase_ != Phase::kParked || wait_id_ != wait_id || !state) return false;
    if (resting_.load(std::memory_order_acquire) && state->stack.empty()) return false;
    // Parked in this wait, and the thread that parked it has let go: nothing else touches
    // the stack until a wake-up makes it ready, which takes this lock.
    stack = std::move(state->stack);
    state->stack.clear();
    parked_inputs = std::move(state->parked_inputs);
    state->parked_inputs.clear();
    chain = std::move(state->child_chain);
    SpinLockGuard record_lock(record_mu_);
    rested_now = !resting_.load(std::memory_order_acquire);
    if (rested_now) rested_steps_ = steps_.size();  // else it was restored resting
    steps = std::move(steps_);
    steps_.clear();
    logs = std::move(logs_);
    logs_.clear();
    variables = std::move(variables_);
    variables_ = Value();
    resting_.store(true, std::memory_order_release);
  }
  return rested_now;
}

void Context::restore_resting(const Plan& for_plan, TimeMs started, size_t steps, ContextStatus status) {
  {
    SpinLockGuard lock(mu_);
    SpinLockGuard record_lock(record_mu_);
    recorded_plan_ = &for_plan;
    started_at_ = started;
    rested_steps_ = steps;
    resting_.store(true, std::memory_order_release);
  }
  set_status(status);
}

void Context::end_rest() {
  SpinLockGuard lock(mu_);
  SpinLockGuard record_lock(record_mu_);
  resting_.store(false, std::memory_order_release);
}

void Context::record_start(const Plan& p, TimeMs now) {
  SpinLockGuard lock(record_mu_);
  recorded_plan_ = &p;
  variables_ = p.root().variable_initial_list;
  steps_.reserve(p.root().recorded_steps);
  started_at_ = now;
}

int64_t Context::begin_step(Value path, const Node& node, TimeMs now, Value in) {
  SpinLockGuard lock(record_mu_);
  StepEntry e;
  e.path = std::move(path);
  e.node = &node;
  e.started = now;
  e.inputs = std::move(in);
  steps_.push_back(std::move(e));
  return static_cast<int64_t>(steps_.size()) - 1;
}

void Context::end_step(int64_t index, StepStatus status, TimeMs now, Value outputs, Value error) {
  if (!error.is_null() && !outputs.contains("error")) {
    outputs = outputs.is_object() ? outputs.with("error", std::move(error)) : Value::object({{"error", std::move(error)}});
  }
  SpinLockGuard lock(record_mu_);
  StepEntry& e = steps_[static_cast<size_t>(index)];
  e.status = status;
  e.ended = now;
  e.outputs = std::move(outputs);
}

void Context::set_step_status(int64_t index, StepStatus status) {
  SpinLockGuard lock(record_mu_);
  steps_[static_cast<size_t>(index)].status = status;
}

void Context::drop_steps_and_logs() {
  std::vector<StepEntry> steps;
  decltype(logs_) logs;
  {
    SpinLockGuard lock(record_mu_);
    steps.swap(steps_);
    logs.swap(logs_);
  }
}  // freed here, outside the lock

void Context::end_open_steps(TimeMs now, const Value& reason) {
  SpinLockGuard lock(record_mu_);
  for (StepEntry& e : steps_) {
    if (e.status != StepStatus::kInProgress && e.status != StepStatus::kWaiting) continue;
    e.status = StepStatus::kError;
    e.ended = now;
    e.outputs = e.outputs.is_object() ? e.outputs.with("error", reason) : Value::object({{"error", reason}});
  }
}

void Context::add_log(LogLevel level, Value step, TimeMs now, Value message) {
  SpinLockGuard lock(record_mu_);
  logs_.push_back(LogEntry{now, level, std::move(step), std::move(message)});
}

void Context::set_variables(Value variables) {
  SpinLockGuard lock(record_mu_);
  variables_ = std::move(variables);
}

void Context::set_status(ContextStatus status) { status_.store(status, std::memory_order_release); }

void Context::finish(ContextStatus status, TimeMs now, Value error, double ms) {
  {
    SpinLockGuard lock(record_mu_);
    if (started_at_ < 0) started_at_ = now;
    ended_at_ = now;
    error_ = std::move(error);
    run_ms_ = ms;
    status_.store(status, std::memory_order_release);
  }
  {
    SpinLockGuard lock(mu_);
    phase_ = Phase::kDone;
    ++wait_id_;
  }
  finished_.store(true, std::memory_order_release);
}

ContextStatus Context::status() const { return status_.load(std::memory_order_acquire); }

Context::Summary Context::summary() const {
  SpinLockGuard lock(record_mu_);
  const size_t steps = resting_.load(std::memory_order_acquire) ? rested_steps_ : steps_.size();
  return Summary{status_.load(std::memory_order_acquire), run_ms_, steps, started_at_, ended_at_, error_};
}

template <class Use>
bool Context::with_snapshot(size_t value_limit, bool even_resting, Use&& use) const {
  // A snapshot under the record's lock (copies of the entries: shared values, no JSON
  // built), then the JSON built outside it, so a reader never holds up the context or a
  // commit that logs to it.
  RecordFields f;
  std::vector<StepEntry> steps;
  boost::container::small_vector<LogEntry, 1> logs;
  {
    SpinLockGuard lock(record_mu_);
    if (!even_resting && resting_.load(std::memory_order_acquire)) return false;
    if (recorded_plan_) {
      f.plan_version = recorded_plan_->version_value;
      f.variable_names = recorded_plan_->root().variable_name_list;
    }
    f.status = status_.load(std::memory_order_acquire);
    f.started = started_at_;
    f.ended = ended_at_;
    f.run_ms = run_ms_;
    steps = steps_;
    logs = logs_;
    f.variables = variables_;
    f.error = error_;
  }
  f.seq = seq;
  f.id = id;
  f.flow = flow->id_value;
  f.trigger = &trigger;
  f.cause = cause.get();
  f.steps = &steps;
  f.logs = std::span<const LogEntry>(logs.data(), logs.size());
  f.value_limit = value_limit;
  use(f);
  return true;
}

Value Context::to_value(size_t value_limit) const {
  Value v;
  with_snapshot(value_limit, true, [&](const RecordFields& f) { v = record_to_value(f); });
  return v;
}

std::optional<Value> Context::to_value_unless_resting(size_t value_limit) const {
  std::optional<Value> v;
  with_snapshot(value_limit, false, [&](const RecordFields& f) { v = record_to_value(f); });
  return v;
}

std::string Context::record_json(size_t value_limit) const {
  std::string text;
  with_snapshot(value_limit, true, [&](const RecordFields& f) { write_record_json(f, text); });
  return text;
}

}  // namespace flowrt
