// Helpers shared by the built-in actions. Internal to actions/.
#pragma once

#include <string>

#include "actions/action.h"

namespace flowrt::builtin {

// "input 'table' must be a string, got 5"
std::string wrong_type(std::string_view input, std::string_view wanted, const Value& got);
// What is wrong with the rendered input `name`, as the compiler says it of a literal
// (compiler/input_checks.h); "" when it is fine or absent.
std::string checked(const StepCall& call, std::string_view name);
// The input as a non-empty string, or an error naming it.
Result<std::string_view> string_input(const StepCall& call, std::string_view name);
// The text a value renders as inside a message.
std::string text_of(const Value& v);

}  // namespace flowrt::builtin
