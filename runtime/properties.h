// EngineProperties: the runtime's tunable rules and budgets (config.json "properties",
// the events file's set_property, and the library API). Every field documents its default.
// A plain value; the engine copies it under its own lock when one changes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

#include "flowrt/plans/result.h"
#include "flowrt/plans/time.h"
#include "flowrt/plans/value.h"

namespace flowrt {

// How a durable store makes each batch of changes durable (docs/DURABILITY.md): kFull syncs
// every batch to disk (survives a power cut), kNormal writes every batch and syncs at
// checkpoints (survives a crash of the process), kOff writes without syncing and does not
// make operations wait for the write (tests and benchmarks). The memory store ignores it.
enum class Durability : uint8_t { kFull, kNormal, kOff };
std::string_view durability_name(Durability d);

// The largest indirect_recursion_limit a config may set (one set in EngineOptions is
// taken as at most this): every context keeps its causal chain, so a chain of contexts
// costs the square of its length.
inline constexpr int64_t kMaxIndirectRecursionLimit = 1000;

struct EngineProperties {
  // Action steps per flow, subflow or action, counted through nested logic (a call is one).
  uint32_t max_actions = 50;
  // Steps per "type": "action" definition.
  uint32_t max_action_steps = 20;
  // Iterations of one for_each; past it the step fails.
  uint32_t max_iterations = 1000;
  // Steps one context records (every step entry: nested logic, loop turns and called units
  // included); the context would record one more ends in error, as past max_run_time.
  size_t max_context_steps = 100000;
  // Runs of one flow in one causal chain; values below 1 mean 1.
  int64_t indirect_recursion_limit = 3;  // at most kMaxIndirectRecursionLimit
  // Running time of a context (waiting excluded) before it ends in error.
  DurationMs max_run_time = 3600000;
  // Bytes of one input or output value kept in a context record; larger ones are truncated
  // in the record (the flow itself sees them whole).
  size_t record_value_limit = 16384;
  // Worker threads; 0 = one per core.
  uint32_t worker_threads = 0;
  // Finished context records kept; the oldest are dropped first. 0 = keep all.
  size_t context_retention = 0;
  // history_retention, with a durable store: ended contexts older than this (by their end,
  // on the engine clock) are deleted from the store; 0 = no age limit.
  DurationMs history_max_age = 0;
  // history_retention: at most this many ended contexts are kept in the store, the lowest
  // seqs deleted first; 0 = no count limit. Contexts not ended are never deleted.
  size_t history_max_count = 0;
  // With a durable store (EngineOptions::store): full, normal or off (see Durability).
  Durability durability = Durability::kNormal;
  // Worker threads abandoned in custom actions that never returned (see runtime/watchdog.h)
  // and still stuck; at this many, custom actions are refused (the step fails).
  uint32_t max_abandoned_threads = 64;

  // ---- input budgets (docs/BEHAVIOUR.md, "Budgets"): past one, a clear error ----
  // Bytes of one definition file (or text given to Engine::load_text), checked before parsing.
  size_t max_definition_file_bytes = size_t{64} << 20;
  // Bytes of one events file, checked before parsing.
  size_t max_events_file_bytes = size_t{64} << 20;
  // Nesting of arrays and objects in any JSON read (definitions, events lines).
  uint32_t max_json_depth = 256;
  // Bytes of one JSON string or key, as written between its quotes.
  size_t max_string_bytes = size_t{16} << 20;
  // Definitions registered in the engine (all types, drafts included).
  size_t max_definitions = 100000;
  // Bytes of one template (a definition string holding a {{pill}}).
  size_t max_template_bytes = size_t{1} << 20;
  // Bytes of one record field value (its compact JSON) written by an operation or action.
  size_t max_record_value_bytes = size_t{16} << 20;
  // Bytes of the compact JSON of one value a flow puts together from pills (a variable or
  // output it sets, a step input), and so of any such value a record keeps.
  size_t max_value_bytes = size_t{64} << 20;
  // Contexts waiting (parked) at once; a step that would wait past it fails.
  size_t max_waiting_contexts = 1000000;
  // Trigger events queued and not yet started; an operation that would queue more is refused.
  size_t max_queued_events = 1000000;
  // The shortest `every` of a schedule trigger; a flow with a shorter one cannot be
  // loaded, activated or published.
  DurationMs min_schedule_interval = 1000;
  // Schedule triggers one advance (virtual clock) may fire; past it the advance stops
  // with an error and the rest fire at the next advance.
  size_t max_schedule_fires_per_advance = 100000;
};

// Sets property `name` from a JSON value, checking its type and range.
Status set_property(EngineProperties* props, std::string_view name, const Value& value);
// The names of every property, for messages.
std::string_view property_names();
// Every property as a JSON object.
Value properties_to_value(const EngineProperties& props);

}  // namespace flowrt
