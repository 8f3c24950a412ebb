// The parts of a context execution record (SPEC section 10): statuses, step entries and
// log lines. Plain data; a Context guards its own.
#pragma once

#include <cstdint>
#include <string_view>

#include "actions/action.h"
#include "plans/plan.h"
#include "plans/time.h"
#include "plans/value.h"

namespace flowrt {

enum class ContextStatus : uint8_t { kInProgress, kWaiting, kCompleted, kCancelled, kError };
enum class StepStatus : uint8_t { kInProgress, kWaiting, kCompleted, kError, kSkipped };

std::string_view status_name(ContextStatus s);
std::string_view status_name(StepStatus s);
bool is_terminal(ContextStatus s);

// One entry of a record's "steps": an action step or a flow-logic node that ran. Holds its
// own (shared) values, so a record outlives the plan it was made with.
struct StepEntry {
  Value path;                     // "3", "4.then.1", "5.do.2#3"
  Value id;                       // null when the step has none
  Value action;                   // action type, or "if", "for_each", "try", "end"
  TimeMs started = 0;
  TimeMs ended = -1;
  StepStatus status = StepStatus::kInProgress;
  Value inputs;                   // object of the inputs given, rendered
  Value outputs;                  // object, or null; a failed step's message is its "error"
};

struct LogEntry {
  TimeMs time = 0;
  LogLevel level = LogLevel::kInfo;
  Value step;                     // path of the step that logged
  Value message;
};

}  // namespace flowrt
