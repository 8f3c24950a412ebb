#include "actions/action.h"

namespace flowrt {

std::string_view level_name(LogLevel level) {
  switch (level) {
    case LogLevel::kInfo: return "info";
    case LogLevel::kWarn: return "warn";
    case LogLevel::kError: return "error";
  }
  return "info";
}

bool parse_level(std::string_view name, LogLevel* level) {
  if (name == "info") *level = LogLevel::kInfo;
  else if (name == "warn" || name == "warning") *level = LogLevel::kWarn;
  else if (name == "error") *level = LogLevel::kError;
  else return false;
  return true;
}

const Value& StepCall::input(std::string_view name) const {
  const int i = step.input_index(name);
  return i < 0 || static_cast<size_t>(i) >= inputs.size() ? null_value() : inputs[static_cast<size_t>(i)];
}

StepOutcome Action::resume(const StepCall&, const WakeUp&) const { return StepOutcome::done(Value::empty_object()); }

}  // namespace flowrt
