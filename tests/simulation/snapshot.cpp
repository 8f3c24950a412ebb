#include "tests/simulation/snapshot.h"

#include <algorithm>
#include <sstream>

#include "tests/simulation/sim_json.h"

namespace flowrt::sim {

std::string describe(const Violations& v, size_t max) {
  std::ostringstream o;
  for (size_t i = 0; i < v.size() && i < max; ++i) {
    o << "invariant " << v[i].invariant << " broken: " << v[i].message << "\n";
    if (!v[i].dump.empty()) o << v[i].dump << "\n";
  }
  if (v.size() > max) o << "... and " << v.size() - max << " more\n";
  return o.str();
}

// ---- Snapshot ----

Snapshot Snapshot::from_document(const Value& document, TimeMs now) {
  Snapshot s;
  s.now = now;
  for (const Value& c : document["contexts"].items()) s.contexts.push_back(c);
  std::stable_sort(s.contexts.begin(), s.contexts.end(),
                   [](const Value& a, const Value& b) { return a["seq"].as_int() < b["seq"].as_int(); });
  for (size_t i = 0; i < s.contexts.size(); ++i) s.by_id[str(s.contexts[i]["id"])] = i;
  for (const Value& k : document["skipped"].items()) s.skipped.push_back(k);
  s.locks = document["locks"].is_array() ? document["locks"] : Value::empty_array();
  for (const auto& m : document["records"].members()) {
    std::vector<Value>& rows = s.records[str(m.key)];
    for (const Value& r : m.value.items()) rows.push_back(r);
  }
  return s;
}

const Value* Snapshot::context(std::string_view id) const {
  auto it = by_id.find(std::string(id));
  return it == by_id.end() ? nullptr : &contexts[it->second];
}

const Value* Snapshot::record(const std::string& table, std::string_view sys_id) const {
  auto it = records.find(table);
  if (it == records.end()) return nullptr;
  for (const Value& r : it->second) {
    if (r["sys_id"].as_string() == sys_id) return &r;
  }
  return nullptr;
}

}  // namespace flowrt::sim
