// EngineProperties: the runtime's tunable rules and budgets (config.json "properties",
// the events file's set_property, and the library API). Every field documents its default.
// A plain value; the engine copies it under its own lock when one changes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

#include "plans/result.h"
#include "plans/time.h"
#include "plans/value.h"

namespace flowrt {

struct EngineProperties {
  // Action steps per flow, subflow or action, counted through nested logic (a call is one).
  uint32_t max_actions = 50;
  // Steps per "type": "action" definition.
  uint32_t max_action_steps = 20;
  // Iterations of one for_each; past it the step fails.
  uint32_t max_iterations = 1000;
  // Runs of one flow in one causal chain; values below 1 mean 1.
  int64_t indirect_recursion_limit = 3;
  // Running time of a context (waiting excluded) before it ends in error.
  DurationMs max_run_time = 3600000;
  // Bytes of one input or output value kept in a context record; larger ones are truncated
  // in the record (the flow itself sees them whole).
  size_t record_value_limit = 16384;
  // Worker threads; 0 = one per core.
  uint32_t worker_threads = 0;
  // Finished context records kept; the oldest are dropped first. 0 = keep all.
  size_t context_retention = 0;
};

// Sets property `name` from a JSON value, checking its type and range.
Status set_property(EngineProperties* props, std::string_view name, const Value& value);
// The names of every property, for messages.
std::string_view property_names();
// Every property as a JSON object.
Value properties_to_value(const EngineProperties& props);

}  // namespace flowrt
