#include "fuzz/op_bounds.h"

#include <algorithm>
#include <string>
#include <string_view>

namespace flowrt::fuzz {

Result<Value> OpBounds::operator()(const Value& op, uint64_t contexts_started) {
  if (++ops_ > kMaxOps) return Error{"events_fuzz: more than " + std::to_string(kMaxOps) + " ops"};
  if (contexts_started > kMaxContexts) {
    return Error{"events_fuzz: more than " + std::to_string(kMaxContexts) + " contexts started"};
  }
  if (!op.is_object() || !op["op"].is_string()) return op;
  const std::string_view name = op["op"].as_string();
  if (name == "advance" || name == "settle") {
    const char* field = name == "advance" ? "duration" : "until";
    const Value* v = op.find(field);
    if (!v) return op;
    Result<DurationMs> d = parse_duration(*v);
    if (!d) return op;
    DurationMs bounded = std::min(*d, name == "advance" ? kMaxAdvance : kMaxSettle);
    if (name == "advance") {
      bounded = std::min(bounded, kMaxAdvanceTotal - advanced_);
      if (bounded > 0) advanced_ += bounded;
    }
    return bounded == *d ? op : op.with(field, Value(static_cast<long long>(bounded)));
  }
  if (name == "set_property") {
    const Value& prop = op["name"];
    const Value& v = op["value"];
    if (!prop.is_string() || !v.is_number()) return op;
    const std::string_view p = prop.as_string();
    long long cap = 0;
    if (p == "max_iterations") cap = kMaxIterations;
    else if (p == "indirect_recursion_limit") cap = kMaxRecursion;
    else if (p == "worker_threads") cap = kMaxWorkers;
    else return op;
    const bool over = v.as_double() > static_cast<double>(cap);
    const bool per_core = p == "worker_threads" && v.as_double() < 1;  // 0: one per core
    return over || per_core ? op.with("value", Value(cap)) : op;
  }
  if (name == "save") {
    const Value& def = op["definition"];
    const Value& trigger = def["trigger"];
    const Value* every = trigger.is_object() ? trigger.find("every") : nullptr;
    if (!every) return op;
    Result<DurationMs> d = parse_duration(*every);
    if (!d || *d >= kMinEvery) return op;
    return op.with("definition", def.with("trigger", trigger.with("every", Value(static_cast<long long>(kMinEvery)))));
  }
  return op;
}

}  // namespace flowrt::fuzz
