#include "actions/builtin/lock_actions.h"

#include "actions/builtin/common.h"
#include "plans/value_json.h"

namespace flowrt::builtin {

StepOutcome LockAction::start(const StepCall& call) const {
  Result<std::string_view> key = string_input(call, "key");
  if (!key) return StepOutcome::failed(key.message());
  // A lock's name is kept as text (a PostgreSQL server refuses any other). Text from JSON
  // is UTF-8; a value a C++ caller or custom action built may not be.
  if (!is_well_formed_utf8(*key)) return StepOutcome::failed("input 'key' must be UTF-8 (a lock's name is kept as text)");
  WaitRequest wait;
  wait.kind = WaitRequest::Kind::kLock;
  wait.lock_name = call.input("key");
  // The same checks as the compiler's on literals (compiler/input_checks.h).
  for (std::string_view input : {"weight", "max_duration", "max_attempts", "delay"}) {
    if (std::string e = checked(call, input); !e.empty()) return StepOutcome::failed(e);
  }
  if (const Value& w = call.input("weight"); !w.is_null()) wait.weight = w.as_int();
  if (const Value& d = call.input("max_duration"); !d.is_null()) wait.max_duration = *parse_duration(d);
  if (const Value& a = call.input("max_attempts"); !a.is_null()) wait.max_attempts = a.as_int();
  if (const Value& d = call.input("delay"); !d.is_null()) wait.delay = *parse_duration(d);
  // The request gives up (max_attempts - 1) x delay after it is made: a duration like any
  // other, so at most kMaxDuration.
  if (wait.delay > 0 && wait.max_attempts - 1 > kMaxDuration / wait.delay) {
    return StepOutcome::failed("input 'max_attempts': " + std::to_string(wait.max_attempts) + " attempts " +
                               format_duration(wait.delay) + " apart would wait longer than the maximum duration of " +
                               format_duration(kMaxDuration) + " ((max_attempts - 1) x delay)");
  }
  wait.requested_at = call.host.now();
  wait.deadline = add_duration(wait.requested_at, (wait.max_attempts - 1) * wait.delay);
  Value granted = call.host.try_lock(wait);
  if (!granted.is_null()) return StepOutcome::done(std::move(granted));
  return StepOutcome::park(std::move(wait));
}

StepOutcome LockAction::resume(const StepCall&, const WakeUp& wake) const {
  if (wake.kind != WakeUp::Kind::kLock) return StepOutcome::failed("unexpected wake-up of lock");
  if (!wake.error.empty()) return StepOutcome::failed(wake.error, wake.outputs);
  return StepOutcome::done(wake.outputs);
}

StepOutcome UnlockAction::start(const StepCall& call) const {
  Result<std::string_view> key = string_input(call, "key");
  if (!key) return StepOutcome::failed(key.message());
  const bool released = call.host.release_lock(*key);
  if (!released) call.host.log(LogLevel::kWarn, "unlock of lock '" + std::string(*key) + "', which this context does not hold");
  static const Value kReleased = intern_shape({"released"});
  return StepOutcome::done(Value::object(kReleased, {Value(released)}));
}

}  // namespace flowrt::builtin
