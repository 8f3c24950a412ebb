// Definitions and helpers shared by the micro-benchmarks. Internal to bench/micro.
#pragma once

#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "compiler/compiler.h"
#include "compiler/loader.h"

namespace flowrt::micro {

// The triage flow of the `triage` workload: a record trigger with a condition and three
// steps (look up, update, log).
inline constexpr const char* kTriageFlow = R"({"id": "triage", "trigger": {"type": "record", "table": "incident",
  "when": "created", "condition": {"field": "priority", "op": "le", "value": 3}}, "actions": [
  {"id": "user", "action": "look_up_record", "inputs": {"table": "sys_user",
      "condition": {"field": "group", "op": "eq", "value": "{{trigger.record.group}}"}}},
  {"action": "update_record", "inputs": {"table": "incident", "sys_id": "{{trigger.sys_id}}",
      "values": {"assigned_to": "{{steps.user.record.user_name}}", "state": "assigned"}}},
  {"action": "log", "inputs": {"message": "{{trigger.record.number}} assigned to {{steps.user.record.user_name}}"}}]})";

inline std::vector<Definition> parse_or_throw(std::string_view text) {
  Diagnostics d;
  std::vector<Definition> defs;
  parse_definitions(text, "bench.json", &defs, &d);
  if (!d.empty()) throw std::runtime_error(d.describe());
  return defs;
}

// Compiles the first flow of `text` (its dependencies from the same text).
inline std::shared_ptr<const Plan> compile_or_throw(std::string_view text) {
  class Lookup : public DefinitionLookup {
   public:
    explicit Lookup(const std::vector<Definition>& defs) {
      for (const Definition& d : defs) defs_[{d.type, d.id}] = d;
    }
    const Definition* find(UnitType type, std::string_view id) const override {
      auto it = defs_.find({type, std::string(id)});
      return it == defs_.end() ? nullptr : &it->second;
    }

   private:
    std::map<std::pair<UnitType, std::string>, Definition> defs_;
  };
  std::vector<Definition> defs = parse_or_throw(text);
  Lookup lookup(defs);
  Diagnostics d;
  std::shared_ptr<const Plan> plan = Compiler(lookup, nullptr, {}).compile_flow(defs.front(), &d);
  if (!plan) throw std::runtime_error(d.describe());
  return plan;
}

}  // namespace flowrt::micro
