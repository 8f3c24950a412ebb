// The model's own reading of templates and conditions (SPEC sections 4 and 5), written from
// the SPEC and independent of the engine's compiler and evaluator. Contract: it covers what
// the generator writes (FlowBuilder): pills over flow.id, context.id, trigger.*, vars.*,
// inputs.*, steps.ID.*, the loop item, error.*; the transforms add sub mul div mod upper
// lower trim length default not json; conditions with field or pill, the compare ops, the
// changes ops, all / any / not. A string that is exactly one pill keeps the pill's type;
// pills inside longer text are rendered as text (null as empty, objects as compact JSON).
#pragma once

#include <map>
#include <string>

#include "plans/result.h"
#include "plans/value.h"

namespace flowrt::sim {

// What a pill can read, as the model knows it.
struct ModelScope {
  Value flow_id, context_id;
  // {"record", "previous", "sys_id", "table", "operation", "time", "payload", "type"}
  Value trigger;
  bool has_previous = false;  // trigger.previous exists (update triggers)
  Value vars = Value::empty_object();
  Value inputs = Value::empty_object();
  Value item;              // the current loop item (null outside loops)
  std::string item_name;   // its `as` name ("item" always works)
  const std::map<std::string, Value>* steps = nullptr;  // step id -> outputs
  Value error;             // in a catch block: {"message", "step"}
};

// Renders every string of `v` (recursively through objects and arrays).
Result<Value> model_render(const Value& v, const ModelScope& scope);
// Evaluates a flow-logic condition; `field` conditions read trigger.record.
Result<bool> model_condition(const Value& cond, const ModelScope& scope);
// The compare ops of SPEC 4 on values the model already has.
bool model_compare(std::string_view op, const Value& subject, const Value& value, const Value& previous);

}  // namespace flowrt::sim
