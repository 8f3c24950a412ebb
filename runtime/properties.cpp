#include "runtime/properties.h"

#include <string>

#include "plans/value_json.h"

namespace flowrt {
namespace {

Result<int64_t> integer(std::string_view name, const Value& v, int64_t min, int64_t max) {
  if (!v.is_int() && !(v.is_double() && v.as_double() == static_cast<double>(v.as_int()))) {
    return Error{"property " + std::string(name) + " must be an integer, not " + std::string(type_name(v.type()))};
  }
  const int64_t i = v.as_int();
  if (i < min || i > max) {
    return Error{"property " + std::string(name) + " must be between " + std::to_string(min) + " and " +
                 std::to_string(max) + ", not " + std::to_string(i)};
  }
  return i;
}

}  // namespace

std::string_view durability_name(Durability d) {
  switch (d) {
    case Durability::kFull: return "full";
    case Durability::kNormal: return "normal";
    case Durability::kOff: return "off";
  }
  return "normal";
}

std::string_view property_names() {
  return "max_actions, max_action_steps, max_iterations, max_context_steps, indirect_recursion_limit, max_run_time, "
         "record_value_limit, worker_threads, context_retention, history_retention, durability, max_abandoned_threads, max_definition_file_bytes, max_events_file_bytes, "
         "max_json_depth, max_string_bytes, max_definitions, max_template_bytes, max_record_value_bytes, max_value_bytes, "
         "max_waiting_contexts, max_queued_events, min_schedule_interval, max_schedule_fires_per_advance";
}

Status set_property(EngineProperties* p, std::string_view name, const Value& v) {
  auto set_int = [&](auto* field, int64_t min, int64_t max) -> Status {
    Result<int64_t> i = integer(name, v, min, max);
    if (!i) return i.error();
    *field = static_cast<std::remove_reference_t<decltype(*field)>>(*i);
    return Status::ok();
  };
  if (name == "max_actions") return set_int(&p->max_actions, 1, 100000);
  if (name == "max_action_steps") return set_int(&p->max_action_steps, 1, 100000);
  if (name == "max_iterations") return set_int(&p->max_iterations, 0, 100000000);
  if (name == "max_context_steps") return set_int(&p->max_context_steps, 1, int64_t{1} << 32);
  if (name == "indirect_recursion_limit") {
    // Each context keeps its causal chain, which the limit bounds: a chain of N flows'
    // contexts keeps N^2 names in all, so the limit is bounded too.
    if (v.is_number() && v.as_double() > static_cast<double>(kMaxIndirectRecursionLimit)) {
      return Error{"property indirect_recursion_limit must be at most " + std::to_string(kMaxIndirectRecursionLimit) +
                   ", not " + v.to_json()};
    }
    return set_int(&p->indirect_recursion_limit, INT32_MIN, kMaxIndirectRecursionLimit);
  }
  if (name == "record_value_limit") return set_int(&p->record_value_limit, 64, int64_t{1} << 32);
  if (name == "worker_threads") return set_int(&p->worker_threads, 0, 256);
  if (name == "context_retention") return set_int(&p->context_retention, 0, int64_t{1} << 40);
  if (name == "max_abandoned_threads") return set_int(&p->max_abandoned_threads, 0, 4096);
  constexpr int64_t kTiB = int64_t{1} << 40;
  if (name == "max_definition_file_bytes") return set_int(&p->max_definition_file_bytes, 1, kTiB);
  if (name == "max_events_file_bytes") return set_int(&p->max_events_file_bytes, 1, kTiB);
  // Deeper trees would be walked recursively later (compiling, writing, freeing).
  if (name == "max_json_depth") return set_int(&p->max_json_depth, 1, 1024);
  if (name == "max_string_bytes") return set_int(&p->max_string_bytes, 1, kTiB);
  if (name == "max_definitions") return set_int(&p->max_definitions, 1, int64_t{1} << 32);
  if (name == "max_template_bytes") return set_int(&p->max_template_bytes, 1, kTiB);
  if (name == "max_record_value_bytes") return set_int(&p->max_record_value_bytes, 1, kTiB);
  if (name == "max_value_bytes") return set_int(&p->max_value_bytes, 1, kTiB);
  if (name == "max_waiting_contexts") return set_int(&p->max_waiting_contexts, 0, kTiB);
  if (name == "max_queued_events") return set_int(&p->max_queued_events, 0, kTiB);
  if (name == "max_schedule_fires_per_advance") return set_int(&p->max_schedule_fires_per_advance, 1, kTiB);
  if (name == "durability") {
    for (Durability d : {Durability::kFull, Durability::kNormal, Durability::kOff}) {
      if (v.is_string() && v.as_string() == durability_name(d)) {
        p->durability = d;
        return Status::ok();
      }
    }
    return Error{"property durability must be \"full\", \"normal\" or \"off\", not " + shown_value(v)};
  }
  if (name == "history_retention") {
    // {"age": DURATION, "count": N}, either or both; null or {} keeps every ended context.
    if (v.is_null()) {
      p->history_max_age = 0;
      p->history_max_count = 0;
      return Status::ok();
    }
    if (!v.is_object()) {
      return Error{"property history_retention must be an object {\"age\": DURATION, \"count\": N}, not " +
                   std::string(type_name(v.type()))};
    }
    DurationMs age = 0;
    int64_t count = 0;
    for (const auto& m : v.members()) {
      const std::string_view key = m.key.as_string();
      if (key == "age") {
        if (m.value.is_null()) continue;
        Result<DurationMs> d = parse_duration(m.value);
        if (!d) return Error{"property history_retention: age: " + d.message()};
        if (*d <= 0) return Error{"property history_retention: age must be longer than 0ms"};
        age = *d;
      } else if (key == "count") {
        Result<int64_t> n = integer("history_retention.count", m.value, 0, int64_t{1} << 40);
        if (!n) return n.error();
        count = *n;
      } else {
        return Error{"property history_retention: unknown key '" + std::string(key) + "' (keys: age, count)"};
      }
    }
    p->history_max_age = age;
    p->history_max_count = static_cast<size_t>(count);
    return Status::ok();
  }
  if (name == "min_schedule_interval") {
    Result<DurationMs> d = parse_duration(v);
    if (!d) return Error{"property min_schedule_interval: " + d.message()};
    if (*d <= 0) return Error{"property min_schedule_interval must be at least 1ms"};
    p->min_schedule_interval = *d;
    return Status::ok();
  }
  if (name == "max_run_time") {
    Result<DurationMs> d = parse_duration(v);
    if (!d) return Error{"property max_run_time: " + d.message()};
    if (*d <= 0) return Error{"property max_run_time must be longer than 0ms"};
    p->max_run_time = *d;
    return Status::ok();
  }
  return Error{"unknown property '" + std::string(name) + "' (properties: " + std::string(property_names()) + ")"};
}

Value properties_to_value(const EngineProperties& p) {
  return Value::object({
      {"max_actions", Value(p.max_actions)},
      {"max_action_steps", Value(p.max_action_steps)},
      {"max_iterations", Value(p.max_iterations)},
      {"max_context_steps", Value(static_cast<long long>(p.max_context_steps))},
      {"indirect_recursion_limit", Value(static_cast<long long>(p.indirect_recursion_limit))},
      {"max_run_time", Value(format_duration(p.max_run_time))},
      {"record_value_limit", Value(static_cast<long long>(p.record_value_limit))},
      {"worker_threads", Value(p.worker_threads)},
      {"context_retention", Value(static_cast<long long>(p.context_retention))},
      {"history_retention",
       Value::object({{"age", p.history_max_age > 0 ? Value(format_duration(p.history_max_age)) : Value()},
                      {"count", Value(static_cast<long long>(p.history_max_count))}})},
      {"durability", Value(durability_name(p.durability))},
      {"max_abandoned_threads", Value(p.max_abandoned_threads)},
      {"max_definition_file_bytes", Value(static_cast<long long>(p.max_definition_file_bytes))},
      {"max_events_file_bytes", Value(static_cast<long long>(p.max_events_file_bytes))},
      {"max_json_depth", Value(p.max_json_depth)},
      {"max_string_bytes", Value(static_cast<long long>(p.max_string_bytes))},
      {"max_definitions", Value(static_cast<long long>(p.max_definitions))},
      {"max_template_bytes", Value(static_cast<long long>(p.max_template_bytes))},
      {"max_record_value_bytes", Value(static_cast<long long>(p.max_record_value_bytes))},
      {"max_value_bytes", Value(static_cast<long long>(p.max_value_bytes))},
      {"max_waiting_contexts", Value(static_cast<long long>(p.max_waiting_contexts))},
      {"max_queued_events", Value(static_cast<long long>(p.max_queued_events))},
      {"min_schedule_interval", Value(format_duration(p.min_schedule_interval))},
      {"max_schedule_fires_per_advance", Value(static_cast<long long>(p.max_schedule_fires_per_advance))},
  });
}

}  // namespace flowrt
