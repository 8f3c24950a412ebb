// log, fail, fire_event, start_flow, wait.
#include "actions/builtin/basic_actions.h"

#include "actions/builtin/common.h"

namespace flowrt::builtin {

StepOutcome LogAction::start(const StepCall& call) const {
  LogLevel level = LogLevel::kInfo;
  const Value& lv = call.input("level");
  if (std::string e = checked(call, "level"); !e.empty()) return StepOutcome::failed(e);
  if (!lv.is_null() && (!lv.is_string() || !parse_level(lv.as_string(), &level))) {
    return StepOutcome::failed(wrong_type("level", "info, warn or error", lv));
  }
  call.host.log(level, text_of(call.input("message")));
  return StepOutcome::done(Value::empty_object());
}

StepOutcome FailAction::start(const StepCall& call) const {
  std::string message = text_of(call.input("message"));
  return StepOutcome::failed(message.empty() ? "fail step" : message);
}

StepOutcome FireEventAction::start(const StepCall& call) const {
  const Value& name = call.input("name");
  if (!name.is_string() || name.as_string().empty()) return StepOutcome::failed(wrong_type("name", "a non-empty string", name));
  Status s = call.host.fire_event(name, call.input("payload"));
  if (!s) return StepOutcome::failed(s.message());
  return StepOutcome::done(Value::empty_object());
}

StepOutcome StartFlowAction::start(const StepCall& call) const {
  const Value& flow = call.input("flow");
  if (!flow.is_string() || flow.as_string().empty()) return StepOutcome::failed(wrong_type("flow", "a flow id", flow));
  const Value& inputs = call.input("inputs");
  if (!inputs.is_null() && !inputs.is_object()) return StepOutcome::failed(wrong_type("inputs", "an object", inputs));
  Result<StartedFlow> started = call.host.start_flow(flow, inputs.is_null() ? Value::empty_object() : inputs);
  if (!started) return StepOutcome::failed(started.message());
  return StepOutcome::done(Value::object({{"context_id", started->context_id}, {"skipped", Value(started->skipped)}}));
}

StepOutcome WaitAction::start(const StepCall& call) const {
  Result<DurationMs> d = parse_duration(call.input("duration"));
  if (!d) return StepOutcome::failed("input 'duration': " + d.message());
  if (*d == 0) return StepOutcome::done(Value::empty_object());
  WaitRequest wait;
  wait.kind = WaitRequest::Kind::kTimer;
  wait.deadline = add_duration(call.host.now(), *d);
  return StepOutcome::park(std::move(wait));
}

}  // namespace flowrt::builtin
