// Interpreter, the budgets a context runs within: its running time (max_run_time, checked
// before every step and when a custom action returns, on the coarse clock), the steps it
// may record (max_context_steps), and the size and depth of a value a template puts
// together (max_value_bytes, max_json_depth). Each check names the property it enforces.
#include <string>

#include "plans/time.h"
#include "plans/value_json.h"
#include "runtime/engine_core.h"
#include "runtime/interpreter.h"
#include "runtime/interpreter_internal.h"

namespace flowrt {
namespace {

using interpreter_internal::coarse_monotonic_ms;
using interpreter_internal::error_value;

}  // namespace

double Interpreter::elapsed_ms() const {
  return core_.run_clock_ms() - slice_start_;
}

bool Interpreter::over_quota() const {
  // Checked before every step: the coarse clock costs no system call and is within a
  // kernel tick, plenty for a quota measured in milliseconds. An injected clock (tests)
  // is read as it is.
  if (core_.options.run_clock) return ctx_.exec().run_ms + elapsed_ms() > static_cast<double>(props_.max_run_time);
  return static_cast<double>(coarse_monotonic_ms() - coarse_start_) > budget_ms_;
}

Interpreter::Flow Interpreter::quota_exceeded(int64_t record, const Value& path) {
  const std::string message = quota_message();
  if (record >= 0) ctx_.end_step(record, StepStatus::kError, now(), Value(), Value(std::string_view(message)));
  return finish(ContextStatus::kError, error_value(message, path));
}

std::string Interpreter::over_value_budget(const Template& t, const Value& v, const char* kind, const Value& name) const {
  // A constant was bounded when its definition was read, and a single pill's value is one a
  // step, a variable, an input or the trigger holds, each bounded where it was made. What a
  // template puts together (text, arrays, objects of pills) can grow without end: a
  // variable set from itself twice, in a loop, doubles at every turn while sharing its
  // parts, so it costs no memory until something writes it out (the record, a store).
  if (t.kind != Template::Kind::kText && t.kind != Template::Kind::kArray && t.kind != Template::Kind::kObject) {
    return "";
  }
  const ValueBound bound = bound_value(v, props_.max_value_bytes, props_.max_json_depth);
  if (bound == ValueBound::kWithin) return "";
  const std::string what = std::string(kind) + " '" + std::string(name.as_string()) + "'";
  switch (bound) {
    case ValueBound::kWithin: return "";
    case ValueBound::kTooLarge:
      return what + " is larger than the limit of " + std::to_string(props_.max_value_bytes) +
             " bytes of JSON (max_value_bytes)";
    case ValueBound::kTooDeep:
      return what + " nests deeper than the limit of " + std::to_string(props_.max_json_depth) +
             " (max_json_depth)";
  }
  return "";
}

std::string Interpreter::steps_message() const {
  return "the context would record more than " + std::to_string(props_.max_context_steps) +
         " steps (max_context_steps)";
}

std::string Interpreter::quota_message() const {
  return "the context ran longer than max_run_time (" + format_duration(props_.max_run_time) + ")";
}

}  // namespace flowrt
