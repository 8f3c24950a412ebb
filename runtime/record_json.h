// Context records as JSON (SPEC section 10). Free functions over borrowed data; the caller
// holds whatever lock guards it.
#pragma once

#include <span>
#include <string>
#include <vector>

#include "plans/eval.h"
#include "runtime/context_record.h"

namespace flowrt {

struct Cause;

struct RecordFields {
  uint64_t seq = 0;
  Value id;
  Value flow;
  Value plan_version;          // null before the context started (or when it did not compile)
  Value variable_names;        // array
  ContextStatus status = ContextStatus::kInProgress;
  const TriggerData* trigger = nullptr;
  const Cause* cause = nullptr;
  TimeMs started = -1;
  TimeMs ended = -1;
  double run_ms = 0;
  const std::vector<StepEntry>* steps = nullptr;
  std::span<const LogEntry> logs;
  Value variables;             // array, by the position of variable_names
  Value error;
  size_t value_limit = 0;
};

Value record_to_value(const RecordFields& f);
// Appends write_json(record_to_value(f))'s bytes to `out`, written straight from the fields
// (runtime/record_text.cpp): what a durable store keeps for an ended context.
void write_record_json(const RecordFields& f, std::string& out);
// {"type": "record", "table", "operation", "sys_id"} and the like.
// An API trigger shows the inputs the start was called with, each capped by `value_limit`
// as step inputs are (0 = no cap).
Value trigger_to_value(const TriggerData& t, size_t value_limit = 0);
// `v` itself, or when its JSON is longer than `limit` bytes, a string holding the start of
// that JSON and a marker "...[truncated: N bytes]".
Value limit_value(const Value& v, size_t limit);
// A log message cut to its first `limit` bytes (never inside a UTF-8 character) and the
// marker "...[truncated: N bytes]" when it is longer (0 = no cap); not a string: as it is.
Value limit_text(const Value& message, size_t limit);
// The length of the longest prefix of `s` of at most `limit` bytes that ends on a UTF-8
// character boundary.
size_t utf8_prefix(std::string_view s, size_t limit);
// The inputs a step was given, as its record shows them: name -> rendered value, for the
// inputs present; call_subflow shows {"subflow", "inputs"}. `rendered` is in the step's
// input order.
Value step_inputs_record(const ActionStep& step, std::span<const Value> rendered);
// A call_subflow step's record of its inputs around `named`, the subflow's inputs given.
Value subflow_call_record(const ActionStep& step, Value named);

}  // namespace flowrt
