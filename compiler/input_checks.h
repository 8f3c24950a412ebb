// Input checks: what a built-in action's input must be, checked the same way on a literal
// at compile time (the compiler) and on the rendered value at run time (the actions), with
// one message: "input 'max_attempts' must be an integer of at least 1, got -3".
//
// A null optional input means "the default" and passes every check. Free functions;
// thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "plans/plan.h"
#include "plans/value.h"
#include "plans/value_json.h"

namespace flowrt {

// What an input must be beyond its declared type.
enum class InputCheck : uint8_t {
  kNone,                // only the declared type
  kNonEmptyString,      // a string of at least one character
  kLogLevel,            // "info", "warn" or "error"
  kPositiveInteger,     // an integer of at least 1
  kNonNegativeInteger,  // an integer of at least 0
  kDuration,            // a duration (plans/time.h), at most 36500d
  kPositiveDuration,    // a duration longer than 0ms
};

// "a string", "an integer", ... for messages.
std::string_view wanted_type(ParamType type);

// "" when `v` is a valid value of input `name`; otherwise what is wrong, naming the input
// and the value.
std::string check_input_value(std::string_view name, ParamType type, InputCheck check, const Value& v);

}  // namespace flowrt
