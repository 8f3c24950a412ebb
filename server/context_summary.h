// The short form of a context record that lists and the event stream give:
// {"id", "seq", "flow", "status", "trigger", "started_at", "ended_at", "runtime_ms", "error",
//  "steps"} (steps: how many the record has).
#pragma once

#include <string_view>

#include "plans/value.h"

namespace flowrt::server {

Value context_summary(const Value& record);

// Whether a context status is one it ended in (completed, cancelled, error).
inline bool is_final_status(std::string_view status) {
  return status == "completed" || status == "cancelled" || status == "error";
}

}  // namespace flowrt::server
