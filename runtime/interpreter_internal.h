// What interpreter.cpp and interpreter_budgets.cpp share: the error value a context or a
// step fails with, and the coarse clock the running-time quota is measured on. Internal to
// runtime/ (interpreter*.cpp); not part of the Interpreter's interface.
#pragma once

#include <time.h>

#include <cstdint>
#include <string>
#include <string_view>

#include "plans/value.h"

namespace flowrt::interpreter_internal {

// {"message", "step"}: a context's error, and the error a catch block sees.
inline Value error_value(const std::string& message, const Value& step) {
  return Value::object({{"message", Value(std::string_view(message))}, {"step", step}});
}

// Milliseconds on the coarse monotonic clock: no system call, and within a kernel tick,
// plenty for a quota measured in milliseconds.
inline int64_t coarse_monotonic_ms() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000 + ts.tv_nsec / 1000000;
}

}  // namespace flowrt::interpreter_internal
