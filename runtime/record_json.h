// Context records as JSON (SPEC section 10). Free functions over borrowed data; the caller
// holds whatever lock guards it.
#pragma once

#include <vector>

#include "plans/eval.h"
#include "runtime/context_record.h"

namespace flowrt {

struct Cause;

struct RecordFields {
  uint64_t seq = 0;
  Value id;
  Value flow;
  const Plan* plan = nullptr;  // null before the context started (or when it did not compile)
  ContextStatus status = ContextStatus::kInProgress;
  const TriggerData* trigger = nullptr;
  const Cause* cause = nullptr;
  TimeMs started = -1;
  TimeMs ended = -1;
  double run_ms = 0;
  const std::vector<StepEntry>* steps = nullptr;
  const std::vector<LogEntry>* logs = nullptr;
  const std::vector<Value>* variables = nullptr;
  Value error;
  size_t value_limit = 0;
};

Value record_to_value(const RecordFields& f);
// {"type": "record", "table", "operation", "sys_id"} and the like.
Value trigger_to_value(const TriggerData& t);
// `v` itself, or when its JSON is longer than `limit` bytes, a string holding the start of
// that JSON and a marker "...[truncated: N bytes]".
Value limit_value(const Value& v, size_t limit);
// Name of a flow-logic node or action step ("if", "for_each", "look_up_record", ...).
std::string_view node_action_name(const Node& node);

}  // namespace flowrt
