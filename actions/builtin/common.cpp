#include "actions/builtin/common.h"

#include "compiler/signatures.h"

namespace flowrt::builtin {

std::string wrong_type(std::string_view input, std::string_view wanted, const Value& got) {
  return "input '" + std::string(input) + "' must be " + std::string(wanted) + ", got " + shown_value(got);
}

std::string checked(const StepCall& call, std::string_view name) {
  return check_builtin_input(call.step.kind, name, call.input(name));
}

Result<std::string_view> string_input(const StepCall& call, std::string_view name) {
  const Value& v = call.input(name);
  if (!v.is_string() || v.as_string().empty()) return Error{wrong_type(name, "a non-empty string", v)};
  return v.as_string();
}

std::string text_of(const Value& v) {
  std::string out;
  append_text(v, out);
  return out;
}

}  // namespace flowrt::builtin
