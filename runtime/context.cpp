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

Context::Context(uint64_t s, FlowSlot* f, TriggerData t, Cause c, Value in)
    : seq(s),
      id(make_id(s)),
      flow(f),
      trigger(std::move(t)),
      cause(std::move(c)),
      inputs(std::move(in)),
      child_chain_(extend(cause.chain, f->id_value)) {}

uint64_t Context::begin_park() {
  MutexLock lock(mu_);
  phase_ = Phase::kParking;
  status_ = ContextStatus::kWaiting;
  early_wake_ = false;
  return ++wait_id_;
}

bool Context::end_park() {
  MutexLock lock(mu_);
  if (early_wake_ || cancel_.load(std::memory_order_acquire)) {
    early_wake_ = false;
    phase_ = Phase::kReady;
    ++wait_id_;  // later wake-ups for this wait are stale
    return true;
  }
  phase_ = Phase::kParked;
  return false;
}

bool Context::wake(uint64_t wait_id, WakeUp w) {
  MutexLock lock(mu_);
  if (wait_id != wait_id_) return false;
  if (phase_ == Phase::kParking) {
    if (!early_wake_) {
      early_wake_ = true;
      wake_ = std::move(w);
    }
    return false;
  }
  if (phase_ != Phase::kParked) return false;
  phase_ = Phase::kReady;
  wake_ = std::move(w);
  ++wait_id_;  // later wake-ups for this wait are stale
  return true;
}

bool Context::begin_run() {
  MutexLock lock(mu_);
  if (phase_ == Phase::kDone) return false;
  phase_ = Phase::kRunning;
  if (status_ == ContextStatus::kWaiting) status_ = ContextStatus::kInProgress;
  return true;
}

bool Context::request_cancel() {
  MutexLock lock(mu_);
  if (phase_ == Phase::kDone) return false;
  cancel_.store(true, std::memory_order_release);
  if (phase_ != Phase::kParked) return false;
  phase_ = Phase::kReady;
  ++wait_id_;
  return true;
}

WakeUp Context::take_wake() {
  MutexLock lock(mu_);
  return std::move(wake_);
}

Context::Phase Context::phase() const {
  MutexLock lock(mu_);
  return phase_;
}

void Context::record_start(const Plan& p, TimeMs now, const std::vector<Value>& variables) {
  MutexLock lock(mu_);
  plan_version_ = Value(std::string_view(p.version));
  variable_names_ = p.root().variable_names;
  started_at_ = now;
  variables_ = variables;
}

int64_t Context::begin_step(Value path, const Node& node, TimeMs now, Value in) {
  MutexLock lock(mu_);
  StepEntry e;
  e.path = std::move(path);
  e.id = node.id;
  e.action = node.action;
  e.started = now;
  e.inputs = std::move(in);
  steps_.push_back(std::move(e));
  return static_cast<int64_t>(steps_.size()) - 1;
}

void Context::end_step(int64_t index, StepStatus status, TimeMs now, Value outputs, Value error) {
  MutexLock lock(mu_);
  StepEntry& e = steps_[static_cast<size_t>(index)];
  e.status = status;
  e.ended = now;
  e.outputs = std::move(outputs);
  e.error = std::move(error);
}

void Context::set_step_status(int64_t index, StepStatus status) {
  MutexLock lock(mu_);
  steps_[static_cast<size_t>(index)].status = status;
}

void Context::add_log(LogLevel level, Value step, TimeMs now, Value message) {
  MutexLock lock(mu_);
  logs_.push_back(LogEntry{now, level, std::move(step), std::move(message)});
}

void Context::set_variables(const std::vector<Value>& variables) {
  MutexLock lock(mu_);
  variables_ = variables;
}

void Context::set_status(ContextStatus status) {
  MutexLock lock(mu_);
  status_ = status;
}

void Context::finish(ContextStatus status, TimeMs now, Value error, double ms) {
  {
    MutexLock lock(mu_);
    status_ = status;
    phase_ = Phase::kDone;
    if (started_at_ < 0) started_at_ = now;
    ended_at_ = now;
    error_ = std::move(error);
    run_ms_ = ms;
    ++wait_id_;
  }
  finished_.store(true, std::memory_order_release);
}

ContextStatus Context::status() const {
  MutexLock lock(mu_);
  return status_;
}

Context::Summary Context::summary() const {
  MutexLock lock(mu_);
  return Summary{status_, run_ms_, steps_.size(), started_at_, ended_at_, error_};
}

Value Context::to_value(size_t value_limit) const {
  MutexLock lock(mu_);
  RecordFields f;
  f.seq = seq;
  f.id = id;
  f.flow = flow->id_value;
  f.plan_version = plan_version_;
  f.variable_names = &variable_names_;
  f.status = status_;
  f.trigger = &trigger;
  f.cause = &cause;
  f.started = started_at_;
  f.ended = ended_at_;
  f.run_ms = run_ms_;
  f.steps = &steps_;
  f.logs = &logs_;
  f.variables = &variables_;
  f.error = error_;
  f.value_limit = value_limit;
  return record_to_value(f);
}

}  // namespace flowrt
