// What the Model's commit half shares between its files (model.cpp, model_triggers.cpp):
// the invariants it names, and the records SPEC 2 says an insert and an update make.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "plans/time.h"
#include "plans/value.h"

namespace flowrt::sim::model_rules {

inline const std::string kInvA = "(a) every trigger match started a context or was skipped";
inline const std::string kInvD = "(d) seq / FIFO order";
inline const std::string kInvE = "(e) records = the writes";

inline bool engine_field(std::string_view k) {
  return k == "sys_id" || k == "sys_created_on" || k == "sys_updated_on" || k == "sys_mod_count";
}

inline std::string run_key(const std::string& flow, const std::string& table, const std::string& sys_id) {
  return flow + "|" + table + "|" + sys_id;
}

// The record an insert of `values` makes, as SPEC 2 says: the given fields, then the
// engine's (sys_id is the engine's choice unless given).
inline Value inserted(const Value& values, const Value& sys_id, TimeMs at) {
  std::vector<Member> m;
  m.push_back(Member{Value("sys_id"), sys_id});
  for (const auto& f : values.members()) {
    if (!engine_field(f.key.as_string())) m.push_back(Member{f.key, f.value});
  }
  const Value stamp(std::string_view(format_time(at)));
  m.push_back(Member{Value("sys_created_on"), stamp});
  m.push_back(Member{Value("sys_updated_on"), stamp});
  m.push_back(Member{Value("sys_mod_count"), Value(0)});
  return Value::object(std::move(m));
}

// An update merges the given fields; new ones are appended before the engine fields.
inline Value updated(const Value& previous, const Value& values, TimeMs at, bool* changed) {
  std::vector<Member> m;
  *changed = false;
  for (const auto& f : previous.members()) {
    const std::string_view k = f.key.as_string();
    if (k == "sys_created_on" || k == "sys_updated_on" || k == "sys_mod_count") continue;
    const Value* given = engine_field(k) ? nullptr : values.find(k);
    if (given && !(*given == f.value)) *changed = true;
    m.push_back(Member{f.key, given ? *given : f.value});
  }
  for (const auto& f : values.members()) {
    const std::string_view k = f.key.as_string();
    if (engine_field(k) || previous.contains(k)) continue;
    if (!f.value.is_null()) *changed = true;
    m.push_back(Member{f.key, f.value});
  }
  m.push_back(Member{Value("sys_created_on"), previous["sys_created_on"]});
  m.push_back(Member{Value("sys_updated_on"), Value(std::string_view(format_time(at)))});
  m.push_back(Member{Value("sys_mod_count"), Value(previous["sys_mod_count"].as_int() + 1)});
  return Value::object(std::move(m));
}

}  // namespace flowrt::sim::model_rules
