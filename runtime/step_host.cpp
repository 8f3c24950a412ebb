#include "runtime/step_host.h"

#include "compiler/input_checks.h"
#include "runtime/engine_core.h"
#include "runtime/flow_slot.h"
#include "runtime/text.h"

namespace flowrt {
namespace {

Result<std::string_view> name_arg(std::string_view what, const Value& v) {
  if (!v.is_string() || v.as_string().empty()) {
    return Error{"input '" + std::string(what) + "' must be a non-empty string, got " + shown_value(v)};
  }
  return v.as_string();
}

// Holds a call's gate for one host method; false when the call was given up on. Without a
// call (a built-in action) there is nothing to hold.
class Entered {
 public:
  explicit Entered(Watchdog::Call* call) : call_(call && call->enter() ? call : nullptr), ok_(!call || call_) {}
  ~Entered() {
    if (call_) call_->leave();
  }
  Entered(const Entered&) = delete;
  Entered& operator=(const Entered&) = delete;
  explicit operator bool() const { return ok_; }

 private:
  Watchdog::Call* call_;
  bool ok_;
};

Error given_up_error() { return Error{std::string(ContextHost::kGivenUpMessage)}; }

// Where the context's trigger record was installed, when a step names that very record.
RowHint trigger_row(const Context& ctx, std::string_view table, std::string_view sys_id) {
  const TriggerData& trigger = ctx.trigger;
  if (ctx.trigger_row == UINT32_MAX || trigger.table.as_string() != table || trigger.sys_id.as_string() != sys_id) {
    return {};
  }
  return RowHint{ctx.trigger_row, &trigger.record};
}

}  // namespace

TimeMs ContextHost::now() const {
  Entered in(call_);
  if (!in) return last_now_;
  last_now_ = core_.clock.now();
  return last_now_;
}

bool ContextHost::cancel_requested() const {
  Entered in(call_);
  if (!in) return true;
  // Cancelled, past its quota, or the engine is stopping: time to return.
  return ctx_.cancel_requested() || core_.workers.stopping() || (over_quota_ && over_quota_());
}

void ContextHost::log(LogLevel level, std::string_view message) {
  Entered in(call_);
  if (!in) return;
  ctx_.add_log(level, step_, core_.clock.now(), Value(message));
}

Result<Value> ContextHost::create_record(const Value& table, const Value& values, const Value& while_holding) {
  Entered in(call_);
  if (!in) return given_up_error();
  Result<std::string_view> t = name_arg("table", table);
  if (!t) return t.error();
  return core_.dispatcher.insert(*t, values, Origin{&ctx_, Value()}, while_holding);
}

Result<Value> ContextHost::update_record(const Value& table, const Value& sys_id, const Value& values,
                                         const Value& while_holding) {
  Entered in(call_);
  if (!in) return given_up_error();
  Result<std::string_view> t = name_arg("table", table);
  if (!t) return t.error();
  Result<std::string_view> id = name_arg("sys_id", sys_id);
  if (!id) return id.error();
  return core_.dispatcher.update(*t, *id, values, Origin{&ctx_, Value()}, while_holding,
                                 trigger_row(ctx_, *t, *id));
}

Result<bool> ContextHost::delete_record(const Value& table, const Value& sys_id, const Value& while_holding) {
  Entered in(call_);
  if (!in) return given_up_error();
  Result<std::string_view> t = name_arg("table", table);
  if (!t) return t.error();
  Result<std::string_view> id = name_arg("sys_id", sys_id);
  if (!id) return id.error();
  Result<Value> removed = core_.dispatcher.remove(*t, *id, Origin{&ctx_, Value()}, while_holding, /*missing_ok=*/true);
  if (!removed) return removed.error();
  return !removed->is_null();
}

Result<Value> ContextHost::find_records(const RecordQuery& query) {
  Entered in(call_);
  if (!in) return given_up_error();
  return core_.dispatcher.find(query);
}

Value ContextHost::read_record(std::string_view table, std::string_view sys_id) {
  Entered in(call_);
  if (!in) return Value();
  return core_.dispatcher.get(table, sys_id, trigger_row(ctx_, table, sys_id));
}

Status ContextHost::fire_event(const Value& name, const Value& payload) {
  Entered in(call_);
  if (!in) return given_up_error();
  return core_.dispatcher.fire_event(name, payload, Origin{&ctx_, Value()});
}

bool ContextHost::release_lock(std::string_view name) {
  Entered in(call_);
  if (!in) return false;
  const bool released = core_.dispatcher.release_lock(ctx_, name);
  if (released) ctx_.add_log(LogLevel::kInfo, step_, core_.clock.now(), Value(std::string_view(str_cat({"lock '", name, "': released"}))));
  return released;
}

Value ContextHost::try_lock(const WaitRequest& w) {
  Entered in(call_);
  if (!in) return Value();
  LockRequest r;
  r.who = ctx_.seq;
  r.owner = &ctx_;
  r.name = std::string(w.lock_name.as_string());
  r.weight = w.weight;
  r.give_up_at = w.deadline;
  r.max_duration = w.max_duration;
  r.step = step_;
  r.max_attempts = w.max_attempts;
  r.delay = w.delay;
  bool took_place = false;
  Value granted = core_.dispatcher.try_lock(ctx_, std::move(r), &took_place);
  if (took_place) ctx_.exec().lock_place = w.lock_name;
  return granted;
}

Result<StartedFlow> ContextHost::start_flow(const Value& flow, const Value& inputs) {
  Entered in(call_);
  if (!in) return given_up_error();
  return core_.start_api_flow(flow.as_string(), inputs, Origin{&ctx_, Value()});
}

}  // namespace flowrt
