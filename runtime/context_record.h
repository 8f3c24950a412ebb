// The parts of a context execution record (SPEC section 10): statuses, step entries and
// log lines. Plain data; a Context guards its own.
#pragma once

#include <cstdint>
#include <optional>
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
// The context status whose status_name is `name`; nothing for any other text.
std::optional<ContextStatus> context_status_named(std::string_view name);
// "in_progress, waiting, completed, cancelled or error": the names, for messages.
constexpr std::string_view kContextStatusNames = "in_progress, waiting, completed, cancelled or error";

// One entry of a record's "steps": an action step or a flow-logic node that ran. Holds its
// own (shared) values, so a record outlives the plan it was made with.
// One step of a context record. 80 bytes: a context keeps one per step it ran.
struct StepEntry {
  Value path;                     // "3", "4.then.1", "5.do.2#3"
  const Node* node = nullptr;     // in the context's plan, which the context keeps: the
                                  // step's id and action type
  TimeMs started = 0;
  TimeMs ended = -1;
  Value inputs;                   // object of the inputs given, rendered
  Value outputs;                  // object, or null; a failed step's message is its "error"
  StepStatus status = StepStatus::kInProgress;
};

struct LogEntry {
  TimeMs time = 0;
  LogLevel level = LogLevel::kInfo;
  Value step;                     // path of the step that logged
  Value message;
};

}  // namespace flowrt
