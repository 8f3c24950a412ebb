// Rendering templates and evaluating conditions at run time.
//
// Pure functions over a Scope of borrowed values: no parsing, no name lookups beyond the
// member accesses a pill's path asks for. Thread-safe. A run-time error (a transform given
// the wrong type, a division by zero) comes back as an Error naming the pill.
#pragma once

#include <span>
#include <string>

#include "flowrt/plans/condition.h"
#include "flowrt/plans/result.h"
#include "flowrt/plans/template.h"
#include "flowrt/plans/time.h"
#include "flowrt/plans/trigger_spec.h"
#include "flowrt/plans/value.h"

namespace flowrt {

// What started a context; what trigger.* pills read. Plain data.
struct TriggerData {
  TriggerType type = TriggerType::kApi;
  RecordOperation operation = RecordOperation::kInsert;
  bool has_previous = false;
  TimeMs time = 0;        // commit time, or the scheduled time of a schedule trigger
  Value table;
  Value sys_id;
  Value record;           // after the operation (for delete, as it was)
  Value previous;         // before an update
  Value payload;          // event payload
  Value event_name;
  Value caller;           // who made the operation that started it (flowrt serve's token name), or null
};

// Everything a pill can read. Pointers and spans are borrowed; absent parts read as null.
struct Scope {
  const TriggerData* trigger = nullptr;
  std::span<const Value> steps;      // step outputs by slot
  std::span<const Value> variables;  // by slot
  std::span<const Value> inputs;     // declared inputs by slot
  const Value* input_object = nullptr;  // inputs by name (flows without declared inputs)
  std::span<const Value> items;      // for_each items by loop depth
  const Value* error = nullptr;      // {"message", "step"} inside a catch block
  const Value* context_id = nullptr;
  const Value* flow_id = nullptr;
  const Value* record = nullptr;     // the record under test ("field" conditions)
  const Value* previous = nullptr;   // that record before the operation, when there was one
  // The largest text the `json` transform may make (the engine's max_value_bytes): each
  // `json` in a chain doubles a string or more, so a chain is stopped where it passes.
  size_t max_value_bytes = size_t{64} << 20;
};

// The pill's value before transforms; null when the path has no value.
Value resolve_pill(const Pill& pill, const Scope& scope);
// The pill's value after its transforms.
Result<Value> evaluate_pill(const Pill& pill, const Scope& scope);
Result<Value> render(const Template& t, const Scope& scope);
Result<bool> evaluate(const Condition& c, const Scope& scope);

// A copy of `c` with every value template rendered now, so that it can be tested later
// against a record alone (a wait). A compare whose subject is not a "field" is decided now.
Result<Condition> bind_condition(const Condition& c, const Scope& scope);

// Comparison of two values by a condition op, with `previous` for the changes ops
// (nullptr when there is no previous value). Values of different JSON types compare false.
bool compare(CompareOp op, const Value& subject, const Value& value, const Value* previous);

// Text of a value as a pill inside a longer string renders it: strings raw, null empty,
// objects and arrays as compact JSON.
void append_text(const Value& v, std::string& out);

// Applies one transform; errors name `pill_text`. `scope` reads a pill argument.
Result<Value> apply_transform(const Transform& t, const Value& input, const std::string& pill_text,
                              const Scope* scope = nullptr);

// Falsy: null, false, 0, "", [], {}.
bool truthy(const Value& v);
// null, "", [], {}.
bool is_empty_value(const Value& v);

}  // namespace flowrt
